//! The commands that act on fleets: `/apply`, `/approve-destroy`, `/unlock` and `/status`.
//! Each answers in the comment's one reply with what it did or why it did not, and leaves an
//! audit record; the permission check happened before (in [`super::issue_comment`]).

use super::apply::{ApplyRequest, names_fleet};
use super::{Bot, BotError};
use crate::bot::authority::{Ask, CommentNow, bound_to_comment};
use crate::bot::commands::Command;
use crate::bot::deploy::job::short;
use crate::bot::jobs::load_config;
use crate::bot::report::ReplyNote;
use crate::fleet::backend::Deploying;
use crate::fleet::guard::{PublicNames, ReviewSummary, approval_digest};
use crate::github::events::IssueCommentEvent;
use crate::github::{FileStatus, PullState, RepoClient};
use crate::store::queue::{now_ms, pr_key};
use crate::store::{Approval, AuditEntry, NewJob};

/// What one command produced for the reply.
#[derive(Default)]
pub(super) struct Said {
    pub notes: Vec<ReplyNote>,
    pub errors: Vec<String>,
    pub jobs: Vec<NewJob>,
}

const NO_CLOUD: &str = "is not available: fleetbot has no cloud configured to apply to";

impl Bot {
    pub(super) async fn fleet_command(
        &self,
        repo: &RepoClient,
        e: &IssueCommentEvent,
        command: &Command,
        said: &mut Said,
    ) -> Result<(), BotError> {
        use crate::bot::commands::CommandKind;
        let Some(deployer) = &self.settings.deploy() else {
            said.errors.push(format!("{} {NO_CLOUD}", command.kind));
            return Ok(());
        };
        let only = command.args.get("fleet").map(String::as_str);
        let outcome = match command.kind {
            CommandKind::Apply => self.apply_command(repo, e, command, said).await?,
            CommandKind::ApproveDestroy => self.approve(repo, deployer, e, command, said).await?,
            CommandKind::Unlock => unlock(repo, deployer, e, only, said).await?,
            CommandKind::Status => {
                status(
                    repo,
                    deployer,
                    e,
                    only,
                    said,
                    self.settings.runtime.as_deref(),
                )
                .await?
            }
            CommandKind::VerifyStorage | CommandKind::VerifyGraphics | CommandKind::VerifyMig => {
                self.verify_command(repo, e, command, said).await?
            }
            CommandKind::Reconcile => {
                let Some(installation) = e.installation_id else {
                    said.errors
                        .push("/reconcile: the delivery names no installation".into());
                    return Ok(());
                };
                let job = crate::bot::reconcile::ReconcileJob {
                    installation_id: installation,
                    repo: repo.repo().to_string(),
                    origin: "command".into(),
                };
                said.jobs.push(job.to_job(&format!("c{}", e.comment_id)));
                said.notes.push(
                    "/reconcile: queued; the `fleet/drift` check on the default branch's head will say what differs"
                        .into(),
                );
                "queued".to_string()
            }
            CommandKind::Plan | CommandKind::Help => return Ok(()),
        };
        let entry = AuditEntry {
            at: now_ms(),
            actor: e.author.clone(),
            action: command.kind.to_string(),
            repo: repo.repo().to_string(),
            pr: e.issue_number,
            sha: String::new(),
            fleet: only.unwrap_or_default().to_string(),
            outcome,
            digest: String::new(),
            detail: String::new(),
        };
        crate::fleet::apply::audit::record(deployer.store.as_ref(), &entry).await;
        Ok(())
    }

    async fn apply_command(
        &self,
        repo: &RepoClient,
        e: &IssueCommentEvent,
        command: &Command,
        said: &mut Said,
    ) -> Result<String, BotError> {
        let origin = format!("c{}", e.comment_id);
        let only = command.args.get("fleet").map(String::as_str);
        let comment = comment_now(repo, e, command).await?;
        match self
            .request_apply(
                repo,
                &ApplyRequest {
                    number: e.issue_number,
                    ask: Ask::Comment(comment),
                    actor: &e.author,
                    origin: &origin,
                    only,
                    claimant: &origin,
                },
            )
            .await?
        {
            Ok(r) => {
                said.notes.push(
                    format!(
                        "/apply: queued; follow the fleet/apply check on {}.",
                        short(&r.sha)
                    )
                    .into(),
                );
                said.jobs.push(r.job);
                Ok("queued".into())
            }
            Err(why) => {
                said.errors.push(format!("/apply: {why}"));
                Ok(format!("refused: {why}"))
            }
        }
    }
}

/// The comment as GitHub has it now (`None` once deleted), for the command about to act on
/// it: re-read, because the delivery may be a late or repeated copy of a comment that was
/// edited or deleted since.
async fn comment_now(
    repo: &RepoClient,
    e: &IssueCommentEvent,
    command: &Command,
) -> Result<Option<CommentNow>, BotError> {
    let Some(now) = repo.issue_comment(e.comment_id).await? else {
        return Ok(None);
    };
    let still_asks = now.author == e.author
        && crate::bot::commands::parse_comment(&now.body)
            .commands
            .iter()
            .any(|c| c.kind == command.kind && c.args == command.args);
    Ok(Some(CommentNow {
        command: command.kind.slash(),
        created_at: now.created_at,
        still_asks,
    }))
}

/// A changed spec of the pull request and the commit whose plan applies to it.
pub(super) struct Target {
    pub path: String,
    pub removed: bool,
}

/// The pull request's changed specs (filtered by `fleet=`) and the commit that matters: the
/// merge commit once merged, else the head.
async fn targets(
    repo: &RepoClient,
    number: u64,
    only: Option<&str>,
) -> Result<(crate::github::PullRequestInfo, Vec<Target>), BotError> {
    let pr = repo.pull_request(number).await?;
    let config = load_config(repo).await?;
    let matcher = config.config.spec_matcher();
    let (files, _) = repo.pull_request_files(number).await?;
    let mut out: Vec<Target> = files
        .iter()
        .filter(|f| matcher.matches(&f.filename))
        .filter(|f| only.is_none_or(|o| names_fleet(&f.filename, o)))
        .map(|f| Target {
            path: f.filename.clone(),
            removed: f.status == FileStatus::Removed,
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((pr, out))
}

/// [`targets`], or `None` (and the reason said) when no changed spec matches.
pub(super) async fn changed_fleets(
    repo: &RepoClient,
    number: u64,
    only: Option<&str>,
    command: &str,
    said: &mut Said,
) -> Result<Option<(crate::github::PullRequestInfo, Vec<Target>)>, BotError> {
    let (pr, found) = targets(repo, number, only).await?;
    if !found.is_empty() {
        return Ok(Some((pr, found)));
    }
    said.errors.push(match only {
        Some(o) => format!("{command}: no fleet spec this pull request changed matches fleet={o}"),
        None => format!("{command}: the pull request changed no fleet spec"),
    });
    Ok(None)
}

/// The commit a command acts on: the merge commit once merged, else the head.
pub(super) fn commit_of(pr: &crate::github::PullRequestInfo) -> String {
    match (&pr.merged, &pr.merge_commit_sha) {
        (true, Some(sha)) => sha.clone(),
        _ => pr.head_sha.clone(),
    }
}

impl Bot {
    /// `/approve-destroy`: approves the plan each changed fleet was last reviewed with, bound
    /// to that plan's commit and digest (a later push, or a plan that changes, voids it).
    async fn approve(
        &self,
        repo: &RepoClient,
        deployer: &Deploying<'_>,
        e: &IssueCommentEvent,
        command: &Command,
        said: &mut Said,
    ) -> Result<String, BotError> {
        let only = command.args.get("fleet").map(String::as_str);
        let Some((pr, targets)) =
            changed_fleets(repo, e.issue_number, only, "/approve-destroy", said).await?
        else {
            return Ok("refused: no fleet".into());
        };
        let key = pr_key(&repo.repo().to_string(), e.issue_number);
        // An approval is of the plan its author saw: the head current when the comment was
        // written, as the comment reads now.
        let comment = comment_now(repo, e, command).await?;
        let config = load_config(repo).await?;
        let Some(heads) = self.pr_heads(&key).await else {
            said.errors.push(
                "/approve-destroy: fleetbot's store could not be read; nothing was approved".into(),
            );
            return Ok("failed: store unreadable".into());
        };
        if let Err(denied) = bound_to_comment(
            comment.as_ref(),
            &super::apply::pull_now(&pr, repo, config.branch()),
            &heads,
            now_ms(),
            super::apply::minutes_ms(config.config.command_max_age_minutes),
        ) {
            said.errors.push(format!("/approve-destroy: {denied}"));
            return Ok(format!("refused: {denied}"));
        }
        approve_plans(deployer, e, &pr, &targets, &key, said).await
    }
}

/// Records `/approve-destroy` on the plan each changed fleet was last reviewed with.
async fn approve_plans(
    deployer: &Deploying<'_>,
    e: &IssueCommentEvent,
    pr: &crate::github::PullRequestInfo,
    targets: &[Target],
    key: &str,
    said: &mut Said,
) -> Result<String, BotError> {
    // After the merge, the plan the apply refused is at the merge commit; before, at the head.
    let mut commits = Vec::new();
    if pr.merged
        && let Some(sha) = &pr.merge_commit_sha
    {
        commits.push(sha.clone());
    }
    if pr.state == PullState::Open || pr.merged {
        commits.push(pr.head_sha.clone());
    }
    let mut approved = 0;
    for target in targets.iter().filter(|t| !t.removed) {
        let mut found = None;
        for sha in &commits {
            match deployer.store.reviewed_plan(key, sha, &target.path).await {
                Ok(Some(plan)) => {
                    found = Some((sha.clone(), plan));
                    break;
                }
                Ok(None) => {}
                Err(err) => {
                    tracing::warn!("/approve-destroy: the store could not be read: {err}");
                    said.errors.push(
                        "/approve-destroy: fleetbot's store could not be read; nothing was approved"
                            .into(),
                    );
                    return Ok("failed: store unreadable".into());
                }
            }
        }
        let Some((sha, plan)) = found else {
            said.errors.push(format!(
                "/approve-destroy: {} has no live plan to approve yet (run /plan)",
                target.path
            ));
            continue;
        };
        let summary = ReviewSummary::parse(&plan.summary);
        if summary.deletions.is_empty() {
            said.notes.push(
                format!(
                    "/approve-destroy: the plan of {} deletes, replaces and shrinks nothing; nothing to approve",
                    target.path
                )
                .into(),
            );
            continue;
        }
        let approval = Approval {
            pr_key: key.to_string(),
            fleet_path: target.path.clone(),
            digest: approval_digest(&sha, &plan.digest),
            approver: e.author.clone(),
            approved_at: now_ms(),
        };
        if let Err(err) = deployer.store.record_approval(&approval).await {
            tracing::warn!("/approve-destroy: the store could not be written: {err}");
            said.errors.push(
                "/approve-destroy: fleetbot's store could not be written; nothing was approved"
                    .into(),
            );
            return Ok("failed: store unwritable".into());
        }
        approved += 1;
        said.notes.push(ReplyNote {
            line: format!(
                "/approve-destroy: approved for {} at {} (a later push voids it):",
                target.path,
                short(&sha)
            ),
            items: summary.deletions.clone(),
        });
    }
    Ok(format!("approved {approved} fleet(s)"))
}

/// The `name` of the spec at `path` in commit `sha`, when it reads as a spec (valid or not).
async fn fleet_name_at(
    repo: &RepoClient,
    path: &str,
    sha: &str,
) -> Result<Option<String>, BotError> {
    let Some(bytes) = repo.file_content(path, sha).await? else {
        return Ok(None);
    };
    Ok(std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| crate::spec::spec_from_str(text, path).ok())
        .map(|spec| spec.name)
        .filter(|name| !name.is_empty()))
}

/// `/unlock`: frees the lease of each changed fleet, whoever holds it.
async fn unlock(
    repo: &RepoClient,
    deployer: &Deploying<'_>,
    e: &IssueCommentEvent,
    only: Option<&str>,
    said: &mut Said,
) -> Result<String, BotError> {
    let Some((pr, targets)) = changed_fleets(repo, e.issue_number, only, "/unlock", said).await?
    else {
        return Ok("refused: no fleet".into());
    };
    let mut freed = 0;
    for target in &targets {
        // Leases are per fleet: the spec names it (at the commit, or before a removal).
        let sha = if target.removed {
            pr.base_sha.clone()
        } else {
            commit_of(&pr)
        };
        let Some(fleet) = fleet_name_at(repo, &target.path, &sha).await? else {
            said.errors.push(format!(
                "/unlock: {} names no fleet at {} (it does not parse); nothing to unlock",
                target.path,
                short(&sha)
            ));
            continue;
        };
        match crate::fleet::apply::leases::unlock(deployer, &fleet).await {
            Ok(Some(lease)) => {
                freed += 1;
                said.notes.push(
                    format!(
                        "/unlock: freed the lock of {} held by {}",
                        target.path, lease.holder
                    )
                    .into(),
                );
            }
            Ok(None) => said
                .notes
                .push(format!("/unlock: {} was not locked", target.path).into()),
            Err(err) => {
                tracing::warn!("/unlock: the store could not be written: {err}");
                said.errors
                    .push("/unlock: fleetbot's store could not be written".into());
                return Ok("failed: store unwritable".into());
            }
        }
    }
    Ok(format!("freed {freed} lock(s)"))
}

/// `/status`: the live status of each changed fleet, by role names and states.
async fn status(
    repo: &RepoClient,
    deployer: &Deploying<'_>,
    e: &IssueCommentEvent,
    only: Option<&str>,
    said: &mut Said,
    runtime: Option<&crate::runtime::RuntimeValues>,
) -> Result<String, BotError> {
    let Some((pr, targets)) = changed_fleets(repo, e.issue_number, only, "/status", said).await?
    else {
        return Ok("refused: no fleet".into());
    };
    let sha = commit_of(&pr);
    for target in targets.iter().filter(|t| !t.removed) {
        let spec = match repo.file_content(&target.path, &sha).await? {
            Some(bytes) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| crate::runtime::load_str_with(t, &target.path, runtime).ok()),
            None => None,
        };
        let Some(spec) = spec else {
            said.errors.push(format!(
                "/status: {} does not parse or validate at {}",
                target.path,
                short(&sha)
            ));
            continue;
        };
        match deployer.session.fleet_status(&spec).await {
            Ok(result) => {
                let mut names = PublicNames::of(&spec);
                let items = result
                    .clusters
                    .iter()
                    .map(|c| {
                        format!(
                            "{}/{}: {} ({} of {} nodes ready)",
                            names.project(&c.project_key),
                            c.cluster_name,
                            c.status,
                            c.nodes_ready,
                            c.nodes_wanted
                        )
                    })
                    .collect();
                said.notes.push(ReplyNote {
                    line: format!(
                        "/status of {} (fleet {}): {} deployed, {} failed",
                        target.path, result.name, result.deployed, result.failed
                    ),
                    items,
                });
            }
            Err(err) => said
                .errors
                .push(format!("/status of {}: {}", target.path, err.message)),
        }
    }
    Ok("answered".into())
}
