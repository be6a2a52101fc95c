//! The public fields of one cluster's static plan, read from the engine's typed plan: the facts
//! of a created or destroyed cluster, and the field-by-field difference of a changed one.
//!
//! The fields are named one by one with exhaustive destructuring, so a field the engine adds
//! does not compile until this file says how a pull request shows it.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::fleet::static_plan::{ClusterPlan, Mk8sClusterPlan, SoperatorClusterPlan};

/// Longer values (nested ones, mostly) are cut, so one field cannot flood the table.
const MAX_VALUE_CHARS: usize = 60;

/// One field's value as a row shows it.
#[derive(Debug, PartialEq)]
enum Shown {
    /// Absent, or explicitly none.
    None,
    /// Text, shown whole.
    Text(String),
    /// A number, a flag or a nested value, in the plan's JSON notation.
    Value(String),
}

impl Shown {
    fn text(s: &str) -> Self {
        Shown::Text(s.to_string())
    }

    fn opt_text(s: &Option<impl AsRef<str>>) -> Self {
        s.as_ref().map_or(Shown::None, |s| Shown::text(s.as_ref()))
    }

    fn scalar(v: impl fmt::Display) -> Self {
        Shown::Value(v.to_string())
    }

    fn nested<T: Serialize>(v: &T) -> Self {
        serde_json::to_string(v).map_or(Shown::None, Shown::Value)
    }

    fn opt_nested<T: Serialize>(v: &Option<T>) -> Self {
        v.as_ref().map_or(Shown::None, Shown::nested)
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shown::None => f.write_str("none"),
            Shown::Text(s) => f.write_str(s),
            Shown::Value(s) if s.chars().count() > MAX_VALUE_CHARS => {
                let cut: String = s.chars().take(MAX_VALUE_CHARS).collect();
                write!(f, "{cut}…")
            }
            Shown::Value(s) => f.write_str(s),
        }
    }
}

/// What a created or destroyed cluster is, in a line or two.
pub(super) fn cluster_facts(cluster: &ClusterPlan) -> Vec<String> {
    match cluster {
        ClusterPlan::Soperator(c) => {
            let workers: i64 = c.workers.iter().map(|w| w.size).sum();
            vec!["backend: soperator".into(), format!("workers: {workers}")]
        }
        ClusterPlan::Mk8s(c) => vec![
            format!("cpu: {} × {}", c.cpu_nodes, c.cpu_preset),
            format!("gpu: {} × {} {}", c.gpu_nodes, c.gpu_platform, c.gpu_preset),
        ],
    }
}

/// `field: from → to` for every field that differs, in field-name order. A field only one of
/// the two has (the backend changed) counts as none on the other side.
pub(super) fn changed_fields(old: &ClusterPlan, new: &ClusterPlan) -> Vec<String> {
    let (old, new) = (fields(old), fields(new));
    let mut names: Vec<&&str> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let a = old.get(name).unwrap_or(&Shown::None);
            let b = new.get(name).unwrap_or(&Shown::None);
            (a != b).then(|| format!("{name}: {a} → {b}"))
        })
        .collect()
}

fn fields(cluster: &ClusterPlan) -> BTreeMap<&'static str, Shown> {
    match cluster {
        ClusterPlan::Mk8s(c) => mk8s_fields(c),
        ClusterPlan::Soperator(c) => soperator_fields(c),
    }
    .into_iter()
    .collect()
}

/// Destructures a plan struct without `..` (so every field must be named) and shows each
/// field the named way, under the field's own name.
macro_rules! named_fields {
    ($plan:path, $value:expr, { $($field:ident: $show:ident),* $(,)? }) => {{
        let $plan { $($field),* } = $value;
        vec![$((stringify!($field), Shown::$show($field))),*]
    }};
}

fn mk8s_fields(c: &Mk8sClusterPlan) -> Vec<(&'static str, Shown)> {
    named_fields!(Mk8sClusterPlan, c, {
        name: text,
        cpu_nodes: scalar,
        cpu_preset: text,
        gpu_nodes: scalar,
        gpu_platform: text,
        gpu_preset: text,
        gpu_reservation: text,
        enable_gpu_cluster: scalar,
        gpu_driver_mode: text,
        managed_driver_preset: opt_text,
        unsafe_nvswitch_operator: scalar,
        gpu_health_stabilization_seconds: scalar,
        gpu_cuda_smoke: scalar,
        gpu_workload_profile: text,
        gpu_graphics_smoke: scalar,
        enable_filestore: scalar,
        filestore_disk_size_gibibytes: scalar,
        filestore_mount_path: text,
        filestore_mount_tag: text,
        filesystem_csi_enabled: scalar,
        k8s_version: text,
        mig: opt_nested,
        kuberay: opt_nested,
        backend: opt_text,
    })
}

fn soperator_fields(c: &SoperatorClusterPlan) -> Vec<(&'static str, Shown)> {
    named_fields!(SoperatorClusterPlan, c, {
        backend: text, name: text, region: text,
        control_plane: nested, workers: nested,
        reservation_preflight: text, provider_mutation: scalar,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::static_plan::{PlanOptions, plan};

    /// Every cluster of the fixture specs: each with the one after it, so both backends and a
    /// backend change are covered.
    fn fixture_clusters() -> Vec<ClusterPlan> {
        let specs = [
            include_str!("../../../fixtures/specs/mixed-backends.yaml"),
            include_str!("../../../fixtures/specs/kuberay-cpu-raycluster.yaml"),
            include_str!("../../../fixtures/specs/rtxpro-mig.yaml"),
            include_str!("../../../fixtures/specs/digital-twin-cuda.yaml"),
        ];
        specs
            .iter()
            .map(|text| crate::spec::load_str(text, "f.yaml").unwrap())
            .flat_map(|spec| plan(&spec, &PlanOptions::default()).projects)
            .flat_map(|p| p.clusters)
            .collect()
    }

    /// How the plan's JSON form shows a value: the notation the named fields must keep.
    fn as_published(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "none".into(),
            other => Shown::Value(other.to_string()).to_string(),
        }
    }

    #[test]
    fn the_named_fields_are_the_fields_the_plan_publishes() {
        for cluster in fixture_clusters() {
            let json = serde_json::to_value(&cluster).unwrap();
            let mut published: Vec<(&str, String)> = json
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.as_str(), as_published(v)))
                .collect();
            published.sort();
            let named: Vec<(&str, String)> = fields(&cluster)
                .into_iter()
                .filter(|(_, v)| *v != Shown::None)
                .map(|(k, v)| (k, v.to_string()))
                .collect();
            assert_eq!(named, published);
        }
    }

    #[test]
    fn changes_list_each_differing_field_and_facts_name_the_pools() {
        let clusters = fixture_clusters();
        let mk8s = clusters
            .iter()
            .find(|c| matches!(c, ClusterPlan::Mk8s(_)))
            .unwrap();
        let soperator = clusters
            .iter()
            .find(|c| matches!(c, ClusterPlan::Soperator(_)))
            .unwrap();
        assert!(changed_fields(mk8s, mk8s).is_empty());
        let ClusterPlan::Mk8s(plan) = mk8s else {
            unreachable!()
        };
        let mut bigger = plan.clone();
        bigger.gpu_nodes += 1;
        bigger.managed_driver_preset = None;
        let changes = changed_fields(mk8s, &ClusterPlan::Mk8s(bigger));
        assert!(changes.contains(&format!(
            "gpu_nodes: {} → {}",
            plan.gpu_nodes,
            plan.gpu_nodes + 1
        )));
        let switched = changed_fields(mk8s, soperator);
        assert!(switched.iter().any(|c| c.starts_with("backend: ")));
        assert!(switched.iter().any(|c| c.starts_with("workers: none → [")));
        assert!(
            switched.iter().all(|c| c.chars().count() < 200),
            "{switched:?}"
        );
        assert_eq!(cluster_facts(soperator)[0], "backend: soperator");
        assert!(cluster_facts(mk8s)[0].starts_with("cpu: "));
    }
}
