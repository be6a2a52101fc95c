//! Unknown keys the reference ignores: typed warnings with the key's position and the nearest
//! known key, returned beside the spec (never printed here).
//!
//! The reference reads only the keys it knows at the top level, in projects, in `defaults` and
//! in flat mk8s clusters and their pools, and ignores the rest as "permissive forward fields"
//! (fleet-engine §2.1, §2.9), so `regoin: eu-north1` plans with no word. Ignoring stays the
//! behaviour (the plan and the exit code are unchanged); the caller decides whether a warning
//! is shown, or is an error (`--strict`, the App's check). Places that already refuse unknown
//! keys (explicit `mk8s:` envelopes, Soperator clusters, `mig`, `kuberay`, `object_storage`)
//! are not looked at, so no key is reported twice.

use std::fmt;

use super::error::SpecError;
use super::yaml::Pos;

/// Most warnings kept for one spec. A crafted spec of 100,000 unknown keys must not cost
/// 100,000 suggestions or lines on stderr; the rest are only counted.
pub const MAX_WARNINGS: usize = 100;

/// Keys read at the top level of a spec (fleet-engine §2.1).
pub const TOP_LEVEL_FIELDS: &[&str] = &[
    "apiVersion",
    "name",
    "tenant_id",
    "region",
    "project_prefix",
    "ssh_public_key",
    "profile",
    "defaults",
    "projects",
];

/// Keys read in a project (fleet-engine §2.2).
pub const PROJECT_FIELDS: &[&str] = &["name", "project_id", "region", "clusters", "object_storage"];

/// The backend keys a flat cluster or `defaults` may carry beside the mk8s settings (§2.9).
pub const BACKEND_FIELDS: &[&str] = &["backend", "mk8s", "soperator"];

/// One key the reference would ignore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecWarning {
    /// The file name as the user gave it.
    pub file: String,
    /// Where the key was written.
    pub pos: Pos,
    /// The path of the mapping holding the key (`projects[0].clusters[1]`); empty at the top.
    pub parent: String,
    /// The key as written.
    pub key: String,
    /// The known key it is nearest to, when one is close enough to be a typo of it.
    pub suggestion: Option<&'static str>,
}

impl SpecWarning {
    /// The field path of the key, such as `projects[0].clusters[1].gpu_nodez`.
    pub fn path(&self) -> String {
        if self.parent.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.parent, self.key)
        }
    }

    /// What is wrong, without the location: `unknown key; did you mean 'region'?`.
    pub fn message(&self) -> String {
        match self.suggestion {
            Some(s) => format!("unknown key; did you mean '{s}'?"),
            None => "unknown key".to_string(),
        }
    }

    /// The same text as a spec error, for `--strict` and the App's check.
    pub fn to_error(&self) -> SpecError {
        SpecError::new(&self.file, Some(self.pos), &self.path(), self.message())
    }
}

impl fmt::Display for SpecWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_error())
    }
}

/// The unknown keys of one spec: the first [`MAX_WARNINGS`] met while reading (the top level,
/// `defaults`, then each project and cluster), in document order, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecWarnings {
    pub items: Vec<SpecWarning>,
    pub omitted: usize,
}

impl SpecWarnings {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.omitted == 0
    }

    /// Every warning and the line counting those left out, as the CLI prints them.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.items.iter().map(ToString::to_string).collect();
        if self.omitted > 0 {
            lines.push(format!("{} more unknown keys not shown", self.omitted));
        }
        lines
    }

    /// Records `key` unless the limit is reached; the suggestion is computed only for what
    /// is kept, so the cost stays bounded whatever the spec holds.
    pub(crate) fn push(
        &mut self,
        file: &str,
        parent: &str,
        key: &str,
        pos: Pos,
        known: &[&[&'static str]],
    ) {
        if self.items.len() >= MAX_WARNINGS {
            self.omitted += 1;
            return;
        }
        self.items.push(SpecWarning {
            file: file.to_string(),
            pos,
            parent: parent.to_string(),
            key: key.to_string(),
            suggestion: nearest_key(key, known.iter().flat_map(|k| k.iter().copied())),
        });
    }
}

/// Longest key compared for a suggestion; a longer one is no typo of a known key.
const MAX_SUGGESTED_LEN: usize = 64;

/// The known key nearest to `key` when it is close enough to be a typo of it: at most two
/// edits (one for keys of three characters or fewer, where two edits reach almost anything),
/// an adjacent transposition counting as one, letter case ignored. Ties go to the first known.
pub fn nearest_key<'k>(key: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    if key.len() > MAX_SUGGESTED_LEN {
        return None;
    }
    let key: Vec<char> = key.to_lowercase().chars().collect();
    let limit = if key.len() <= 3 { 1 } else { 2 };
    let mut best: Option<(usize, &str)> = None;
    for candidate in known {
        let cand: Vec<char> = candidate.to_lowercase().chars().collect();
        if cand.len().abs_diff(key.len()) > limit {
            continue;
        }
        let d = edit_distance(&key, &cand);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, k)| k)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
/// transpositions (`regoin` is one edit from `region`).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, row) in d.chunks_mut(width).enumerate() {
        row[0] = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = v;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = TOP_LEVEL_FIELDS;

    #[test]
    fn a_transposition_or_two_edits_suggest_the_known_key() {
        assert_eq!(nearest_key("regoin", KNOWN.iter().copied()), Some("region"));
        assert_eq!(
            nearest_key("projcts", KNOWN.iter().copied()),
            Some("projects")
        );
        assert_eq!(
            nearest_key("tenant-id", KNOWN.iter().copied()),
            Some("tenant_id")
        );
        assert_eq!(
            nearest_key("apiversion", KNOWN.iter().copied()),
            Some("apiVersion")
        );
        assert_eq!(
            nearest_key("defualts", KNOWN.iter().copied()),
            Some("defaults")
        );
        assert_eq!(
            nearest_key("ssh_public_keys", KNOWN.iter().copied()),
            Some("ssh_public_key")
        );
    }

    #[test]
    fn far_or_short_keys_suggest_nothing() {
        assert_eq!(nearest_key("owner", KNOWN.iter().copied()), None);
        assert_eq!(nearest_key("labels", KNOWN.iter().copied()), None);
        // Two edits from `name`, but on a three-letter key two edits reach almost anything.
        assert_eq!(nearest_key("nm", ["name"]), None);
        assert_eq!(nearest_key("nme", ["name"]), Some("name"));
        assert_eq!(nearest_key(&"x".repeat(500), KNOWN.iter().copied()), None);
        assert_eq!(nearest_key("", KNOWN.iter().copied()), None);
    }

    #[test]
    fn the_nearest_wins_and_ties_go_to_the_first() {
        assert_eq!(
            nearest_key("cpu_node", ["gpu_nodes", "cpu_nodes"]),
            Some("cpu_nodes")
        );
        assert_eq!(
            nearest_key("xpu_nodes", ["gpu_nodes", "cpu_nodes"]),
            Some("gpu_nodes")
        );
    }

    #[test]
    fn edit_distance_counts_each_kind_of_edit_once() {
        let d = |a: &str, b: &str| {
            edit_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
            )
        };
        assert_eq!(d("region", "region"), 0);
        assert_eq!(d("regoin", "region"), 1);
        assert_eq!(d("regin", "region"), 1);
        assert_eq!(d("regiion", "region"), 1);
        assert_eq!(d("rexion", "region"), 1);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
    }

    #[test]
    fn display_is_the_error_text_and_the_limit_counts_the_rest() {
        let mut w = SpecWarnings::default();
        for i in 0..MAX_WARNINGS + 3 {
            let key = if i == 0 {
                "regoin".to_string()
            } else {
                format!("k{i}")
            };
            w.push(
                "fleet.yaml",
                "",
                &key,
                Pos { line: 3, col: 1 },
                &[TOP_LEVEL_FIELDS],
            );
        }
        assert_eq!(
            w.items[0].to_string(),
            "fleet.yaml:3:1: regoin: unknown key; did you mean 'region'?"
        );
        assert_eq!(w.items.len(), MAX_WARNINGS);
        assert_eq!(w.omitted, 3);
        assert_eq!(w.lines().last().unwrap(), "3 more unknown keys not shown");
    }

    /// `(path, line, suggestion)` of each warning of `text`, which must load.
    fn warned(text: &str) -> Vec<(String, u32, Option<&'static str>)> {
        let spec = crate::spec::spec_from_str(text, "fleet.yaml").expect("reads");
        assert_eq!(spec.warnings.omitted, 0);
        spec.warnings
            .items
            .iter()
            .map(|w| (w.path(), w.pos.line, w.suggestion))
            .collect()
    }

    const CLUSTER: &str = "cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}";

    #[test]
    fn unknown_top_level_project_and_flat_cluster_keys_warn_where_written() {
        let text = format!(
            "apiVersion: npa.fleet/v0.0.1\nname: f\nregoin: eu-north1\nprojects:\n  - name: a\n    project_idd: x\n    clusters:\n      - name: c\n        {CLUSTER}\n        enable_filestor: true\n        owner: team-a\n"
        );
        assert_eq!(
            warned(&text),
            vec![
                ("regoin".to_string(), 3, Some("region")),
                ("projects[0].project_idd".to_string(), 6, Some("project_id")),
                (
                    "projects[0].clusters[0].enable_filestor".to_string(),
                    10,
                    Some("enable_filestore")
                ),
                ("projects[0].clusters[0].owner".to_string(), 11, None),
            ]
        );
    }

    #[test]
    fn defaults_and_flat_pools_warn_once_however_many_clusters_inherit() {
        let text = "apiVersion: npa.fleet/v0.0.1\nname: f\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb, disk_size: 64}\n  gpu_driver_mod: auto\n  mk8s:\n    k8s_versoin: '1.31'\nprojects:\n  - name: a\n  - name: b\n    clusters:\n      - name: c\n        gpu_nodes: {count: 0, platfrom: gpu-h200-sxm}\n";
        assert_eq!(
            warned(text),
            vec![
                ("defaults.cpu_nodes.disk_size".to_string(), 4, None),
                (
                    "defaults.gpu_driver_mod".to_string(),
                    5,
                    Some("gpu_driver_mode")
                ),
                (
                    "defaults.mk8s.k8s_versoin".to_string(),
                    7,
                    Some("k8s_version")
                ),
                (
                    "projects[1].clusters[0].gpu_nodes.platfrom".to_string(),
                    13,
                    Some("platform")
                ),
            ]
        );
    }

    #[test]
    fn known_keys_and_keys_already_refused_never_warn() {
        // Every documented key, the backend keys, and a driver repository map's own names.
        let clean = format!(
            "apiVersion: npa.fleet/v0.0.1\nname: f\ntenant_id: ''\nregion: eu-north1\nproject_prefix: p-\nssh_public_key: ''\nprofile: ''\ndefaults:\n  backend: mk8s\n  {CLUSTER}\nprojects:\n  - name: a\n    project_id: ''\n    region: eu-north1\n    clusters:\n      - name: c\n        backend: mk8s\n        k8s_version: '1.31'\n        gpu_workload_profile: rtx-rendering\n        gpu_driver_package_repositories: {{my_repo: 'https://example.com/r'}}\n"
        );
        assert_eq!(warned(&clean), vec![]);
        // An explicit envelope and a Soperator cluster refuse unknown keys: errors, not
        // warnings as well.
        let envelope = "apiVersion: npa.fleet/v0.0.1\nname: f\nprojects:\n  - name: a\n    clusters:\n      - mk8s: {cpu_nodes: {count: 1}, regoin: x}\n";
        let e = crate::spec::load_str(envelope, "fleet.yaml").unwrap_err();
        assert!(e.message.contains("unsupported field(s): regoin"), "{e}");
        let soperator = "apiVersion: npa.fleet/v0.0.1\nname: f\nprojects:\n  - name: a\n    clusters:\n      - backend: soperator\n        regoin: x\n";
        let e = crate::spec::load_str(soperator, "fleet.yaml").unwrap_err();
        assert!(
            e.message.contains("unsupported mk8s/flat field(s): regoin"),
            "{e}"
        );
    }

    #[test]
    fn a_spec_of_many_unknown_keys_keeps_the_first_hundred() {
        let keys: String = (0..500).map(|i| format!("key{i}: 1\n")).collect();
        let text = format!(
            "apiVersion: npa.fleet/v0.0.1\nname: f\n{keys}projects:\n  - name: a\n    clusters:\n      - {CLUSTER}\n"
        );
        let spec = crate::spec::load_str(&text, "fleet.yaml").unwrap();
        assert_eq!(spec.warnings.items.len(), MAX_WARNINGS);
        assert_eq!(spec.warnings.omitted, 500 - MAX_WARNINGS);
        assert_eq!(spec.warnings.items[0].pos.line, 3);
    }
}
