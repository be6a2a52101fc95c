//! Typed reading of YAML values: strict scalars (a quoted `"2"` is not an integer, `"false"`
//! is not a boolean), with errors that carry the file, the position and the field path.

use std::cell::RefCell;

use crate::spec::error::SpecError;
use crate::spec::model::Positions;
use crate::spec::warning::SpecWarnings;
use crate::spec::yaml::{Entry, Node, Pos, Value};

/// Typed access to YAML values with errors that carry the file, position and field path, and
/// the unknown keys met on the way (warnings, which the spec keeps beside its fields).
pub(crate) struct Reader<'a> {
    pub file: &'a str,
    warnings: RefCell<SpecWarnings>,
    keys: Keys,
}

impl<'a> Reader<'a> {
    pub fn new(file: &'a str) -> Reader<'a> {
        Reader {
            file,
            warnings: RefCell::default(),
            keys: Keys::default(),
        }
    }

    /// Records each key of the mapping at `path` that is in none of `known` (a key the
    /// reference ignores there).
    pub(super) fn warn_unknown(&self, entries: &[Entry], path: &str, known: &[&[&'static str]]) {
        let mut warnings = self.warnings.borrow_mut();
        for e in entries {
            if !known.iter().any(|k| k.contains(&e.key.as_str())) {
                warnings.push(self.file, path, &e.key, e.key_pos, known);
            }
        }
    }

    /// The warnings recorded so far in document order, leaving none behind.
    pub(super) fn take_warnings(&self) -> SpecWarnings {
        let mut warnings = self.warnings.take();
        warnings.items.sort_by_key(|w| (w.pos.line, w.pos.col));
        warnings
    }

    pub fn error(&self, pos: Pos, path: &str, message: impl Into<String>) -> SpecError {
        SpecError::new(self.file, Some(pos), path, message)
    }

    pub(super) fn type_error(&self, node: &Node, path: &str, expected: &str) -> SpecError {
        self.error(
            node.pos,
            path,
            format!("expected {expected}, found {}", node.describe()),
        )
    }

    /// A string field. Numbers keep their source text (`k8s_version: 1.34` reads as "1.34");
    /// booleans and collections are errors. `null` reads as `null_value`.
    pub fn string(
        &self,
        node: Option<&Node>,
        path: &(impl FieldPath + ?Sized),
        default: &str,
        null_value: &str,
    ) -> Result<String, SpecError> {
        let Some(node) = node else {
            return Ok(default.to_string());
        };
        match &node.value {
            Value::Null => Ok(null_value.to_string()),
            Value::Str(s) | Value::Float(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            _ => Err(self.type_error(node, &path.text(), "a string")),
        }
    }

    /// An integer field. A string such as `"2"` is an error, unlike the reference's `int()`.
    /// `null_default` is what `null` means, when the reference treats it as unset.
    pub fn integer(
        &self,
        node: Option<&Node>,
        path: &(impl FieldPath + ?Sized),
        default: i64,
        null_default: Option<i64>,
    ) -> Result<i64, SpecError> {
        let Some(node) = node else {
            return Ok(default);
        };
        match (&node.value, null_default) {
            (Value::Int(i), _) => Ok(*i),
            (Value::Null, Some(d)) => Ok(d),
            _ => Err(self.type_error(node, &path.text(), "an integer")),
        }
    }

    /// A boolean field. The string `"false"` is an error, never truthy.
    pub fn boolean(
        &self,
        node: Option<&Node>,
        path: &(impl FieldPath + ?Sized),
        default: bool,
    ) -> Result<bool, SpecError> {
        let Some(node) = node else {
            return Ok(default);
        };
        match &node.value {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.type_error(node, &path.text(), "a boolean")),
        }
    }

    /// The fields of the mapping at `path`, read by key.
    pub(super) fn fields<'f>(&'f self, entries: &'f [Entry], path: &'f str) -> Fields<'f, 'a> {
        Fields {
            r: self,
            entries,
            path,
        }
    }

    /// An optional mapping: absent or falsy is empty, anything else but a mapping is an
    /// error saying `message`.
    pub(super) fn mapping_or_empty(
        &self,
        node: Option<&Node>,
        path: &str,
        message: &str,
    ) -> Result<Vec<Entry>, SpecError> {
        match node {
            Some(n) if n.is_truthy() => match n.as_map() {
                Some(e) => Ok(e.to_vec()),
                None => Err(self.error(n.pos, path, message)),
            },
            _ => Ok(Vec::new()),
        }
    }

    /// Refuses the keys not in `allowed`; `message` words the error from their list.
    pub(super) fn refuse_unknown(
        &self,
        entries: &[Entry],
        allowed: &[&str],
        pos: Pos,
        path: &str,
        message: impl FnOnce(&str) -> String,
    ) -> Result<(), SpecError> {
        let unknown = sorted_unknown(entries, allowed);
        if unknown.is_empty() {
            return Ok(());
        }
        Err(self.error(pos, path, message(&unknown.join(", "))))
    }

    /// A boolean that must be written as one, with its own message when it is not.
    pub(super) fn strict_bool(
        &self,
        node: Option<&Node>,
        path: &str,
        default: bool,
        message: &str,
    ) -> Result<bool, SpecError> {
        match node {
            None => Ok(default),
            Some(Node {
                value: Value::Bool(b),
                ..
            }) => Ok(*b),
            Some(n) => Err(self.error(n.pos, path, message)),
        }
    }
}

/// One mapping's fields, read by key: the key finds the value and names it in errors.
pub(super) struct Fields<'f, 'a> {
    r: &'f Reader<'a>,
    entries: &'f [Entry],
    path: &'f str,
}

impl Fields<'_, '_> {
    pub fn get(&self, key: &str) -> Option<&Node> {
        entries_get(self.entries, key)
    }

    pub fn path(&self, key: &str) -> String {
        join(self.path, key)
    }

    /// [`Reader::string`] of the field `key`.
    pub fn string(&self, key: &str, default: &str, null_value: &str) -> Result<String, SpecError> {
        self.r
            .string(self.get(key), &Joined(self.path, key), default, null_value)
    }

    /// [`Reader::integer`] of the field `key`.
    pub fn integer(
        &self,
        key: &str,
        default: i64,
        null_default: Option<i64>,
    ) -> Result<i64, SpecError> {
        self.r.integer(
            self.get(key),
            &Joined(self.path, key),
            default,
            null_default,
        )
    }

    /// [`Reader::boolean`] of the field `key`.
    pub fn boolean(&self, key: &str, default: bool) -> Result<bool, SpecError> {
        self.r
            .boolean(self.get(key), &Joined(self.path, key), default)
    }

    /// [`Reader::string`] of the field `key`, where empty (or `null`) means `default`.
    pub fn non_empty(&self, key: &str, default: &str) -> Result<String, SpecError> {
        let value = self.string(key, default, default)?;
        Ok(if value.is_empty() {
            default.to_string()
        } else {
            value
        })
    }

    /// [`Reader::string`] of the field `key`, trimmed.
    pub fn trimmed(&self, key: &str) -> Result<String, SpecError> {
        Ok(self.string(key, "", "")?.trim().to_string())
    }
}

/// A field's path in the document, built only when an error needs it: a large spec reads
/// millions of fields and fails on at most one, so formatting each path up front was a fifth
/// of reading.
pub(crate) trait FieldPath {
    fn text(&self) -> String;
}

impl FieldPath for str {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl FieldPath for String {
    fn text(&self) -> String {
        self.clone()
    }
}

/// A mapping's path and one of its keys, joined when asked.
pub(crate) struct Joined<'a>(pub &'a str, pub &'a str);

impl FieldPath for Joined<'_> {
    fn text(&self) -> String {
        join(self.0, self.1)
    }
}

/// Joins a path and a key.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub(super) fn entries_get<'n>(entries: &'n [Entry], key: &str) -> Option<&'n Node> {
    entries.iter().find(|e| e.key == key).map(|e| &e.value)
}

/// The keys not in `allowed`, sorted and once each, as the reference lists them.
fn sorted_unknown(entries: &[Entry], allowed: &[&str]) -> Vec<String> {
    let mut unknown: Vec<String> = entries
        .iter()
        .map(|e| e.key.clone())
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
}

pub(super) fn set_entry(entries: &mut Vec<Entry>, key: &str, value: Node) {
    match entries.iter_mut().find(|e| e.key == key) {
        Some(e) => e.value = value,
        None => entries.push(Entry {
            key: key.to_string(),
            key_pos: value.pos,
            value,
        }),
    }
}

/// Field paths shared across one spec's objects ([`crate::spec::model::FieldPositions`]).
#[derive(Default)]
pub(crate) struct Keys(RefCell<rustc_hash::FxHashSet<std::sync::Arc<str>>>);

impl Keys {
    pub fn intern(&self, key: &str) -> std::sync::Arc<str> {
        let mut keys = self.0.borrow_mut();
        if let Some(k) = keys.get(key) {
            return k.clone();
        }
        let k: std::sync::Arc<str> = key.into();
        keys.insert(k.clone());
        k
    }
}

impl Reader<'_> {
    /// Where each field of a mapping was written, `depth` levels below the first, for errors
    /// found later (validation) to point at.
    pub(super) fn positions_of(
        &self,
        entries: &[Entry],
        at: Pos,
        path: &str,
        depth: usize,
    ) -> Positions {
        let mut positions = Positions {
            at,
            path: path.to_string(),
            fields: Default::default(),
        };
        record_positions(&self.keys, entries, "", &mut positions, depth);
        positions
    }
}

pub(super) fn record_positions(
    keys: &Keys,
    entries: &[Entry],
    prefix: &str,
    out: &mut Positions,
    depth: usize,
) {
    // One path buffer for the whole walk: every cluster records the same dozen paths, so
    // building each as a fresh string was most of this function's cost.
    let mut path = String::with_capacity(64);
    path.push_str(prefix);
    record_into(keys, entries, &mut path, out, depth);
}

fn record_into(
    keys: &Keys,
    entries: &[Entry],
    path: &mut String,
    out: &mut Positions,
    depth: usize,
) {
    let base = path.len();
    for e in entries {
        if base > 0 {
            path.push('.');
        }
        path.push_str(&e.key);
        out.fields.insert(keys.intern(path), e.value.pos);
        if depth > 0
            && let Value::Map(inner) = &e.value.value
        {
            record_into(keys, inner, path, out, depth - 1);
        }
        path.truncate(base);
    }
}

/// A cluster's name as a slug; one that slugs to nothing is `cluster`.
pub(super) fn slug_or_cluster(text: &str) -> String {
    let s = crate::spec::names::slug(text);
    if s.is_empty() {
        "cluster".to_string()
    } else {
        s
    }
}
