//! Gathering the dashboard's view from the store: the listings of
//! [`crate::store::OverviewStore`], joined per repository and spec, with every ID left out and
//! every free text sanitized before it becomes part of the view.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::view::{
    ApplyView, ClusterView, DashboardView, FleetView, JobView, LockView, QuotaView, RepositoryView,
    ReviewState, ReviewView, SpecView,
};
use crate::bot::deploy::job::DRIFT_REPAIR;
use crate::fleet::guard::ReviewSummary;
use crate::privacy::Scanner;
use crate::store::{ApplyRun, AuditEntry, Lease, OverviewStore, ReviewedPlan, TargetRecord};

/// Rows read per listing: a page, not an archive.
pub const TARGET_LIMIT: usize = 2000;
pub const JOB_LIMIT: usize = 50;
pub const HISTORY_LIMIT: usize = 500;

/// The scanner that sanitizes the dashboard. It only redacts (`[redacted]`, never an alias),
/// so the key is the public local one.
pub(super) fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| crate::bot::pr::output_scanner(crate::privacy::DEFAULT_LOCAL_KEY))
}

/// Free text as the dashboard may show it: anything the privacy scanner flags is
/// `[redacted]`, and control characters are gone.
pub fn clean(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.trim().is_empty() {
        return String::new();
    }
    crate::bot::render::redact_private(scanner(), &text)
}

fn short(text: &str, n: usize) -> String {
    clean(text.get(..n).unwrap_or(text))
}

/// A digest as a person compares two by eye: its first 12 hex digits, without the
/// algorithm's prefix.
fn short_digest(digest: &str) -> String {
    let hex = digest.split_once(':').map_or(digest, |(_, hex)| hex);
    short(hex, 12)
}

/// Reads the store and builds the view. A listing that cannot be read is named in
/// `problems` and the rest is still shown: a page that says what it lacks beats an error page.
pub async fn gather<S: OverviewStore>(
    store: &S,
    store_kind: &str,
    quota: Option<QuotaView>,
    now: i64,
) -> DashboardView {
    let mut problems = Vec::new();
    let mut read = |what: &str, e: crate::store::StoreError| {
        tracing::warn!("dashboard: cannot read {what}: {e}");
        problems.push(format!("The {what} could not be read from the store."));
    };
    let targets = store
        .all_targets(TARGET_LIMIT)
        .await
        .unwrap_or_else(|e| (read("inventory", e), Vec::new()).1);
    let jobs = store
        .recent_jobs(JOB_LIMIT)
        .await
        .unwrap_or_else(|e| (read("job queue", e), Vec::new()).1);
    let leases = store
        .live_leases(now)
        .await
        .unwrap_or_else(|e| (read("apply leases", e), Vec::new()).1);
    let plans = store
        .recent_reviewed_plans(HISTORY_LIMIT)
        .await
        .unwrap_or_else(|e| (read("reviewed plans", e), Vec::new()).1);
    let runs = store
        .recent_apply_runs(HISTORY_LIMIT)
        .await
        .unwrap_or_else(|e| (read("apply runs", e), Vec::new()).1);
    let audit = store
        .recent_audit(HISTORY_LIMIT)
        .await
        .unwrap_or_else(|e| (read("audit log", e), Vec::new()).1);
    let locks: Vec<LockView> = leases.iter().filter_map(lock_view).collect();
    let quota = quota.map(|mut q| {
        super::quota::add_requested(&mut q, &requested(&plans, &audit));
        super::quota::fold(&mut q);
        q
    });
    DashboardView {
        generated_at: now,
        store: clean(store_kind),
        repositories: repositories(&audit, &plans, &runs),
        fleets: fleets(&targets, &locks),
        locks,
        jobs: jobs
            .into_iter()
            .map(|j| JobView {
                id: clean(&j.job.id),
                kind: clean(&j.job.kind),
                event: clean(&j.job.event),
                state: clean(&j.job.state),
                attempts: j.job.attempts,
                pull_request: clean(&j.job.pr_key),
                created_at: j.created_at,
                finished_at: j.finished_at,
                error: clean(&j.job.last_error),
            })
            .collect(),
        quota,
        problems,
    }
}

/// What open pull requests request, per tenant, region and quota: each pull request's newest
/// reviewed plan of each spec, unless the audit log says the pull request has closed (merged
/// or not). With the number of pull requests asking.
fn requested(plans: &[ReviewedPlan], audit: &[AuditEntry]) -> super::quota::Requested {
    use crate::bot::handler::{CLOSED_MERGED, CLOSED_UNMERGED};
    use std::collections::BTreeSet;
    let closed: BTreeSet<(String, u64)> = audit
        .iter()
        .filter(|a| a.action == CLOSED_MERGED || a.action == CLOSED_UNMERGED)
        .map(|a| (a.repo.to_ascii_lowercase(), a.pr))
        .collect();
    let mut seen = BTreeSet::new();
    let mut sums: BTreeMap<(String, String, String), (u128, BTreeSet<&str>)> = BTreeMap::new();
    // Newest first: the first plan of a (pull request, spec) is its latest.
    for plan in plans {
        if !seen.insert((plan.pr_key.as_str(), plan.fleet_path.as_str())) {
            continue;
        }
        match split_pr_key(&plan.pr_key) {
            // A drift repair's plan (number 0) is no pull request's request.
            Some(pr) if !closed.contains(&pr) && pr.1 != DRIFT_REPAIR => {}
            _ => continue,
        }
        for r in ReviewSummary::parse(&plan.summary).requested {
            let Ok(amount) = r.amount.parse::<u128>() else {
                continue;
            };
            let entry = sums.entry((r.tenant, r.region, r.quota)).or_default();
            entry.0 = entry.0.saturating_add(amount);
            entry.1.insert(&plan.pr_key);
        }
    }
    sums.into_iter()
        .map(|(key, (amount, prs))| (key, (amount, prs.len())))
        .collect()
}

/// A lease key is `t<tenant digest>:fleet:<name>` (`fleet::backend::fleet_lease_key`), held by
/// an apply job (whose id names its repository); another shape is not a fleet lease this page
/// knows.
fn lock_view(lease: &Lease) -> Option<LockView> {
    let mut parts = lease.fleet_key.splitn(3, ':');
    let (tenant, kind, fleet) = (parts.next()?, parts.next()?, parts.next()?);
    // Other leases share the table (an apply's acknowledgement, `ack:<job>`): not locks.
    let digest = tenant.strip_prefix('t')?;
    if kind != "fleet" || digest.is_empty() || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(LockView {
        fleet: clean(fleet),
        repository: clean(&apply_run_repo(&lease.owner).unwrap_or_default()),
        tenant: clean(tenant),
        holder: clean(&lease.holder),
        expires_at: lease.expires_at,
    })
}

/// `owner/name#number` into its parts.
fn split_pr_key(key: &str) -> Option<(String, u64)> {
    let (repo, number) = key.rsplit_once('#')?;
    Some((repo.to_ascii_lowercase(), number.parse().ok()?))
}

/// An apply job's id is `apply:<owner/name>#<number>@<sha>:<origin>`.
fn apply_run_repo(job_id: &str) -> Option<String> {
    let rest = job_id.strip_prefix(crate::bot::deploy::APPLY_JOB)?;
    let rest = rest.strip_prefix(':')?;
    let (repo, _) = rest.split_once('#')?;
    Some(repo.to_ascii_lowercase())
}

type SpecKey = (String, String);

fn repositories(
    audit: &[AuditEntry],
    plans: &[ReviewedPlan],
    runs: &[ApplyRun],
) -> Vec<RepositoryView> {
    let mut specs: BTreeMap<SpecKey, SpecView> = BTreeMap::new();
    let mut entry = |repo: &str, path: &str| -> SpecKey {
        let key = (repo.to_ascii_lowercase(), path.to_string());
        specs.entry(key.clone()).or_insert_with(|| SpecView {
            path: clean(path),
            ..Default::default()
        });
        key
    };
    // Each listing is newest first, so the first row seen for a spec is its latest.
    let mut applies: BTreeMap<SpecKey, ApplyView> = BTreeMap::new();
    for a in audit.iter().filter(|a| a.action.starts_with("apply")) {
        if a.fleet.is_empty() {
            continue;
        }
        let key = entry(&a.repo, &a.fleet);
        applies.entry(key).or_insert_with(|| ApplyView {
            at: a.at,
            outcome: clean(&a.outcome),
            action: clean(&a.action),
            pr: a.pr,
            sha: short(&a.sha, 7),
            actor: clean(&a.actor),
            digest: String::new(),
        });
    }
    let mut applied_digests: BTreeMap<SpecKey, (i64, String)> = BTreeMap::new();
    for run in runs {
        if let Some(repo) = apply_run_repo(&run.job_id) {
            let key = entry(&repo, &run.fleet_path);
            applied_digests
                .entry(key)
                .or_insert((run.started_at, run.digest.clone()));
        }
    }
    let mut reviews: BTreeMap<SpecKey, (ReviewView, String)> = BTreeMap::new();
    for plan in plans {
        if let Some((repo, pr)) = split_pr_key(&plan.pr_key)
            && pr != DRIFT_REPAIR
        {
            let key = entry(&repo, &plan.fleet_path);
            reviews.entry(key).or_insert_with(|| {
                let summary = ReviewSummary::parse(&plan.summary);
                let view = ReviewView {
                    at: plan.recorded_at,
                    pr,
                    sha: short(&plan.head_sha, 7),
                    digest: short_digest(&plan.digest),
                    changes: summary.lines.len(),
                    deletions: summary.deletions.len(),
                };
                (view, plan.digest.clone())
            });
        }
    }
    let mut by_repo: BTreeMap<String, Vec<SpecView>> = BTreeMap::new();
    for (key, mut spec) in specs {
        let applied = applied_digests.get(&key);
        let review = reviews.get(&key);
        spec.review_state = review_state(applied, review.map(|(v, d)| (v.at, d.as_str())));
        spec.review_label = spec.review_state.label().to_string();
        spec.last_apply = applies.get(&key).cloned().map(|mut a| {
            if let Some((_, digest)) = applied {
                a.digest = short_digest(digest);
            }
            a
        });
        spec.last_review = review.map(|(v, _)| v.clone());
        by_repo.entry(key.0).or_default().push(spec);
    }
    by_repo
        .into_iter()
        .map(|(name, specs)| RepositoryView {
            name: clean(&name),
            specs,
        })
        .collect()
}

/// The newest reviewed plan (time, full digest) against the last guard-passed apply.
fn review_state(applied: Option<&(i64, String)>, review: Option<(i64, &str)>) -> ReviewState {
    match (applied, review) {
        (None, None) => ReviewState::Unknown,
        (None, Some(_)) => ReviewState::Pending,
        (Some(_), None) => ReviewState::NoReview,
        (Some((_, applied)), Some((_, reviewed))) if applied == reviewed => ReviewState::Applied,
        (Some((applied_at, _)), Some((reviewed_at, _))) if reviewed_at > *applied_at => {
            ReviewState::Pending
        }
        (Some(_), Some(_)) => ReviewState::Differs,
    }
}

fn fleets(targets: &[TargetRecord], locks: &[LockView]) -> Vec<FleetView> {
    let mut by_fleet: BTreeMap<&str, Vec<ClusterView>> = BTreeMap::new();
    for t in targets {
        by_fleet.entry(&t.fleet).or_default().push(ClusterView {
            project: clean(&t.project_key),
            cluster: clean(&t.cluster_name),
            backend: clean(if t.backend.is_empty() {
                "mk8s"
            } else {
                &t.backend
            }),
            state: clean(&t.status),
            region: clean(&t.region),
            tenant: super::quota::tenant_label(&t.tenant_id),
            profile: clean(&t.profile),
            addons: t.addons.iter().map(|a| clean(&a.name)).collect(),
            applied_digest: short_digest(&t.applied_digest),
            updated_at: t.updated_at,
            error: clean(&scrub_ids(&t.error, t)),
        });
    }
    by_fleet
        .into_iter()
        .map(|(name, clusters)| FleetView {
            locked_by: locks
                .iter()
                .find(|l| l.fleet == clean(name))
                .map(|l| l.holder.clone()),
            name: clean(name),
            clusters,
        })
        .collect()
}

/// The record's own IDs never reach the page, even where an engine message quoted one in a
/// form the scanner does not know (a test double's ID, a future ID type).
fn scrub_ids(text: &str, t: &TargetRecord) -> String {
    let mut out = text.to_string();
    let ids = [
        &t.tenant_id,
        &t.project_id,
        &t.cluster_id,
        &t.filesystem_id,
        &t.gpu_cluster_id,
        &t.subnet_id,
    ];
    for id in ids.into_iter().chain(&t.node_group_ids) {
        if id.len() >= 4 {
            out = out.replace(id.as_str(), "[redacted]");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_split_as_the_bot_writes_them() {
        assert_eq!(split_pr_key("o/r#12"), Some(("o/r".to_string(), 12)));
        assert_eq!(split_pr_key("o/r"), None);
        let id = crate::bot::deploy::job::ApplyJob::job_id("Octo/Fleet", 3, "abc", "merge");
        assert_eq!(apply_run_repo(&id).as_deref(), Some("octo/fleet"));
        let key = crate::fleet::backend::fleet_lease_key("tenant-x", "research");
        let lease = Lease {
            fleet_key: key,
            owner: id.clone(),
            holder: "#3 at abc (merge)".into(),
            token: 1,
            expires_at: 9,
        };
        let lock = lock_view(&lease).unwrap();
        assert_eq!(lock.repository, "octo/fleet");
        assert_eq!(lock.fleet, "research");
        assert_eq!(lock.tenant, super::super::quota::tenant_label("tenant-x"));
        // An apply's acknowledgement shares the table and is not a lock.
        let ack = Lease {
            fleet_key: "ack:apply:octo/fleet#3@abc:merge".into(),
            ..lease
        };
        assert!(lock_view(&ack).is_none());
    }

    #[test]
    fn review_states() {
        let applied = (10, "d1".to_string());
        assert_eq!(review_state(None, None), ReviewState::Unknown);
        assert_eq!(review_state(None, Some((5, "d1"))), ReviewState::Pending);
        assert_eq!(review_state(Some(&applied), None), ReviewState::NoReview);
        assert_eq!(
            review_state(Some(&applied), Some((5, "d1"))),
            ReviewState::Applied
        );
        assert_eq!(
            review_state(Some(&applied), Some((20, "d2"))),
            ReviewState::Pending
        );
        assert_eq!(
            review_state(Some(&applied), Some((5, "d2"))),
            ReviewState::Differs
        );
    }
}
