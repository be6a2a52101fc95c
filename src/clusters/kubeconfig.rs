//! Kubeconfig files: the ones `fleetbot kubeconfig` writes (one context per cluster, an exec
//! credential that asks `fleetbot kube-token` for an IAM token) and the `--kubeconfigs` map
//! (`{project_key: {cluster_name: path}}`) that reaches clusters through files instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Serialize;

use super::ClusterEndpoint;

/// `fleet-<fleet>-<project_key>-<cluster>` (fleet-engine §2.13).
pub fn context_name(fleet: &str, project_key: &str, cluster: &str) -> String {
    format!("fleet-{fleet}-{project_key}-{cluster}")
}

/// `--kubeconfigs MAP.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeconfigMap {
    entries: BTreeMap<String, BTreeMap<String, PathBuf>>,
}

/// Why a `--kubeconfigs` map is refused: where, and what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigMapError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The map file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The map is not JSON (or YAML's JSON subset).
    #[error("not JSON (line {line}, column {column}): {message}")]
    Json {
        /// Where the parser stopped.
        line: usize,
        /// Where the parser stopped.
        column: usize,
        /// The parser's words.
        message: String,
    },
    /// A value of the wrong shape, at `at` (`project` or `project.cluster`; empty: the root).
    #[error("{at}{}expected {expected}", if at.is_empty() { "" } else { ": " })]
    Shape {
        /// Where.
        at: String,
        /// What belongs there.
        expected: &'static str,
    },
    /// What went wrong inside the file at `path`.
    #[error("{}: {inner}", path.display())]
    In {
        /// The map file.
        path: PathBuf,
        /// What.
        inner: Box<KubeconfigMapError>,
    },
}

impl KubeconfigMap {
    /// Reads the map; relative paths are relative to the map file.
    pub fn load(path: &Path) -> Result<KubeconfigMap, KubeconfigMapError> {
        let text = std::fs::read_to_string(path).map_err(|source| KubeconfigMapError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        KubeconfigMap::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(|inner| {
            KubeconfigMapError::In {
                path: path.to_path_buf(),
                inner: Box::new(inner),
            }
        })
    }

    pub fn parse(text: &str, base: &Path) -> Result<KubeconfigMap, KubeconfigMapError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| KubeconfigMapError::Json {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?;
        let shape = |at: String, expected: &'static str| KubeconfigMapError::Shape { at, expected };
        let projects = value.as_object().ok_or_else(|| {
            shape(
                String::new(),
                "an object {project_key: {cluster_name: kubeconfig_path}}",
            )
        })?;
        let mut entries = BTreeMap::new();
        for (key, clusters) in projects {
            let clusters = clusters
                .as_object()
                .ok_or_else(|| shape(key.clone(), "an object {cluster_name: kubeconfig_path}"))?;
            let mut out = BTreeMap::new();
            for (cluster, file) in clusters {
                let file = file
                    .as_str()
                    .filter(|f| !f.trim().is_empty())
                    .ok_or_else(|| shape(format!("{key}.{cluster}"), "a kubeconfig path"))?;
                let file = Path::new(file);
                out.insert(
                    cluster.clone(),
                    if file.is_absolute() {
                        file.to_path_buf()
                    } else {
                        base.join(file)
                    },
                );
            }
            entries.insert(key.clone(), out);
        }
        Ok(KubeconfigMap { entries })
    }

    /// One target's kubeconfig (`verify-mig --kubeconfig`).
    pub fn single(project_key: &str, cluster: &str, path: PathBuf) -> KubeconfigMap {
        KubeconfigMap {
            entries: [(
                project_key.to_string(),
                [(cluster.to_string(), path)].into(),
            )]
            .into(),
        }
    }

    pub fn get(&self, project_key: &str, cluster: &str) -> Option<&Path> {
        self.entries
            .get(project_key)
            .and_then(|c| c.get(cluster))
            .map(PathBuf::as_path)
    }
}

/// One cluster in a written kubeconfig.
#[derive(Debug, Clone)]
pub struct KubeconfigEntry {
    pub context: String,
    pub endpoint: ClusterEndpoint,
}

/// The command kubectl runs for a token.
#[derive(Debug, Clone)]
pub struct ExecCommand {
    pub command: String,
    pub args: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct File<'a> {
    api_version: &'static str,
    kind: &'static str,
    preferences: BTreeMap<String, String>,
    current_context: &'a str,
    clusters: Vec<Named<ClusterBlock<'a>>>,
    contexts: Vec<Named<ContextBlock<'a>>>,
    users: Vec<Named<UserBlock<'a>>>,
}

#[derive(Serialize)]
struct Named<T> {
    name: String,
    #[serde(flatten)]
    body: T,
}

#[derive(Serialize)]
struct ClusterBlock<'a> {
    cluster: ClusterFields<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterFields<'a> {
    server: &'a str,
    certificate_authority_data: String,
}

#[derive(Serialize)]
struct ContextBlock<'a> {
    context: ContextFields<'a>,
}

#[derive(Serialize)]
struct ContextFields<'a> {
    cluster: &'a str,
    user: &'a str,
}

#[derive(Serialize)]
struct UserBlock<'a> {
    user: UserFields<'a>,
}

#[derive(Serialize)]
struct UserFields<'a> {
    exec: Exec<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Exec<'a> {
    api_version: &'static str,
    command: &'a str,
    args: &'a [String],
    interactive_mode: &'static str,
    provide_cluster_info: bool,
}

/// A kubeconfig with one context per entry (the first is current).
pub fn render(entries: &[KubeconfigEntry], exec: &ExecCommand) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let file = File {
        api_version: "v1",
        kind: "Config",
        preferences: BTreeMap::new(),
        current_context: entries.first().map_or("", |e| e.context.as_str()),
        clusters: entries
            .iter()
            .map(|e| Named {
                name: e.context.clone(),
                body: ClusterBlock {
                    cluster: ClusterFields {
                        server: &e.endpoint.server,
                        certificate_authority_data: b64.encode(e.endpoint.ca_pem.as_bytes()),
                    },
                },
            })
            .collect(),
        contexts: entries
            .iter()
            .map(|e| Named {
                name: e.context.clone(),
                body: ContextBlock {
                    context: ContextFields {
                        cluster: &e.context,
                        user: &e.context,
                    },
                },
            })
            .collect(),
        users: entries
            .iter()
            .map(|e| Named {
                name: e.context.clone(),
                body: UserBlock {
                    user: UserFields {
                        exec: Exec {
                            api_version: "client.authentication.k8s.io/v1",
                            command: &exec.command,
                            args: &exec.args,
                            interactive_mode: "Never",
                            provide_cluster_info: false,
                        },
                    },
                },
            })
            .collect(),
    };
    serde_yaml::to_string(&file).expect("a kubeconfig serializes")
}

/// What `fleetbot kube-token` prints: a client-go ExecCredential.
pub fn exec_credential(token: &str) -> String {
    serde_json::json!({
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1",
        "spec": {"interactive": false},
        "status": {"token": token},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_resolve_relative_paths_and_name_what_is_wrong() {
        let map = KubeconfigMap::parse(
            r#"{"training": {"gpu": "kc/gpu.yaml", "cpu": "/abs/cpu.yaml"}}"#,
            Path::new("/etc/fleet"),
        )
        .unwrap();
        assert_eq!(
            map.get("training", "gpu"),
            Some(Path::new("/etc/fleet/kc/gpu.yaml"))
        );
        assert_eq!(map.get("training", "cpu"), Some(Path::new("/abs/cpu.yaml")));
        assert_eq!(map.get("training", "other"), None);
        let err = KubeconfigMap::parse(r#"{"training": {"gpu": 3}}"#, Path::new(".")).unwrap_err();
        assert_eq!(err.to_string(), "training.gpu: expected a kubeconfig path");
        let err = KubeconfigMap::parse("[]", Path::new(".")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected an object {project_key: {cluster_name: kubeconfig_path}}"
        );
        let err = KubeconfigMap::parse("{", Path::new(".")).unwrap_err();
        assert!(
            matches!(err, KubeconfigMapError::Json { line: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().starts_with("not JSON (line 1"), "{err}");
    }

    #[test]
    fn written_kubeconfigs_have_one_context_per_cluster_and_an_exec_credential() {
        let entries = vec![
            KubeconfigEntry {
                context: context_name("demo", "training", "gpu"),
                endpoint: ClusterEndpoint {
                    server: "https://127.0.0.1:1/mk8s/a".into(),
                    ca_pem: "PEM".into(),
                },
            },
            KubeconfigEntry {
                context: context_name("demo", "training", "cpu"),
                endpoint: ClusterEndpoint {
                    server: "https://127.0.0.1:1/mk8s/b".into(),
                    ca_pem: "PEM".into(),
                },
            },
        ];
        let text = render(
            &entries,
            &ExecCommand {
                command: "/usr/bin/fleetbot".into(),
                args: vec!["kube-token".into()],
            },
        );
        let parsed: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(parsed["current-context"], "fleet-demo-training-gpu");
        assert_eq!(parsed["contexts"].as_sequence().unwrap().len(), 2);
        assert_eq!(
            parsed["users"][1]["user"]["exec"]["command"],
            "/usr/bin/fleetbot"
        );
        assert_eq!(
            parsed["clusters"][0]["cluster"]["certificate-authority-data"],
            "UEVN"
        );
    }
}
