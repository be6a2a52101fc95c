//! The reconcile loop: a repository's default branch compared with the cloud (the `fleet/drift`
//! check run), and what GitHub never redelivers by itself (a pull request head or a merge whose
//! delivery was lost) picked up again.
//!
//! One job per repository and pass ([`ReconcileJob`]). Its id is the repository and the slot of
//! the schedule ([`schedule_slot`]), so the replicas that all enqueue it on their ticks store
//! one job, and one pass runs per interval whatever the number of replicas. It runs in the
//! repository's apply lane, so it never reads a fleet while an apply of the same repository
//! changes it. It never mutates the cloud: it plans (reads), publishes, and queues jobs.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bot::config::LoadedConfig;
use crate::bot::report::drift::{DriftReport, DriftState, FleetDrift, Repair};
use crate::bot::settings::BotSettings;
use crate::fleet::guard::{PublicNames, ReviewSummary};
use crate::fleet::live::ReadCache;
use crate::github::{OpenPullRequest, RepoClient};
use crate::store::NewJob;

/// The job kind.
pub const RECONCILE_JOB: &str = crate::store::queue::JobKind::Reconcile.as_str();

/// Each repository's reconcile interval in minutes, as its last pass read it from
/// `.fleetbot.yml` (the default until one has): what the schedule's slots are cut by. Shared
/// by the bot's clones; replicas each learn it from the passes they run, and agree once each
/// has run one.
#[derive(Debug, Clone, Default)]
pub struct Intervals(std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>);

impl Intervals {
    pub fn note(&self, repo: &str, minutes: u64) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(repo.to_ascii_lowercase(), minutes);
        }
    }

    /// Every interval a pass has read, by repository.
    pub fn all(&self) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = self
            .0
            .lock()
            .map(|map| map.iter().map(|(r, m)| (r.clone(), *m)).collect())
            .unwrap_or_default();
        all.sort();
        all
    }

    pub fn get(&self, repo: &str) -> u64 {
        self.0
            .lock()
            .ok()
            .and_then(|map| map.get(&repo.to_ascii_lowercase()).copied())
            .unwrap_or(crate::bot::config::DEFAULT_DRIFT_MINUTES)
    }
}

/// One pass over one repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileJob {
    pub installation_id: u64,
    /// `owner/name`.
    pub repo: String,
    /// Why it runs: `schedule`, `start` (`serve --reconcile-now`) or `command` (`/reconcile`).
    pub origin: String,
}

impl ReconcileJob {
    /// The queued job; `key` tells passes apart (the schedule slot, a comment id), so every
    /// replica that enqueues the same pass stores one job.
    pub fn to_job(&self, key: &str) -> NewJob {
        let repo = self.repo.to_ascii_lowercase();
        NewJob {
            id: format!("{RECONCILE_JOB}:{repo}@{key}"),
            kind: RECONCILE_JOB.to_string(),
            event: RECONCILE_JOB.to_string(),
            payload: serde_json::to_vec(self).unwrap_or_default().into(),
            pr_key: String::new(),
            // The repository's apply lane: never beside an apply of its fleets.
            fleet_key: format!("{}:{repo}", crate::bot::deploy::APPLY_JOB),
            // A pass that has not started is made pointless by a newer one.
            coalesce_key: format!("{RECONCILE_JOB}:{repo}"),
            record_only: false,
        }
    }
}

/// The schedule slot `now_ms` falls in for `repo` every `interval_minutes`, shifted by a
/// per-repository jitter (the same on every replica), so repositories do not all read the
/// cloud at one instant; `None` when the periodic reconcile is off.
pub fn schedule_slot(repo: &str, now_ms: i64, interval_minutes: u64) -> Option<u64> {
    if interval_minutes == 0 {
        return None;
    }
    let interval = interval_minutes.saturating_mul(60_000);
    let digest = Sha256::digest(repo.to_ascii_lowercase().as_bytes());
    let jitter = u64::from_be_bytes(digest[..8].try_into().unwrap_or_default()) % interval;
    Some((now_ms.max(0) as u64).saturating_add(jitter) / interval)
}

/// A pull request's head as the `pull_request` job of a lost `synchronize` delivery: the job
/// the webhook would have queued, with the same coalescing, so a late redelivery and this
/// recovery make one preflight.
pub fn recovery_job(installation_id: u64, repo: &str, pr: &OpenPullRequest) -> NewJob {
    let payload = serde_json::json!({
        "action": "synchronize",
        "number": pr.number,
        "pull_request": {
            "number": pr.number,
            "head": {"sha": pr.head_sha, "ref": ""},
            "base": {"sha": pr.base_sha, "ref": pr.base_ref},
        },
        "repository": {"full_name": repo},
        "installation": {"id": installation_id},
        "sender": {"login": "fleetbot"},
    });
    let pr_key = crate::store::queue::pr_key(repo, pr.number);
    NewJob {
        id: format!(
            "recover:{}#{}@{}",
            repo.to_ascii_lowercase(),
            pr.number,
            pr.head_sha
        ),
        kind: crate::store::queue::WEBHOOK_JOB.to_string(),
        event: "pull_request".into(),
        payload: serde_json::to_vec(&payload).unwrap_or_default().into(),
        coalesce_key: crate::store::queue::preflight_coalesce_key(&pr_key),
        pr_key,
        fleet_key: String::new(),
        record_only: false,
    }
}

/// Compares every fleet spec at `head` of the default branch with the cloud. Reads only:
/// plans, never applies. A spec that cannot be read or planned is reported as not compared,
/// never as in sync.
pub async fn drift(
    repo: &RepoClient,
    settings: &BotSettings,
    config: &LoadedConfig,
    branch: &str,
    head: &str,
) -> DriftReport {
    let mut report = DriftReport {
        repo: repo.repo().to_string(),
        branch: branch.to_string(),
        head_sha: head.to_string(),
        cloud: String::new(),
        fleets: Vec::new(),
        unlisted: None,
        repairs: false,
    };
    let Some(cloud) = settings.cloud.as_ref() else {
        report.unlisted = Some("fleetbot has no cloud configured to compare with".into());
        return report;
    };
    report.cloud = cloud.public_name();
    if let Some(e) = &config.error {
        report.unlisted = Some(format!(
            "the default branch's .fleetbot.yml is invalid ({e})"
        ));
        return report;
    }
    let files = match repo.tree(head).await {
        Ok((_, true)) => {
            report.unlisted =
                Some("GitHub cut the listing of the default branch's files short".into());
            return report;
        }
        Ok((files, false)) => files,
        Err(e) => {
            tracing::warn!("reconcile: cannot list the default branch's files: {e}");
            report.unlisted = Some("the default branch's files could not be listed".into());
            return report;
        }
    };
    let matcher = config.config.spec_matcher();
    let specs: Vec<_> = files.iter().filter(|f| matcher.matches(&f.path)).collect();
    // One read of each listing for the whole pass: fleets split over several specs share
    // their projects.
    let reads = ReadCache::new();
    for (i, file) in specs.iter().enumerate() {
        let not_read =
            |why: String| FleetDrift::not_compared(&file.path, None, DriftState::Unreadable, &why);
        if i >= settings.max_spec_files {
            report.fleets.push(not_read(format!(
                "more than {} specs; not read",
                settings.max_spec_files
            )));
            continue;
        }
        if file.size > settings.max_spec_bytes as u64 {
            report.fleets.push(not_read(format!(
                "{} bytes, more than the {} bytes read",
                file.size, settings.max_spec_bytes
            )));
            continue;
        }
        report
            .fleets
            .push(compare(repo, settings, cloud.as_ref(), &file.path, head, &reads).await);
    }
    report
}

/// One spec compared with the cloud.
async fn compare(
    repo: &RepoClient,
    settings: &BotSettings,
    cloud: &crate::fleet::Session,
    path: &str,
    head: &str,
    reads: &Arc<ReadCache>,
) -> FleetDrift {
    let bytes = match repo
        .file_content_within(path, head, settings.max_spec_bytes)
        .await
    {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return FleetDrift::not_compared(path, None, DriftState::Unreadable, "not found");
        }
        Err(e) => {
            tracing::warn!(path, "reconcile: cannot read a spec: {e}");
            return FleetDrift::not_compared(
                path,
                None,
                DriftState::Unreadable,
                "the spec could not be read from GitHub",
            );
        }
    };
    let spec = match std::str::from_utf8(&bytes)
        .map_err(|_| "not valid UTF-8".to_string())
        .and_then(|text| settings.load_spec(text, path).map_err(|e| e.to_string()))
    {
        Ok(spec) => spec,
        Err(e) => return FleetDrift::not_compared(path, None, DriftState::Invalid, &e),
    };
    let tenant = match cloud.app_tenant_for(&spec) {
        Ok(t) => t,
        Err(e) => {
            return FleetDrift::not_compared(
                path,
                Some(&spec.name),
                DriftState::Unreadable,
                &e.to_string(),
            );
        }
    };
    match cloud.plan_fleet(&spec, &tenant, Some(reads.clone())).await {
        Ok(Some(planned)) => {
            let names = PublicNames::of(&spec);
            let mut fleet = FleetDrift::from_plan(path, &spec.name, &planned.plan, &names);
            let repairable = fleet.state == DriftState::Drifted
                && !planned.plan.has_problems()
                && planned.plan.destructive().is_empty();
            if repairable {
                fleet.repair = Some(Repair {
                    digest: planned.plan.digest.clone(),
                    summary: ReviewSummary::of(&planned, &names).to_json(),
                });
            }
            fleet
        }
        Ok(None) => FleetDrift::not_compared(path, Some(&spec.name), DriftState::NotPlanned, ""),
        Err(e) => FleetDrift::not_compared(
            path,
            Some(&spec.name),
            DriftState::Unreadable,
            &e.to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_the_same_on_every_replica_and_moves_once_per_interval() {
        let a = schedule_slot("Octo/Fleet", 1_000_000_000, 30).unwrap();
        assert_eq!(schedule_slot("octo/fleet", 1_000_000_000, 30), Some(a));
        // Within one interval the slot changes at most once; across two, at least once.
        let later = schedule_slot("octo/fleet", 1_000_000_000 + 30 * 60_000, 30).unwrap();
        assert_eq!(later, a + 1);
        assert_eq!(schedule_slot("octo/fleet", 5, 0), None);
        // Repositories are spread over the interval, not all due at one instant.
        let boundaries: std::collections::BTreeSet<u64> = (0..50)
            .map(|i| {
                let repo = format!("o/r{i}");
                let interval = 30 * 60_000u64;
                let digest = Sha256::digest(repo.as_bytes());
                u64::from_be_bytes(digest[..8].try_into().unwrap()) % interval / 60_000
            })
            .collect();
        assert!(boundaries.len() > 20, "{boundaries:?}");
    }

    #[test]
    fn the_recovery_job_is_the_pull_request_job_a_lost_delivery_would_have_queued() {
        let pr = OpenPullRequest {
            number: 7,
            head_sha: "b".repeat(40),
            base_sha: "a".repeat(40),
            base_ref: "main".into(),
        };
        let job = recovery_job(77, "Octo/Fleet", &pr);
        assert_eq!(job.pr_key, "octo/fleet#7");
        assert_eq!(job.coalesce_key, "preflight:octo/fleet#7");
        let event = crate::github::events::parse_event("pull_request", &job.payload).unwrap();
        let crate::github::events::Event::PullRequest(e) = event else {
            panic!("a pull_request event");
        };
        assert_eq!((e.number, e.head_sha.as_str()), (7, pr.head_sha.as_str()));
        assert_eq!(e.installation_id, Some(77));
        assert!(e.action.wants_preflight());
    }
}
