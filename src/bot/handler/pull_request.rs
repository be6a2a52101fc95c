//! `pull_request`: a new head (opened, pushed, reopened, ready) gets a fresh preflight; a
//! merge is applied ([`super::apply`]).

use super::{Bot, BotError, Handled};

/// The audit actions of a pull request that closed.
pub const CLOSED_MERGED: &str = "pull request merged";
pub const CLOSED_UNMERGED: &str = "pull request closed";
use crate::github::events::{PrAction, PullRequestEvent};

impl Bot {
    /// Notes in the audit log that the pull request closed (merged or not), so what it
    /// requested stops counting as requested by an open pull request. Best effort: the log
    /// is the dashboard's, never a guard's.
    async fn record_closed(&self, e: &PullRequestEvent) {
        let Some(deployer) = &self.settings.deploy() else {
            return;
        };
        let entry = crate::store::AuditEntry {
            at: crate::store::queue::now_ms(),
            actor: String::new(),
            action: if e.merged {
                CLOSED_MERGED.into()
            } else {
                CLOSED_UNMERGED.into()
            },
            repo: e.repo.to_string(),
            pr: e.number,
            sha: e.head_sha.clone(),
            fleet: String::new(),
            outcome: "closed".into(),
            digest: String::new(),
            detail: String::new(),
        };
        crate::fleet::apply::audit::record(deployer.store.as_ref(), &entry).await;
    }

    /// Records that the pull request's head became `e.head_sha` when its delivery arrived:
    /// `/apply` acts only on the head current when its comment was written. A head that
    /// cannot be recorded is logged; the command that needs it then fails closed.
    async fn record_head(&self, e: &PullRequestEvent, arrived: i64) {
        let Some(deployer) = &self.settings.deploy() else {
            return;
        };
        let key = crate::store::queue::pr_key(&e.repo.to_string(), e.number);
        if let Err(err) = deployer
            .store
            .record_pr_head(&key, &e.head_sha, arrived)
            .await
        {
            tracing::warn!("cannot record the pull request's head: {err}");
        }
    }

    pub(super) async fn on_pull_request(
        &self,
        e: PullRequestEvent,
        delivery: &str,
        arrived: i64,
    ) -> Result<Handled, BotError> {
        if e.action == PrAction::Closed {
            self.record_closed(&e).await;
        }
        if e.action == PrAction::Closed && e.merged {
            return self.on_merged(e, delivery).await;
        }
        if e.action.wants_preflight() {
            self.record_head(&e, arrived).await;
        }
        if !e.action.wants_preflight() {
            return Ok(Handled::Ignored(format!(
                "pull_request action {:?} needs no preflight",
                e.action
            )));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        let repo = self.github.repo(installation, e.repo.clone());
        self.preflight(&repo, e.number, &e.head_sha, &e.base_sha)
            .await
    }
}
