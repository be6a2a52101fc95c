//! The repository config, `.fleetbot.yml`, read from the default branch only.
//!
//! A pull request that changes the file sees the change in its diff but not its effect until it
//! is merged: otherwise a pull request could widen its own privacy allowlist or lower the
//! permission a command needs. The file is small and strict (unknown keys are errors); an
//! invalid file is reported as a located error and fails the preflight check.
//!
//! ```yaml
//! # Each file matching one of these globs is one fleet spec.
//! specs: ["fleets/**/*.yaml", "fleets/**/*.yml"]
//! # When a merged spec is applied: on-merge (default), manual (`/apply` or the check's Apply
//! # button only), or before-merge (`/apply` also runs on an open pull request's head).
//! apply: on-merge
//! # How old `/apply` and `/approve-destroy` may be when acted on (minutes).
//! command_max_age_minutes: 60
//! # The least permission a commenter needs per command (none, read, triage, write, maintain, admin).
//! commands:
//!   plan: write
//!   apply: maintain
//!   approve-destroy: maintain
//!   unlock: admin
//!   verify-storage: write
//!   verify-graphics: write
//!   verify-mig: write
//!   status: read
//!   help: none
//! # Verifications run after every apply that converged, as check runs on the applied commit.
//! verify_after_apply: [storage, graphics]
//! # The privacy guard's exceptions (same structure as `fleetbot scan --config`).
//! privacy:
//!   allow:
//!     patterns: ['^shared-demo-bucket$']
//!     paths: ['fixtures/privacy/**']
//! ```

use crate::privacy::allowlist::glob_to_regex;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::fleet::apply::waves::RolloutConfig;
use crate::github::Permission;
use crate::privacy::{PrivacyAllowlist, Scanner, ScannerConfig};
use crate::verify::Kind as VerifyKind;

/// Where the config lives in the repository.
pub const CONFIG_PATH: &str = ".fleetbot.yml";
/// A larger config is refused before parsing: the real thing is a few hundred bytes.
pub const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// The most bytes of keys and values `.fleetbot.yml` may expand to through aliases.
pub const MAX_CONFIG_EXPANDED_BYTES: usize = 4 * MAX_CONFIG_BYTES;

/// The spec globs used when the repository has no config.
pub const DEFAULT_SPEC_GLOBS: [&str; 2] = ["fleets/**/*.yaml", "fleets/**/*.yml"];

/// The parsed `.fleetbot.yml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoConfig {
    /// Globs on repository-relative paths; each matching file is one fleet spec.
    #[serde(default = "default_specs")]
    pub specs: Vec<String>,
    /// When merged specs are applied.
    #[serde(default)]
    pub apply: ApplyMode,
    /// Least permission per command.
    #[serde(default)]
    pub commands: CommandPermissions,
    /// How old an `/apply` or `/approve-destroy` comment may be when it is acted on: a command
    /// handled late (a backlog, a redelivery) acts on a pull request its author no longer sees.
    #[serde(default = "default_command_max_age")]
    pub command_max_age_minutes: u64,
    /// The privacy guard's exceptions (the `privacy:` section of `fleetbot scan --config`).
    #[serde(default)]
    pub privacy: PrivacyAllowlist,
    /// Verifications run after every apply that converged, reported on the applied commit.
    #[serde(default)]
    pub verify_after_apply: Vec<VerifyKind>,
    /// The reconcile loop: how often the default branch's fleets are compared with the cloud.
    #[serde(default)]
    pub drift: DriftConfig,
    /// How a merge rolls out: wave by wave, each only once the previous one is healthy.
    #[serde(default)]
    pub rollout: RolloutConfig,
    /// The organisation's Rego policies (`policy: {path: policy/}`), read from the default
    /// branch; none when absent.
    #[serde(default)]
    pub policy: Option<PolicyConfig>,
}

/// Where the organisation's policies live (`policy:`), docs/policy.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// The directory of `*.rego` files, relative to the repository root; read from the default
    /// branch only, never from a pull request's head.
    pub path: String,
}

impl PolicyConfig {
    /// The directory as a path prefix (`policy/`), or why it is not a repository path.
    pub fn prefix(&self) -> Result<String, String> {
        let dir = self.path.trim().trim_end_matches('/');
        if dir.is_empty() || !crate::github::client::is_safe_repo_path(dir) {
            return Err(format!(
                "policy.path {:?} is not a directory of the repository",
                self.path
            ));
        }
        Ok(format!("{dir}/"))
    }
}

/// The reconcile loop's settings (`drift:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    /// Minutes between reconciles of the default branch (jittered per repository, so a
    /// fleet of repositories does not read the cloud at one instant); 0 turns the periodic
    /// reconcile off (`/reconcile` still runs one).
    #[serde(default = "default_drift_minutes")]
    pub interval_minutes: u64,
    /// Keep one tracking issue open while the default branch is not in sync (reopened when
    /// it drifts again, closed when it is back in sync). Needs the App's Issues permission.
    #[serde(default)]
    pub issue: bool,
    /// Re-apply a drifted fleet under the guards of merge-to-deploy: only the plan the pass
    /// published, never one that deletes, replaces or shrinks, never beside another apply.
    #[serde(default)]
    pub apply: bool,
}

/// Every half hour, as Flux and Argo CD reconcile by default within the hour.
pub const DEFAULT_DRIFT_MINUTES: u64 = 30;

fn default_drift_minutes() -> u64 {
    DEFAULT_DRIFT_MINUTES
}

impl Default for DriftConfig {
    fn default() -> Self {
        DriftConfig {
            interval_minutes: DEFAULT_DRIFT_MINUTES,
            issue: false,
            apply: false,
        }
    }
}

fn default_specs() -> Vec<String> {
    DEFAULT_SPEC_GLOBS.iter().map(|s| s.to_string()).collect()
}

impl Default for RepoConfig {
    fn default() -> Self {
        RepoConfig {
            specs: default_specs(),
            apply: ApplyMode::default(),
            commands: CommandPermissions::default(),
            command_max_age_minutes: default_command_max_age(),
            privacy: PrivacyAllowlist::default(),
            verify_after_apply: Vec::new(),
            drift: DriftConfig::default(),
            rollout: RolloutConfig::default(),
            policy: None,
        }
    }
}

/// The default of `command_max_age_minutes`: an hour.
pub const DEFAULT_COMMAND_MAX_AGE_MINUTES: u64 = 60;

fn default_command_max_age() -> u64 {
    DEFAULT_COMMAND_MAX_AGE_MINUTES
}

/// When fleetbot applies a merged spec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyMode {
    /// Every merge into the default branch applies the fleets it changed, under the guards.
    #[default]
    OnMerge,
    /// Nothing applies by itself: `/apply` (or the check's Apply button) after the merge.
    Manual,
    /// As `on-merge`, and `/apply` may also apply an open pull request's head.
    BeforeMerge,
}

impl ApplyMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            ApplyMode::OnMerge => "on-merge",
            ApplyMode::Manual => "manual",
            ApplyMode::BeforeMerge => "before-merge",
        }
    }

    /// Whether a merge applies without a command.
    pub fn applies_on_merge(&self) -> bool {
        !matches!(self, ApplyMode::Manual)
    }
}

/// The least permission each command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommandPermissions {
    /// `/plan` recomputes the preflight: write, since it costs API budget.
    #[serde(default = "write")]
    pub plan: Permission,
    /// `/apply` changes the cloud, overriding a plan that drifted since review.
    #[serde(default = "maintain")]
    pub apply: Permission,
    /// `/approve-destroy` lets a merge delete what it planned to.
    #[serde(default = "maintain")]
    pub approve_destroy: Permission,
    /// `/unlock` frees a fleet's apply lock that another apply holds.
    #[serde(default = "admin")]
    pub unlock: Permission,
    /// `/verify-storage` touches real clusters.
    #[serde(default = "write")]
    pub verify_storage: Permission,
    /// `/verify-graphics` touches real clusters.
    #[serde(default = "write")]
    pub verify_graphics: Permission,
    /// `/verify-mig` touches real clusters.
    #[serde(default = "write")]
    pub verify_mig: Permission,
    /// `/status` only reads.
    #[serde(default = "read")]
    pub status: Permission,
    /// `/reconcile` reads the whole repository's fleets against the cloud now.
    #[serde(default = "admin")]
    pub reconcile: Permission,
    /// `/help` answers anyone.
    #[serde(default = "none")]
    pub help: Permission,
}

fn admin() -> Permission {
    Permission::Admin
}
fn maintain() -> Permission {
    Permission::Maintain
}
fn write() -> Permission {
    Permission::Write
}
fn read() -> Permission {
    Permission::Read
}
fn none() -> Permission {
    Permission::None
}

impl Default for CommandPermissions {
    fn default() -> Self {
        CommandPermissions {
            plan: write(),
            apply: maintain(),
            approve_destroy: maintain(),
            unlock: admin(),
            verify_storage: write(),
            verify_graphics: write(),
            verify_mig: write(),
            status: read(),
            reconcile: admin(),
            help: none(),
        }
    }
}

/// An invalid config: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{CONFIG_PATH}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn new(line: Option<u32>, message: impl Into<String>) -> Self {
        ConfigError {
            line,
            message: message.into(),
        }
    }
}

impl RepoConfig {
    /// Parses and checks a config. An empty document is the default config.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        if text.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::new(
                None,
                format!(
                    "the file is {} bytes; the limit is {MAX_CONFIG_BYTES}",
                    text.len()
                ),
            ));
        }
        if text.trim().is_empty() {
            return Ok(RepoConfig::default());
        }
        // serde_yaml bounds how often aliases are replayed, not what they copy: a list of
        // aliases of one long string would be copied whole each time. The spec reader's limits
        // (expanded bytes, nodes, depth) decide first; its other verdicts are serde_yaml's to give.
        let limits = crate::spec::yaml::Limits {
            max_bytes: MAX_CONFIG_BYTES,
            max_expanded_bytes: MAX_CONFIG_EXPANDED_BYTES,
            ..crate::spec::yaml::Limits::default()
        };
        if let Err(e) = crate::spec::yaml::parse(text, limits)
            && e.over_limit
        {
            return Err(ConfigError::new(Some(e.pos.line), e.message));
        }
        let config: RepoConfig = serde_yaml::from_str::<Option<RepoConfig>>(text)
            .map_err(|e| {
                let line = e
                    .location()
                    .map(|l| u32::try_from(l.line()).unwrap_or(u32::MAX));
                // serde_yaml's text repeats the location; keep only the reason.
                let message = e.to_string();
                let message = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_string();
                ConfigError::new(line, message)
            })?
            .unwrap_or_default();
        if config.specs.is_empty() {
            return Err(ConfigError::new(
                None,
                "specs: list at least one glob (each matching file is one fleet spec)",
            ));
        }
        for (index, glob) in config.specs.iter().enumerate() {
            glob_to_regex(glob)
                .map_err(|reason| ConfigError::new(None, format!("specs[{index}]: {reason}")))?;
        }
        for (w, wave) in config.rollout.waves.iter().enumerate() {
            if wave.projects.is_empty() && wave.clusters.is_empty() {
                return Err(ConfigError::new(
                    None,
                    format!("rollout.waves[{w}]: name projects or clusters (globs)"),
                ));
            }
            for (field, globs) in [("projects", &wave.projects), ("clusters", &wave.clusters)] {
                for (i, glob) in globs.iter().enumerate() {
                    glob_to_regex(glob).map_err(|reason| {
                        ConfigError::new(None, format!("rollout.waves[{w}].{field}[{i}]: {reason}"))
                    })?;
                }
            }
        }
        Scanner::new(ScannerConfig {
            key: b"config-check".to_vec(),
            allowlist: config.privacy.clone(),
        })
        .map_err(|e| ConfigError::new(None, e.to_string()))?;
        Ok(config)
    }

    /// The compiled spec globs.
    pub fn spec_matcher(&self) -> SpecMatcher {
        SpecMatcher {
            globs: self
                .specs
                .iter()
                .filter_map(|g| glob_to_regex(g).ok())
                .collect(),
        }
    }

    /// The least permission `command` needs (`plan`, `verify-storage`, …).
    pub fn required_permission(&self, command: &str) -> Permission {
        let c = &self.commands;
        match command {
            "plan" => c.plan,
            "apply" => c.apply,
            "approve-destroy" => c.approve_destroy,
            "unlock" => c.unlock,
            "verify-storage" => c.verify_storage,
            "verify-graphics" => c.verify_graphics,
            "verify-mig" => c.verify_mig,
            "status" => c.status,
            "reconcile" => c.reconcile,
            "help" => c.help,
            // Unknown commands never run; asking for admin keeps it fail-closed.
            _ => Permission::Admin,
        }
    }
}

/// Where the config in force came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConfigSource {
    /// The default branch has no `.fleetbot.yml`; defaults apply.
    Defaults { branch: String },
    /// Read from the default branch.
    DefaultBranch { branch: String },
}

/// The config in force for a pull request, and how it was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedConfig {
    /// What applies: the parsed file, or the defaults when it is missing or invalid.
    pub config: RepoConfig,
    pub source: ConfigSource,
    /// The raw bytes (part of the plan digest).
    pub raw: Vec<u8>,
    /// Set when the file exists but is invalid; the defaults then apply to the privacy scan
    /// (which only widens it) and the preflight check fails.
    pub error: Option<ConfigError>,
}

impl LoadedConfig {
    /// The default branch the config was read from.
    pub fn branch(&self) -> &str {
        match &self.source {
            ConfigSource::Defaults { branch } | ConfigSource::DefaultBranch { branch } => branch,
        }
    }

    /// Builds from what the default branch holds (`None`: no file).
    pub fn from_default_branch(branch: &str, content: Option<&[u8]>) -> Self {
        let Some(raw) = content else {
            return LoadedConfig {
                config: RepoConfig::default(),
                source: ConfigSource::Defaults {
                    branch: branch.to_string(),
                },
                raw: Vec::new(),
                error: None,
            };
        };
        let parsed = std::str::from_utf8(raw)
            .map_err(|_| ConfigError::new(None, "the file is not valid UTF-8"))
            .and_then(RepoConfig::parse);
        let (config, error) = match parsed {
            Ok(c) => (c, None),
            Err(e) => (RepoConfig::default(), Some(e)),
        };
        LoadedConfig {
            config,
            source: ConfigSource::DefaultBranch {
                branch: branch.to_string(),
            },
            raw: raw.to_vec(),
            error,
        }
    }
}

/// Decides which paths are fleet specs.
#[derive(Debug, Clone)]
pub struct SpecMatcher {
    globs: Vec<Regex>,
}

impl SpecMatcher {
    /// Whether `path` (repository-relative, `/`-separated) is a fleet spec.
    pub fn matches(&self, path: &str) -> bool {
        let path = path.trim_start_matches("./");
        self.globs.iter().any(|g| g.is_match(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_to_an_empty_or_missing_file() {
        assert_eq!(RepoConfig::parse("").unwrap(), RepoConfig::default());
        assert_eq!(
            RepoConfig::parse("# only a comment\n").unwrap(),
            RepoConfig::default()
        );
        let loaded = LoadedConfig::from_default_branch("main", None);
        assert_eq!(
            loaded.source,
            ConfigSource::Defaults {
                branch: "main".into()
            }
        );
        assert!(loaded.error.is_none());
        let m = loaded.config.spec_matcher();
        assert!(m.matches("fleets/prod/a.yaml"));
        assert!(m.matches("fleets/a.yml"));
        assert!(!m.matches("docs/a.yaml"));
    }

    #[test]
    fn verification_after_apply_names_known_kinds_only() {
        let c = RepoConfig::parse("verify_after_apply: [storage, graphics, mig]\n").unwrap();
        assert_eq!(
            c.verify_after_apply,
            [VerifyKind::Storage, VerifyKind::Graphics, VerifyKind::Mig]
        );
        assert_eq!(c.required_permission("verify-mig"), Permission::Write);
        assert!(RepoConfig::default().verify_after_apply.is_empty());
        let e = RepoConfig::parse("verify_after_apply: [storage, gpus]\n").unwrap_err();
        assert!(e.to_string().contains("gpus"), "{e}");
    }

    #[test]
    fn full_config_parses() {
        let c = RepoConfig::parse(
            "specs: ['clusters/*.fleet.yaml']\ncommands:\n  plan: read\n  verify-graphics: admin\nprivacy:\n  allow:\n    paths: ['fixtures/**']\n",
        )
        .unwrap();
        assert_eq!(c.required_permission("plan"), Permission::Read);
        assert_eq!(c.required_permission("verify-graphics"), Permission::Admin);
        assert_eq!(c.required_permission("verify-storage"), Permission::Write);
        assert_eq!(c.required_permission("help"), Permission::None);
        assert_eq!(c.required_permission("deploy"), Permission::Admin);
        assert_eq!(c.privacy.allow.paths, vec!["fixtures/**".to_string()]);
        let m = c.spec_matcher();
        assert!(m.matches("clusters/a.fleet.yaml"));
        assert!(!m.matches("clusters/sub/a.fleet.yaml"));
    }

    #[test]
    fn invalid_configs_are_located_errors() {
        let e = RepoConfig::parse("specs: ['a']\nspecz: []\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("unknown field `specz`"), "{e}");
        assert!(e.to_string().starts_with(".fleetbot.yml:2: "), "{e}");
        let e = RepoConfig::parse("commands:\n  plan: superuser\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = RepoConfig::parse("specs: []\n").unwrap_err();
        assert!(e.message.contains("at least one glob"));
        // Issue #32: an empty, blank or path-less entry is an error naming its key, never "all".
        for (text, key) in [
            ("specs: ['']\n", "specs[0]"),
            ("specs: ['fleets/*.yaml', ' ']\n", "specs[1]"),
            ("specs: ['/']\n", "specs[0]"),
            (
                "rollout:\n  waves:\n    - projects: ['']\n",
                "rollout.waves[0].projects[0]",
            ),
            (
                "rollout:\n  waves:\n    - clusters: ['a', ' ']\n",
                "rollout.waves[0].clusters[1]",
            ),
            (
                "privacy:\n  allow:\n    patterns: ['']\n",
                "allow.patterns[0]",
            ),
            ("privacy:\n  allow:\n    paths: [' ']\n", "allow.paths[0]"),
        ] {
            let e = RepoConfig::parse(text).unwrap_err();
            assert!(e.message.contains(key), "{text:?}: {e}");
        }
        let e = RepoConfig::parse("specs: ['a/[b']\n").unwrap_err();
        assert!(e.message.starts_with("specs[0]: unclosed"), "{e}");
        let e = RepoConfig::parse("privacy:\n  allow:\n    patterns: ['(']\n").unwrap_err();
        assert!(e.message.contains("not a valid regular expression"), "{e}");
        let loaded = LoadedConfig::from_default_branch("main", Some(b"specs: 3\n"));
        assert!(loaded.error.is_some());
        assert_eq!(loaded.config, RepoConfig::default());
        // Aliases may repeat a value, never multiply the file: 10,000 copies of a 32 KiB
        // string would be 320 MB in serde_yaml's hands.
        let mut bomb = format!("specs: ['a']\nx: &x \"{}\"\ny: [*x", "z".repeat(32 * 1024));
        while bomb.len() < MAX_CONFIG_BYTES - 8 {
            bomb.push_str(",*x");
        }
        bomb.push_str("]\n");
        let e = RepoConfig::parse(&bomb).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(
            e.message,
            format!(
                "document expands to more than {MAX_CONFIG_EXPANDED_BYTES} bytes of keys and values (alias expansion limit)"
            )
        );
        let big = "#".repeat(MAX_CONFIG_BYTES + 1);
        assert!(
            RepoConfig::parse(&big)
                .unwrap_err()
                .message
                .contains("limit")
        );
    }

    #[test]
    fn globs() {
        let m = RepoConfig {
            specs: vec![
                "a/**/x.yaml".into(),
                "b/?.yaml".into(),
                "c/".into(),
                "[de]/*.y*".into(),
            ],
            ..RepoConfig::default()
        }
        .spec_matcher();
        assert!(m.matches("a/x.yaml") && m.matches("a/p/q/x.yaml"));
        assert!(m.matches("b/1.yaml") && !m.matches("b/12.yaml"));
        assert!(m.matches("c/anything/at/all"));
        assert!(m.matches("d/f.yml") && m.matches("e/g.yaml") && !m.matches("f/g.yaml"));
        assert!(m.matches("./a/x.yaml"));
    }
}
