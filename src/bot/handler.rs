//! The bot's side effects: from a verified delivery to the calls it makes on GitHub.
//!
//! [`Bot::handle`] decodes one delivery and does its work: the preflight of a pull request's
//! head (fetch config and changed files, evaluate, publish both check runs and the sticky
//! comment) or the commands of a new comment (react with `eyes`, check each command's
//! permission, re-run the preflight for `/plan`, answer the rest in one short reply). It is
//! called by the worker after the delivery was accepted, never by the HTTP handler.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::commands::{CommandKind, parse_comment};
use super::config::{CONFIG_PATH, LoadedConfig};
use super::live::LiveCloud;
use super::pr::{ChangedFile, PrInput, QuotaInput, evaluate_pull_request};
use super::render::{render_command_reply, reply_marker};
use super::report::{CommandHelp, Verdict};
use crate::github::client::StickyComment;
use crate::github::events::{CommentAction, IssueCommentEvent, PrAction};
use crate::github::{
    ClientError, Event, EventError, FileStatus, GitHubClient, Permission, PullState, RepoClient,
    parse_event,
};
use crate::quota::evidence::QuotaEvidence;

/// Where quota evidence comes from for the budget, and for which tenant.
#[derive(Clone)]
pub struct QuotaSource {
    /// The tenant whose allowances apply (private: never shown or logged).
    pub tenant_id: String,
    pub evidence: Arc<dyn QuotaEvidence + Send + Sync>,
}

impl fmt::Debug for QuotaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuotaSource")
            .field("tenant_id", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// How the bot works, beyond the GitHub client.
#[derive(Clone)]
pub struct BotSettings {
    /// The cloud each changed spec is planned against, live; its quota evidence is the
    /// budget's. Reads only.
    pub cloud: Option<Arc<dyn LiveCloud>>,
    /// Fixed quota evidence for the budget when there is no cloud. With neither, the budget is
    /// reported as not checked and `fleet/preflight` is `neutral`.
    pub quota: Option<QuotaSource>,
    /// Changed files whose content is fetched for the privacy scan; the rest are reported as
    /// not scanned.
    pub max_fetched_files: usize,
    /// Larger files are not fetched.
    pub max_file_bytes: usize,
}

impl fmt::Debug for BotSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BotSettings")
            .field("cloud", &self.cloud.as_ref().map(|c| c.public_name()))
            .field("quota", &self.quota)
            .field("max_fetched_files", &self.max_fetched_files)
            .field("max_file_bytes", &self.max_file_bytes)
            .finish()
    }
}

impl Default for BotSettings {
    fn default() -> Self {
        BotSettings {
            cloud: None,
            quota: None,
            max_fetched_files: 300,
            max_file_bytes: 1 << 20,
        }
    }
}

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

/// Why a delivery could not be handled.
#[derive(Debug, thiserror::Error)]
pub enum BotError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error(transparent)]
    GitHub(#[from] ClientError),
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
            Event::PullRequest(e) if e.action.wants_preflight() => {
                let Some(installation) = e.installation_id else {
                    return Ok(Handled::Ignored(
                        "the delivery names no installation".into(),
                    ));
                };
                let repo = self.github.repo(installation, e.repo.clone());
                self.preflight(&repo, e.number, &e.head_sha, &e.base_sha)
                    .await
            }
            Event::PullRequest(e) if e.action == PrAction::Closed && e.merged => Ok(
                Handled::Ignored("merged: apply on merge comes with the engine's apply".into()),
            ),
            Event::PullRequest(e) => Ok(Handled::Ignored(format!(
                "pull_request action {:?} needs no preflight",
                e.action
            ))),
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

    fn alias_key(&self, installation_id: u64) -> Vec<u8> {
        self.github
            .credentials()
            .map(|c| c.installation_key(installation_id))
            .unwrap_or_else(|| b"fleetbot-without-app-credentials".to_vec())
    }

    async fn load_config(&self, repo: &RepoClient) -> Result<LoadedConfig, ClientError> {
        let branch = repo.default_branch().await?;
        let content = repo.file_content(CONFIG_PATH, &branch).await?;
        Ok(LoadedConfig::from_default_branch(
            &branch,
            content.as_deref(),
        ))
    }

    /// Preflight of one head commit: fetch, evaluate, publish checks, then the comment.
    pub async fn preflight(
        &self,
        repo: &RepoClient,
        number: u64,
        head_sha: &str,
        base_sha: &str,
    ) -> Result<Handled, BotError> {
        let config = self.load_config(repo).await?;
        let (listed, truncated) = repo.pull_request_files(number).await?;
        let matcher = config.config.spec_matcher();
        let is_spec = |f: &crate::github::PrFile| {
            matcher.matches(&f.filename)
                || f.previous_filename
                    .as_deref()
                    .is_some_and(|p| matcher.matches(p))
        };
        // Without a changed spec both checks are skipped and nothing needs fetching.
        let any_spec = listed.iter().any(is_spec);
        let mut files = Vec::with_capacity(listed.len());
        let mut fetched = 0usize;
        for f in &listed {
            let spec = is_spec(f);
            let mut file = ChangedFile {
                path: f.filename.clone(),
                status: f.status,
                previous_path: f.previous_filename.clone(),
                patch: f.patch.clone(),
                ..ChangedFile::default()
            };
            if any_spec && f.status != FileStatus::Removed {
                if spec || fetched < self.settings.max_fetched_files {
                    fetched += 1;
                    match repo.file_content(&f.filename, head_sha).await? {
                        Some(bytes) if bytes.len() <= self.settings.max_file_bytes || spec => {
                            file.head = Some(bytes)
                        }
                        Some(_) => file.not_fetched = Some("larger than the scan limit".into()),
                        None => file.not_fetched = Some("not found at the head commit".into()),
                    }
                } else {
                    file.not_fetched = Some(format!(
                        "more than {} changed files; not fetched",
                        self.settings.max_fetched_files
                    ));
                }
            }
            if spec && f.status != FileStatus::Added {
                let base_path = f.previous_filename.as_deref().unwrap_or(&f.filename);
                file.base = repo.file_content(base_path, base_sha).await?;
            }
            files.push(file);
        }
        // Forks are planned like any pull request: specs are data, nothing from them runs, and
        // the bot reads only its configured tenant (design.md, decision 9).
        let live = match &self.settings.cloud {
            Some(cloud) if config.error.is_none() => {
                super::live::read_live(cloud.as_ref(), &valid_head_specs(&files, &matcher)).await
            }
            _ => BTreeMap::new(),
        };
        let key = self.alias_key(repo.installation_id());
        let quota = self.settings.quota.as_ref().map(|q| QuotaInput {
            tenant_id: &q.tenant_id,
            evidence: q.evidence.as_ref(),
        });
        let repo_name = repo.repo().to_string();
        let outcome = evaluate_pull_request(&PrInput {
            repo: &repo_name,
            number,
            head_sha,
            base_sha,
            files: &files,
            files_truncated: truncated,
            config: &config,
            alias_key: &key,
            quota,
            live: &live,
        });
        let mut check_runs = Vec::new();
        for run in [&outcome.privacy, &outcome.preflight] {
            check_runs.push(repo.publish_check_run(run).await?.id);
        }
        let marker = super::render::COMMENT_MARKER;
        let comment = if outcome.report.verdict() == Verdict::NoSpecChanges {
            // Only a pull request that once touched specs has a comment to bring up to date.
            match repo.find_marked_comment(number, marker).await? {
                Some(existing) => {
                    if existing.body != outcome.comment {
                        repo.update_comment(existing.id, &outcome.comment).await?;
                    }
                    Some(StickyComment::Updated(existing.id))
                }
                None => None,
            }
        } else {
            Some(
                repo.upsert_marked_comment(number, marker, &outcome.comment)
                    .await?,
            )
        };
        tracing::info!(
            repo = %repo_name,
            pr = number,
            verdict = ?outcome.report.verdict(),
            digest = %outcome.report.short_digest(),
            "preflight published"
        );
        Ok(Handled::Preflight {
            verdict: outcome.report.verdict(),
            comment,
            check_runs,
        })
    }

    async fn on_comment(&self, e: IssueCommentEvent) -> Result<Handled, BotError> {
        // Only new comments run commands: an edit must never re-run one (TOCTOU).
        if e.action != CommentAction::Created {
            return Ok(Handled::Ignored(
                "only created comments run commands".into(),
            ));
        }
        if !e.is_pull_request {
            return Ok(Handled::Ignored(
                "comment on an issue, not a pull request".into(),
            ));
        }
        if e.author_is_bot {
            // Ours or another bot's: never answer a bot, so two bots cannot loop.
            return Ok(Handled::Ignored("comment by a bot".into()));
        }
        let parsed = parse_comment(&e.body);
        if parsed.is_empty() {
            return Ok(Handled::Ignored("no command in the comment".into()));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        let repo = self.github.repo(installation, e.repo.clone());
        if let Err(err) = repo.add_reaction(e.comment_id, "eyes").await {
            // The acknowledgement is a courtesy; the commands still run.
            tracing::warn!("could not react to the comment: {err}");
        }
        let config = self.load_config(&repo).await?;
        let mut errors: Vec<String> = parsed.errors.iter().map(|e| e.to_string()).collect();
        let mut notes = Vec::new();
        let mut help = false;
        let mut plan = false;
        let mut ran = 0;
        let mut permission: Option<Permission> = None;
        for command in &parsed.commands {
            let needed = config.config.required_permission(command.kind.name());
            if needed > Permission::None {
                let have = match permission {
                    Some(p) => p,
                    None => {
                        let p = repo.collaborator_permission(&e.author).await?;
                        permission = Some(p);
                        p
                    }
                };
                if have < needed {
                    errors.push(format!(
                        "{} needs {} permission on this repository; you have {}",
                        command.kind,
                        needed.as_str(),
                        have.as_str()
                    ));
                    continue;
                }
            }
            ran += 1;
            match command.kind {
                CommandKind::Plan => plan = true,
                CommandKind::Help => help = true,
                CommandKind::Status | CommandKind::VerifyStorage | CommandKind::VerifyGraphics => {
                    notes.push(format!(
                        "{} is not available in this deployment yet: it needs the engine's live cluster access",
                        command.kind
                    ))
                }
            }
        }
        if plan {
            let pr = repo.pull_request(e.issue_number).await?;
            if pr.state == PullState::Open {
                // Bound to the head at the moment the command is handled.
                self.preflight(&repo, e.issue_number, &pr.head_sha, &pr.base_sha)
                    .await?;
            } else {
                notes.push("/plan: the pull request is not open".into());
            }
        }
        let refused = errors.len();
        if !errors.is_empty() || !notes.is_empty() || help {
            let commands = CommandHelp::all(|name| config.config.required_permission(name));
            let reply = render_command_reply(
                e.comment_id,
                Some(&e.author),
                &errors,
                &notes,
                help,
                &commands,
            );
            repo.upsert_marked_comment(e.issue_number, &reply_marker(e.comment_id), &reply)
                .await?;
        }
        Ok(Handled::Commands { ran, refused })
    }
}

/// The changed specs whose head parses and validates, for the live plan (the others are
/// reported invalid by the evaluation and never planned).
fn valid_head_specs(
    files: &[ChangedFile],
    matcher: &super::config::SpecMatcher,
) -> Vec<(String, crate::spec::FleetSpec)> {
    files
        .iter()
        .filter(|f| {
            f.status != FileStatus::Removed
                && (matcher.matches(&f.path)
                    || f.previous_path
                        .as_deref()
                        .is_some_and(|p| matcher.matches(p)))
        })
        .filter_map(|f| {
            let text = std::str::from_utf8(f.head.as_deref()?).ok()?;
            let spec = crate::spec::load_str(text, &f.path).ok()?;
            Some((f.path.clone(), spec))
        })
        .collect()
}
