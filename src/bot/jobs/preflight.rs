//! The preflight of one pull-request head: fetch the config and the changed files, read the
//! live cloud, evaluate, then publish both check runs and the sticky comment.

use std::collections::BTreeMap;

use super::load_config;
use crate::bot::config::{LoadedConfig, SpecMatcher};
use crate::bot::policy::{MAX_FILE_BYTES, PolicySources, is_policy_file};
use crate::bot::pr::{
    ChangedFile, OtherSpec, PrInput, PrOutcome, QuotaInput, evaluate_pull_request,
};
use crate::bot::render::COMMENT_MARKER;
use crate::bot::report::Verdict;
use crate::bot::settings::BotSettings;
use crate::fleet::guard::{PublicNames, ReviewSummary};
use crate::fleet::live::{LiveSpec, read_live};
use crate::github::client::{StickyComment, is_safe_repo_path};
use crate::github::{ClientError, FileStatus, RepoClient};
use crate::runtime::RuntimeValues;
use crate::spec::FleetSpec;
use crate::store::ReviewedPlan;
use crate::store::queue::{now_ms, pr_key};

/// The commit pair a preflight is bound to.
#[derive(Debug, Clone, Copy)]
pub struct PrHead<'a> {
    pub number: u64,
    pub head_sha: &'a str,
    pub base_sha: &'a str,
}

/// What the preflight published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub verdict: Verdict,
    /// The sticky comment, unless none exists and none was needed.
    pub comment: Option<StickyComment>,
    /// The two check runs' ids.
    pub check_runs: Vec<u64>,
}

/// Runs the preflight of `pr` and publishes it; `alias_key` keys the privacy aliases.
pub async fn preflight(
    repo: &RepoClient,
    settings: &BotSettings,
    alias_key: &[u8],
    pr: PrHead<'_>,
) -> Result<Published, ClientError> {
    let config = load_config(repo).await?;
    let matcher = config.config.spec_matcher();
    let (files, truncated) = fetch_changed_files(repo, settings, &matcher, pr).await?;
    let (others, others_unread) = if files.iter().any(|f| f.is_spec(&matcher)) {
        super::other_specs::read(repo, settings, &matcher, pr.head_sha, &files).await?
    } else {
        (Vec::new(), None)
    };
    let policies = read_policies(repo, &config).await?;
    let repo_name = repo.repo().to_string();
    let change = Change {
        repo: repo_name.clone(),
        number: pr.number,
        head_sha: pr.head_sha.to_string(),
        base_sha: pr.base_sha.to_string(),
        files,
        truncated,
        config,
        alias_key: alias_key.to_vec(),
        others,
        others_unread,
        policies,
    };
    let Evaluated {
        outcome,
        specs,
        base_specs,
        live,
    } = evaluate_change(settings, change).await;
    record_reviewed_plans(settings, &repo_name, pr, &specs, &base_specs, &live).await;
    let check_runs = publish_checks(repo, &outcome).await?;
    let comment = publish_comment(repo, pr.number, &outcome).await?;
    tracing::info!(
        repo = %repo_name,
        pr = pr.number,
        verdict = ?outcome.report.verdict(),
        digest = %outcome.report.short_digest(),
        "preflight published"
    );
    Ok(Published {
        verdict: outcome.report.verdict(),
        comment,
        check_runs,
    })
}

/// One change to evaluate: the pull request's files with their contents, and the config of
/// the default branch. The App fetches it from GitHub; `fleetbot preview` reads it from a
/// local repository.
pub struct Change {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub files: Vec<ChangedFile>,
    /// The listing was cut short (GitHub's ceiling).
    pub truncated: bool,
    pub config: LoadedConfig,
    /// Keys the privacy aliases.
    pub alias_key: Vec<u8>,
    /// The repository's spec files at the head that the change did not touch.
    pub others: Vec<OtherSpec>,
    /// Why `others` is not all of them, when it is not.
    pub others_unread: Option<String>,
    /// The policies of the default branch, when `.fleetbot.yml` names a policy directory.
    pub policies: Option<crate::bot::policy::PolicySources>,
}

/// What evaluating a change gave: what to publish, and what it was computed from.
pub struct Evaluated {
    pub outcome: PrOutcome,
    /// The changed specs whose head loads, by path.
    pub specs: Vec<(String, FleetSpec)>,
    /// Their base versions that load, by head path.
    pub base_specs: BTreeMap<String, FleetSpec>,
    /// What the cloud said about each, when there is a cloud.
    pub live: BTreeMap<String, LiveSpec>,
}

/// Everything after fetching: parse, read the live cloud, evaluate. The App and
/// `fleetbot preview` both run exactly this, so what preview shows is what the App posts.
/// Parsing and evaluating are CPU work (specs of up to 4 MiB, a scan of every changed file):
/// they run on the blocking pool, never on the task that talks to GitHub.
pub async fn evaluate_change(settings: &BotSettings, change: Change) -> Evaluated {
    let matcher = change.config.config.spec_matcher();
    let runtime = settings.runtime.clone();
    let (change, specs, base_specs) = on_cpu(move || {
        let specs = valid_head_specs(&change.files, &matcher, runtime.as_deref());
        let base = base_specs(&change.files, runtime.as_deref());
        (change, specs, base)
    })
    .await;
    let live = read_live_specs(settings, &change.config, &specs).await;
    let quota = settings.quota.clone();
    let runtime = settings.runtime.clone();
    let (outcome, live, specs) = on_cpu(move || {
        let mut outcome = evaluate_pull_request(&PrInput {
            repo: &change.repo,
            number: change.number,
            head_sha: &change.head_sha,
            base_sha: &change.base_sha,
            files: &change.files,
            files_truncated: change.truncated,
            config: &change.config,
            alias_key: &change.alias_key,
            quota: quota.as_ref().map(|q| QuotaInput {
                tenant_id: &q.tenant_id,
                evidence: q.evidence.as_ref(),
            }),
            live: &live,
            runtime: runtime.as_deref(),
            others: &change.others,
            others_unread: change.others_unread.as_deref(),
        });
        // The policies judge only a change that touches specs, as the other checks do.
        if let Some(sources) = change.policies.as_ref().filter(|_| !specs.is_empty()) {
            let pr = crate::policy::input::PullRequest {
                repo: change.repo.clone(),
                number: change.number,
                base_sha: change.base_sha.clone(),
                head_sha: change.head_sha.clone(),
                changed_files: change.files.iter().map(|f| f.path.clone()).collect(),
            };
            let judged = crate::bot::policy::judge(sources, &specs, &live, &pr);
            judged.append_to(&mut outcome.comment);
            outcome.policy = Some(judged.check);
        }
        (outcome, live, specs)
    })
    .await;
    Evaluated {
        outcome,
        specs,
        base_specs,
        live,
    }
}

/// Runs CPU-bound work on the blocking pool, at most one job per core at once, so a burst of
/// large pull requests queues here instead of starving the runtime or the machine.
async fn on_cpu<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        tokio::sync::Semaphore::new(cores)
    });
    let _permit = slots
        .acquire()
        .await
        .expect("the semaphore is never closed");
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        // A panic in the work is the job's panic, as it was before it moved here.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Keeps each live plan the comment is about to show, so a merge applies only what was
/// reviewed. Kept before the comment is published: a plan shown is always a plan recorded. A
/// plan that cannot be recorded makes the merge refuse (not reviewed), never apply unseen.
pub(crate) async fn record_reviewed_plans(
    settings: &BotSettings,
    repo: &str,
    pr: PrHead<'_>,
    specs: &[(String, FleetSpec)],
    base_specs: &BTreeMap<String, FleetSpec>,
    live: &BTreeMap<String, LiveSpec>,
) {
    let Some(deployer) = &settings.deploy() else {
        return;
    };
    for (path, spec) in specs {
        let Some(Ok(Some(planned))) = live.get(path).map(|l| &l.plan) else {
            continue;
        };
        let base = base_specs.get(path);
        let mut summary = ReviewSummary::of(planned, &PublicNames::with_base(spec, base));
        if let Some(tenant) = settings
            .cloud
            .as_ref()
            .and_then(|c| c.app_tenant_for(spec).ok())
        {
            summary = summary.with_requested(spec, planned, &tenant);
        }
        let plan = ReviewedPlan {
            pr_key: pr_key(repo, pr.number),
            head_sha: pr.head_sha.to_string(),
            fleet_path: path.clone(),
            digest: planned.plan.digest.clone(),
            summary: summary.to_json(),
            recorded_at: now_ms(),
        };
        if let Err(e) = deployer.store.record_reviewed_plan(&plan).await {
            tracing::warn!("cannot record the reviewed plan of a fleet: {e}");
        }
    }
}

/// The policy files of the default branch under `.fleetbot.yml`'s `policy.path`, read at the
/// branch's head (never the pull request's): `None` when no policy is configured. What cannot
/// be read is [`PolicySources::Unreadable`], which fails the check; GitHub's own failure is
/// the job's error (retried).
async fn read_policies(
    repo: &RepoClient,
    config: &LoadedConfig,
) -> Result<Option<PolicySources>, ClientError> {
    let Some(policy) = &config.config.policy else {
        return Ok(None);
    };
    let prefix = match policy.prefix() {
        Ok(prefix) => prefix,
        Err(why) => return Ok(Some(PolicySources::Unreadable(why))),
    };
    let sha = repo.branch_head(config.branch()).await?;
    let (tree, truncated) = repo.tree(&sha).await?;
    if truncated {
        return Ok(Some(PolicySources::Unreadable(
            "the default branch's file list is truncated by GitHub".into(),
        )));
    }
    let wanted: Vec<_> = tree
        .into_iter()
        .filter(|f| is_policy_file(&prefix, &f.path))
        .collect();
    if let Some(refused) = PolicySources::too_many(&policy.path, wanted.len()) {
        return Ok(Some(refused));
    }
    let mut files = Vec::new();
    for file in wanted {
        let read = match repo
            .file_content_within(&file.path, &sha, MAX_FILE_BYTES as usize)
            .await
        {
            Ok(bytes) => bytes,
            Err(ClientError::TooLarge { .. }) => None,
            Err(e) => return Err(e),
        };
        files.push((file.path, read));
    }
    Ok(Some(PolicySources::from_read(files)))
}

/// The changed files with their contents: specs at head and base, other files at head for the
/// privacy scan, each kind within its own count and size limits. The flag says the listing was
/// cut. A file left unread says why, and fails the checks it would have fed.
async fn fetch_changed_files(
    repo: &RepoClient,
    settings: &BotSettings,
    matcher: &SpecMatcher,
    pr: PrHead<'_>,
) -> Result<(Vec<ChangedFile>, bool), ClientError> {
    let (listed, truncated) = repo.pull_request_files(pr.number).await?;
    let mut files: Vec<ChangedFile> = listed.iter().map(ChangedFile::listed).collect();
    // Without a changed spec both checks are skipped and nothing needs fetching.
    if !files.iter().any(|f| f.is_spec(matcher)) {
        return Ok((files, truncated));
    }
    let mut budget = FetchBudget::new(settings);
    for file in &mut files {
        let spec = file.is_spec(matcher);
        let Some(limit) = budget.admit(file, spec) else {
            continue;
        };
        if file.status != FileStatus::Removed {
            match repo
                .file_content_within(&file.path, pr.head_sha, limit)
                .await
            {
                Ok(Some(bytes)) => file.head = Some(bytes),
                Ok(None) => file.not_fetched = Some("not found at the head commit".into()),
                Err(ClientError::TooLarge { size, limit, .. }) => {
                    file.not_fetched = Some(too_large(size, limit))
                }
                Err(e) => return Err(e),
            }
        }
        // A base path with a dot segment is never fetched: the spec diff then has no base. A
        // base too large to read is none either, as one too large to load would be.
        if spec && file.status != FileStatus::Added && is_safe_repo_path(file.base_path()) {
            file.base = match repo
                .file_content_within(file.base_path(), pr.base_sha, limit)
                .await
            {
                Err(ClientError::TooLarge { .. }) => None,
                other => other?,
            };
        }
    }
    Ok((files, truncated))
}

/// Why a file over the byte limit was left unread.
pub(crate) fn too_large(size: u64, limit: usize) -> String {
    format!("{size} bytes, more than the {limit} bytes read; not fetched")
}

/// How many more files of each kind may be fetched, and how large.
pub(crate) struct FetchBudget {
    specs_left: usize,
    files_left: usize,
    max_specs: usize,
    max_files: usize,
    spec_bytes: usize,
    file_bytes: usize,
}

impl FetchBudget {
    pub(crate) fn new(settings: &BotSettings) -> FetchBudget {
        FetchBudget {
            specs_left: settings.max_spec_files,
            files_left: settings.max_fetched_files,
            max_specs: settings.max_spec_files,
            max_files: settings.max_fetched_files,
            // The spec reader refuses more anyway; fetching it would only cost.
            spec_bytes: settings
                .max_spec_bytes
                .min(crate::github::client::MAX_CONTENT_BYTES),
            file_bytes: settings.max_file_bytes,
        }
    }

    /// The byte limit to fetch `file` with, or `None` (with the reason set on the file) when
    /// it is not fetched at all. A removed non-spec file needs nothing; a removed spec still
    /// has a base to read.
    pub(crate) fn admit(&mut self, file: &mut ChangedFile, spec: bool) -> Option<usize> {
        if !spec && file.status == FileStatus::Removed {
            return None;
        }
        // A path that would climb out of the repository is never put in a URL; the file
        // stays unread, which fails the checks rather than passing them.
        if !is_safe_repo_path(&file.path) {
            file.not_fetched = Some("its path has a `.` or `..` segment; not fetched".into());
            return None;
        }
        let (left, max, kind) = if spec {
            (&mut self.specs_left, self.max_specs, "specs")
        } else {
            (&mut self.files_left, self.max_files, "files")
        };
        if *left == 0 {
            file.not_fetched = Some(format!("more than {max} changed {kind}; not fetched"));
            return None;
        }
        *left -= 1;
        Some(if spec {
            self.spec_bytes
        } else {
            self.file_bytes
        })
    }
}

/// The live reading of every valid changed spec, when there is a cloud and the config holds.
async fn read_live_specs(
    settings: &BotSettings,
    config: &LoadedConfig,
    specs: &[(String, FleetSpec)],
) -> BTreeMap<String, LiveSpec> {
    // Forks are planned like any pull request: specs are data, nothing from them runs, and
    // the bot reads only its configured tenant (design.md, decision 9).
    match &settings.cloud {
        Some(cloud) if config.error.is_none() => read_live(cloud.as_ref(), specs).await,
        _ => BTreeMap::new(),
    }
}

/// The changed specs' base versions that parse, by head path (for the names of projects a
/// change removes).
fn base_specs(
    files: &[ChangedFile],
    runtime: Option<&RuntimeValues>,
) -> BTreeMap<String, FleetSpec> {
    files
        .iter()
        .filter_map(|f| {
            let text = std::str::from_utf8(f.base.as_deref()?).ok()?;
            let spec = crate::runtime::load_str_with(text, f.base_path(), runtime).ok()?;
            Some((f.path.clone(), spec))
        })
        .collect()
}

/// The changed specs whose head parses and validates, for the live plan (the others are
/// reported invalid by the evaluation and never planned).
fn valid_head_specs(
    files: &[ChangedFile],
    matcher: &SpecMatcher,
    runtime: Option<&RuntimeValues>,
) -> Vec<(String, FleetSpec)> {
    files
        .iter()
        .filter(|f| f.status != FileStatus::Removed && f.is_spec(matcher))
        .filter_map(|f| {
            let text = std::str::from_utf8(f.head.as_deref()?).ok()?;
            let spec = crate::runtime::load_str_with(text, &f.path, runtime).ok()?;
            Some((f.path.clone(), spec))
        })
        .collect()
}

pub(crate) async fn publish_checks(
    repo: &RepoClient,
    outcome: &PrOutcome,
) -> Result<Vec<u64>, ClientError> {
    let mut ids = Vec::new();
    for run in outcome.checks() {
        ids.push(repo.publish_check_run(run).await?.id);
    }
    Ok(ids)
}

pub(crate) async fn publish_comment(
    repo: &RepoClient,
    number: u64,
    outcome: &PrOutcome,
) -> Result<Option<StickyComment>, ClientError> {
    let body = &outcome.comment;
    if outcome.report.verdict() == Verdict::NoSpecChanges {
        // Only a pull request that once touched specs has a comment to bring up to date.
        return repo
            .update_marked_comment(number, COMMENT_MARKER, body)
            .await;
    }
    repo.upsert_marked_comment(number, COMMENT_MARKER, body)
        .await
        .map(Some)
}
