//! `fleetbot scan`: the privacy guard from a terminal, a CI job or a pre-commit hook.
//!
//! Gathers input (files and directories, the added lines of a git range, or standard
//! input), runs [`crate::privacy::Scanner`] and prints text, JSON or SARIF. Exit status: 0
//! clean, 1 findings, 2 bad usage or unreadable input (findings found so far still print).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Args, ValueEnum};

use crate::privacy::diff::parse_unified_diff;
use crate::privacy::{
    DEFAULT_LOCAL_KEY, PrivacyAllowlist, ScanReport, Scanner, ScannerConfig, SkipReason,
};

/// Environment variable that holds the alias key itself (`--key-file` wins over it).
pub const KEY_ENV: &str = "FLEETBOT_PRIVACY_KEY";

/// Repository config files read for a `privacy:` section when `--config` is not given.
const DEFAULT_CONFIGS: [&str; 2] = [".fleetbot.yml", ".fleetbot.yaml"];

/// Path reported for standard input unless `--stdin-path` names one.
const STDIN_PATH: &str = "<stdin>";

/// `--output text|json|sarif`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ScanOutput {
    /// `path:line:col rule alias`, one finding per line.
    #[default]
    Text,
    /// `{"clean": …, "findings": […], "skipped": […]}`.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and editors.
    Sarif,
}

/// Refuse committed private IDs, keys and tokens. Values are never printed.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Files and directories to scan (directories recursively; `.git`, cache directories,
    /// symbolic links and what .gitignore ignores are skipped). With --diff, limits the range
    /// to these paths.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Walk directories without honouring .gitignore, .ignore and .git/info/exclude.
    #[arg(long, conflicts_with_all = ["diff", "stdin"])]
    pub no_ignore: bool,
    /// Scan only the lines added in a git range, e.g. `origin/main..HEAD`.
    #[arg(long, value_name = "BASE..HEAD", conflicts_with = "stdin")]
    pub diff: Option<String>,
    /// Scan standard input.
    #[arg(long, conflicts_with = "paths")]
    pub stdin: bool,
    /// Path to report for standard input; its extension decides whether spec rules apply.
    #[arg(long, value_name = "NAME", requires = "stdin")]
    pub stdin_path: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ScanOutput::Text, value_name = "FORMAT")]
    pub output: ScanOutput,
    /// File holding the alias (HMAC) key. Default: $FLEETBOT_PRIVACY_KEY, else a public
    /// built-in key, so local aliases are only comparable between local runs.
    #[arg(long, value_name = "PATH", env = "FLEETBOT_PRIVACY_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// Allowlist: YAML with `allow: {patterns: [...], paths: [...]}`, or a repository config
    /// with a `privacy:` section. Default: ./.fleetbot.yml when it exists.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// Something the user has to fix; printed as `error: …` with exit status 2.
struct UsageError(String);

impl<E: std::fmt::Display> From<E> for UsageError {
    fn from(e: E) -> Self {
        UsageError(e.to_string())
    }
}

/// Runs `fleetbot scan`.
pub fn run(args: ScanArgs) -> ExitCode {
    match execute(&args) {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// The most one input may hold: far above any source file, and the bound on what one scan
/// holds in memory (the scanner works on a whole file at once).
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads in pieces of this size, so a binary input is known as such from its first piece.
const CHUNK_BYTES: usize = 64 * 1024;

/// Reads at most [`MAX_INPUT_BYTES`]; more is an error, never a silently shortened scan. A NUL
/// byte ends the read early: the input is binary and is skipped whatever follows, so an
/// endless binary pipe (`/dev/zero` on standard input) costs one piece, not the cap.
fn read_capped(mut reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut content = Vec::new();
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(content),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if content.len() as u64 + n as u64 > MAX_INPUT_BYTES {
            return Err(too_large());
        }
        content.extend_from_slice(&chunk[..n]);
        if chunk[..n].contains(&0) {
            return Ok(content);
        }
    }
}

fn too_large() -> std::io::Error {
    std::io::Error::other(format!(
        "more than {MAX_INPUT_BYTES} bytes; the limit is {MAX_INPUT_BYTES} bytes"
    ))
}

/// Opens a file named on the command line or found by the walk, refusing before any byte is
/// read what is not a regular file (a device such as `/dev/zero`, a FIFO, a socket: endless
/// or blocking, and never something git commits) and a file over the cap.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a device, FIFO or socket); refusing to read it",
        ));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(too_large());
    }
    // Swapped for a FIFO since the check, an ordinary open would wait for a writer; without
    // blocking, the handle's own metadata says what was opened.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a device, FIFO or socket); refusing to read it",
        ));
    }
    Ok(file)
}

fn execute(args: &ScanArgs) -> Result<ExitCode, UsageError> {
    let scanner = Scanner::new(ScannerConfig {
        key: load_key(args.key_file.as_deref())?,
        allowlist: load_allowlist(args.config.as_deref())?,
    })?;
    let mut report = ScanReport::default();
    let mut unreadable = false;
    if args.stdin {
        let content = read_capped(std::io::stdin())
            .map_err(|e| UsageError(format!("cannot read standard input: {e}")))?;
        let path = args.stdin_path.as_deref().unwrap_or(STDIN_PATH);
        report.add(path, scanner.scan_text(path, &content, None));
    } else if let Some(range) = &args.diff {
        unreadable = scan_diff(&scanner, range, &args.paths, &mut report)?;
    } else if args.paths.is_empty() {
        return Err(UsageError(
            "nothing to scan: give PATHs, --diff BASE..HEAD or --stdin".into(),
        ));
    } else {
        for root in &args.paths {
            unreadable |= scan_path(&scanner, root, !args.no_ignore, &mut report);
        }
    }
    report.sort();
    print_report(&report, args.output, unreadable);
    Ok(if unreadable {
        ExitCode::from(2)
    } else if report.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn load_key(key_file: Option<&Path>) -> Result<Vec<u8>, UsageError> {
    if let Some(path) = key_file {
        let mut key = std::fs::read(path)
            .map_err(|e| UsageError(format!("cannot read key file {}: {e}", path.display())))?;
        // A trailing newline from `echo >` or an editor is not part of the key.
        while matches!(key.last(), Some(b'\n' | b'\r')) {
            key.pop();
        }
        if key.is_empty() {
            return Err(UsageError(format!("key file {} is empty", path.display())));
        }
        return Ok(key);
    }
    match std::env::var_os(KEY_ENV) {
        Some(value) if !value.is_empty() => Ok(value.into_encoded_bytes()),
        _ => Ok(DEFAULT_LOCAL_KEY.to_vec()),
    }
}

fn load_allowlist(config: Option<&Path>) -> Result<PrivacyAllowlist, UsageError> {
    if let Some(path) = config {
        return Ok(PrivacyAllowlist::load(path)?);
    }
    match DEFAULT_CONFIGS.iter().map(Path::new).find(|p| p.is_file()) {
        Some(path) => PrivacyAllowlist::load(path)
            .map_err(|e| UsageError(format!("{e} (in {})", path.display()))),
        None => Ok(PrivacyAllowlist::default()),
    }
}

/// Scans a file or a directory tree; returns whether something could not be read.
fn scan_path(
    scanner: &Scanner,
    root: &Path,
    honour_ignores: bool,
    report: &mut ScanReport,
) -> bool {
    let mut files = Vec::new();
    let mut unreadable = false;
    if root.is_dir() {
        unreadable |= walk(root, honour_ignores, &mut files);
    } else {
        // A file named on the command line is scanned even when .gitignore lists it.
        files.push(root.to_path_buf());
    }
    for file in files {
        let shown = display_path(&file);
        if scanner.is_path_allowlisted(&shown) {
            report.skipped.push(crate::privacy::SkippedFile {
                path: shown,
                reason: SkipReason::AllowlistedPath,
            });
            continue;
        }
        match open_regular(&file).and_then(read_capped) {
            Ok(content) => report.add(&shown, scanner.scan_text(&shown, &content, None)),
            Err(e) => {
                eprintln!("error: cannot read {shown}: {e}");
                unreadable = true;
            }
        }
    }
    unreadable
}

/// Collects regular files below `dir` in sorted order; returns whether something failed.
///
/// What git would never commit is not scanned: `.git`, what .gitignore, .ignore and
/// .git/info/exclude ignore (even outside a git checkout, so an exported tree scans the same),
/// and directories holding a `CACHEDIR.TAG`. Hidden files are scanned: `.env` is where
/// secrets live. The user's global git excludes are not read, so two machines agree.
fn walk(dir: &Path, honour_ignores: bool, files: &mut Vec<PathBuf>) -> bool {
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(false)
        .parents(honour_ignores)
        .ignore(honour_ignores)
        .git_ignore(honour_ignores)
        .git_exclude(honour_ignores)
        .git_global(false)
        .require_git(false)
        // Git stores a link as its target's name, so following it would scan another file.
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            // Build output (cargo's target/, other tools' caches) is not source.
            !(is_dir
                && entry.depth() > 0
                && (entry.file_name() == ".git" || entry.path().join("CACHEDIR.TAG").is_file()))
        })
        .build();
    let mut failed = false;
    for entry in walker {
        match entry {
            Ok(entry) => {
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    files.push(entry.into_path());
                }
            }
            // A file or directory that cannot be read is a shortened scan.
            Err(e) if e.is_io() => {
                eprintln!("error: cannot read {}: {e}", display_path(dir));
                failed = true;
            }
            // A .gitignore line git would not understand either excludes nothing, so the
            // scan only grows; say so and go on.
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    failed
}

/// Scans the added lines of `range`; returns whether a file could not be read.
fn scan_diff(
    scanner: &Scanner,
    range: &str,
    pathspecs: &[PathBuf],
    report: &mut ScanReport,
) -> Result<bool, UsageError> {
    let (base, head) = range
        .split_once("...")
        .or_else(|| range.split_once(".."))
        .ok_or_else(|| UsageError(format!("--diff needs a range BASE..HEAD, got {range:?}")))?;
    if base.is_empty() || base.starts_with('-') || head.starts_with('-') {
        return Err(UsageError(format!(
            "--diff needs a range BASE..HEAD, got {range:?}"
        )));
    }
    let head = if head.is_empty() { "HEAD" } else { head };
    let toplevel = git(None, &["rev-parse", "--show-toplevel"])?;
    let toplevel = PathBuf::from(String::from_utf8_lossy(&toplevel).trim_end_matches(['\n', '\r']));

    // PATHs filter the parsed diff rather than going to git as pathspecs: a pathspec
    // hides a rename's source, which would turn a moved file into "all lines added".
    let diff = git(
        None,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--unified=0",
            "-M",
            "--diff-filter=d",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            range,
            "--",
        ],
    )?;
    let prefixes = pathspecs
        .iter()
        .map(|p| repo_relative(&toplevel, p))
        .collect::<Result<Vec<_>, _>>()?;
    let files = parse_unified_diff(&String::from_utf8_lossy(&diff))
        .into_iter()
        .filter(|f| {
            prefixes.is_empty()
                || prefixes
                    .iter()
                    .any(|p| p.is_empty() || f.path == *p || f.path.starts_with(&format!("{p}/")))
        });

    let mut unreadable = false;
    for file in files {
        let object = format!("{head}:{}", file.path);
        match git(Some(&toplevel), &["cat-file", "blob", &object]) {
            Ok(content) => {
                report.add(
                    &file.path,
                    scanner.scan_text(&file.path, &content, Some(&file.added)),
                );
            }
            Err(UsageError(e)) => {
                eprintln!("error: cannot read {} at {head}: {e}", file.path);
                unreadable = true;
            }
        }
    }
    Ok(unreadable)
}

/// `path` (relative to the working directory) relative to the repository root, `/`-separated.
fn repo_relative(toplevel: &Path, path: &Path) -> Result<String, UsageError> {
    let root = toplevel
        .canonicalize()
        .map_err(|e| UsageError(format!("cannot resolve {}: {e}", toplevel.display())))?;
    let absolute = std::env::current_dir()?.join(path);
    // A path deleted in the range no longer exists; resolve its parent instead.
    let resolved = absolute.canonicalize().or_else(|_| {
        let parent = absolute.parent().unwrap_or(&absolute).canonicalize()?;
        Ok::<_, std::io::Error>(parent.join(absolute.file_name().unwrap_or_default()))
    })?;
    let relative = resolved
        .strip_prefix(&root)
        .map_err(|_| UsageError(format!("{} is outside the repository", path.display())))?;
    Ok(relative.to_string_lossy().replace('\\', "/"))
}

fn git(dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, UsageError> {
    let mut cmd = Command::new("git");
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| UsageError(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(UsageError(format!(
            "git {} failed: {}",
            args.first().copied().unwrap_or_default(),
            stderr.trim()
        )));
    }
    Ok(out.stdout)
}

/// The path as the user should see it: relative to the working directory when possible,
/// `/`-separated, without a leading `./`.
fn display_path(path: &Path) -> String {
    let relative = if path.is_absolute() {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf())
    } else {
        path.to_path_buf()
    };
    let mut shown = relative.to_string_lossy().replace('\\', "/");
    while let Some(rest) = shown.strip_prefix("./") {
        shown = rest.to_string();
    }
    shown
}

fn print_report(report: &ScanReport, output: ScanOutput, unreadable: bool) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not worth a panic; the exit status still tells the result.
    let _ = match output {
        ScanOutput::Text => {
            let _ = stdout.write_all(report.to_text().as_bytes());
            print_notes(report, unreadable);
            Ok(())
        }
        ScanOutput::Json => writeln!(stdout, "{:#}", report.to_json()),
        ScanOutput::Sarif => writeln!(stdout, "{:#}", report.to_sarif()),
    };
}

/// Skip notes and a summary on stderr, so stdout stays one finding per line. Skips are
/// grouped by reason, a few paths each: a repository with a fuzz corpus skips hundreds of
/// binary files, and a line each would bury the one line that matters.
fn print_notes(report: &ScanReport, unreadable: bool) {
    const SHOWN: usize = 3;
    let mut by_reason: Vec<(SkipReason, Vec<&str>)> = Vec::new();
    for skipped in &report.skipped {
        match by_reason.iter_mut().find(|(r, _)| *r == skipped.reason) {
            Some((_, paths)) => paths.push(&skipped.path),
            None => by_reason.push((skipped.reason, vec![&skipped.path])),
        }
    }
    for (reason, paths) in &by_reason {
        if *reason == SkipReason::AllowlistedPath {
            eprintln!(
                "note: {} file(s) skipped by the privacy path allowlist",
                paths.len()
            );
            continue;
        }
        let more = paths.len().saturating_sub(SHOWN);
        let shown = paths[..paths.len().min(SHOWN)].join(", ");
        let tail = if more > 0 {
            format!(", and {more} more (`--output json` lists them all)")
        } else {
            String::new()
        };
        eprintln!(
            "note: {} {}: {shown}{tail}",
            paths.len(),
            reason.note_plural()
        );
    }
    let n = report.findings.len();
    let mut summary = format!(
        "fleetbot scan: {} file(s) scanned, {} skipped, {n} finding(s)",
        report.scanned,
        report.skipped.len()
    );
    if unreadable {
        summary.push_str("; some input could not be read (above), so the scan is incomplete");
    }
    if n > 0 {
        summary.push_str(
            "; values are not shown, equal aliases mean equal values (rules: docs/privacy.md)",
        );
    }
    eprintln!("{summary}");
}
