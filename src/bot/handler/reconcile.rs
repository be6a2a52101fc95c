//! One reconcile pass over a repository ([`crate::bot::reconcile`]): lost pull request heads
//! and a lost merge queued again, then the default branch compared with the cloud and
//! `fleet/drift` kept in place on its head.

use sha2::{Digest, Sha256};

use super::{Bot, BotError, Handled};
use crate::bot::deploy::job::{ApplyJob, DRIFT_REPAIR, acknowledge};
use crate::bot::jobs::load_config;
use crate::bot::reconcile::{ReconcileJob, drift, recovery_job};
use crate::bot::render::DRIFT_ISSUE_MARKER;
use crate::bot::report::drift::{DRIFT_CHECK, DriftReport, Repair};
use crate::fleet::guard::Trigger;
use crate::github::{CheckOutput, CheckRunPayload, RepoClient, RepoName};
use crate::store::queue::{now_ms, pr_key};
use crate::store::{NewJob, ReviewedPlan};

impl Bot {
    pub(super) async fn run_reconcile(
        &self,
        id: &str,
        payload: &[u8],
    ) -> Result<Handled, BotError> {
        let job: ReconcileJob =
            serde_json::from_slice(payload).map_err(|source| super::JobError::Undecodable {
                kind: "reconcile",
                source,
            })?;
        let name = RepoName::parse(&job.repo).ok_or(super::JobError::NoRepository("reconcile"))?;
        let repo = self.github.repo(job.installation_id, name);
        let config = load_config(&repo).await?;
        self.reconcile_intervals
            .note(&job.repo, config.config.drift.interval_minutes);
        let branch = repo.default_branch().await?;
        let head = repo.branch_head(&branch).await?;
        let mut jobs = Vec::new();
        let mut recovered = 0;

        // Pull request heads the App never reviewed: their delivery was lost.
        for pr in repo.open_pull_requests().await? {
            if !repo
                .has_own_check_run(crate::bot::PREFLIGHT_CHECK, &pr.head_sha)
                .await?
            {
                tracing::info!(repo = %job.repo, pr = pr.number, "reconcile: a head was never reviewed; queued its preflight");
                jobs.push(recovery_job(job.installation_id, &job.repo, &pr));
                recovered += 1;
            }
        }

        // A merge at the head that was never applied: its delivery was lost, or its apply was
        // acknowledged and its job never queued (the pass that queued it failed after the
        // acknowledgement). Asking again is safe: the request is the merge's own, whose job id
        // and acknowledgement make a second ask change nothing.
        let applies = self.settings.deploy().is_some() && config.config.apply.applies_on_merge();
        let mut merge_queued = false;
        if applies
            && !repo
                .own_check_run_concluded(crate::bot::deploy::APPLY_CHECK, &head)
                .await?
        {
            let claimant = format!("{id}:merge");
            if let Handled::Started { jobs: queued, .. } = self
                .apply_merge_commit(&repo, &branch, &head, "fleetbot", &claimant, "reconcile")
                .await?
            {
                tracing::info!(repo = %job.repo, "reconcile: the merge at the head was never applied; queued its apply");
                recovered += queued.len();
                merge_queued = !queued.is_empty();
                jobs.extend(queued);
            }
        }

        // Without a cloud there is nothing to compare with: no `fleet/drift` rather than a
        // failing one on every repository.
        let conclusion = if self.settings.cloud.is_some() {
            let mut report = drift(&repo, &self.settings, &config, &branch, &head).await;
            let alias_key = self.alias_key(job.installation_id);
            // `drift: apply`. Not beside the merge's own apply this pass queued: that one
            // applies the head whole, and the next pass sees what is left.
            if config.config.drift.apply && !merge_queued {
                let repair = self.repair_drift(&repo, &report, id).await?;
                // Said on the report only when it is so: every repairable fleet is queued.
                let wanted = report.fleets.iter().any(|f| f.repair.is_some());
                report.repairs = self.settings.deploy().is_some() && (repair.is_some() || !wanted);
                jobs.extend(repair);
            }
            if config.config.drift.issue
                && let Err(e) = track(&repo, &report, &alias_key).await
            {
                // The issue is a convenience beside the check run; the next pass tries again.
                tracing::warn!(repo = %job.repo, "reconcile: the drift issue could not be kept: {e}");
            }
            match publish(&repo, &report, &alias_key).await {
                Ok(()) => {
                    tracing::info!(repo = %job.repo, fleets = report.fleets.len(), title = %report.title(), "drift compared");
                    report.conclusion()
                }
                // The jobs this pass queues must not be lost to a failed publication: the
                // next pass publishes `fleet/drift` again.
                Err(e) => {
                    tracing::warn!(repo = %job.repo, "reconcile: fleet/drift could not be published: {e}");
                    crate::github::CheckConclusion::Neutral
                }
            }
        } else {
            crate::github::CheckConclusion::Neutral
        };
        tracing::info!(
            repo = %job.repo,
            origin = %job.origin,
            conclusion = conclusion.as_str(),
            recovered,
            "reconciled"
        );
        Ok(Handled::Reconciled {
            conclusion,
            recovered,
            jobs,
        })
    }
}

impl Bot {
    /// The apply that re-applies the fleets `report` found drifted and repairable, held to
    /// the plans the pass published: the guard refuses a fleet whose plan changed since, and
    /// a repair never deletes, replaces or shrinks. `None` when nothing is to be repaired.
    async fn repair_drift(
        &self,
        repo: &RepoClient,
        report: &DriftReport,
        pass_id: &str,
    ) -> Result<Option<NewJob>, BotError> {
        let Some(deployer) = &self.settings.deploy() else {
            return Ok(None);
        };
        let repairs: Vec<(&str, &Repair)> = report
            .fleets
            .iter()
            .filter_map(|f| f.repair.as_ref().map(|r| (f.path.as_str(), r)))
            .collect();
        if repairs.is_empty() {
            return Ok(None);
        }
        let repo_name = repo.repo().to_string();
        for (path, repair) in &repairs {
            let plan = ReviewedPlan {
                pr_key: pr_key(&repo_name, DRIFT_REPAIR),
                head_sha: report.head_sha.clone(),
                fleet_path: path.to_string(),
                digest: repair.digest.clone(),
                summary: repair.summary.clone(),
                recorded_at: now_ms(),
            };
            // Fail closed: a repair whose plan is not on record would be refused anyway.
            if let Err(e) = deployer.store.record_reviewed_plan(&plan).await {
                tracing::warn!(repo = %repo_name, "reconcile: cannot record a drift repair's plan: {e}");
                return Ok(None);
            }
        }
        // One repair per pass, the same on a retry of the pass.
        let origin = format!(
            "drift-{}",
            &hex::encode(Sha256::digest(pass_id.as_bytes()))[..16]
        );
        let job_id = ApplyJob::job_id(&repo_name, DRIFT_REPAIR, &report.head_sha, &origin);
        if !self.claim_acknowledgement(&job_id, pass_id).await {
            return Ok(None);
        }
        let run = acknowledge(
            repo,
            &report.head_sha,
            &super::apply::external_id(DRIFT_REPAIR, &origin),
        )
        .await?;
        let mut paths: Vec<String> = repairs.iter().map(|(p, _)| p.to_string()).collect();
        paths.sort();
        let apply = ApplyJob {
            repo: repo_name.clone(),
            installation_id: repo.installation_id(),
            number: DRIFT_REPAIR,
            sha: report.head_sha.clone(),
            head_sha: report.head_sha.clone(),
            base_sha: String::new(),
            trigger: Trigger::Drift,
            actor: "fleetbot".into(),
            check_run_id: run.id,
            check_run_url: run.html_url,
            paths,
            removed: Vec::new(),
        };
        tracing::info!(repo = %repo_name, fleets = apply.paths.len(), "reconcile: queued a drift repair");
        Ok(Some(apply.to_job(&origin)))
    }
}

/// `fleet/drift` on the head, updated in place while the head stays.
async fn publish(
    repo: &RepoClient,
    report: &crate::bot::report::drift::DriftReport,
    alias_key: &[u8],
) -> Result<(), BotError> {
    let scanner = crate::bot::pr::output_scanner(alias_key);
    let run = CheckRunPayload {
        name: DRIFT_CHECK.to_string(),
        head_sha: report.head_sha.clone(),
        external_id: None,
        conclusion: report.conclusion(),
        output: CheckOutput {
            title: report.title(),
            summary: crate::bot::render::render_drift(report, &scanner),
            text: None,
            annotations: Vec::new(),
        },
        actions: Vec::new(),
    };
    repo.publish_check_run_in_place(&run).await?;
    Ok(())
}

/// The tracking issue, brought in line with the report: opened (or reopened) and kept current
/// while not in sync, closed once in sync. Nothing is opened for a repository in sync.
async fn track(
    repo: &RepoClient,
    report: &crate::bot::report::drift::DriftReport,
    alias_key: &[u8],
) -> Result<(), BotError> {
    let scanner = crate::bot::pr::output_scanner(alias_key);
    let (title, body, open) = crate::bot::render::render_drift_issue(report, &scanner);
    match repo.tracking_issue(DRIFT_ISSUE_MARKER).await? {
        Some(issue) if issue.open == open && issue.title == title && issue.body == body => {}
        // Closed and in sync: it stays closed with the text it was closed with.
        Some(issue) if !issue.open && !open => {}
        Some(issue) => repo.update_issue(issue.number, &title, &body, open).await?,
        None if open => {
            repo.create_issue(&title, &body).await?;
        }
        None => {}
    }
    Ok(())
}
