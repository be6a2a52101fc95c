//! `fleetbot preview --post`: the GitHub Action's path. In a workflow run for a pull request
//! it reads the run's context from the environment GitHub Actions sets, previews the change
//! from the checkout as `fleetbot preview` does, and posts the sticky comment and both check
//! runs with the workflow's own token, through the App's own publishing code.

use std::path::PathBuf;

use serde::Deserialize;

use super::git::{Git, Refs};
use crate::bot::pr::PrOutcome;
use crate::fleet::{CloudChoice, Session, SessionOptions};
use crate::github::client::ClientConfig;
use crate::github::{AppIdentity, GitHubClient, RepoName, SecretString};

/// The login a workflow token's comments are authored by.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// What a workflow run for a pull request tells its steps.
pub(super) struct ActionsContext {
    token: SecretString,
    api_url: String,
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    base_sha: String,
    head_sha: String,
    default_branch: String,
    /// Who the token's comments are authored by.
    bot_login: String,
}

/// The parts of the `pull_request` (or `pull_request_target`) event payload that are read.
#[derive(Deserialize)]
struct Event {
    pull_request: Option<EventPull>,
    repository: Option<EventRepo>,
}

#[derive(Deserialize)]
struct EventPull {
    number: u64,
    base: EventRef,
    head: EventRef,
}

#[derive(Deserialize)]
struct EventRef {
    sha: String,
}

#[derive(Deserialize)]
struct EventRepo {
    default_branch: String,
}

fn required(name: &str) -> Result<String, String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            format!("--post runs in a GitHub Actions job for a pull request: {name} is not set")
        })
}

impl ActionsContext {
    /// Reads `GITHUB_TOKEN`, `GITHUB_REPOSITORY`, `GITHUB_EVENT_PATH` and `GITHUB_API_URL`.
    pub fn from_env() -> Result<ActionsContext, String> {
        let token = SecretString::new(required("GITHUB_TOKEN")?);
        let repo = required("GITHUB_REPOSITORY")?;
        if RepoName::parse(&repo).is_none() {
            return Err(format!("GITHUB_REPOSITORY={repo:?} is not owner/name"));
        }
        let event_path = PathBuf::from(required("GITHUB_EVENT_PATH")?);
        let text = std::fs::read_to_string(&event_path)
            .map_err(|e| format!("cannot read the event {}: {e}", event_path.display()))?;
        let event: Event = serde_json::from_str(&text).map_err(|e| {
            format!(
                "the event {} is not JSON GitHub sends: {e}",
                event_path.display()
            )
        })?;
        let pull = event.pull_request.ok_or(
            "--post needs a pull_request or pull_request_target event (this run's event has no pull request)",
        )?;
        let hex = |s: &str| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(&pull.base.sha) || !hex(&pull.head.sha) {
            return Err("the event's pull request has no base and head commit SHAs".into());
        }
        Ok(ActionsContext {
            token,
            api_url: std::env::var("GITHUB_API_URL")
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| crate::github::DEFAULT_API_URL.to_string()),
            repo,
            number: pull.number,
            base_sha: pull.base.sha,
            head_sha: pull.head.sha,
            default_branch: event
                .repository
                .map(|r| r.default_branch)
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "main".into()),
            bot_login: std::env::var("FLEETBOT_GITHUB_BOT_LOGIN")
                .ok()
                .filter(|v| v.ends_with("[bot]"))
                .unwrap_or_else(|| ACTIONS_BOT.into()),
        })
    }

    /// The commits as the App compares them: the diff from the merge base of the base
    /// branch's tip and the head, and `.fleetbot.yml` from the default branch (the
    /// `origin/<default>` ref when the checkout has it, else the base tip).
    pub fn refs(&self, repo: &Git) -> Result<Refs, String> {
        let commit = |r: &str| repo.text(&["rev-parse", "--verify", &format!("{r}^{{commit}}")]);
        let missing = |sha: &str| {
            format!(
                "commit {sha} is not in the checkout: check out with fetch-depth: 0, or fetch it (action.yml does)"
            )
        };
        let head_sha = commit(&self.head_sha).map_err(|_| missing(&self.head_sha))?;
        let base_tip = commit(&self.base_sha).map_err(|_| missing(&self.base_sha))?;
        let base_sha = repo.text(&["merge-base", &base_tip, &head_sha])?;
        let branch_sha = commit(&format!("refs/remotes/origin/{}", self.default_branch))
            .or_else(|_| commit(&format!("refs/heads/{}", self.default_branch)))
            .unwrap_or(base_tip);
        Ok(Refs {
            branch: self.default_branch.clone(),
            branch_sha,
            base_sha,
            head_sha,
        })
    }

    /// The cloud as `FLEETBOT_CLOUD` says: `none` (the default here: a static plan), or
    /// `nebius` with its credentials. Never the embedded simulator: an Action's runner has no
    /// fleet in it, and a plan against an empty simulator would mislead.
    pub async fn cloud(&self, profile: &str) -> Result<Option<Session>, String> {
        let choice = std::env::var("FLEETBOT_CLOUD").unwrap_or_default();
        match choice.trim().to_ascii_lowercase().as_str() {
            "" | "none" => Ok(None),
            "nebius" => {
                let options = SessionOptions {
                    choice: CloudChoice::Nebius,
                    ..super::env::credentials_options(profile)
                };
                Session::connect_configured(&options)
                    .await
                    .map_err(|e| e.to_string())
            }
            other => Err(format!(
                "FLEETBOT_CLOUD={other:?}: with --post it is none or nebius"
            )),
        }
    }

    /// Posts the check runs and the sticky comment as the App does.
    pub async fn publish(&self, outcome: &PrOutcome) -> Result<(), String> {
        let slug = self.bot_login.trim_end_matches("[bot]").to_string();
        let client = GitHubClient::new(ClientConfig {
            api_url: self.api_url.clone(),
            token: Some(self.token.clone()),
            identity: Some(AppIdentity { id: 0, slug }),
            ..ClientConfig::default()
        })
        .map_err(|e| e.to_string())?;
        let name = RepoName::parse(&self.repo).ok_or("GITHUB_REPOSITORY is not owner/name")?;
        let repo = client.repo(0, name);
        let posting = |e: crate::github::ClientError| format!("posting to GitHub failed: {e}");
        let checks = crate::bot::jobs::preflight::publish_checks(&repo, outcome)
            .await
            .map_err(posting)?;
        let comment = crate::bot::jobs::preflight::publish_comment(&repo, self.number, outcome)
            .await
            .map_err(posting)?;
        eprintln!(
            "fleetbot preview: posted {} check runs and {} on {}#{}",
            checks.len(),
            match comment {
                Some(crate::github::client::StickyComment::Created(_)) => "a new comment",
                Some(crate::github::client::StickyComment::Updated(_)) => "the updated comment",
                None => "no comment (no spec changed)",
            },
            self.repo,
            self.number
        );
        Ok(())
    }
}
