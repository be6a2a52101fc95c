//! `fleetbot preview`: what the App would post on a pull request (the sticky comment and both
//! check runs), computed from a local git repository through the App's own evaluation.
//!
//! The changed files, their contents and the config come from git instead of GitHub's REST
//! API; from there on it is [`evaluate_change`], the function the App runs, so the texts are
//! byte for byte what the App would post for the same commits. Only committed changes are
//! previewed, as only they can be pushed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::git::{Git, Refs};
use super::lifecycle::{open_cloud, runtime_for};
use super::output::print_json;
use super::preview_post::ActionsContext;
use crate::bot::config::{CONFIG_PATH, LoadedConfig};
use crate::bot::jobs::preflight::{Change, FetchBudget, evaluate_change, too_large};
use crate::bot::policy::{MAX_FILE_BYTES, PolicySources, is_policy_file};
use crate::bot::pr::ChangedFile;
use crate::bot::report::Verdict;
use crate::bot::settings::BotSettings;
use crate::fleet::Session;
use crate::github::{CheckConclusion, CheckRunPayload, FileStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PreviewFormat {
    /// The comment, then each check run, as Markdown.
    Markdown,
    /// `{comment, checks: [...]}`, the check runs as the App sends them.
    Json,
    /// One self-contained HTML page of the Markdown, rendered in GitHub's dialect.
    Html,
}

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// The spec repository: a git checkout.
    #[arg(short = 'C', long = "repo", default_value = ".", value_name = "DIR")]
    pub repo: PathBuf,
    /// The branch the change would merge into (default: the remote's default branch, else
    /// main, else master). The diff starts at its merge base with the head, as GitHub's does,
    /// and `.fleetbot.yml` is read from it, as the App reads it from the default branch.
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// The change's head commit.
    #[arg(long, default_value = "HEAD", value_name = "REF")]
    pub head: String,
    /// Plan statically, without reading a cloud (what the App posts when it has none).
    #[arg(long)]
    pub no_cloud: bool,
    /// The pull request's repository, as the comment would name it (default: the `origin`
    /// remote's `owner/name`, else `local/<directory>`).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo_name: Option<String>,
    /// The pull request's number.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub number: u64,
    /// Nebius profile for the live plan.
    #[arg(long, default_value = "")]
    pub profile: String,
    /// The runtime values the App is configured with (`FLEETBOT_RUNTIME_VALUES`), filled into
    /// the specs as the App does.
    #[arg(long, value_name = "FILE", env = "FLEETBOT_RUNTIME_VALUES")]
    pub runtime_values: Option<PathBuf>,
    /// Output format: markdown, json or html.
    #[arg(long, value_enum, default_value_t = PreviewFormat::Markdown, value_name = "fmt")]
    pub output: PreviewFormat,
    /// Write the HTML page to a temporary file and open it in the browser (stdout stays
    /// empty; stderr names the file). Implies `--output html`; any other output is refused.
    #[arg(long)]
    pub open: bool,
    /// In a GitHub Actions job for a pull request (the Action, action.yml): preview the
    /// event's pull request and post the comment and both check runs with GITHUB_TOKEN.
    /// The cloud is FLEETBOT_CLOUD: none (default) or nebius.
    #[arg(long, conflicts_with_all = ["open", "base", "head", "number", "repo_name"])]
    pub post: bool,
}

/// Exit 0 when both checks would pass (success or neutral), 1 when either would fail, 2 when
/// the repository or a ref cannot be read.
pub fn run(args: PreviewArgs) -> ExitCode {
    if args.open && args.output == PreviewFormat::Json {
        eprintln!(
            "fleetbot preview: --open shows the HTML page; it cannot be used with --output json"
        );
        return ExitCode::from(2);
    }
    let repo = Git::new(&args.repo);
    let post = match args.post.then(ActionsContext::from_env).transpose() {
        Ok(post) => post,
        Err(e) => {
            eprintln!("fleetbot preview: {e}");
            return ExitCode::from(2);
        }
    };
    let refs = match &post {
        Some(context) => context.refs(&repo),
        None => resolve_refs(&repo, args.base.as_deref(), &args.head),
    };
    let refs = match refs {
        Ok(refs) => refs,
        Err(e) => {
            eprintln!("fleetbot preview: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match runtime_for(&args.profile) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        // Held until the evaluation is done: an embedded simulator stops with its connection.
        let session = match &post {
            _ if args.no_cloud => None,
            Some(context) => context.cloud(&args.profile).await?,
            None => Some(open_cloud(&args.profile).await?),
        };
        let mut settings = BotSettings::default();
        if let Some(path) = &args.runtime_values {
            let values = crate::runtime::RuntimeValues::load(path).map_err(|e| e.to_string())?;
            // Named as the App names its setting, so the texts stay the App's byte for byte.
            settings.runtime = Some(Arc::new(values.labelled("runtime values")));
        }
        settings.cloud = session.map(Arc::new);
        let (repo_name, number) = match &post {
            Some(context) => (Some(context.repo.clone()), context.number),
            None => (args.repo_name.clone(), args.number),
        };
        let change = read_change(&repo, &refs, &settings, repo_name, number)?;
        let outcome = evaluate_change(&settings, change).await.outcome;
        if let Some(context) = &post {
            context.publish(&outcome).await?;
        }
        Ok::<_, String>(outcome)
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fleetbot preview: {e}");
            return ExitCode::FAILURE;
        }
    };
    let checks = outcome.checks();
    match args.output {
        PreviewFormat::Json => print_json(&json!({
            "verdict": format!("{:?}", outcome.report.verdict()),
            "comment": outcome.comment,
            "checks": checks,
        })),
        _ if args.open => {
            let page = render_html(&render_markdown(&outcome.comment, &checks));
            if let Err(e) = open_page(&page, &outcome.preflight.head_sha) {
                eprintln!("fleetbot preview: {e}");
                return ExitCode::FAILURE;
            }
        }
        PreviewFormat::Markdown => print!("{}", render_markdown(&outcome.comment, &checks)),
        PreviewFormat::Html => print!(
            "{}",
            render_html(&render_markdown(&outcome.comment, &checks))
        ),
    }
    let failed = checks
        .iter()
        .any(|c| c.conclusion == CheckConclusion::Failure);
    if failed || outcome.report.verdict() == Verdict::Blocked {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// What the App would post for a change in a local repository, evaluated as the App evaluates
/// a pull request (for `fleetbot demo`, which then records what it reviewed).
pub(crate) struct LocalPreview {
    evaluated: crate::bot::jobs::preflight::Evaluated,
    settings: BotSettings,
}

impl LocalPreview {
    /// The change from the merge base of `base` and `head` to `head` in the repository at
    /// `dir`, planned against `session` as pull request `number` of `repo_name`.
    pub(crate) async fn evaluate(
        dir: &Path,
        (base, head): (Option<&str>, &str),
        session: Arc<Session>,
        repo_name: &str,
        number: u64,
    ) -> Result<LocalPreview, String> {
        let settings = BotSettings {
            cloud: Some(session),
            ..BotSettings::default()
        };
        let repo = Git::new(dir);
        let refs = resolve_refs(&repo, base, head)?;
        let change = read_change(&repo, &refs, &settings, Some(repo_name.to_string()), number)?;
        let evaluated = evaluate_change(&settings, change).await;
        Ok(LocalPreview {
            evaluated,
            settings,
        })
    }

    /// The sticky comment as the App would post it.
    pub(crate) fn comment(&self) -> &str {
        &self.evaluated.outcome.comment
    }

    /// Each check run as `name: conclusion (title)`.
    pub(crate) fn checks(&self) -> Vec<String> {
        let outcome = &self.evaluated.outcome;
        outcome
            .checks()
            .iter()
            .map(|c| format!("{}: {} ({})", c.name, c.conclusion.as_str(), c.output.title))
            .collect()
    }

    /// Whether a check run fails (the change would not be merged).
    pub(crate) fn failed(&self) -> bool {
        let outcome = &self.evaluated.outcome;
        outcome
            .checks()
            .iter()
            .any(|c| c.conclusion == CheckConclusion::Failure)
    }

    /// The reviewed plan's digest, shortened.
    pub(crate) fn short_digest(&self) -> &str {
        self.evaluated.outcome.report.short_digest()
    }

    /// Records the reviewed plans as the App's preflight job records them, into the deploy
    /// state of the session it was planned against: what the guard holds the merge's apply to.
    pub(crate) async fn record_reviewed(
        &self,
        repo_name: &str,
        number: u64,
        (base_sha, head_sha): (&str, &str),
    ) {
        let pr = crate::bot::jobs::preflight::PrHead {
            number,
            head_sha,
            base_sha,
        };
        crate::bot::jobs::preflight::record_reviewed_plans(
            &self.settings,
            repo_name,
            pr,
            &self.evaluated.specs,
            &self.evaluated.base_specs,
            &self.evaluated.live,
        )
        .await;
    }
}

/// The comment as it would be posted, then each check run's title, summary and text.
fn render_markdown(comment: &str, checks: &[&CheckRunPayload]) -> String {
    let mut out = String::from(comment);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for check in checks {
        let conclusion = serde_json::to_value(check.conclusion)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n---\n\n# Check run `{}`: {conclusion}\n\n**{}**\n\n{}\n",
            check.name, check.output.title, check.output.summary
        ));
        if let Some(text) = check.output.text.as_deref().filter(|t| !t.is_empty()) {
            out.push_str(&format!("\n{text}\n"));
        }
        for a in &check.output.annotations {
            let level = serde_json::to_value(a.annotation_level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let title = a
                .title
                .as_deref()
                .map(|t| format!(" {t}:"))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n- `{}:{}` [{level}]{title} {}",
                a.path, a.start_line, a.message
            ));
        }
        if !check.output.annotations.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// The Markdown as one HTML page, rendered with GitHub's extensions (tables, strikethrough,
/// task lists). Raw HTML in it is the renderer's own (`<details>`, the marker comment): every
/// user-controlled string was escaped where it entered the report, as on GitHub.
fn render_html(markdown: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut body = String::new();
    html::push_html(&mut body, Parser::new_ext(markdown, options));
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<title>fleetbot preview</title>\n<style>\n\
body {{ font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1f2328; }}\n\
table {{ border-collapse: collapse; margin: 1rem 0; }}\n\
th, td {{ border: 1px solid #d0d7de; padding: 0.3rem 0.7rem; }}\n\
code {{ background: #f6f8fa; padding: 0.1rem 0.3rem; border-radius: 4px; }}\n\
pre {{ background: #f6f8fa; padding: 0.8rem; overflow-x: auto; }}\n\
hr {{ border: 0; border-top: 1px solid #d0d7de; margin: 2rem 0; }}\n\
</style></head>\n<body>\n{body}</body></html>\n"
    )
}

/// Writes the page under the temporary directory and asks the desktop to open it.
fn open_page(page: &str, head_sha: &str) -> Result<(), String> {
    let short = head_sha.get(..12).unwrap_or(head_sha);
    let path = std::env::temp_dir().join(format!("fleetbot-preview-{short}.html"));
    std::fs::write(&path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("fleetbot preview: wrote {}", path.display());
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match Command::new(opener).arg(&path).status() {
        Ok(status) if status.success() => Ok(()),
        _ => {
            eprintln!("fleetbot preview: could not run {opener}; open the file yourself");
            Ok(())
        }
    }
}

fn resolve_refs(repo: &Git, base: Option<&str>, head: &str) -> Result<Refs, String> {
    let branch = match base {
        Some(b) => b.to_string(),
        None => default_branch(repo)?,
    };
    let commit = |what: &str, name: &str| {
        repo.text(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{name}^{{commit}}"),
        ])
        .map_err(|_| {
            format!(
                "{what} `{name}` is not a commit of {}",
                repo.dir().display()
            )
        })
    };
    let head_sha = commit("--head", head)?;
    let branch_sha = commit("--base", &branch)?;
    let base_sha = repo
        .text(&["merge-base", &branch_sha, &head_sha])
        .map_err(|_| format!("--base `{branch}` and --head `{head}` share no history"))?;
    if head == "HEAD"
        && let Some(note) = uncommitted(repo)
    {
        eprintln!("fleetbot preview: {note}");
    }
    Ok(Refs {
        branch,
        branch_sha,
        base_sha,
        head_sha,
    })
}

/// A note when the work tree has changes the preview does not see: it previews commits, as
/// the App sees pushes, so uncommitted edits to specs are left out (and said to be).
fn uncommitted(repo: &Git) -> Option<String> {
    let status = repo
        .text(&["status", "--porcelain", "--untracked-files=normal"])
        .ok()?;
    let count = status.lines().filter(|l| !l.trim().is_empty()).count();
    (count > 0).then(|| {
        format!(
            "{count} uncommitted change(s) in the work tree are not previewed (commit them first; the preview shows commits, as the App sees pushes)"
        )
    })
}

/// The remote's default branch, else `main`, else `master`.
fn default_branch(repo: &Git) -> Result<String, String> {
    if let Ok(name) = repo.text(&["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]) {
        return Ok(name);
    }
    for name in ["main", "master"] {
        if repo
            .text(&["rev-parse", "--verify", &format!("{name}^{{commit}}")])
            .is_ok()
        {
            return Ok(name.to_string());
        }
    }
    Err("no base branch: pass --base REF (neither origin/HEAD, main nor master exists)".into())
}

/// The change between the merge base and the head, with each file's contents within the
/// App's own fetch limits, and the config of the base branch.
fn read_change(
    repo: &Git,
    refs: &Refs,
    settings: &BotSettings,
    repo_name: Option<String>,
    number: u64,
) -> Result<Change, String> {
    // The config, at most as large as the App would read it.
    let config_bytes = match repo.blob(
        &refs.branch_sha,
        CONFIG_PATH,
        crate::github::client::MAX_CONTENT_BYTES,
    )? {
        Some(Ok(bytes)) => Some(bytes),
        Some(Err(size)) => {
            return Err(format!(
                "{CONFIG_PATH} is {size} bytes, more than the {} bytes read",
                crate::github::client::MAX_CONTENT_BYTES
            ));
        }
        None => None,
    };
    let config = LoadedConfig::from_default_branch(&refs.branch, config_bytes.as_deref());
    let matcher = config.config.spec_matcher();
    let mut files = changed_files(repo, &refs.base_sha, &refs.head_sha)?;
    let mut budget = FetchBudget::new(settings);
    for file in &mut files {
        let spec = file.is_spec(&matcher);
        let Some(limit) = budget.admit(file, spec) else {
            continue;
        };
        if file.status != FileStatus::Removed {
            match repo.blob(&refs.head_sha, &file.path, limit)? {
                Some(Ok(bytes)) => file.head = Some(bytes),
                Some(Err(size)) => file.not_fetched = Some(too_large(size, limit)),
                None => file.not_fetched = Some("not found at the head commit".into()),
            }
        }
        if spec && file.status != FileStatus::Added {
            // A base too large to read is none, as in the App.
            file.base = repo
                .blob(&refs.base_sha, file.base_path(), limit)?
                .and_then(Result::ok);
        }
    }
    let (others, others_unread) = if files.iter().any(|f| f.is_spec(&matcher)) {
        other_specs(repo, settings, &matcher, &refs.head_sha, &files)?
    } else {
        (Vec::new(), None)
    };
    let policies = policies(repo, &config, &refs.branch_sha)?;
    Ok(Change {
        others,
        others_unread,
        policies,
        repo: repo_name.unwrap_or_else(|| self::repo_name(repo, repo.dir())),
        number,
        head_sha: refs.head_sha.clone(),
        base_sha: refs.base_sha.clone(),
        files,
        truncated: false,
        config,
        // Aliases of private values differ from the App's (its key is per installation).
        alias_key: b"fleetbot-preview".to_vec(),
    })
}

/// The policy files of the default branch at `branch_sha`, as the App reads them: `None` when
/// `.fleetbot.yml` names no policy directory.
fn policies(
    repo: &Git,
    config: &LoadedConfig,
    branch_sha: &str,
) -> Result<Option<PolicySources>, String> {
    let Some(policy) = &config.config.policy else {
        return Ok(None);
    };
    let prefix = match policy.prefix() {
        Ok(prefix) => prefix,
        Err(why) => return Ok(Some(PolicySources::Unreadable(why))),
    };
    let listed = repo.text(&["ls-tree", "--name-only", branch_sha, &prefix])?;
    let wanted: Vec<&str> = listed
        .lines()
        .filter(|p| is_policy_file(&prefix, p))
        .collect();
    if let Some(refused) = PolicySources::too_many(&policy.path, wanted.len()) {
        return Ok(Some(refused));
    }
    let mut files = Vec::new();
    for path in wanted {
        let read = repo
            .blob(branch_sha, path, MAX_FILE_BYTES as usize)?
            .and_then(Result::ok);
        files.push((path.to_string(), read));
    }
    Ok(Some(PolicySources::from_read(files)))
}

/// The spec files at `head` the change did not touch, within the App's limits, as the App
/// reads them (`bot::jobs::other_specs`).
fn other_specs(
    repo: &Git,
    settings: &crate::bot::BotSettings,
    matcher: &crate::bot::config::SpecMatcher,
    head: &str,
    changed: &[ChangedFile],
) -> Result<(Vec<crate::bot::pr::OtherSpec>, Option<String>), String> {
    let listing = repo.bytes(&["ls-tree", "-r", "-z", "--name-only", head])?;
    let limit = settings
        .max_spec_bytes
        .min(crate::github::client::MAX_CONTENT_BYTES);
    let mut others = Vec::new();
    for path in listing.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        if !matcher.matches(&path) || changed.iter().any(|f| f.path == path) {
            continue;
        }
        if others.len() >= settings.max_spec_files {
            let why = format!("more than {} other spec files", settings.max_spec_files);
            return Ok((others, Some(why)));
        }
        match repo.blob(head, &path, limit)? {
            Some(Ok(content)) => others.push(crate::bot::pr::OtherSpec { path, content }),
            Some(Err(size)) => {
                let why = format!("{path} is {size} bytes, more than the {limit} bytes read");
                return Ok((others, Some(why)));
            }
            None => return Ok((others, Some(format!("{path} could not be read")))),
        }
    }
    Ok((others, None))
}

/// The changed files as GitHub lists them for a pull request: status, paths and the patch.
fn changed_files(repo: &Git, base: &str, head: &str) -> Result<Vec<ChangedFile>, String> {
    let listing = repo.bytes(&[
        "diff",
        "--name-status",
        "-z",
        "-M",
        "--no-ext-diff",
        base,
        head,
    ])?;
    let mut fields = listing
        .split(|&b| b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut files = Vec::new();
    while let Some(status) = fields.next().filter(|s| !s.is_empty()) {
        let (status, previous_path) = match status.chars().next() {
            Some('A') => (FileStatus::Added, None),
            Some('D') => (FileStatus::Removed, None),
            Some('R') => (FileStatus::Renamed, fields.next()),
            Some('C') => (FileStatus::Copied, fields.next()),
            Some('T') => (FileStatus::Changed, None),
            _ => (FileStatus::Modified, None),
        };
        let Some(path) = fields.next() else {
            return Err(format!("git diff listed {status:?} without a path"));
        };
        let mut paths = vec![path.clone()];
        paths.extend(previous_path.clone());
        files.push(ChangedFile {
            patch: patch(repo, base, head, &paths)?,
            path,
            status,
            previous_path,
            ..ChangedFile::default()
        });
    }
    Ok(files)
}

/// The file's hunks, as GitHub's `patch` field holds them (from the first `@@`); `None` for a
/// binary change.
fn patch(repo: &Git, base: &str, head: &str, paths: &[String]) -> Result<Option<String>, String> {
    let mut argv = vec![
        "diff",
        "-M",
        "--no-color",
        "--no-ext-diff",
        base,
        head,
        "--",
    ];
    argv.extend(paths.iter().map(String::as_str));
    let text = String::from_utf8_lossy(&repo.bytes(&argv)?).into_owned();
    Ok(text
        .find("\n@@")
        .map(|at| text[at + 1..].trim_end_matches('\n').to_string()))
}

/// `owner/name` of the `origin` remote, else `local/<directory>`.
fn repo_name(repo: &Git, dir: &Path) -> String {
    if let Some(name) = repo
        .text(&["remote", "get-url", "origin"])
        .ok()
        .and_then(|url| owner_and_name(&url))
    {
        return name;
    }
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "repository".into());
    format!("local/{name}")
}

/// `owner/name` of a remote URL in any of git's forms (`https://host/o/n.git`,
/// `git@host:o/n.git`, `ssh://git@host/o/n`), credentials and all left out.
fn owner_and_name(url: &str) -> Option<String> {
    let trimmed = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let mut parts = trimmed.rsplit(['/', ':']);
    let (name, owner) = (parts.next()?, parts.next()?);
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (plain(owner) && plain(name) && parts.next().is_some()).then(|| format!("{owner}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_names_its_repository_in_every_url_form() {
        for url in [
            "https://github.com/octo-org/fleet-config.git",
            "https://x-access-token:ghs_secret@github.com/octo-org/fleet-config",
            "git@github.com:octo-org/fleet-config.git",
            "ssh://git@github.com/octo-org/fleet-config/",
        ] {
            assert_eq!(
                owner_and_name(url).as_deref(),
                Some("octo-org/fleet-config"),
                "{url}"
            );
        }
        assert_eq!(owner_and_name("fleet-config"), None);
        assert_eq!(owner_and_name(""), None);
    }

    #[test]
    fn the_page_renders_githubs_tables_and_keeps_the_renderers_own_html() {
        let page = render_html(
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n<details><summary>x</summary>\n\ny\n\n</details>\n",
        );
        assert!(page.contains("<table>"), "{page}");
        assert!(page.contains("<td>1</td>"), "{page}");
        assert!(page.contains("<details><summary>x</summary>"), "{page}");
    }
}
