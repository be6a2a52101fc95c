//! The reference's `_deep_merge`, by which `defaults` (and a backend's own defaults) fill
//! in what a cluster leaves out.

use crate::spec::yaml::{Entry, Node, Value};

/// `_deep_merge`: override wins; mappings merge recursively except `mig` and `kuberay`, which
/// replace whole; lists and `null` replace.
pub fn deep_merge(base: &[Entry], overrides: &[Entry]) -> Vec<Entry> {
    let mut result: Vec<Entry> = base.to_vec();
    for entry in overrides {
        let atomic = entry.key == "mig" || entry.key == "kuberay";
        match result.iter_mut().find(|e| e.key == entry.key) {
            Some(existing) => {
                let merged = match (&existing.value.value, &entry.value.value) {
                    (Value::Map(b), Value::Map(o)) if !atomic => {
                        Some(Node::new(Value::Map(deep_merge(b, o)), entry.value.pos))
                    }
                    _ => None,
                };
                *existing = Entry {
                    key: entry.key.clone(),
                    key_pos: entry.key_pos,
                    value: merged.unwrap_or_else(|| entry.value.clone()),
                };
            }
            None => result.push(entry.clone()),
        }
    }
    result
}

/// `defaults` as flat mk8s fields: the backend choice and the backend envelopes are not
/// cluster fields.
pub(super) fn without_backend_keys(entries: &[Entry]) -> Vec<Entry> {
    entries
        .iter()
        .filter(|e| !matches!(e.key.as_str(), "backend" | "soperator" | "mk8s"))
        .cloned()
        .collect()
}
