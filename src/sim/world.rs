//! The simulator's world file (`fixtures/sim/*.yaml`): tenant, regions, quota allowances,
//! capacity blocks, service accounts, timing and scripted faults.
//!
//! A world names things; it never spells cloud IDs. IDs are derived from the names (see
//! [`crate::cloud::nid::make`]), so world files stay free of anything that looks like a real ID.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// A quota limit: a number, or `unlimited` (an allowance without a limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Limit {
    Finite(u64),
    Named(Unlimited),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unlimited {
    Unlimited,
}

impl Limit {
    pub fn finite(self) -> Option<u64> {
        match self {
            Limit::Finite(n) => Some(n),
            Limit::Named(_) => None,
        }
    }
}

/// One tenant quota allowance in one region.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaSpec {
    pub limit: Limit,
    /// Usage by resources the simulator does not model (other teams' workloads).
    #[serde(default)]
    pub usage: u64,
    /// Override the unit the allowance reports (default by quota kind).
    #[serde(default)]
    pub unit: Option<String>,
}

/// Quotas may be written as a bare limit or as a mapping.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum QuotaEntry {
    Limit(Limit),
    Full(QuotaSpec),
}

impl QuotaEntry {
    pub fn spec(&self) -> QuotaSpec {
        match self {
            QuotaEntry::Limit(limit) => QuotaSpec {
                limit: *limit,
                usage: 0,
                unit: None,
            },
            QuotaEntry::Full(spec) => spec.clone(),
        }
    }
}

/// A capacity block group (reserved GPUs) of the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityBlockSpec {
    /// The handle tests and world files use; the ID is derived from it.
    pub name: String,
    pub region: String,
    pub platform: String,
    #[serde(default)]
    pub fabric: String,
    /// Reserved GPUs.
    pub limit: u64,
    /// GPUs already used by workloads the simulator does not model.
    #[serde(default)]
    pub usage: u64,
    /// `active` (default), `allocating`, `shutting` or `inactive`.
    #[serde(default = "default_active")]
    pub state: String,
}

fn default_active() -> String {
    "active".to_string()
}

/// A service account whose JWTs the token exchange accepts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceAccountSpec {
    pub name: String,
    /// PEM public key (SPKI) the account's JWTs are verified against.
    pub public_key_pem: String,
}

/// A project that exists before fleetbot runs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSeed {
    pub name: String,
    pub region: String,
}

/// A scripted fault for one method (`/nebius.mk8s.v1.ClusterService/Create`) or a method suffix
/// (`ClusterService/Create`, or `*` for every method).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    pub method: String,
    /// gRPC code name to fail with (`unavailable`, `internal`, `resource_exhausted`, …).
    #[serde(default = "default_fault_code")]
    pub code: String,
    /// Fraction of calls that fail, 0.0–1.0, drawn from the world's seeded generator.
    #[serde(default)]
    pub error_rate: f64,
    /// 1-based call numbers (per method) that fail.
    #[serde(default)]
    pub fail_nth: Vec<u64>,
    /// Extra latency for every matching call.
    #[serde(default)]
    pub latency_ms: u64,
    /// The retry type the injected `ServiceError` carries (`call`, `nothing`, …); none by default.
    #[serde(default)]
    pub retry_type: Option<String>,
    /// Fail after the call took effect, as when the reply is lost on the way back: a retry
    /// must carry the same idempotency key to avoid acting twice.
    #[serde(default)]
    pub after_effect: bool,
}

/// How a marketplace release of one product ends (tests): it fails with a message, or it
/// never leaves INSTALLING. Without one, every release is DEPLOYED when its operation ends.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseOutcome {
    /// FAILED, with this error message.
    #[serde(default)]
    pub failed: Option<String>,
    /// Stays INSTALLING for ever.
    #[serde(default)]
    pub installing: bool,
}

fn default_fault_code() -> String {
    "unavailable".to_string()
}

/// How the simulated object storage misbehaves, for tests of fleetbot's readiness checks.
/// Everything is off by default: buckets and the S3 endpoint behave as Nebius's do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectStorageBehaviour {
    /// Buckets report `suspension_state: SUSPENDED` (as for a tenant with unpaid bills).
    #[serde(default)]
    pub suspend_buckets: bool,
    /// Buckets report this default storage class (`STANDARD`, `ENHANCED_THROUGHPUT`, …)
    /// whatever was asked.
    #[serde(default)]
    pub report_storage_class: Option<String>,
    /// GetObject answers with bytes other than those stored.
    #[serde(default)]
    pub corrupt_reads: bool,
    /// DeleteObject answers 204 and keeps the object.
    #[serde(default)]
    pub ignore_deletes: bool,
}

/// The whole world.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct World {
    /// Used to derive every ID, so two worlds never share IDs.
    pub name: String,
    #[serde(default = "default_tenant_name")]
    pub tenant_name: String,
    pub regions: Vec<String>,
    /// How long a mutation runs before its operation completes.
    #[serde(default)]
    pub operation_latency_ms: u64,
    /// Tenant allowances: region → quota name → limit.
    #[serde(default)]
    pub quotas: BTreeMap<String, BTreeMap<String, QuotaEntry>>,
    #[serde(default)]
    pub capacity_block_groups: Vec<CapacityBlockSpec>,
    #[serde(default)]
    pub service_accounts: Vec<ServiceAccountSpec>,
    /// Bearer tokens accepted as they are (the `NEBIUS_IAM_TOKEN` case).
    #[serde(default)]
    pub static_tokens: Vec<String>,
    #[serde(default)]
    pub projects: Vec<ProjectSeed>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Product slug → how its releases end (absent: deployed).
    #[serde(default)]
    pub release_outcomes: BTreeMap<String, ReleaseOutcome>,
    /// Seed for the fault generator.
    #[serde(default)]
    pub seed: u64,
    /// Lifetime of exchanged tokens.
    #[serde(default = "default_token_ttl")]
    pub token_ttl_seconds: i64,
    /// How long an `x-idempotency-key` is remembered. Nebius does not publish its window;
    /// a day is the common choice of idempotent APIs, and a world may shorten it.
    #[serde(default = "default_idempotency_window")]
    pub idempotency_window_seconds: i64,
    #[serde(default)]
    pub object_storage: ObjectStorageBehaviour,
    /// Clusters (by name) whose node groups run with one node fewer ready than they ask for,
    /// as when a node fails its health checks: for tests of health-gated rollouts.
    #[serde(default)]
    pub degraded_clusters: Vec<String>,
}

fn default_idempotency_window() -> i64 {
    24 * 3600
}

fn default_tenant_name() -> String {
    "fleetbot-sim".to_string()
}

fn default_token_ttl() -> i64 {
    3600
}

/// Why a world file is refused.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The file cannot be read.
    #[error("cannot read world {}: {source}", path.display())]
    Read {
        /// The world file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a world: the YAML does not read as one.
    #[error("invalid world: {0}")]
    Invalid(String),
    /// A world that contradicts itself (a quota in a region it does not have, …).
    #[error("{0}")]
    Inconsistent(String),
    /// What is wrong inside the file at `path`.
    #[error("{}: {inner}", path.display())]
    In {
        /// The world file.
        path: std::path::PathBuf,
        /// What.
        inner: Box<WorldError>,
    },
}

impl World {
    pub fn from_yaml(text: &str) -> Result<World, WorldError> {
        let world: World =
            serde_yaml::from_str(text).map_err(|e| WorldError::Invalid(e.to_string()))?;
        world.check().map_err(WorldError::Inconsistent)?;
        Ok(world)
    }

    pub fn load(path: &Path) -> Result<World, WorldError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorldError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        World::from_yaml(&text).map_err(|e| WorldError::In {
            path: path.to_path_buf(),
            inner: Box::new(e),
        })
    }

    fn check(&self) -> Result<(), String> {
        if self.regions.is_empty() {
            return Err("a world needs at least one region".into());
        }
        for region in self.quotas.keys() {
            if !self.regions.contains(region) {
                return Err(format!(
                    "quotas name region {region:?}, which is not in `regions`"
                ));
            }
        }
        for block in &self.capacity_block_groups {
            if !self.regions.contains(&block.region) {
                return Err(format!(
                    "capacity block group {:?} is in region {:?}, which is not in `regions`",
                    block.name, block.region
                ));
            }
        }
        for fault in &self.faults {
            if !(0.0..=1.0).contains(&fault.error_rate) {
                return Err(format!(
                    "fault for {:?}: error_rate must be within 0..1",
                    fault.method
                ));
            }
        }
        Ok(())
    }

    /// The built-in world of the embedded default: generous quotas in every public region.
    pub fn embedded_default() -> World {
        World::from_yaml(include_str!("../../fixtures/sim/default.yaml"))
            .expect("the embedded default world is valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_world_loads() {
        let world = World::embedded_default();
        assert!(world.regions.contains(&"us-central1".to_string()));
    }

    #[test]
    fn quota_shorthand_and_unlimited() {
        let world = World::from_yaml(
            "name: t\nregions: [eu-north1]\nquotas:\n  eu-north1:\n    mk8s.cluster.count: 3\n    vpc.network.count: unlimited\n    compute.instance.count: {limit: 10, usage: 4}\n",
        )
        .unwrap();
        let q = &world.quotas["eu-north1"];
        assert_eq!(q["mk8s.cluster.count"].spec().limit.finite(), Some(3));
        assert_eq!(q["vpc.network.count"].spec().limit.finite(), None);
        assert_eq!(q["compute.instance.count"].spec().usage, 4);
    }

    #[test]
    fn unknown_fields_and_regions_are_rejected() {
        assert!(World::from_yaml("name: t\nregions: [a]\nbogus: 1\n").is_err());
        assert!(World::from_yaml("name: t\nregions: [a]\nquotas: {b: {x: 1}}\n").is_err());
    }
}
