//! Health-gated waves (`rollout:` in a repository's `.fleetbot.yml`, or any caller's own): a fleet's targets applied step by step,
//! each step only once every cluster of the previous one is healthy (the cluster running and
//! its node groups with the nodes they declare, every add-on deployed), so one bad wave cannot
//! take the whole fleet down. A wave that fails or stays unhealthy stops the rollout, and the
//! check run says where.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Judged;
use crate::engine::ops::{DeployResult, Event, Progress};
use crate::fleet::backend::Deploying;
use crate::fleet::guard::PublicNames;
use crate::fleet::live::LiveError;
use crate::privacy::allowlist::glob_to_regex;
use crate::spec::{Backend, FleetSpec};

/// Health-gated waves (`rollout:`). Without waves and `max_clusters`, a fleet is applied
/// whole, as it always was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutConfig {
    /// The first waves, in order: a target goes to the first wave one of whose patterns
    /// matches it.
    #[serde(default)]
    pub waves: Vec<WaveConfig>,
    /// The targets no wave names follow in steps of at most this many (0: one last wave).
    #[serde(default)]
    pub max_clusters: usize,
    /// How long each wave may take to become healthy before the rollout stops.
    #[serde(default = "default_health_minutes")]
    pub health_timeout_minutes: u64,
}

fn default_health_minutes() -> u64 {
    10
}

/// One wave: the targets whose project key or cluster name matches one of its globs (`*`,
/// `?`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaveConfig {
    /// Globs over project keys.
    #[serde(default)]
    pub projects: Vec<String>,
    /// Globs over cluster names.
    #[serde(default)]
    pub clusters: Vec<String>,
}

impl RolloutConfig {
    /// Whether the fleet rolls out in more than one step.
    pub fn staged(&self) -> bool {
        !self.waves.is_empty() || self.max_clusters > 0
    }
}

/// A wave: the spec's `(project, cluster)` positions, in spec order.
pub type Wave = Vec<(usize, usize)>;

/// The waves of `spec` under `rollout`: the configured waves first (a target in the first
/// that names it), then the rest in steps of `max_clusters` (one step when 0). Empty waves
/// are dropped; soperator targets are the engine's whole-fleet apply's, not a wave's.
pub fn plan_waves(rollout: &RolloutConfig, spec: &FleetSpec) -> Vec<Wave> {
    // Compiled once, not once per cluster: a fleet can have a thousand.
    let compile = |globs: &[String]| -> Vec<regex::Regex> {
        globs.iter().filter_map(|g| glob_to_regex(g).ok()).collect()
    };
    let patterns: Vec<(Vec<regex::Regex>, Vec<regex::Regex>)> = rollout
        .waves
        .iter()
        .map(|w| (compile(&w.projects), compile(&w.clusters)))
        .collect();
    let matches = |res: &[regex::Regex], text: &str| res.iter().any(|re| re.is_match(text));
    let mut waves: Vec<Wave> = vec![Vec::new(); rollout.waves.len()];
    let mut rest = Vec::new();
    for (p, project) in spec.projects.iter().enumerate() {
        for (c, cluster) in project.clusters.iter().enumerate() {
            if cluster.backend == Backend::Soperator {
                continue;
            }
            let key = project.key();
            let wave = patterns.iter().position(|(projects, clusters)| {
                matches(projects, &key) || matches(clusters, &cluster.name)
            });
            match wave {
                Some(w) => waves[w].push((p, c)),
                None => rest.push((p, c)),
            }
        }
    }
    if rollout.max_clusters > 0 {
        waves.extend(rest.chunks(rollout.max_clusters).map(<[_]>::to_vec));
    } else if !rest.is_empty() {
        waves.push(rest);
    }
    waves.retain(|w| !w.is_empty());
    waves
}

/// What the rollout did: the merged result of every wave applied, one public line per wave,
/// and whether it stopped before the end.
pub struct Rollout {
    /// Every applied wave's targets, merged.
    pub result: DeployResult,
    /// One public line per wave (its targets by public names, and how it ended).
    pub lines: Vec<String>,
    /// Whether a wave failed or stayed unhealthy, so later waves were not applied.
    pub stopped: bool,
}

/// Applies the waves of `spec` under `rollout` one after another, each gated on the health of
/// the one before, each target held to the `judged` plan (what it read of the cloud, what it
/// destroys); with its `prune`, what that plan prunes is deleted after the last wave only.
pub async fn roll_out(
    deployer: &Deploying<'_>,
    spec: &FleetSpec,
    tenant: &str,
    judged: Judged,
    rollout: &RolloutConfig,
    names: &PublicNames,
    progress: Progress,
) -> Result<Rollout, LiveError> {
    let waves = plan_waves(rollout, spec);
    let health_timeout = Duration::from_secs(rollout.health_timeout_minutes * 60);
    let mut names = names.clone();
    let mut out = Rollout {
        result: DeployResult::default(),
        lines: Vec::new(),
        stopped: false,
    };
    for (i, wave) in waves.iter().enumerate() {
        let label = format!("wave {} of {}", i + 1, waves.len());
        let shown: Vec<String> = wave
            .iter()
            .map(|&(p, c)| {
                names.target(&format!(
                    "{}/{}",
                    spec.projects[p].key(),
                    spec.projects[p].clusters[c].name
                ))
            })
            .collect();
        if out.stopped {
            out.lines
                .push(format!("{label} ({}): not started", shown.join(", ")));
            continue;
        }
        progress(&Event::step(
            &label,
            format!("applying {}", shown.join(", ")),
        ));
        // One engine call per project of the wave: the engine selects projects × clusters.
        let mut projects: Vec<usize> = wave.iter().map(|&(p, _)| p).collect();
        projects.dedup();
        for p in projects {
            let clusters: Vec<String> = wave
                .iter()
                .filter(|&&(q, _)| q == p)
                .map(|&(_, c)| spec.projects[p].clusters[c].name.clone())
                .collect();
            let applied = deployer
                .session
                .apply_targets(
                    spec,
                    tenant,
                    (vec![spec.projects[p].key()], clusters),
                    &judged,
                    progress.clone(),
                )
                .await?;
            out.result.absorb(applied);
        }
        if out.result.failed > 0 {
            out.lines.push(format!(
                "{label} ({}): failed; the rollout stopped here",
                shown.join(", ")
            ));
            out.stopped = true;
            continue;
        }
        match healthy(deployer, spec, wave, health_timeout, &mut names).await? {
            None => out
                .lines
                .push(format!("{label} ({}): applied, healthy", shown.join(", "))),
            Some(why) => {
                out.lines.push(format!(
                    "{label} ({}): applied, not healthy within {} min ({why}); the rollout stopped here",
                    shown.join(", "),
                    health_timeout.as_secs() / 60
                ));
                out.stopped = true;
            }
        }
    }
    // The judged plan's pruning, not a plan made afresh: only the targets it listed.
    if judged.prune && !out.stopped {
        let pruned = deployer
            .session
            .apply_judged(spec, tenant, judged, true, progress)
            .await?;
        out.result.absorb(pruned);
    }
    Ok(out)
}

/// `None` once every target of `wave` is healthy, else (after `timeout`) why the first that
/// is not, in public names. Polled every few seconds; a timeout of 0 looks once.
async fn healthy(
    deployer: &Deploying<'_>,
    spec: &FleetSpec,
    wave: &Wave,
    timeout: Duration,
    names: &mut PublicNames,
) -> Result<Option<String>, LiveError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let status = deployer.session.fleet_status(spec).await?;
        let unhealthy = wave.iter().find_map(|&(p, c)| {
            let key = spec.projects[p].key();
            let name = &spec.projects[p].clusters[c].name;
            let entry = status
                .clusters
                .iter()
                .find(|e| e.project_key == key && &e.cluster_name == name);
            let why = match entry {
                None => Some("no status".to_string()),
                Some(e) => e.unhealthy(),
            };
            why.map(|why| format!("{}: {why}", names.target(&format!("{key}/{name}"))))
        });
        match unhealthy {
            None => return Ok(None),
            Some(why) if tokio::time::Instant::now() >= deadline => return Ok(Some(why)),
            Some(_) => tokio::time::sleep(Duration::from_secs(5)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WaveConfig;
    use super::*;

    const SPEC: &str = "apiVersion: npa.fleet/v0.0.1\nname: w\nregion: eu-north1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\n  gpu_nodes: null\nprojects:\n  - name: canary\n  - name: eu\n    clusters: [{name: a}, {name: b}, {name: c}]\n  - name: us\n    clusters: [{name: a}, {name: edge-1}]\n";

    fn waves(rollout: &RolloutConfig) -> Vec<Vec<String>> {
        let spec = crate::spec::load_str(SPEC, "w.yaml").unwrap();
        plan_waves(rollout, &spec)
            .into_iter()
            .map(|w| {
                w.into_iter()
                    .map(|(p, c)| {
                        format!(
                            "{}/{}",
                            spec.projects[p].key(),
                            spec.projects[p].clusters[c].name
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn named_waves_come_first_and_the_rest_follows_in_steps() {
        let rollout = RolloutConfig {
            waves: vec![
                WaveConfig {
                    projects: vec!["canary".into()],
                    clusters: vec![],
                },
                WaveConfig {
                    projects: vec![],
                    clusters: vec!["edge-*".into(), "c".into()],
                },
            ],
            max_clusters: 2,
            health_timeout_minutes: 1,
        };
        assert_eq!(
            waves(&rollout),
            vec![
                vec!["canary/cluster"],
                vec!["eu/c", "us/edge-1"],
                vec!["eu/a", "eu/b"],
                vec!["us/a"],
            ]
        );
        let whole = RolloutConfig::default();
        assert!(!whole.staged());
        assert_eq!(waves(&whole).len(), 1, "no rollout: one wave of everything");
        let steps = RolloutConfig {
            max_clusters: 4,
            ..RolloutConfig::default()
        };
        assert_eq!(
            waves(&steps).iter().map(Vec::len).collect::<Vec<_>>(),
            [4, 2]
        );
    }
}
