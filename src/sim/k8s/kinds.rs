//! The resource types the simulated Kubernetes API serves, as discovery describes them.

/// One served resource type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// Empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub subresources: &'static [&'static str],
}

impl Kind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn singular(&self) -> String {
        self.kind.to_ascii_lowercase()
    }

    /// `pods`, `jobs.batch`: how the API names the type in its messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
) -> Kind {
    Kind {
        group,
        version,
        kind,
        plural,
        namespaced,
        short_names,
        subresources,
    }
}

/// Everything served. Index positions are stable keys into each cluster's store.
pub const KINDS: &[Kind] = &[
    kind(
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        &["status"],
    ),
    kind("", "v1", "Node", "nodes", false, &["no"], &["status"]),
    kind("", "v1", "Pod", "pods", true, &["po"], &["status", "log"]),
    kind("", "v1", "ConfigMap", "configmaps", true, &["cm"], &[]),
    kind("", "v1", "Secret", "secrets", true, &[], &[]),
    kind(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        &[],
    ),
    kind("", "v1", "Service", "services", true, &["svc"], &["status"]),
    kind("", "v1", "Event", "events", true, &["ev"], &[]),
    kind(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        &["status"],
    ),
    kind(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        &["pv"],
        &["status"],
    ),
    kind(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        &["status"],
    ),
    kind(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        &["status"],
    ),
    kind(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        &["status"],
    ),
    kind("batch", "v1", "Job", "jobs", true, &[], &["status"]),
    kind(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        &["sc"],
        &[],
    ),
    kind(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        &["status"],
    ),
    kind(
        "ray.io",
        "v1",
        "RayCluster",
        "rayclusters",
        true,
        &[],
        &["status"],
    ),
    kind(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        false,
        &[],
        &[],
    ),
    kind(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        false,
        &[],
        &[],
    ),
    kind(
        "slurm.nebius.ai",
        "v1",
        "SlurmCluster",
        "slurmclusters",
        true,
        &[],
        &["status"],
    ),
    kind(
        "nvidia.com",
        "v1",
        "ClusterPolicy",
        "clusterpolicies",
        false,
        &[],
        &["status"],
    ),
    // Served so deployment manifests (fleetbot's own, deploy/kubernetes/) can be dry-run.
    kind(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        &["pdb"],
        &["status"],
    ),
    kind(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        &["status"],
    ),
];

pub const NAMESPACE: usize = 0;
pub const NODE: usize = 1;
pub const POD: usize = 2;
pub const JOB: usize = 13;
pub const CONFIG_MAP: usize = 3;
pub const DAEMON_SET: usize = 11;
pub const STORAGE_CLASS: usize = 14;
pub const RAY_CLUSTER: usize = 16;
pub const CSI_NODE: usize = 18;
pub const SLURM_CLUSTER: usize = 19;
pub const CLUSTER_POLICY: usize = 20;
pub const DEPLOYMENT: usize = 10;

/// The type served at `/api/v1/<plural>` or `/apis/<group>/<version>/<plural>`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<usize> {
    KINDS
        .iter()
        .position(|k| k.group == group && k.version == version && k.plural == plural)
}

/// The API groups, in discovery order (core first).
pub fn groups() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for k in KINDS {
        if !out.contains(&(k.group, k.version)) {
            out.push((k.group, k.version));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_indexes_name_the_right_kinds() {
        assert_eq!(KINDS[NAMESPACE].kind, "Namespace");
        assert_eq!(KINDS[NODE].kind, "Node");
        assert_eq!(KINDS[POD].kind, "Pod");
        assert_eq!(KINDS[JOB].kind, "Job");
        assert_eq!(KINDS[CONFIG_MAP].kind, "ConfigMap");
        assert_eq!(KINDS[DAEMON_SET].kind, "DaemonSet");
        assert_eq!(KINDS[STORAGE_CLASS].kind, "StorageClass");
        assert_eq!(KINDS[RAY_CLUSTER].kind, "RayCluster");
        assert_eq!(KINDS[CSI_NODE].kind, "CSINode");
        assert_eq!(KINDS[SLURM_CLUSTER].kind, "SlurmCluster");
        assert_eq!(KINDS[CLUSTER_POLICY].kind, "ClusterPolicy");
        assert_eq!(KINDS[DEPLOYMENT].kind, "Deployment");
        assert_eq!(find("batch", "v1", "jobs"), Some(JOB));
        assert_eq!(KINDS[JOB].qualified(), "jobs.batch");
        assert_eq!(groups()[0], ("", "v1"));
    }
}
