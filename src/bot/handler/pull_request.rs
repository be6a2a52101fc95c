//! `pull_request`: a new head (opened, pushed, reopened, ready) gets a fresh preflight; a
//! merge is applied ([`super::apply`]).

use super::{Bot, BotError, Handled};
use crate::github::events::{PrAction, PullRequestEvent};

impl Bot {
    pub(super) async fn on_pull_request(
        &self,
        e: PullRequestEvent,
        delivery: &str,
    ) -> Result<Handled, BotError> {
        if e.action == PrAction::Closed && e.merged {
            return self.on_merged(e, delivery).await;
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
