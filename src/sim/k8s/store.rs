//! One simulated cluster's objects: resourceVersions, UIDs, watch history, and the API's
//! error vocabulary (`Status` objects with codes, reasons and causes).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::kinds::{KINDS, NAMESPACE};

/// How many past events a watch may resume from before it gets 410 Gone.
const HISTORY: usize = 4096;

/// An API error, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn not_found(kind: usize, name: &str) -> ApiError {
        let k = &KINDS[kind];
        ApiError {
            details: Some(json!({"name": name, "group": k.group, "kind": k.plural})),
            ..ApiError::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", k.qualified()),
            )
        }
    }

    pub fn already_exists(kind: usize, name: &str) -> ApiError {
        let k = &KINDS[kind];
        ApiError {
            details: Some(json!({"name": name, "group": k.group, "kind": k.plural})),
            ..ApiError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", k.qualified()),
            )
        }
    }

    pub fn conflict(kind: usize, name: &str, why: &str) -> ApiError {
        let k = &KINDS[kind];
        ApiError {
            details: Some(json!({"name": name, "group": k.group, "kind": k.plural})),
            ..ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    k.qualified()
                ),
            )
        }
    }

    /// 422 with one cause per invalid field, as `kubectl` prints them.
    pub fn invalid(kind: usize, name: &str, causes: Vec<Cause>) -> ApiError {
        let k = &KINDS[kind];
        let listed: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let message = if listed.len() == 1 {
            listed[0].clone()
        } else {
            format!("[{}]", listed.join(", "))
        };
        ApiError {
            details: Some(json!({
                "name": name,
                "group": k.group,
                "kind": k.kind,
                "causes": causes.iter().map(|c| json!({
                    "reason": c.reason, "message": c.message, "field": c.field,
                })).collect::<Vec<_>>(),
            })),
            ..ApiError::new(
                422,
                "Invalid",
                format!("{} \"{name}\" is invalid: {message}", k.kind),
            )
        }
    }

    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// One invalid field of a 422.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, …
    pub reason: &'static str,
    pub field: String,
    pub message: String,
}

impl Cause {
    pub fn required(field: impl Into<String>) -> Cause {
        Cause {
            reason: "FieldValueRequired",
            field: field.into(),
            message: "Required value".into(),
        }
    }

    pub fn invalid(field: impl Into<String>, value: &str, why: &str) -> Cause {
        Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: \"{value}\": {why}"),
        }
    }

    pub fn unsupported(field: impl Into<String>, value: &str, allowed: &[&str]) -> Cause {
        let allowed: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!(
                "Unsupported value: \"{value}\": supported values: {}",
                allowed.join(", ")
            ),
        }
    }
}

/// A change, as watch delivers it.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: usize,
    pub namespace: String,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub action: &'static str,
    pub object: Value,
}

type Key = (usize, String, String);

/// A watch's start: the events to replay, then the live feed.
pub type WatchStart = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// What a delete asks for.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// `Foreground`, `Background` or `Orphan`; empty for the type's default.
    pub propagation: String,
}

impl DeleteOptions {
    pub fn from_body(body: &Value) -> DeleteOptions {
        let text = |p: &str| body.pointer(p).and_then(Value::as_str).map(str::to_string);
        DeleteOptions {
            uid: text("/preconditions/uid"),
            resource_version: text("/preconditions/resourceVersion"),
            propagation: text("/propagationPolicy").unwrap_or_default(),
        }
    }
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted {
    /// Gone now; the object as it was.
    Gone(Value),
    /// Marked for deletion, waiting for its finalizers (foreground deletion).
    Pending(Value),
}

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub fn meta<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    object["metadata"]
        .as_object_mut()
        .expect("metadata is an object")
}

/// One cluster's objects.
pub struct ClusterStore {
    rv: u64,
    objects: BTreeMap<Key, Value>,
    history: VecDeque<Arc<Event>>,
    /// The live feed, made when the first watch subscribes: a channel preallocates its whole
    /// capacity, and most simulated clusters are never watched.
    tx: std::sync::OnceLock<broadcast::Sender<Arc<Event>>>,
}

impl Default for ClusterStore {
    fn default() -> ClusterStore {
        ClusterStore::new()
    }
}

impl ClusterStore {
    pub fn new() -> ClusterStore {
        let mut store = ClusterStore {
            rv: 1000,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            tx: std::sync::OnceLock::new(),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let _ = store.create(NAMESPACE, "", json!({"metadata": {"name": ns}}));
            let _ = store.create(
                super::kinds::find("", "v1", "serviceaccounts").expect("served"),
                ns,
                json!({"metadata": {"name": "default"}}),
            );
        }
        store
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Every object with its kind and namespace, for a snapshot.
    pub fn all(&self) -> impl Iterator<Item = (usize, &str, &Value)> {
        self.objects
            .iter()
            .map(|((kind, ns, _), v)| (*kind, ns.as_str(), v))
    }

    /// A store holding exactly `objects`, continuing from resource version `rv`.
    pub fn restored(rv: u64, objects: Vec<(usize, String, Value)>) -> ClusterStore {
        let mut store = ClusterStore {
            rv,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            tx: std::sync::OnceLock::new(),
        };
        for (kind, ns, object) in objects {
            let name = meta(&object, "name").to_string();
            store.rv = store
                .rv
                .max(meta(&object, "resourceVersion").parse().unwrap_or(0));
            store.objects.insert((kind, ns, name), object);
        }
        store
    }

    fn emit(&mut self, kind: usize, namespace: &str, action: &'static str, object: Value) {
        let event = Arc::new(Event {
            rv: self.rv,
            kind,
            namespace: namespace.to_string(),
            action,
            object,
        });
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(event.clone());
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(event);
        }
    }

    fn feed(&self) -> &broadcast::Sender<Arc<Event>> {
        self.tx.get_or_init(|| broadcast::channel(HISTORY).0)
    }

    fn bump(&mut self, object: &mut Value) {
        self.rv += 1;
        meta_mut(object).insert("resourceVersion".into(), json!(self.rv.to_string()));
    }

    pub fn get(&self, kind: usize, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&(kind, namespace.to_string(), name.to_string()))
    }

    /// Objects of a kind, in one namespace or all (`None`), sorted by namespace and name.
    pub fn list(&self, kind: usize, namespace: Option<&str>) -> Vec<&Value> {
        self.objects
            .range((kind, String::new(), String::new())..(kind + 1, String::new(), String::new()))
            .filter(|((_, ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, v)| v)
            .collect()
    }

    /// Every object of every kind whose `ownerReferences` name `uid`.
    pub fn dependents(&self, uid: &str) -> Vec<(usize, String, String)> {
        self.objects
            .iter()
            .filter(|(_, v)| {
                v.pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every object (for the garbage collector).
    pub fn keys(&self) -> Vec<(usize, String, String)> {
        self.objects.keys().cloned().collect()
    }

    pub fn has_uid(&self, uid: &str) -> bool {
        self.objects.values().any(|v| meta(v, "uid") == uid)
    }

    /// Creates an object; fills in the server-owned metadata.
    pub fn create(
        &mut self,
        kind: usize,
        namespace: &str,
        object: Value,
    ) -> Result<Value, ApiError> {
        self.create_with(kind, namespace, object, |_| {})
    }

    /// Creates an object; `prepare` sees it with its identity assigned, before it is stored
    /// (defaults that name the UID, managed fields).
    pub fn create_with(
        &mut self,
        kind: usize,
        namespace: &str,
        mut object: Value,
        prepare: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        let k = &KINDS[kind];
        if !object.is_object() {
            return Err(ApiError::bad_request("the body is not an object"));
        }
        object["apiVersion"] = json!(k.api_version());
        object["kind"] = json!(k.kind);
        let mut name = meta(&object, "name").to_string();
        if name.is_empty() {
            let prefix = meta(&object, "generateName").to_string();
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    kind,
                    "",
                    vec![Cause::required("metadata.name")],
                ));
            }
            let suffix = &uuid::Uuid::new_v4().simple().to_string()[..5];
            name = format!("{prefix}{suffix}");
            meta_mut(&mut object).insert("name".into(), json!(name));
        }
        if k.namespaced {
            if self.get(NAMESPACE, "", namespace).is_none() {
                return Err(ApiError::not_found(NAMESPACE, namespace));
            }
            if self
                .get(NAMESPACE, "", namespace)
                .is_some_and(|ns| ns.pointer("/metadata/deletionTimestamp").is_some())
            {
                return Err(ApiError::new(
                    403,
                    "Forbidden",
                    format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                        k.qualified()
                    ),
                ));
            }
        }
        let key = (kind, namespace.to_string(), name.clone());
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(kind, &name));
        }
        let m = meta_mut(&mut object);
        if k.namespaced {
            m.insert("namespace".into(), json!(namespace));
        } else {
            m.remove("namespace");
        }
        m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), json!(now_rfc3339()));
        m.insert("generation".into(), json!(1));
        m.remove("deletionTimestamp");
        if kind == NAMESPACE {
            object["status"] = json!({"phase": "Active"});
            let labels = meta_mut(&mut object)
                .entry("labels")
                .or_insert_with(|| json!({}));
            labels["kubernetes.io/metadata.name"] = json!(name);
        }
        prepare(&mut object);
        self.bump(&mut object);
        self.objects.insert(key, object.clone());
        self.emit(kind, namespace, "ADDED", object.clone());
        Ok(object)
    }

    /// Replaces an object. A non-empty `metadata.resourceVersion` must be the current one.
    pub fn replace(
        &mut self,
        kind: usize,
        namespace: &str,
        name: &str,
        mut object: Value,
    ) -> Result<Value, ApiError> {
        let key = (kind, namespace.to_string(), name.to_string());
        let Some(current) = self.objects.get(&key) else {
            return Err(ApiError::not_found(kind, name));
        };
        let asked = meta(&object, "resourceVersion");
        if !asked.is_empty() && asked != meta(current, "resourceVersion") {
            return Err(ApiError::conflict(
                kind,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        if !meta(&object, "uid").is_empty() && meta(&object, "uid") != meta(current, "uid") {
            return Err(ApiError::conflict(
                kind,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    meta(&object, "uid"),
                    meta(current, "uid")
                ),
            ));
        }
        let k = &KINDS[kind];
        object["apiVersion"] = json!(k.api_version());
        object["kind"] = json!(k.kind);
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let spec_changed = current.get("spec") != object.get("spec");
        let kept: Vec<(String, Value)> =
            ["uid", "creationTimestamp", "deletionTimestamp", "namespace"]
                .iter()
                .filter_map(|f| {
                    current
                        .pointer(&format!("/metadata/{f}"))
                        .map(|v| (f.to_string(), v.clone()))
                })
                .collect();
        let m = meta_mut(&mut object);
        m.insert("name".into(), json!(name));
        for (f, v) in kept {
            m.insert(f, v);
        }
        m.insert(
            "generation".into(),
            json!(if spec_changed {
                generation + 1
            } else {
                generation
            }),
        );
        self.bump(&mut object);
        let finalizers_left = object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if object.pointer("/metadata/deletionTimestamp").is_some() && !finalizers_left {
            self.objects.remove(&key);
            self.emit(kind, namespace, "DELETED", object.clone());
            return Ok(object);
        }
        self.objects.insert(key, object.clone());
        self.emit(kind, namespace, "MODIFIED", object.clone());
        Ok(object)
    }

    /// Deletes an object, honouring preconditions and foreground propagation.
    pub fn delete(
        &mut self,
        kind: usize,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let key = (kind, namespace.to_string(), name.to_string());
        let Some(current) = self.objects.get(&key).cloned() else {
            return Err(ApiError::not_found(kind, name));
        };
        if let Some(uid) = &options.uid
            && uid != meta(&current, "uid")
        {
            return Err(ApiError::conflict(
                kind,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta(&current, "uid")
                ),
            ));
        }
        if let Some(rv) = &options.resource_version
            && rv != meta(&current, "resourceVersion")
        {
            return Err(ApiError::conflict(
                kind,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta(&current, "resourceVersion")
                ),
            ));
        }
        let uid = meta(&current, "uid").to_string();
        if kind == NAMESPACE {
            let inside: Vec<Key> = self
                .objects
                .keys()
                .filter(|(k, ns, _)| KINDS[*k].namespaced && ns == name)
                .cloned()
                .collect();
            for (k, ns, n) in inside {
                self.remove(k, &ns, &n);
            }
        }
        let foreground = options.propagation == "Foreground" && !self.dependents(&uid).is_empty();
        let mut object = current;
        if foreground {
            let m = meta_mut(&mut object);
            if m.get("deletionTimestamp").is_none() {
                m.insert("deletionTimestamp".into(), json!(now_rfc3339()));
            }
            let finalizers = m.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == "foregroundDeletion")
            {
                list.push(json!("foregroundDeletion"));
            }
            self.bump(&mut object);
            self.objects.insert(key, object.clone());
            self.emit(kind, namespace, "MODIFIED", object.clone());
            return Ok(Deleted::Pending(object));
        }
        let orphan = options.propagation == "Orphan"
            || (options.propagation.is_empty() && kind == super::kinds::JOB);
        if orphan {
            for (k, ns, n) in self.dependents(&uid) {
                if let Some(mut dependent) = self.objects.get(&(k, ns.clone(), n.clone())).cloned()
                {
                    if let Some(refs) = dependent
                        .pointer_mut("/metadata/ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r["uid"] != uid.as_str());
                    }
                    self.bump(&mut dependent);
                    self.objects.insert((k, ns.clone(), n), dependent.clone());
                    self.emit(k, &ns, "MODIFIED", dependent);
                }
            }
        }
        Ok(Deleted::Gone(
            self.remove(kind, namespace, name).unwrap_or(object),
        ))
    }

    /// Removes an object now (controllers, the garbage collector).
    pub fn remove(&mut self, kind: usize, namespace: &str, name: &str) -> Option<Value> {
        let mut object = self
            .objects
            .remove(&(kind, namespace.to_string(), name.to_string()))?;
        self.bump(&mut object);
        self.emit(kind, namespace, "DELETED", object.clone());
        Some(object)
    }

    /// Writes an object as a controller does: no preconditions, a new resourceVersion, an
    /// event only when something changed.
    pub fn put(&mut self, kind: usize, mut object: Value) -> Value {
        let namespace = meta(&object, "namespace").to_string();
        let name = meta(&object, "name").to_string();
        let key = (kind, namespace.clone(), name);
        if let Some(current) = self.objects.get(&key) {
            let mut comparable = object.clone();
            meta_mut(&mut comparable).insert(
                "resourceVersion".into(),
                json!(meta(current, "resourceVersion")),
            );
            if &comparable == current {
                return current.clone();
            }
        }
        let existed = self.objects.contains_key(&key);
        self.bump(&mut object);
        self.objects.insert(key, object.clone());
        self.emit(
            kind,
            &namespace,
            if existed { "MODIFIED" } else { "ADDED" },
            object.clone(),
        );
        object
    }

    /// A watch from `since`: the events after it still in history, and the live feed. `None`
    /// when `since` is older than the history (the client must list again: 410 Gone).
    pub fn watch_from(&self, since: u64) -> Option<WatchStart> {
        let oldest = self
            .history
            .front()
            .map_or(self.rv, |e| e.rv.saturating_sub(1));
        if since < oldest && since != 0 {
            return None;
        }
        let replay = self
            .history
            .iter()
            .filter(|e| e.rv > since)
            .cloned()
            .collect();
        Some((replay, self.feed().subscribe()))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.feed().subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::super::kinds::POD;
    use super::*;

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    }

    #[test]
    fn create_assigns_identity_and_versions_and_refuses_duplicates() {
        let mut store = ClusterStore::new();
        let a = store.create(POD, "default", pod("a")).unwrap();
        assert_eq!(meta(&a, "namespace"), "default");
        assert!(!meta(&a, "uid").is_empty());
        let rv: u64 = meta(&a, "resourceVersion").parse().unwrap();
        assert_eq!(rv, store.resource_version());
        assert_eq!(
            store.create(POD, "default", pod("a")).unwrap_err().code,
            409
        );
        assert_eq!(
            store.create(POD, "nowhere", pod("b")).unwrap_err().code,
            404
        );
        let generated = store
            .create(
                POD,
                "default",
                json!({"metadata": {"generateName": "job-"}}),
            )
            .unwrap();
        assert!(meta(&generated, "name").starts_with("job-"));
    }

    #[test]
    fn stale_versions_and_uids_conflict() {
        let mut store = ClusterStore::new();
        let a = store.create(POD, "default", pod("a")).unwrap();
        let mut newer = a.clone();
        newer["spec"]["containers"][0]["image"] = json!("j");
        let newer = store.replace(POD, "default", "a", newer).unwrap();
        assert_eq!(newer["metadata"]["generation"], 2);
        assert_eq!(
            store
                .replace(POD, "default", "a", a.clone())
                .unwrap_err()
                .code,
            409
        );
        let stale = DeleteOptions {
            uid: Some(uuid::Uuid::new_v4().to_string()),
            ..Default::default()
        };
        let err = store.delete(POD, "default", "a", &stale).unwrap_err();
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert!(
            err.message.contains("Precondition failed: UID"),
            "{}",
            err.message
        );
        let right = DeleteOptions {
            uid: Some(meta(&a, "uid").to_string()),
            ..Default::default()
        };
        assert!(matches!(
            store.delete(POD, "default", "a", &right),
            Ok(Deleted::Gone(_))
        ));
        assert!(store.get(POD, "default", "a").is_none());
    }

    #[test]
    fn watch_replays_from_a_version_and_refuses_one_too_old() {
        let mut store = ClusterStore::new();
        let since = store.resource_version();
        store.create(POD, "default", pod("a")).unwrap();
        store.remove(POD, "default", "a");
        let (replay, _) = store.watch_from(since).unwrap();
        let actions: Vec<_> = replay.iter().map(|e| e.action).collect();
        assert_eq!(actions, ["ADDED", "DELETED"]);
        for i in 0..HISTORY + 10 {
            store.create(POD, "default", pod(&format!("p{i}"))).unwrap();
        }
        assert!(store.watch_from(since).is_none());
    }

    #[test]
    fn deleting_a_namespace_deletes_what_it_holds() {
        let mut store = ClusterStore::new();
        store
            .create(NAMESPACE, "", json!({"metadata": {"name": "probe"}}))
            .unwrap();
        store.create(POD, "probe", pod("a")).unwrap();
        store
            .delete(NAMESPACE, "", "probe", &DeleteOptions::default())
            .unwrap();
        assert!(store.list(POD, Some("probe")).is_empty());
    }
}
