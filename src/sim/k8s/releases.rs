//! The marketplace releases each simulated cluster has DEPLOYED, with the values they were
//! installed with: what the add-ons a cluster plays ([`super::addons`]) and the GPUs its nodes
//! advertise ([`super::nodes`]) follow from.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::scope::Scope;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::sim::core::Core;
use crate::sim::resources::Resource;

/// What a cluster's deployed releases change about its nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuPlugin {
    /// `mig.strategy: mixed`: MIG slices instead of whole GPUs where a node asks for a layout.
    pub mig_mixed: bool,
}

/// One deployed release, with the values it was installed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    pub id: String,
    pub product: String,
    pub namespace: String,
    pub name: String,
    pub values: Value,
}

impl Played {
    /// A value by dotted path, from `set` overrides first, then from the values document.
    pub(super) fn value(&self, path: &str) -> Option<Value> {
        let mut at = &self.values;
        for part in path.split('.') {
            at = at.get(part)?;
        }
        Some(at.clone())
    }

    pub(super) fn str_value(&self, path: &str) -> Option<String> {
        self.value(path).and_then(|v| match v {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
    }
}

/// The DEPLOYED releases of the clusters in `scope`, in one pass over the releases.
pub fn deployed_by_cluster(core: &Core, scope: Scope<'_>) -> HashMap<String, Vec<Played>> {
    let ok = apps::k8s_release_status::State::Deployed as i32;
    let mut out: HashMap<String, Vec<Played>> = Default::default();
    for r in &core.state.releases {
        let Some(spec) = r.spec.as_ref() else {
            continue;
        };
        if r.status.as_ref().is_none_or(|s| s.state != ok) || !scope.holds(&spec.cluster_id) {
            continue;
        }
        out.entry(spec.cluster_id.clone())
            .or_default()
            .push(Played {
                id: r.id().to_string(),
                product: spec.product_slug.clone(),
                namespace: spec.namespace.clone(),
                name: spec.application_name.clone(),
                values: values_of(spec),
            });
    }
    out
}

/// The values document with every `set` override applied at its dotted path.
fn values_of(spec: &apps::K8sReleaseSpec) -> Value {
    let mut values: Value = serde_yaml::from_str::<Value>(&spec.values)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    for (path, value) in &spec.set {
        let mut at = &mut values;
        let parts: Vec<&str> = path.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            if !at.is_object() {
                *at = json!({});
            }
            if i + 1 == parts.len() {
                at[*part] = json!(value);
            } else {
                at = &mut at[*part];
            }
        }
    }
    values
}

/// What the deployed releases make GPU nodes advertise: `None` without a device plugin.
pub fn gpu_plugin(releases: &[Played]) -> Option<GpuPlugin> {
    releases
        .iter()
        .filter(|r| {
            r.product == "nebius/nvidia-gpu-operator" || r.product == "nebius/nvidia-device-plugin"
        })
        .map(|r| GpuPlugin {
            mig_mixed: r.str_value("mig.strategy").as_deref() == Some("mixed"),
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_overrides_land_at_their_dotted_paths() {
        let spec = apps::K8sReleaseSpec {
            values: "mig: {strategy: none}\n".into(),
            set: [("mig.strategy".to_string(), "mixed".to_string())]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        assert_eq!(values_of(&spec)["mig"]["strategy"], "mixed");
    }
}
