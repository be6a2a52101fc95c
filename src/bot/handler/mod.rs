//! The bot's side effects: from a verified delivery to the calls it makes on GitHub.
//!
//! [`Bot::handle`] decodes one delivery and hands it to the handler of its event: a pull
//! request's push runs the preflight job ([`super::jobs::preflight`]); a new comment's
//! commands are answered (react with `eyes`, check each command's permission, re-run the
//! preflight for `/plan`, answer the rest in one short reply). It is called by the worker after
//! the delivery was accepted, never by the HTTP handler.

mod apply;
mod deploy_commands;
mod issue_comment;
mod pull_request;
mod reconcile;
mod verify_commands;

use super::jobs::preflight::{PrHead, Published, preflight};
use super::report::Verdict;
use crate::github::client::{CheckConclusion, StickyComment};
use crate::github::{ClientError, Event, EventError, GitHubClient, RepoClient, parse_event};
use crate::store::NewJob;
use crate::store::queue::JobKind;

pub use super::settings::{BotSettings, QuotaSource};
pub use pull_request::{CLOSED_MERGED, CLOSED_UNMERGED};

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
        /// Follow-up jobs to queue (an `/apply`).
        jobs: Vec<NewJob>,
    },
    /// An apply was acknowledged (its check run is in progress) and is to be queued.
    Started { check_run: u64, jobs: Vec<NewJob> },
    /// An apply ran and published its check run.
    Applied {
        conclusion: CheckConclusion,
        /// The reason of each fleet the guard refused.
        refusals: Vec<&'static str>,
    },
    /// The job cannot run yet (a fleet's lease is held elsewhere); run it again later
    /// without counting the attempt.
    Deferred { reason: String, until: Option<i64> },
    /// An event worth a log line only (installations).
    Noted(String),
    /// A reconcile pass published `fleet/drift` and queued what was missed.
    Reconciled {
        conclusion: CheckConclusion,
        /// Pull request heads and merges whose delivery was lost, now queued.
        recovered: usize,
        jobs: Vec<NewJob>,
    },
}

impl Handled {
    /// The jobs this one asks to queue.
    pub fn follow_ups(&self) -> &[NewJob] {
        match self {
            Handled::Commands { jobs, .. }
            | Handled::Started { jobs, .. }
            | Handled::Reconciled { jobs, .. } => jobs,
            _ => &[],
        }
    }
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
    /// A queued job that cannot be run.
    #[error(transparent)]
    Job(#[from] JobError),
}

/// Why a queued job cannot be run: nothing a retry would change.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A kind this fleetbot does not know (written by a newer one sharing the store).
    #[error("unknown job kind {0:?}; not run")]
    UnknownKind(String),
    /// The store lost the job's payload: it is not run on an empty body.
    #[error("the store holds no payload for this job; not run")]
    NoPayload,
    /// The payload does not decode as its kind.
    #[error("cannot decode the {kind} job: {source}")]
    Undecodable {
        /// `apply`, `reconcile`.
        kind: &'static str,
        /// The decoder's words.
        source: serde_json::Error,
    },
    /// The job names no repository GitHub could have.
    #[error("the {0} job names no repository")]
    NoRepository(&'static str),
}

impl BotError {
    /// Whether retrying the job could help: a bad delivery or a request GitHub refuses will
    /// fail the same way every time, so such a job ends at once.
    pub fn is_permanent(&self) -> bool {
        match self {
            BotError::Event(_) | BotError::Job(_) => true,
            BotError::GitHub(e) => e.is_permanent(),
        }
    }
}

/// The bot: a GitHub client and its settings.
#[derive(Debug, Clone)]
pub struct Bot {
    github: GitHubClient,
    settings: BotSettings,
    reconcile_intervals: crate::bot::reconcile::Intervals,
}

impl Bot {
    pub fn new(github: GitHubClient, settings: BotSettings) -> Self {
        Bot {
            github,
            settings,
            reconcile_intervals: Default::default(),
        }
    }

    /// Each repository's reconcile interval, as its last pass read it from `.fleetbot.yml`.
    pub fn reconcile_intervals(&self) -> &crate::bot::reconcile::Intervals {
        &self.reconcile_intervals
    }

    /// The settings the bot runs with.
    pub fn settings(&self) -> &BotSettings {
        &self.settings
    }

    /// The GitHub client (for its metrics).
    pub fn github(&self) -> &GitHubClient {
        &self.github
    }

    /// Handles one verified delivery, as having arrived now.
    pub async fn handle(&self, event: &str, payload: &[u8]) -> Result<Handled, BotError> {
        self.handle_delivery("", crate::store::queue::now_ms(), event, payload)
            .await
    }

    /// Runs one queued job: a webhook delivery (`id` is its delivery id), an apply or a
    /// reconcile pass, queued at `queued_at` (unix ms; for a delivery, when it arrived).
    pub async fn run_job(
        &self,
        kind: JobKind,
        id: &str,
        queued_at: i64,
        event: &str,
        payload: &[u8],
    ) -> Result<Handled, BotError> {
        match kind {
            JobKind::Apply => self.run_apply(id, payload).await,
            JobKind::Reconcile => self.run_reconcile(id, payload).await,
            JobKind::Webhook => self.handle_delivery(id, queued_at, event, payload).await,
        }
    }

    /// Handles one verified delivery; `delivery` (its `X-GitHub-Delivery`) tells a
    /// redelivered button press from a new one, and `arrived` (unix ms) is when fleetbot
    /// received it.
    pub async fn handle_delivery(
        &self,
        delivery: &str,
        arrived: i64,
        event: &str,
        payload: &[u8],
    ) -> Result<Handled, BotError> {
        match parse_event(event, payload)? {
            Event::PullRequest(e) => self.on_pull_request(e, delivery, arrived).await,
            Event::Push(e) => self.on_push(e, delivery).await,
            Event::IssueComment(e) => self.on_comment(e).await,
            Event::CheckRunRequestedAction(e) => self.on_apply_check(e, delivery, false).await,
            Event::CheckRunRerequested(e) => self.on_apply_check(e, delivery, true).await,
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

    /// Runs a queued apply job.
    async fn run_apply(&self, id: &str, payload: &[u8]) -> Result<Handled, BotError> {
        use crate::bot::deploy::job::{self, ApplyJob, JobEnd};
        let job: ApplyJob =
            serde_json::from_slice(payload).map_err(|source| JobError::Undecodable {
                kind: "apply",
                source,
            })?;
        let Some(deployer) = &self.settings.deploy() else {
            return Ok(Handled::Ignored(
                "an apply job, but fleetbot has no cloud configured".into(),
            ));
        };
        let name =
            crate::github::RepoName::parse(&job.repo).ok_or(JobError::NoRepository("apply"))?;
        let repo = self.github.repo(job.installation_id, name);
        let key = self.alias_key(job.installation_id);
        match job::run(&repo, &self.settings, deployer, id, &job, &key).await? {
            JobEnd::Published(report) => {
                // The cloud changed under a target since review: what it would take now is
                // planned afresh at the applied commit, so the person the run asks for sees
                // it (and `/approve-destroy` approves exactly it) without asking.
                // Best effort: the apply is done and published; a preflight GitHub refused now
                // must not make the job (and so the apply) run again.
                if report.changed_since_review()
                    && let Err(e) = self
                        .preflight(&repo, job.number, &job.sha, &job.base_sha)
                        .await
                {
                    tracing::warn!("the preflight after a changed cloud could not run: {e}");
                }
                Ok(Handled::Applied {
                    conclusion: report.conclusion(),
                    refusals: report.refusals(),
                })
            }
            JobEnd::Wait { holder, until } => Ok(Handled::Deferred {
                reason: format!("a fleet is locked by {holder}"),
                until,
            }),
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
