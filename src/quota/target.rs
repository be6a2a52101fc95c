//! The identity every quota module keys a target by; its own module so that scoping and
//! reservations can share it without depending on each other.

use serde::Serialize;

/// A target as the inventory names it: `(project key, cluster name)`; shown and serialized as
/// `key/cluster` (neither part can contain `/`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TargetKey {
    pub project_key: String,
    pub cluster: String,
}

impl TargetKey {
    pub fn new(project_key: impl Into<String>, cluster: impl Into<String>) -> TargetKey {
        TargetKey {
            project_key: project_key.into(),
            cluster: cluster.into(),
        }
    }
}

impl Serialize for TargetKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl std::fmt::Display for TargetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.project_key, self.cluster)
    }
}
