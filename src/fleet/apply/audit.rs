//! The audit log's entries: who asked for what, from where, and how it ended. Written best
//! effort (the log is the dashboard's and the operator's, never a guard's): a store that cannot
//! take an entry is logged, and what was asked goes on.

use crate::fleet::guard::Trigger;
use crate::store::queue::now_ms;
use crate::store::{AuditEntry, DeployStore};

/// Where an apply comes from: who asked, how, and the commit of which pull request.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The person (or the merge's author) who asked.
    pub actor: &'a str,
    /// A merge, a Re-run, the Apply button or `/apply`.
    pub trigger: Trigger,
    /// `owner/name`.
    pub repo: &'a str,
    /// The pull request.
    pub pr: u64,
    /// The commit applied.
    pub sha: &'a str,
}

impl Origin<'_> {
    /// Who holds a fleet's lease while this applies, in public words: `#12 at abc1234 (merge)`.
    pub fn holder(&self) -> String {
        let short = self.sha.get(..7).unwrap_or(self.sha);
        format!("#{} at {short} ({})", self.pr, self.trigger.as_str())
    }

    /// The audit entry of `action` on `fleet` (a spec's path; empty: the whole request),
    /// ended as `outcome`.
    pub fn entry(&self, action: &str, fleet: &str, outcome: &str, digest: &str) -> AuditEntry {
        AuditEntry {
            at: now_ms(),
            actor: self.actor.to_string(),
            action: format!("{action} ({})", self.trigger.as_str()),
            repo: self.repo.to_string(),
            pr: self.pr,
            sha: self.sha.to_string(),
            fleet: fleet.to_string(),
            outcome: outcome.to_string(),
            digest: digest.to_string(),
            detail: String::new(),
        }
    }
}

/// Appends `entry`; a failure is logged with the entry's action.
pub async fn record(state: &dyn DeployStore, entry: &AuditEntry) {
    if let Err(e) = state.append_audit(entry).await {
        tracing::error!(action = %entry.action, "cannot write an audit record: {e}");
    }
}
