//! How a verification runs: one options struct for storage, graphics and MIG, with what only
//! one kind needs carried as that kind's data ([`Storage`], [`Graphics`], [`Mig`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::clusters::kubeconfig::KubeconfigMap;

/// The three verifications fleetbot runs on deployed clusters, as options, commands, checks
/// and `.fleetbot.yml`'s `verify_after_apply` name them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Shared filesystem on every worker (fleet-engine §7.1).
    Storage,
    /// CUDA, GLX, EGL and Vulkan on every GPU worker (§7.2).
    Graphics,
    /// The MIG layout, the GPU Operator and every slice (§7.3).
    Mig,
}

impl Kind {
    /// The kind as commands, checks and evidence name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Storage => "storage",
            Kind::Graphics => "graphics",
            Kind::Mig => "mig",
        }
    }

    /// The slash command's and the CLI subcommand's name.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Storage => "verify-storage",
            Kind::Graphics => "verify-graphics",
            Kind::Mig => "verify-mig",
        }
    }

    /// The kind in a title ("Storage verification running").
    pub fn title(self) -> &'static str {
        match self {
            Kind::Storage => "Storage",
            Kind::Graphics => "Graphics",
            Kind::Mig => "MIG",
        }
    }
}

/// What one kind's settings are for.
pub trait KindSettings: std::fmt::Debug + Clone + Default {
    /// Which verification these settings run.
    const KIND: Kind;
}

/// How a verification of kind `K` runs.
#[derive(Debug, Clone)]
pub struct Options<K> {
    /// `--only-projects`; for MIG's one-target run (`verify-mig --project`) at most one.
    pub only_projects: Vec<String>,
    /// `--only-clusters`; for MIG's one-target run (`verify-mig --cluster`) at most one.
    pub only_clusters: Vec<String>,
    /// The spec's project prefix, for selectors naming display names.
    pub project_prefix: String,
    /// The tenant the credentials belong to, which each target's identity must match.
    pub tenant: Option<String>,
    /// `--kubeconfig-dir`: the kubeconfig of each target, whose endpoint and CA must still be
    /// the cluster's (none: fleetbot's own access).
    pub kubeconfigs: Option<KubeconfigMap>,
    /// The probe image, by digest.
    pub probe_image: String,
    /// Where the probe pods run.
    pub namespace: String,
    /// Targets verified at once (at least 1). MIG runs one target at a time whatever this
    /// says: each target's GPU Operator is judged while nothing else moves it.
    pub concurrency: usize,
    /// How long cleanup may take before the target fails for what it left behind.
    pub cleanup_timeout: Duration,
    /// Private receipts go to a fresh directory under here (storage and graphics).
    pub evidence_dir: Option<PathBuf>,
    /// What only this kind needs.
    pub kind: K,
}

impl<K: KindSettings> Options<K> {
    /// The defaults of kind `K` with `probe_image`: the whole fleet, namespace `default`, one
    /// target at a time, five minutes for cleanup, no evidence directory.
    pub fn new(probe_image: &str) -> Options<K> {
        Options {
            only_projects: Vec::new(),
            only_clusters: Vec::new(),
            project_prefix: String::new(),
            tenant: None,
            kubeconfigs: None,
            probe_image: probe_image.to_string(),
            namespace: "default".into(),
            concurrency: 1,
            cleanup_timeout: Duration::from_secs(300),
            evidence_dir: None,
            kind: K::default(),
        }
    }
}

/// What only storage verification needs.
#[derive(Debug, Clone)]
pub struct Storage {
    /// A probe pod must be running this soon after it is created.
    pub start_timeout: Duration,
    /// And done this soon.
    pub phase_timeout: Duration,
}

impl Default for Storage {
    fn default() -> Storage {
        Storage {
            start_timeout: Duration::from_secs(300),
            phase_timeout: Duration::from_secs(600),
        }
    }
}

impl KindSettings for Storage {
    const KIND: Kind = Kind::Storage;
}

/// What only graphics verification needs.
#[derive(Debug, Clone, Default)]
pub struct Graphics {
    /// How long GPUs must be advertised unchanged before probing (`None`: the cluster's
    /// `gpu_health_stabilization_seconds`).
    pub stabilization: Option<Duration>,
    /// The whole target's limit (`None`: the cluster's `gpu_health_timeout_minutes`).
    pub timeout: Option<Duration>,
}

impl KindSettings for Graphics {
    const KIND: Kind = Kind::Graphics;
}

/// What only MIG verification needs.
#[derive(Debug, Clone)]
pub struct Mig {
    /// `--kubeconfig`: the one target's kubeconfig, whose endpoint and CA must still be the
    /// cluster's.
    pub kubeconfig: Option<PathBuf>,
    /// `--wait`: snapshots until two in a row are identical and clean.
    pub wait: bool,
    /// `--reconcile`: replace a stale OnDelete driver pod as maintenance.
    pub reconcile: bool,
    /// The whole run's limit (`None`: the cluster's `gpu_health_timeout_minutes`).
    pub timeout: Option<Duration>,
    /// Between snapshots.
    pub poll: Duration,
}

impl Default for Mig {
    fn default() -> Mig {
        Mig {
            kubeconfig: None,
            wait: false,
            reconcile: false,
            timeout: None,
            poll: Duration::from_secs(5),
        }
    }
}

impl KindSettings for Mig {
    const KIND: Kind = Kind::Mig;
}

/// How a storage verification runs.
pub type StorageOptions = Options<Storage>;
/// How a graphics verification runs.
pub type GraphicsOptions = Options<Graphics>;
/// How a MIG verification runs.
pub type MigOptions = Options<Mig>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_keeps_its_defaults_and_names_itself() {
        let storage = StorageOptions::new("probe@sha256:00");
        assert_eq!(Storage::KIND, Kind::Storage);
        assert_eq!(storage.kind.start_timeout, Duration::from_secs(300));
        assert_eq!(storage.kind.phase_timeout, Duration::from_secs(600));
        let graphics = GraphicsOptions::new("probe@sha256:00");
        assert_eq!(Graphics::KIND, Kind::Graphics);
        assert!(graphics.kind.stabilization.is_none() && graphics.kind.timeout.is_none());
        let mig = MigOptions::new("probe@sha256:00");
        assert_eq!(
            (Mig::KIND.as_str(), Mig::KIND.command()),
            ("mig", "verify-mig")
        );
        assert_eq!(mig.kind.poll, Duration::from_secs(5));
        assert!(!mig.kind.wait && !mig.kind.reconcile);
        for cleanup in [
            storage.cleanup_timeout,
            graphics.cleanup_timeout,
            mig.cleanup_timeout,
        ] {
            assert_eq!(cleanup, Duration::from_secs(300));
        }
        assert_eq!(
            (storage.concurrency, storage.namespace.as_str()),
            (1, "default")
        );
    }
}
