//! The objects a storage verification creates in a cluster (fleet-engine §7.1): probe pods
//! pinned to one node each by `matchFields metadata.name`, running as root with every
//! capability dropped, `hostPID` only where the host's mountinfo must be read, the host mount
//! path at `/host-storage` (HostToContainer), the host's `/proc` and `/etc/fstab` read-only,
//! tolerating every NoSchedule taint; and the one RWX claim of the default class. Everything
//! carries the run's identity labels, so cleanup can find what it owns and only that.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::{Value, json};

/// The label that names a verification run; its value is the run ID.
pub const RUN_LABEL: &str = "fleetbot.dev/verification";
pub const KIND_LABEL: &str = "fleetbot.dev/verification-kind";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// The probe's program in its image.
pub const PROBE_ENTRYPOINT: &str = "/fleetbot";

/// Where pods see the host's filesystem mount.
pub const HOST_STORAGE: &str = "/host-storage";
/// Where pods see the shared claim.
pub const SHARED_DIR: &str = "/shared";

/// What every object of one run shares.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// `storage` or `graphics`: names the run's objects and its kind label.
    pub kind: &'static str,
    pub run_id: String,
    pub namespace: String,
    /// The probe image, by digest.
    pub image: String,
    /// The host's mount point of the filesystem (`filestore_mount_path`).
    pub mount_path: String,
    /// Its virtiofs mount tag.
    pub mount_tag: String,
}

impl RunContext {
    pub fn labels(&self) -> BTreeMap<String, String> {
        [
            (RUN_LABEL, self.run_id.as_str()),
            (KIND_LABEL, self.kind),
            (MANAGED_BY_LABEL, "fleetbot"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// `fleetbot.dev/verification=<run>`: the selector of everything this run made.
    pub fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.run_id)
    }

    pub fn pod_name(&self, phase: &str, index: usize) -> String {
        format!("fleetbot-{}-{}-{phase}-{index}", self.kind, self.run_id)
    }

    pub fn claim_name(&self) -> String {
        format!("fleetbot-{}-{}", self.kind, self.run_id)
    }

    /// One worker's host-phase probe directory, relative to the filesystem's root.
    pub fn probe_dir(&self, node_name: &str) -> String {
        crate::probe::storage::host_probe_dir(&self.run_id, node_name)
    }

    /// A probe pod: `args` after `probe storage`, with the host volumes when `host` and
    /// `claim` mounted at [`SHARED_DIR`] when given.
    fn pod(
        &self,
        name: &str,
        node: &str,
        args: Vec<String>,
        host: bool,
        claim: Option<&str>,
    ) -> Pod {
        let mut volumes = Vec::new();
        let mut mounts = Vec::new();
        if host {
            volumes.push(json!({"name": "host-storage",
                "hostPath": {"path": self.mount_path, "type": "Directory"}}));
            volumes.push(
                json!({"name": "host-proc", "hostPath": {"path": "/proc", "type": "Directory"}}),
            );
            volumes.push(
                json!({"name": "host-fstab", "hostPath": {"path": "/etc/fstab", "type": "File"}}),
            );
            mounts.push(json!({"name": "host-storage", "mountPath": HOST_STORAGE,
                "mountPropagation": "HostToContainer"}));
            mounts.push(json!({"name": "host-proc", "mountPath": "/host/proc", "readOnly": true}));
            mounts.push(
                json!({"name": "host-fstab", "mountPath": "/host/etc/fstab", "readOnly": true}),
            );
        }
        if let Some(claim) = claim {
            volumes.push(json!({"name": "shared", "persistentVolumeClaim": {"claimName": claim}}));
            mounts.push(json!({"name": "shared", "mountPath": SHARED_DIR}));
        }
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": self.labels()},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": false,
                "enableServiceLinks": false,
                "hostPID": host,
                "terminationGracePeriodSeconds": 5,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
                "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                "volumes": volumes,
                "containers": [{
                    "name": "probe",
                    "image": self.image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": [PROBE_ENTRYPOINT, "probe", "storage"],
                    "args": args,
                    "env": [{"name": "NODE_NAME",
                        "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    "securityContext": {
                        "runAsUser": 0,
                        "runAsGroup": 0,
                        "allowPrivilegeEscalation": false,
                        "privileged": false,
                        "readOnlyRootFilesystem": true,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "resources": {
                        "requests": {"cpu": "50m", "memory": "32Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                    "volumeMounts": mounts,
                }],
            },
        });
        serde_json::from_value(pod).expect("a probe pod is a valid Pod")
    }

    /// The host phase on node `index`.
    pub fn host_pod(&self, index: usize, node: &str, requested_bytes: u64) -> Pod {
        let args = vec![
            "host".to_string(),
            format!("--mount-dir={HOST_STORAGE}"),
            format!("--mount-point={}", self.mount_path),
            format!("--source={}", self.mount_tag),
            "--mountinfo=/host/proc/1/mountinfo".into(),
            "--fstab=/host/etc/fstab".into(),
            "--boot-id=/host/proc/sys/kernel/random/boot_id".into(),
            format!("--requested-bytes={requested_bytes}"),
            format!("--run-id={}", self.run_id),
        ];
        self.pod(&self.pod_name("host", index), node, args, true, None)
    }

    /// The shared phase on node `index` of `nodes`.
    pub fn shared_pod(&self, index: usize, node: &str, nodes: usize, wait_seconds: u64) -> Pod {
        let args = vec![
            "shared".to_string(),
            format!("--dir={SHARED_DIR}"),
            format!("--node-index={index}"),
            format!("--nodes={nodes}"),
            format!("--run-id={}", self.run_id),
            format!("--wait-seconds={wait_seconds}"),
        ];
        let claim = self.claim_name();
        self.pod(
            &self.pod_name("shared", index),
            node,
            args,
            false,
            Some(&claim),
        )
    }

    /// A look at named paths of the host's filesystem from `node`.
    pub fn paths_pod(
        &self,
        phase: &str,
        index: usize,
        node: &str,
        list: Option<&str>,
        absent: &[String],
    ) -> Pod {
        let mut args = vec!["paths".to_string(), format!("--root={HOST_STORAGE}")];
        if let Some(dir) = list {
            args.push(format!("--list={dir}"));
        }
        args.extend(absent.iter().map(|p| format!("--absent={p}")));
        self.pod(&self.pod_name(phase, index), node, args, true, None)
    }

    /// The graphics probe on GPU node `index`, holding all its `gpus` GPUs. It needs no
    /// host volume and no host namespace: the boot ID is the kernel's own.
    pub fn graphics_pod(&self, index: usize, node: &str, gpus: i64) -> Pod {
        let mut pod = self.pod(
            &self.pod_name("graphics", index),
            node,
            vec![
                "--boot-id=/proc/sys/kernel/random/boot_id".into(),
                "--driver-version-file=/proc/driver/nvidia/version".into(),
            ],
            false,
            None,
        );
        let mut v = serde_json::to_value(&pod).expect("a pod serialises");
        let c = &mut v["spec"]["containers"][0];
        c["command"] = json!([PROBE_ENTRYPOINT, "probe", "graphics"]);
        c["resources"]["limits"]["nvidia.com/gpu"] = json!(gpus.to_string());
        c["env"].as_array_mut().expect("env").push(
            json!({"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility,graphics"}),
        );
        v["spec"]["tolerations"]
            .as_array_mut()
            .expect("tolerations")
            .push(json!({"key": "nvidia.com/gpu", "operator": "Exists"}));
        pod = serde_json::from_value(v).expect("a graphics probe pod is a valid Pod");
        pod
    }

    /// The MIG probe, pinned to `node` and holding every slice its layout gives (`slices`:
    /// MIG resource → count), so the driver shows it the whole layout.
    pub fn mig_pod(&self, index: usize, node: &str, slices: &BTreeMap<String, i64>) -> Pod {
        let pod = self.pod(
            &self.pod_name("mig", index),
            node,
            vec!["--boot-id=/proc/sys/kernel/random/boot_id".into()],
            false,
            None,
        );
        let mut v = serde_json::to_value(&pod).expect("a pod serialises");
        let c = &mut v["spec"]["containers"][0];
        c["command"] = json!([PROBE_ENTRYPOINT, "probe", "mig"]);
        for (resource, count) in slices {
            c["resources"]["limits"][resource] = json!(count.to_string());
        }
        c["env"]
            .as_array_mut()
            .expect("env")
            .push(json!({"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}));
        v["spec"]["tolerations"]
            .as_array_mut()
            .expect("tolerations")
            .push(json!({"key": "nvidia.com/gpu", "operator": "Exists"}));
        serde_json::from_value(v).expect("a MIG probe pod is a valid Pod")
    }

    /// The one RWX claim of the default class.
    pub fn claim(&self) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": self.claim_name(), "namespace": self.namespace,
                "labels": self.labels()},
            "spec": {"accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Gi"}}},
        }))
        .expect("a claim is a valid PersistentVolumeClaim")
    }
}

/// The command and arguments a pod runs, as its spec says, to compare with what was sent.
pub fn command_of(pod: &Pod) -> Option<Vec<String>> {
    let c = pod.spec.as_ref()?.containers.first()?;
    let mut out = c.command.clone().unwrap_or_default();
    out.extend(c.args.clone().unwrap_or_default());
    Some(out)
}

/// The node a pod is pinned to by its `matchFields` term.
pub fn pinned_node(pod: &Pod) -> Option<String> {
    let v = serde_json::to_value(pod.spec.as_ref()?.affinity.as_ref()?).ok()?;
    v.pointer("/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunContext {
        RunContext {
            kind: "storage",
            run_id: "0123abcd".into(),
            namespace: "default".into(),
            image: format!("registry.example/probe@sha256:{}", "a".repeat(64)),
            mount_path: "/mnt/data".into(),
            mount_tag: "data".into(),
        }
    }

    #[test]
    fn a_host_probe_is_pinned_least_privileged_and_labelled() {
        let pod = serde_json::to_value(run().host_pod(1, "node-b", 64 << 30)).unwrap();
        assert_eq!(pod["metadata"]["name"], "fleetbot-storage-0123abcd-host-1");
        assert_eq!(pod["metadata"]["labels"][RUN_LABEL], "0123abcd");
        assert_eq!(
            pinned_node(&serde_json::from_value(pod.clone()).unwrap()).as_deref(),
            Some("node-b")
        );
        let spec = &pod["spec"];
        assert_eq!(spec["hostPID"], true);
        assert_eq!(spec["automountServiceAccountToken"], false);
        assert_eq!(
            spec["tolerations"],
            json!([{"operator": "Exists", "effect": "NoSchedule"}])
        );
        let c = &spec["containers"][0];
        assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
        assert_eq!(c["securityContext"]["runAsUser"], 0);
        let mounts = c["volumeMounts"].as_array().unwrap();
        assert!(
            mounts
                .iter()
                .any(|m| m["mountPath"] == HOST_STORAGE
                    && m["mountPropagation"] == "HostToContainer")
        );
        assert!(
            mounts
                .iter()
                .any(|m| m["mountPath"] == "/host/proc" && m["readOnly"] == true)
        );
        assert!(
            mounts
                .iter()
                .any(|m| m["mountPath"] == "/host/etc/fstab" && m["readOnly"] == true)
        );
        assert!(
            c["args"]
                .as_array()
                .unwrap()
                .contains(&json!("--requested-bytes=68719476736"))
        );
    }

    #[test]
    fn a_shared_probe_mounts_only_the_claim_and_shares_no_host_namespace() {
        let pod = serde_json::to_value(run().shared_pod(0, "node-a", 2, 60)).unwrap();
        assert_eq!(pod["spec"]["hostPID"], false);
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{"name": "shared", "persistentVolumeClaim": {"claimName": "fleetbot-storage-0123abcd"}}])
        );
        let claim = serde_json::to_value(run().claim()).unwrap();
        assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteMany"]));
        assert!(
            claim["spec"].get("storageClassName").is_none(),
            "the default class"
        );
        assert_eq!(claim["metadata"]["labels"][KIND_LABEL], "storage");
    }
}
