//! A provider field as the quota domain sees it: absent, a usable value, or present but unusable.
//!
//! Both evidence sources map into this: the JSON documents of the Nebius CLI (where a `limit`
//! may arrive as a bool or a float) and the gRPC client (which only ever yields the first two).
//! Keeping "present but unusable" apart from "absent" lets the parser fail closed only for the
//! records that matter, as the reference does.

/// One optional provider field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Wire<T> {
    /// Not sent (or `null`, or an empty string where the reference treats `""` as unset).
    #[default]
    Absent,
    Value(T),
    /// Sent, but not a value of the field's type (a bool or float for a `uint64`, say).
    Invalid,
}

impl<T> Wire<T> {
    pub fn is_absent(&self) -> bool {
        matches!(self, Wire::Absent)
    }

    pub fn value(&self) -> Option<&T> {
        match self {
            Wire::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Wire<T> {
    fn from(value: Option<T>) -> Wire<T> {
        value.map_or(Wire::Absent, Wire::Value)
    }
}
