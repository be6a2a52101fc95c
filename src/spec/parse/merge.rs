//! The reference's `_deep_merge`, by which `defaults` (and a backend's own defaults) fill
//! in what a cluster leaves out, and the budget that bounds what those merges may produce.

use std::cell::Cell;
use std::collections::HashMap;

use super::reader::{Reader, entries_get};
use crate::spec::error::SpecError;
use crate::spec::yaml::{Entry, Node, Pos, Size, Value};

/// Most nodes the merged clusters of one spec may hold together, counted as the YAML reader
/// counts a document's (`yaml::Limits::max_nodes`, the same figure). `defaults` are copied into
/// every cluster, so without a bound an 86 KB spec (2,000 default keys, 20,000 empty clusters)
/// expanded to 80 million nodes and 3.9 GB. The largest fixture (`rtxpro-8gpu-five-cluster`)
/// merges to 154 nodes and the 1,000-cluster fleet of `benches/plan.rs` to 24,200, so a real
/// fleet stays far below it, while the worst a spec can now cost is bounded like a document.
pub const MAX_MERGED_NODES: usize = 1_000_000;

/// Most bytes of keys and scalar text the merged clusters of one spec may hold together, for
/// the same reason as [`MAX_MERGED_NODES`]: one long string in `defaults` is one node, copied
/// into every cluster. A generated 40,000-cluster fleet merges to about 10 MB.
pub const MAX_MERGED_BYTES: usize = 64 * 1024 * 1024;

/// What every cluster of a spec inherits, looked up once rather than per cluster, and how much
/// of the merge budget is left.
pub(super) struct Defaults<'d> {
    pub backend: Option<&'d Node>,
    pub name: Option<&'d Node>,
    pub mk8s: Option<&'d Node>,
    pub soperator: Option<&'d Node>,
    /// `defaults` less the backend keys: what a flat mk8s cluster merges over.
    pub flat: Vec<Entry>,
    budget: Size,
    spent: Cell<Size>,
}

impl<'d> Defaults<'d> {
    pub fn new(entries: &'d [Entry]) -> Defaults<'d> {
        Defaults::with_budget(
            entries,
            Size {
                nodes: MAX_MERGED_NODES,
                bytes: MAX_MERGED_BYTES,
                depth: 0,
            },
        )
    }

    /// `budget`'s nodes and bytes bound the merged clusters together (its depth is unused:
    /// a merge nests no deeper than the document it merges).
    pub fn with_budget(entries: &'d [Entry], budget: Size) -> Defaults<'d> {
        Defaults {
            backend: entries_get(entries, "backend"),
            name: entries_get(entries, "name"),
            mk8s: entries_get(entries, "mk8s"),
            soperator: entries_get(entries, "soperator"),
            flat: without_backend_keys(entries),
            budget,
            spent: Cell::new(Size::default()),
        }
    }

    /// Counts one cluster's merged mapping against the budget; past it, the error points at
    /// the cluster whose merge crossed it.
    pub fn charge(
        &self,
        r: &Reader<'_>,
        merged: &[Entry],
        pos: Pos,
        path: &str,
    ) -> Result<(), SpecError> {
        let mut spent = self.spent.get();
        for e in merged {
            spent.nodes = spent.nodes.saturating_add(1);
            spent.bytes = spent.bytes.saturating_add(e.key.len());
            let value = Size::of(&e.value);
            spent.nodes = spent.nodes.saturating_add(value.nodes);
            spent.bytes = spent.bytes.saturating_add(value.bytes);
        }
        self.spent.set(spent);
        let over = if spent.nodes > self.budget.nodes {
            format!("{} nodes", self.budget.nodes)
        } else if spent.bytes > self.budget.bytes {
            format!("{} bytes of keys and values", self.budget.bytes)
        } else {
            return Ok(());
        };
        Err(r.error(
            pos,
            path,
            format!(
                "spec expands to more than {over} once defaults are merged into its clusters (merge expansion limit)"
            ),
        ))
    }
}

/// `_deep_merge`: override wins; mappings merge recursively except `mig` and `kuberay`, which
/// replace whole; lists and `null` replace. Keys are found through an index, so the cost is
/// linear in the two mappings (a scan per key was quadratic).
pub fn deep_merge(base: &[Entry], overrides: &[Entry]) -> Vec<Entry> {
    let mut result: Vec<Entry> = base.to_vec();
    if overrides.is_empty() {
        // The common case of a cluster that only inherits: no index to build.
        return result;
    }
    // Keys borrowed from the inputs: an entry at `i` has `base[i]`'s key or an override's.
    let mut index: HashMap<&str, usize> = base
        .iter()
        .enumerate()
        .map(|(i, e)| (e.key.as_str(), i))
        .collect();
    for entry in overrides {
        let atomic = entry.key == "mig" || entry.key == "kuberay";
        match index.get(entry.key.as_str()) {
            Some(&i) => {
                let existing = &mut result[i];
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
            None => {
                index.insert(&entry.key, result.len());
                result.push(entry.clone());
            }
        }
    }
    result
}

/// `defaults` as flat mk8s fields: the backend choice and the backend envelopes are not
/// cluster fields.
fn without_backend_keys(entries: &[Entry]) -> Vec<Entry> {
    entries
        .iter()
        .filter(|e| !matches!(e.key.as_str(), "backend" | "soperator" | "mk8s"))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml::{Limits, parse};

    fn entries(text: &str) -> Vec<Entry> {
        parse(text, Limits::default())
            .unwrap()
            .as_map()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn overrides_win_mappings_merge_and_order_is_kept() {
        let base = entries("a: 1\nb: {x: 1, y: 2}\nmig: {p: 1}\nc: [1]\n");
        let over = entries("b: {y: 3, z: 4}\nmig: {q: 2}\nd: 5\nc: null\n");
        let merged = deep_merge(&base, &over);
        let keys: Vec<&str> = merged.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "mig", "c", "d"]);
        let b = &merged[1].value;
        assert_eq!(b.get("x").unwrap().value, Value::Int(1));
        assert_eq!(b.get("y").unwrap().value, Value::Int(3));
        assert_eq!(b.get("z").unwrap().value, Value::Int(4));
        assert!(merged[2].value.get("p").is_none(), "mig replaces whole");
        assert!(merged[3].value.is_null());
    }

    #[test]
    fn the_budget_counts_every_merge_and_refuses_the_one_that_crosses_it() {
        let defaults = entries("a: 1\nb: {x: 1}\n");
        // a, 1, b, {x}, x, 1: six nodes a cluster.
        let d = Defaults::with_budget(&defaults, budget(12, usize::MAX));
        let r = Reader::new("f.yaml");
        let at = Pos { line: 9, col: 5 };
        for _ in 0..2 {
            d.charge(&r, &deep_merge(&d.flat, &[]), at, "c").unwrap();
        }
        let e = d
            .charge(&r, &deep_merge(&d.flat, &[]), at, "projects[0].clusters[2]")
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "f.yaml:9:5: projects[0].clusters[2]: spec expands to more than 12 nodes"
            ),
            "{e}"
        );
    }

    fn budget(nodes: usize, bytes: usize) -> Size {
        Size {
            nodes,
            bytes,
            depth: 0,
        }
    }

    #[test]
    fn the_budget_counts_bytes_so_one_long_default_is_not_copied_without_bound() {
        // One node of text, which the node budget alone let through once per cluster.
        let long = "x".repeat(1000);
        let defaults = entries(&format!("note: {long}\n"));
        // "note" and the text: 1,004 bytes a cluster.
        let d = Defaults::with_budget(&defaults, budget(usize::MAX, 2 * 1004));
        let r = Reader::new("f.yaml");
        let at = Pos { line: 3, col: 7 };
        for _ in 0..2 {
            d.charge(&r, &deep_merge(&d.flat, &[]), at, "c").unwrap();
        }
        let e = d
            .charge(&r, &deep_merge(&d.flat, &[]), at, "projects[0].clusters[2]")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.yaml:3:7: projects[0].clusters[2]: spec expands to more than 2008 bytes of keys and values once defaults are merged into its clusters (merge expansion limit)"
        );
    }
}
