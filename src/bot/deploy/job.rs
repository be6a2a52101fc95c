//! The apply job: a durable job (kind [`APPLY_JOB`]) that applies the fleets a pull request
//! changed at one commit, under the guards, each fleet under its lease, and publishes the
//! fleet/apply check run and a short reply from one typed [`ApplyReport`].
//!
//! Applies of one repository run one at a time, in the order they were queued (the queue's
//! `fleet_key` lane), so merges apply in merge order on every replica. A job killed midway is
//! claimed again when its lease runs out; it re-plans, finds its own record of having passed
//! the guard ([`ApplyRun`]), and the engine's idempotency keys make the second run create
//! nothing twice.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::runtime::RuntimeValues;

use super::progress::ProgressReporter;
use super::specs::{Commit, SpecAt, one_fleet_one_file, read_spec};
use super::{APPLY_ACTION, APPLY_CHECK, APPLY_JOB};
use crate::bot::config::LoadedConfig;
use crate::bot::jobs::load_config;
use crate::bot::render::apply_reply_marker;
use crate::bot::report::apply::{ApplyBlocked, ApplyReport, FleetApply, FleetOutcome};
use crate::fleet::apply::audit::{self, Origin};
use crate::fleet::apply::guarded::{Guarded, Review, Verdict, apply_reviewed};
use crate::fleet::apply::leases::{self, Busy};
use crate::fleet::backend::Deploying;
use crate::fleet::guard::{PublicNames, Trigger};
use crate::fleet::live::PlannedFleet;
use crate::fleet::quiet;
use crate::fleet::{DeployResult, Progress, TargetStatus};
use crate::github::client::{CheckAction, CheckOutput, CheckRunPayload, CheckRunRef, RunningCheck};
use crate::github::{ClientError, RepoClient};
use crate::store::NewJob;
use crate::store::queue::pr_key;

/// The pull request number of a drift repair (`drift: apply`), which has none: pull requests
/// are numbered from 1. Its reviewed plan is the one the reconcile pass published.
pub const DRIFT_REPAIR: u64 = 0;

/// An apply to run, as queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyJob {
    /// `owner/name`.
    pub repo: String,
    pub installation_id: u64,
    pub number: u64,
    /// The commit applied: the merge commit, or the head of an open pull request
    /// (`apply: before-merge`).
    pub sha: String,
    /// The pull request's last head, whose reviewed plans the guard compares with.
    pub head_sha: String,
    /// The pull request's base, for the names of projects it removed.
    #[serde(default)]
    pub base_sha: String,
    pub trigger: Trigger,
    /// Who asked.
    pub actor: String,
    /// The `fleet/apply` run on `sha`, created when the apply was acknowledged.
    pub check_run_id: u64,
    /// Its page on GitHub, for the reply (empty when GitHub gave none).
    #[serde(default)]
    pub check_run_url: String,
    /// The spec paths the pull request changed (decided when acknowledged), in path order.
    pub paths: Vec<String>,
    /// Of those, the ones the commit deleted.
    pub removed: Vec<String>,
}

impl ApplyJob {
    /// The queued job. `origin` tells requests apart (`merge`, a comment id, a delivery id),
    /// so a redelivered request is the same job and is not queued twice.
    /// The id of the apply of pull request `number` at `sha` asked for by `origin`.
    pub fn job_id(repo: &str, number: u64, sha: &str, origin: &str) -> String {
        let repo = repo.to_ascii_lowercase();
        format!("{APPLY_JOB}:{repo}#{number}@{sha}:{origin}")
    }

    pub fn to_job(&self, origin: &str) -> NewJob {
        let repo = self.repo.to_ascii_lowercase();
        NewJob {
            id: Self::job_id(&self.repo, self.number, &self.sha, origin),
            kind: APPLY_JOB.to_string(),
            event: APPLY_JOB.to_string(),
            payload: serde_json::to_vec(self).unwrap_or_default().into(),
            // Not the pull request's lane: its comments must be answered while it applies.
            pr_key: String::new(),
            // One lane per repository: applies run one at a time, in the order queued.
            fleet_key: format!("{APPLY_JOB}:{repo}"),
            coalesce_key: String::new(),
            record_only: false,
        }
    }

    fn pr_key(&self) -> String {
        pr_key(&self.repo, self.number)
    }

    fn commit(&self) -> Commit<'_> {
        Commit {
            sha: &self.sha,
            paths: &self.paths,
            removed: &self.removed,
        }
    }

    /// Where this apply comes from, for its leases and the audit log.
    fn origin(&self) -> Origin<'_> {
        Origin {
            actor: &self.actor,
            trigger: self.trigger,
            repo: &self.repo,
            pr: self.number,
            sha: &self.sha,
        }
    }
}

pub(crate) fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// The acknowledgement: the fleet/apply run, in progress, on the commit to apply. Created
/// before the job is queued, so it appears within a second of the request.
pub(crate) async fn acknowledge(
    repo: &RepoClient,
    sha: &str,
    origin: &str,
) -> Result<CheckRunRef, ClientError> {
    let summary =
        "Queued: the apply starts as soon as earlier applies of this repository are done.";
    repo.start_check_run(&RunningCheck {
        name: APPLY_CHECK.into(),
        head_sha: sha.to_string(),
        external_id: Some(format!("apply:{origin}")),
        title: "Apply queued".into(),
        summary: summary.to_string(),
    })
    .await
}

/// What running the job came to.
pub enum JobEnd {
    Published(ApplyReport),
    /// A fleet's lease is held by another apply that has not finished or expired: run again
    /// later, no later than when that lease expires (unix ms, when known).
    Wait {
        holder: String,
        until: Option<i64>,
    },
}

/// Runs one apply job.
pub async fn run(
    repo: &RepoClient,
    settings: &crate::bot::BotSettings,
    deployer: &Deploying<'_>,
    job_id: &str,
    job: &ApplyJob,
    scanner_key: &[u8],
) -> Result<JobEnd, ClientError> {
    let runtime = settings.runtime.as_deref();
    let config = load_config(repo).await?;
    let mut report = ApplyReport {
        repo: job.repo.clone(),
        number: job.number,
        sha: job.sha.clone(),
        trigger: job.trigger,
        actor: job.actor.clone(),
        blocked: blocked_by(&config, job),
        fleets: Vec::new(),
    };
    let mut converged = Vec::new();
    if report.blocked.is_none() {
        let mut specs = Vec::new();
        for path in &job.paths {
            specs.push(read_spec(repo, job.commit(), path, runtime).await?);
        }
        let specs = one_fleet_one_file(repo, settings, &config, job.commit(), specs).await?;
        let fleets: Vec<&crate::spec::FleetSpec> = specs
            .iter()
            .filter_map(|spec| match spec {
                SpecAt::Valid(_, parsed) => Some(&**parsed),
                _ => None,
            })
            .collect();
        let mut held = match leases::take(deployer, job_id, &job.origin().holder(), &fleets).await {
            Ok(held) => held,
            Err(Busy { holder, until }) => {
                let _ = repo
                    .report_progress(
                        job.check_run_id,
                        "Apply waiting for a fleet lock",
                        &format!(
                            "Waiting: a fleet of this pull request is being applied by {holder}. It is applied after that one finishes, or after its lock expires; `/unlock` frees it."
                        ),
                    )
                    .await;
                return Ok(JobEnd::Wait { holder, until });
            }
        };
        held.keep_alive(deployer.lease);
        let mut applier = Applying {
            repo: Some(repo),
            sink: None,
            deployer,
            job_id,
            job,
            runtime,
            rollout: config.config.rollout.clone(),
            done: 0,
            total: specs.len(),
            lost: held.lost(),
        };
        for spec in specs {
            let valid = match &spec {
                SpecAt::Valid(path, spec) => Some((path.clone(), (**spec).clone())),
                _ => None,
            };
            let fleet = applier.fleet(spec).await;
            applier.done += 1;
            if let Some(valid) = valid
                && matches!(
                    fleet.outcome,
                    FleetOutcome::Applied | FleetOutcome::Unchanged
                )
            {
                converged.push(valid);
            }
            report.fleets.push(fleet);
        }
        held.release().await;
    }
    for fleet in &report.fleets {
        audit(deployer, job, &fleet.path, conclusion_word(fleet)).await;
    }
    if report.fleets.is_empty() {
        let outcome = report.conclusion().as_str();
        audit(deployer, job, "", outcome).await;
    }
    publish(repo, job, &report, scanner_key).await?;
    crate::bot::verification::verify_after_apply(
        repo,
        deployer,
        job_id,
        &job.sha,
        &config.config.verify_after_apply,
        &converged,
        scanner_key,
    )
    .await;
    Ok(JobEnd::Published(report))
}

fn conclusion_word(fleet: &FleetApply) -> &'static str {
    fleet.conclusion().as_str()
}

fn blocked_by(config: &LoadedConfig, job: &ApplyJob) -> Option<ApplyBlocked> {
    if let Some(e) = &config.error {
        return Some(ApplyBlocked::Config {
            error: e.to_string(),
        });
    }
    let mode = config.config.apply;
    match job.trigger {
        Trigger::Merge | Trigger::Rerun if !mode.applies_on_merge() => Some(ApplyBlocked::Manual),
        _ => None,
    }
}

/// The fleets of one job, applied one after another.
struct Applying<'a> {
    /// The repository, for the base's spec and the check run's progress; `None` for an
    /// apply without GitHub ([`apply_one`]), whose progress goes to `sink`.
    repo: Option<&'a RepoClient>,
    sink: Option<Progress>,
    deployer: &'a Deploying<'a>,
    job_id: &'a str,
    job: &'a ApplyJob,
    runtime: Option<&'a RuntimeValues>,
    /// `rollout:` of the repository's config: health-gated waves, when set.
    rollout: crate::fleet::apply::waves::RolloutConfig,
    done: usize,
    total: usize,
    /// A lease was lost: no further fleet is applied.
    lost: Arc<AtomicBool>,
}

impl Applying<'_> {
    async fn fleet(&self, spec: SpecAt) -> FleetApply {
        let path = spec.path().to_string();
        let spec = match spec {
            SpecAt::Removed(_) => return FleetApply::new(&path, None, FleetOutcome::SpecRemoved),
            SpecAt::Invalid(_) => {
                return FleetApply::new(
                    &path,
                    None,
                    FleetOutcome::NotApplied {
                        reason: "the spec does not parse or validate at this commit (see fleet/preflight)".into(),
                    },
                );
            }
            SpecAt::Shared(_, reason) => {
                return FleetApply::new(&path, None, FleetOutcome::NotApplied { reason });
            }
            SpecAt::Valid(_, spec) => spec,
        };
        let name = Some(spec.name.clone());
        let base = self.base_spec(&path).await;
        let names = PublicNames::with_base(&spec, base.as_ref());
        let pr_key = self.job.pr_key();
        let review = Review {
            job_id: self.job_id,
            pr_key: &pr_key,
            head_sha: &self.job.head_sha,
            sha: &self.job.sha,
            fleet_path: &path,
            trigger: self.job.trigger,
        };
        let mut reporter = None;
        let guarded = apply_reviewed(
            self.deployer,
            &review,
            &spec,
            &names,
            &self.rollout,
            &self.lost,
            |targets| {
                let started = self.progress(&path, targets);
                let sink = started.sink();
                reporter = Some(started);
                sink
            },
        )
        .await;
        if let Some(reporter) = reporter {
            reporter.stop().await;
        }
        match guarded {
            Guarded::NothingForTheEngine => {
                FleetApply::new(&path, name, FleetOutcome::NothingForTheEngine)
            }
            Guarded::NotApplied(why) => FleetApply::new(
                &path,
                name,
                FleetOutcome::NotApplied {
                    reason: why.to_string(),
                },
            ),
            Guarded::Refused(refusal) => {
                FleetApply::new(&path, name, FleetOutcome::Refused { refusal })
            }
            Guarded::Unchanged { targets } => {
                let mut fleet = FleetApply::new(&path, name, FleetOutcome::Unchanged);
                fleet.counts.unchanged = targets;
                fleet
            }
            Guarded::Applied(done) => {
                let mut fleet = applied(&path, name, &done.planned, &done.result, names);
                // How it ended is the guarded apply's own verdict; the report says what.
                fleet.outcome = match done.verdict() {
                    Verdict::ActionRequired => FleetOutcome::ChangedSinceReview,
                    Verdict::Failure => FleetOutcome::Failed,
                    Verdict::Success | Verdict::Neutral => FleetOutcome::Applied,
                };
                fleet.waves = done.waves;
                fleet
            }
        }
    }

    /// The spec at the pull request's base, when it is there and parses (names only).
    async fn base_spec(&self, path: &str) -> Option<crate::spec::FleetSpec> {
        if self.job.base_sha.is_empty() {
            return None;
        }
        let bytes = self
            .repo?
            .file_content(path, &self.job.base_sha)
            .await
            .ok()??;
        crate::runtime::load_str_with(std::str::from_utf8(&bytes).ok()?, path, self.runtime).ok()
    }

    fn progress(&self, path: &str, targets: usize) -> ProgressReporter {
        let Some(repo) = self.repo else {
            return ProgressReporter::forwarding(self.sink.clone().unwrap_or_else(quiet));
        };
        ProgressReporter::start(
            repo.clone(),
            self.job.check_run_id,
            format!(
                "Applying `{path}` (fleet {} of {})",
                self.done + 1,
                self.total
            ),
            targets,
        )
    }
}

/// Counts and names from the plan and the engine's result.
fn applied(
    path: &str,
    name: Option<String>,
    planned: &PlannedFleet,
    result: &DeployResult,
    mut names: PublicNames,
) -> FleetApply {
    let mut fleet = FleetApply::new(path, name, FleetOutcome::Applied);
    let outcomes: std::collections::HashMap<String, _> = result
        .clusters
        .iter()
        .map(|c| (format!("{}/{}", c.project_key, c.cluster_name), c))
        .collect();
    for target in &planned.plan.targets {
        let outcome = outcomes.get(&target.target);
        if let Some(c) = outcome
            && c.changed_since_plan
        {
            fleet.changed_targets.push(names.target(&target.target));
            continue;
        }
        if let Some(c) = outcome
            && c.status.is_failure()
        {
            fleet.counts.failed += 1;
            fleet
                .failed_targets
                .push(format!("{}: {}", names.target(&target.target), c.status));
            continue;
        }
        if target.prune {
            continue;
        }
        let creates = target
            .actions
            .iter()
            .any(|a| a.resource == "cluster" && a.action == crate::fleet::live::Action::Create);
        if target.unchanged {
            fleet.counts.unchanged += 1;
        } else if creates {
            fleet.counts.created += 1;
        } else {
            fleet.counts.changed += 1;
        }
    }
    for entry in &result.pruned {
        let key = names.target(&format!("{}/{}", entry.project_key, entry.cluster_name));
        if entry.status.is_failure() {
            fleet.counts.failed += 1;
            fleet
                .failed_targets
                .push(format!("{key}: {}", entry.status));
        } else if entry.status == TargetStatus::Destroyed {
            fleet.counts.deleted += 1;
            fleet.deleted_targets.push(key);
        }
    }
    fleet
}

async fn audit(deployer: &Deploying<'_>, job: &ApplyJob, fleet: &str, outcome: &str) {
    let entry = job.origin().entry("apply", fleet, outcome, "");
    audit::record(deployer.store.as_ref(), &entry).await;
}

/// Completes the check run from the report, then replies on the pull request (one reply per
/// applied commit, edited on later runs).
async fn publish(
    repo: &RepoClient,
    job: &ApplyJob,
    report: &ApplyReport,
    scanner_key: &[u8],
) -> Result<(), ClientError> {
    let scanner = crate::bot::pr::output_scanner(scanner_key);
    let rendered = crate::bot::render::render_apply(report, &job.check_run_url, &scanner);
    let run = CheckRunPayload {
        name: APPLY_CHECK.into(),
        head_sha: job.sha.clone(),
        external_id: None,
        conclusion: report.conclusion(),
        output: CheckOutput {
            title: report.title(),
            summary: rendered.summary,
            text: None,
            annotations: Vec::new(),
        },
        actions: if report.offers_apply() {
            vec![CheckAction {
                label: "Apply".into(),
                description: "Apply this commit's plan as it is now".into(),
                identifier: APPLY_ACTION.into(),
            }]
        } else {
            Vec::new()
        },
    };
    repo.complete_check_run(job.check_run_id, &run).await?;
    // A drift repair belongs to no pull request: its check run and the drift issue say it.
    if job.number != DRIFT_REPAIR {
        repo.upsert_marked_comment(job.number, &apply_reply_marker(&job.sha), &rendered.reply)
            .await?;
    }
    Ok(())
}
