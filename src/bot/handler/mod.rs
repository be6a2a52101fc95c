//! The bot's side effects: from a verified delivery to the calls it makes on GitHub.
//!
//! [`Bot::handle`] decodes one delivery and hands it to the handler of its event: a pull
//! request's push runs the preflight job ([`super::jobs::preflight`]); a new comment's
//! commands are answered (react with `eyes`, check each command's permission, re-run the
//! preflight for `/plan`, answer the rest in one short reply). It is called by the worker after
//! the delivery was accepted, never by the HTTP handler.

mod issue_comment;
mod pull_request;

use super::jobs::preflight::{PrHead, Published, preflight};
use super::report::Verdict;
use crate::github::client::StickyComment;
use crate::github::{ClientError, Event, EventError, GitHubClient, RepoClient, parse_event};

pub use super::settings::{BotSettings, QuotaSource};

/// What handling a delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Nothing to do, and why.
    Ignored(String),
    /// A preflight was published.
    Preflight {
        verdict: Verdict,
        /// The sticky comment, unless none exists and none was needed.
        comment: Option<StickyComment>,
        /// The two check runs' ids.
        check_runs: Vec<u64>,
    },
    /// A comment's commands were handled.
    Commands {
        /// Commands run.
        ran: usize,
        /// Errors and refusals answered.
        refused: usize,
    },
    /// An event worth a log line only (installations).
    Noted(String),
}

impl From<Published> for Handled {
    fn from(p: Published) -> Self {
        Handled::Preflight {
            verdict: p.verdict,
            comment: p.comment,
            check_runs: p.check_runs,
        }
    }
}

/// Why a delivery could not be handled.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error(transparent)]
    GitHub(#[from] ClientError),
}

impl BotError {
    /// Whether retrying the job could help: a bad delivery or a request GitHub refuses will
    /// fail the same way every time, so such a job ends at once.
    pub fn is_permanent(&self) -> bool {
        match self {
            BotError::Event(_) => true,
            BotError::GitHub(e) => e.is_permanent(),
        }
    }
}

/// The bot: a GitHub client and its settings.
#[derive(Debug, Clone)]
pub struct Bot {
    github: GitHubClient,
    settings: BotSettings,
}

impl Bot {
    pub fn new(github: GitHubClient, settings: BotSettings) -> Self {
        Bot { github, settings }
    }

    /// The GitHub client (for its metrics).
    pub fn github(&self) -> &GitHubClient {
        &self.github
    }

    /// Handles one verified delivery.
    pub async fn handle(&self, event: &str, payload: &[u8]) -> Result<Handled, BotError> {
        match parse_event(event, payload)? {
            Event::PullRequest(e) => self.on_pull_request(e).await,
            Event::IssueComment(e) => self.on_comment(e).await,
            Event::CheckRunRequestedAction(e) => Ok(Handled::Ignored(format!(
                "check run action {:?}: no buttons are offered yet",
                e.identifier
            ))),
            Event::Installation(e) => Ok(Handled::Noted(format!(
                "installation {} {}: {} repositories",
                e.installation_id,
                e.action,
                e.repositories.len()
            ))),
            Event::Ping { .. } => Ok(Handled::Ignored("ping".into())),
            Event::Unknown { event, .. } => Ok(Handled::Ignored(format!("event {event}"))),
        }
    }

    /// Privacy aliases are keyed per installation, so equal values match only within one.
    fn alias_key(&self, installation_id: u64) -> Vec<u8> {
        self.github
            .credentials()
            .map(|c| c.installation_key(installation_id))
            .unwrap_or_else(|| b"fleetbot-without-app-credentials".to_vec())
    }

    /// Preflight of one head commit: fetch, evaluate, publish checks, then the comment.
    pub async fn preflight(
        &self,
        repo: &RepoClient,
        number: u64,
        head_sha: &str,
        base_sha: &str,
    ) -> Result<Handled, BotError> {
        let key = self.alias_key(repo.installation_id());
        let pr = PrHead {
            number,
            head_sha,
            base_sha,
        };
        Ok(preflight(repo, &self.settings, &key, pr).await?.into())
    }
}
