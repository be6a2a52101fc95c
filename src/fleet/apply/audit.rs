//! The audit log's entries: who asked for what, from where, and how it ended. Written best
//! effort (the log is the dashboard's and the operator's, never a guard's): a store that cannot
//! take an entry is logged, and what was asked goes on.

use crate::store::{AuditEntry, DeployStore};

/// Appends `entry`; a failure is logged with the entry's action.
pub async fn record(state: &dyn DeployStore, entry: &AuditEntry) {
    if let Err(e) = state.append_audit(entry).await {
        tracing::error!(action = %entry.action, "cannot write an audit record: {e}");
    }
}
