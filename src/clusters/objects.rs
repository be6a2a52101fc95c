//! Objects inside a cluster, as add-ons need them: manifests applied with server-side apply
//! under one field manager, and the readiness reads deploy waits on.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::Value;

use super::{AccessError, ClusterClient};

/// The resource a manifest names, by its apiVersion and kind.
fn resource_of(object: &Value) -> Result<ApiResource, AccessError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(AccessError::Api(
            "a manifest lacks apiVersion or kind".into(),
        ));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let lower = kind.to_ascii_lowercase();
    let plural = if lower.ends_with("class") {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    };
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    Ok(ApiResource::from_gvk_with_plural(&gvk, &plural))
}

fn api(
    client: &ClusterClient,
    object: &Value,
) -> Result<(Api<DynamicObject>, String), AccessError> {
    let resource = resource_of(object)?;
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let api = match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => Api::namespaced_with(client.kube().clone(), ns, &resource),
        None => Api::all_with(client.kube().clone(), &resource),
    };
    Ok((api, name))
}

/// The documents of a multi-document YAML text, as JSON objects (empty ones dropped).
pub fn documents(text: &str) -> Result<Vec<Value>, AccessError> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(doc)
            .map_err(|e| AccessError::Api(format!("a manifest is not YAML: {e}")))?;
        if value.is_object() {
            out.push(value);
        }
    }
    Ok(out)
}

impl ClusterClient {
    /// Server-side applies every document, forcing ownership of the fields they set: the
    /// manifests are fleetbot's, and a conflict would only leave them half applied.
    pub async fn apply_documents(&self, text: &str, manager: &str) -> Result<usize, AccessError> {
        let docs = documents(text)?;
        let params = PatchParams::apply(manager).force();
        for object in &docs {
            let (api, name) = api(self, object)?;
            api.patch(&name, &params, &Patch::Apply(object)).await?;
        }
        Ok(docs.len())
    }

    /// Deletes what the documents name; what is already gone is fine.
    pub async fn delete_documents(&self, text: &str) -> Result<(), AccessError> {
        for object in documents(text)?.iter().rev() {
            let (api, name) = api(self, object)?;
            match api.delete(&name, &DeleteParams::foreground()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// One object as JSON, `None` when it does not exist.
    pub async fn get_object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, AccessError> {
        let mut probe = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
        if let Some(ns) = namespace {
            probe["metadata"]["namespace"] = Value::from(ns);
        }
        let (api, name) = api(self, &probe)?;
        match api.get_opt(&name).await? {
            Some(object) => Ok(Some(
                serde_json::to_value(object).map_err(|e| AccessError::Api(e.to_string()))?,
            )),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_groups_come_from_the_manifest() {
        let sc = serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass"});
        let r = resource_of(&sc).unwrap();
        assert_eq!(
            (r.group.as_str(), r.plural.as_str()),
            ("storage.k8s.io", "storageclasses")
        );
        let ds = serde_json::json!({"apiVersion": "apps/v1", "kind": "DaemonSet"});
        assert_eq!(resource_of(&ds).unwrap().plural, "daemonsets");
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(resource_of(&cm).unwrap().group, "");
        assert!(resource_of(&serde_json::json!({})).is_err());
        assert_eq!(documents("a: 1\n---\n---\nb: 2\n").unwrap().len(), 2);
    }
}
