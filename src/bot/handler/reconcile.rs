//! One reconcile pass over a repository ([`crate::bot::reconcile`]): lost pull request heads
//! and a lost merge queued again, then the default branch compared with the cloud and
//! `fleet/drift` kept in place on its head.

use super::{Bot, BotError, Handled};
use crate::bot::jobs::load_config;
use crate::bot::reconcile::{ReconcileJob, drift, recovery_job};
use crate::bot::report::drift::DRIFT_CHECK;
use crate::github::{CheckOutput, CheckRunPayload, RepoClient, RepoName};

impl Bot {
    pub(super) async fn run_reconcile(
        &self,
        id: &str,
        payload: &[u8],
    ) -> Result<Handled, BotError> {
        let job: ReconcileJob = serde_json::from_slice(payload)
            .map_err(|e| BotError::Job(format!("cannot decode the reconcile job: {e}")))?;
        let name = RepoName::parse(&job.repo)
            .ok_or_else(|| BotError::Job("the reconcile job names no repository".into()))?;
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
        let applies = self.settings.deploy.is_some() && config.config.apply.applies_on_merge();
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
                jobs.extend(queued);
            }
        }

        // Without a cloud there is nothing to compare with: no `fleet/drift` rather than a
        // failing one on every repository.
        let conclusion = if self.settings.cloud.is_some() {
            let report = drift(&repo, &self.settings, &config, &branch, &head).await;
            match publish(&repo, &report, &self.alias_key(job.installation_id)).await {
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
