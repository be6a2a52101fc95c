//! Requests to apply: a merge, the `fleet/apply` check's Apply button or Re-run, and `/apply`.
//! Each is acknowledged at once with an `in_progress` check run and becomes one queued apply
//! job ([`crate::bot::deploy::job`]); what may be applied is decided here, what is applied by
//! the guards in the job.

use super::{Bot, BotError, Handled};
use crate::bot::authority::{self, Ask, AuthorityInput, Denied, PullNow};
use crate::bot::deploy::job::{ApplyJob, acknowledge};
use crate::bot::jobs::load_config;
use crate::github::client::{CheckConclusion, CheckOutput, CheckRunPayload};
use crate::github::events::{CheckRunActionEvent, PullRequestEvent, PushEvent};
use crate::github::{FileStatus, PullRequestInfo, PullState, RepoClient};
use crate::store::queue::{now_ms, pr_key};

/// Who asks to apply which pull request, and how the request is told apart from others.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApplyRequest<'a> {
    pub number: u64,
    /// What asks: a merge, a run's Re-run or button, a comment (as re-read).
    pub ask: Ask<'a>,
    pub actor: &'a str,
    /// Tells requests apart (`merge`, `c<comment>`, `d<delivery>`): part of the job id.
    pub origin: &'a str,
    /// `fleet=`: only the changed spec it names.
    pub only: Option<&'a str>,
    /// Who acknowledges (the delivery), stable across its job's retries.
    pub claimant: &'a str,
}

/// An apply that was asked for and queued.
pub(crate) struct Requested {
    pub check_run: u64,
    pub job: crate::store::NewJob,
    pub sha: String,
}

/// The external id of an apply's check run: the pull request and the request's origin, so a
/// button pressed on it leads back to the pull request (GitHub lists no pull request for a
/// merge commit's runs).
pub(super) fn external_id(number: u64, origin: &str) -> String {
    format!("{number}:{origin}")
}

/// The pull request named by an apply run's external id (`apply:<number>:<origin>`).
fn number_from_external_id(id: &str) -> Option<u64> {
    id.strip_prefix("apply:")?.split(':').next()?.parse().ok()
}

/// Why an apply was not requested, in the words the reply, the log and the audit give.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotRequested {
    /// The heads a comment is judged against could not be read: fail closed.
    #[error("fleetbot's store could not be read; nothing was applied")]
    StoreUnreadable,
    /// The request's authority does not allow it (commit, permission, mode, age).
    #[error("{0}")]
    Denied(Denied),
    /// `fleet=` names no spec the pull request changed.
    #[error("no fleet spec this pull request changed matches fleet={0}")]
    NoFleetMatches(String),
    /// The pull request changed no spec.
    #[error("the pull request changed no fleet spec")]
    NoFleetSpec,
    /// Another delivery of the same request is acknowledging it.
    #[error("this apply is being acknowledged by another delivery (the same merge seen twice)")]
    AcknowledgedElsewhere,
}

impl Bot {
    pub(super) async fn on_merged(
        &self,
        e: PullRequestEvent,
        delivery: &str,
    ) -> Result<Handled, BotError> {
        if self.settings.deploy().is_none() {
            return Ok(Handled::Ignored(
                "merged: fleetbot has no cloud configured, so nothing is applied".into(),
            ));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        if e.is_fork() {
            return Ok(Handled::Ignored(
                "merged from a fork: fleetbot applies only pull requests from the repository itself".into(),
            ));
        }
        let repo = self.github.repo(installation, e.repo.clone());
        let claimant = claimant(delivery, "merge-event");
        match self
            .request_apply(
                &repo,
                &ApplyRequest {
                    number: e.number,
                    ask: Ask::Merge,
                    actor: &e.sender,
                    origin: "merge",
                    only: None,
                    claimant: &claimant,
                },
            )
            .await?
        {
            Ok(r) => Ok(r.into()),
            Err(why) => Ok(Handled::Ignored(format!("merged: {why}"))),
        }
    }

    /// A push to the default branch that no merge event explained: when the pushed commit is
    /// the merge commit of a merged pull request, it is that merge's apply (the same job, so a
    /// merge seen both ways applies once). Other pushes apply nothing: only reviewed pull
    /// requests are applied.
    pub(super) async fn on_push(&self, e: PushEvent, delivery: &str) -> Result<Handled, BotError> {
        if self.settings.deploy().is_none() {
            return Ok(Handled::Ignored(
                "push: fleetbot has no cloud configured, so nothing is applied".into(),
            ));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        if e.deleted || e.after.bytes().all(|b| b == b'0') {
            return Ok(Handled::Ignored("push: a deleted ref".into()));
        }
        let repo = self.github.repo(installation, e.repo.clone());
        let default_branch = repo.default_branch().await?;
        if e.git_ref != format!("refs/heads/{default_branch}") {
            return Ok(Handled::Ignored("push: not to the default branch".into()));
        }
        let claimant = claimant(delivery, "push-event");
        self.apply_merge_commit(
            &repo,
            &default_branch,
            &e.after,
            &e.sender,
            &claimant,
            "push",
        )
        .await
    }

    /// The apply of the merged pull request whose merge commit `sha` is (on `default_branch`):
    /// the very job its merge event queues, so a merge seen several ways (the event, a push,
    /// the reconcile loop) applies once. Any other commit applies nothing: only reviewed pull
    /// requests are applied.
    pub(super) async fn apply_merge_commit(
        &self,
        repo: &RepoClient,
        default_branch: &str,
        sha: &str,
        actor: &str,
        claimant: &str,
        seen_as: &str,
    ) -> Result<Handled, BotError> {
        let merged = repo.commit_pull_requests(sha).await?.into_iter().find(|p| {
            p.merged && p.base_ref == default_branch && p.merge_commit_sha.as_deref() == Some(sha)
        });
        let Some(pr) = merged else {
            return Ok(Handled::Ignored(format!(
                "{seen_as}: no merged pull request made this commit; only reviewed pull requests are applied"
            )));
        };
        match self
            .request_apply(
                repo,
                &ApplyRequest {
                    number: pr.number,
                    ask: Ask::Merge,
                    actor,
                    origin: "merge",
                    only: None,
                    claimant,
                },
            )
            .await?
        {
            Ok(r) => Ok(r.into()),
            Err(why) => Ok(Handled::Ignored(format!("{seen_as}: {why}"))),
        }
    }

    /// The Apply button (`requested_action`) or Re-run (`rerequested`) on a `fleet/apply` run.
    pub(super) async fn on_apply_check(
        &self,
        e: CheckRunActionEvent,
        delivery: &str,
        rerun: bool,
    ) -> Result<Handled, BotError> {
        if e.name != crate::bot::deploy::APPLY_CHECK {
            return Ok(Handled::Ignored(format!(
                "check run {:?} is not ours to re-run",
                e.name
            )));
        }
        if !rerun && e.identifier != crate::bot::deploy::APPLY_ACTION {
            return Ok(Handled::Ignored(format!(
                "unknown check run action {:?}",
                e.identifier
            )));
        }
        let Some(number) = e.external_id.as_deref().and_then(number_from_external_id) else {
            return Ok(Handled::Ignored(
                "the check run names no pull request".into(),
            ));
        };
        if number == crate::bot::deploy::job::DRIFT_REPAIR {
            return Ok(Handled::Ignored(
                "a drift repair is not re-run: the next reconcile pass repairs again".into(),
            ));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        let repo = self.github.repo(installation, e.repo.clone());
        let origin = format!("d{}", if delivery.is_empty() { "0" } else { delivery });
        let ask = Ask::Run {
            button: !rerun,
            run_sha: &e.head_sha,
        };
        match self
            .request_apply(
                &repo,
                &ApplyRequest {
                    number,
                    ask,
                    actor: &e.sender,
                    origin: &origin,
                    only: None,
                    claimant: &origin,
                },
            )
            .await?
        {
            Ok(r) => Ok(r.into()),
            Err(why) => Ok(Handled::Ignored(why.to_string())),
        }
    }

    /// Decides whether pull request `number` may be applied now and, if so, acknowledges and
    /// builds the job. `Ok(Err(why))` when it may not; `Err` when GitHub could not be asked.
    pub(crate) async fn request_apply(
        &self,
        repo: &RepoClient,
        request: &ApplyRequest<'_>,
    ) -> Result<Result<Requested, NotRequested>, BotError> {
        let ApplyRequest {
            number,
            ask,
            actor,
            origin,
            only,
            claimant,
        } = *request;
        let pr = repo.pull_request(number).await?;
        // One read of the default branch and its config serves every decision below.
        let config = load_config(repo).await?;
        let key = pr_key(&repo.repo().to_string(), number);
        let sender = match ask {
            Ask::Merge => None,
            _ => Some(repo.collaborator_permission(actor).await?),
        };
        let heads = match ask {
            Ask::Comment(Some(_)) => match self.pr_heads(&key).await {
                Some(heads) => heads,
                None => {
                    let why = NotRequested::StoreUnreadable;
                    self.audit_refusal(repo, number, ask, actor, &why.to_string())
                        .await;
                    return Ok(Err(why));
                }
            },
            _ => Vec::new(),
        };
        let decided = authority::authorize(&AuthorityInput {
            ask,
            pull: pull_now(&pr, repo, config.branch()),
            mode: config.config.apply,
            sender,
            needed: config.config.required_permission("apply"),
            heads: &heads,
            now_ms: now_ms(),
            max_age_ms: minutes_ms(config.config.command_max_age_minutes),
        });
        let sha = match decided {
            Ok(granted) => granted.sha,
            Err(denied) => {
                self.audit_refusal(repo, number, ask, actor, &denied.to_string())
                    .await;
                if denied.said_on_the_run()
                    && let Ask::Run { run_sha, .. } = ask
                {
                    say_on_the_run(repo, run_sha, number, origin, &denied).await?;
                }
                return Ok(Err(NotRequested::Denied(denied)));
            }
        };
        let matcher = config.config.spec_matcher();
        let (files, _) = repo.pull_request_files(number).await?;
        let mut paths = Vec::new();
        let mut removed = Vec::new();
        for f in &files {
            if matcher.matches(&f.filename) {
                paths.push(f.filename.clone());
                if f.status == FileStatus::Removed {
                    removed.push(f.filename.clone());
                }
            }
            // A renamed spec left its old path: reported as removed, never destroyed.
            if let Some(old) = &f.previous_filename
                && f.status == FileStatus::Renamed
                && matcher.matches(old)
            {
                paths.push(old.clone());
                removed.push(old.clone());
            }
        }
        paths.sort();
        paths.dedup();
        if let Some(only) = only {
            paths.retain(|p| names_fleet(p, only));
            if paths.is_empty() {
                return Ok(Err(NotRequested::NoFleetMatches(only.to_string())));
            }
        }
        if paths.is_empty() {
            return Ok(Err(NotRequested::NoFleetSpec));
        }
        let origin_id = external_id(number, origin);
        let job_id = ApplyJob::job_id(&repo.repo().to_string(), number, &sha, origin);
        if !self.claim_acknowledgement(&job_id, claimant).await {
            return Ok(Err(NotRequested::AcknowledgedElsewhere));
        }
        let run = acknowledge(repo, &sha, &origin_id).await?;
        let job = ApplyJob {
            repo: repo.repo().to_string(),
            installation_id: repo.installation_id(),
            number,
            sha: sha.clone(),
            head_sha: pr.head_sha.clone(),
            base_sha: pr.base_sha.clone(),
            trigger: ask.trigger(),
            actor: actor.to_string(),
            check_run_id: run.id,
            check_run_url: run.html_url,
            paths,
            removed,
        };
        Ok(Ok(Requested {
            check_run: run.id,
            job: job.to_job(origin),
            sha,
        }))
    }
}

/// The pull request as the authority rule reads it.
pub(super) fn pull_now<'a>(
    pr: &'a PullRequestInfo,
    repo: &RepoClient,
    default_branch: &str,
) -> PullNow<'a> {
    PullNow {
        open: pr.state == PullState::Open,
        merged: pr.merged,
        draft: pr.draft,
        head_sha: &pr.head_sha,
        merge_commit_sha: pr.merge_commit_sha.as_deref(),
        merged_at: pr.merged_at,
        into_default_branch: pr.base_ref == default_branch,
        from_repository: pr.head_repo.as_deref() == Some(&repo.repo().to_string()),
    }
}

pub(super) fn minutes_ms(minutes: u64) -> i64 {
    i64::try_from(minutes.saturating_mul(60_000)).unwrap_or(i64::MAX)
}

/// A Re-run or a button press on a run that no longer speaks for the pull request: a new
/// `fleet/apply` run on the same commit says why, with no button (pressing it again would be
/// refused again).
async fn say_on_the_run(
    repo: &RepoClient,
    run_sha: &str,
    number: u64,
    origin: &str,
    denied: &Denied,
) -> Result<(), crate::github::ClientError> {
    let run = CheckRunPayload {
        name: crate::bot::deploy::APPLY_CHECK.into(),
        head_sha: run_sha.to_string(),
        // The request's own id: a retried job finds this run instead of adding another.
        external_id: Some(format!(
            "apply:{}",
            external_id(number, &format!("{origin}-refused"))
        )),
        conclusion: CheckConclusion::ActionRequired,
        output: CheckOutput {
            title: "Not applied: the pull request moved on".into(),
            summary: format!("Nothing was applied: {denied}."),
            text: None,
            annotations: Vec::new(),
        },
        actions: Vec::new(),
    };
    repo.publish_check_run(&run).await?;
    Ok(())
}

/// Who claims an acknowledgement: the delivery (stable across the retries of its job).
fn claimant(delivery: &str, fallback: &str) -> String {
    if delivery.is_empty() {
        fallback.to_string()
    } else {
        format!("delivery:{delivery}")
    }
}

impl From<Requested> for Handled {
    fn from(r: Requested) -> Self {
        Handled::Started {
            check_run: r.check_run,
            jobs: vec![r.job],
        }
    }
}

impl Bot {
    /// The heads recorded for a pull request; `None` when the store cannot be read (a
    /// command is then refused: fail closed).
    pub(super) async fn pr_heads(&self, pr_key: &str) -> Option<Vec<crate::store::PrHead>> {
        let deployer = &self.settings.deploy()?;
        match deployer.store.pr_heads(pr_key).await {
            Ok(heads) => Some(heads),
            Err(e) => {
                tracing::warn!("cannot read the pull request's heads: {e}");
                None
            }
        }
    }

    /// An audit record of a refused request to apply (a command records its own outcome).
    async fn audit_refusal(
        &self,
        repo: &RepoClient,
        number: u64,
        ask: Ask<'_>,
        actor: &str,
        why: &str,
    ) {
        let Some(deployer) = &self.settings.deploy() else {
            return;
        };
        if matches!(ask, Ask::Comment(_)) {
            return;
        }
        let entry = crate::store::AuditEntry {
            at: now_ms(),
            actor: actor.to_string(),
            action: format!("apply ({})", ask.trigger().as_str()),
            repo: repo.repo().to_string(),
            pr: number,
            sha: match ask {
                Ask::Run { run_sha, .. } => run_sha.to_string(),
                _ => String::new(),
            },
            fleet: String::new(),
            outcome: format!("refused: {why}"),
            digest: String::new(),
            detail: String::new(),
        };
        crate::fleet::apply::audit::record(deployer.store.as_ref(), &entry).await;
    }

    /// One acknowledgement per apply job: two deliveries of one request (the merge event and
    /// the push of its merge commit, or a redelivery) may run at once on two replicas, and
    /// each would otherwise start its own `fleet/apply` run, one of which no job would ever
    /// complete. The first takes a lease on the job's acknowledgement; its job's retries
    /// re-take it (same delivery); the other is told it is handled.
    pub(super) async fn claim_acknowledgement(&self, job_id: &str, claimant: &str) -> bool {
        match &self.settings.deploy() {
            Some(deployer) => {
                crate::fleet::apply::leases::acknowledge_once(deployer, job_id, claimant).await
            }
            None => true,
        }
    }
}

/// Whether `fleet=` names the spec at `path`: its path, or its file name with or without the
/// extension.
pub(crate) fn names_fleet(path: &str, fleet: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file
        .strip_suffix(".yaml")
        .or_else(|| file.strip_suffix(".yml"))
        .unwrap_or(file);
    path == fleet || file == fleet || stem == fleet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_runs_lead_back_to_their_pull_request() {
        let id = format!("apply:{}", external_id(12, "merge"));
        assert_eq!(number_from_external_id(&id), Some(12));
        assert_eq!(number_from_external_id("apply:x:merge"), None);
        assert_eq!(number_from_external_id("12:merge"), None);
    }

    #[test]
    fn fleet_arguments_name_a_spec_by_path_file_or_stem() {
        for name in ["fleets/prod.yaml", "prod.yaml", "prod"] {
            assert!(names_fleet("fleets/prod.yaml", name), "{name}");
        }
        assert!(!names_fleet("fleets/prod.yaml", "pro"));
        assert!(!names_fleet("fleets/prod.yaml", "fleets"));
    }
}
