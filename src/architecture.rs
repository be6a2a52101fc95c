//! Holds the crate to its layering (ARCHITECTURE.md): every `crate::…`, `super::…` and `self::…`
//! path in src/ is read, and a module that names one above it, or a cycle between the modules
//! of one layer, fails the build's tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's rank; a module may use only modules of a lower rank, and the pairs
/// in [`BESIDE`].
const RANKS: &[(&str, u8)] = &[
    ("cli", 10),
    ("server", 9),
    ("bot", 8),
    ("fleet", 7),
    ("verify", 6),
    ("policy", 6),
    ("engine", 5),
    ("github", 4),
    ("clusters", 4),
    ("quota", 4),
    ("cloud", 3),
    ("runtime", 3),
    ("sim", 3),
    ("privacy", 2),
    ("store", 2),
    ("spec", 1),
    ("probe", 1),
];

/// Same-rank arrows that are allowed, to the named submodules only: the simulator serves the
/// cloud client's own protocol, so it uses the client's protos, errors and IDs (never the
/// client itself, and never the other way round).
const BESIDE: &[(&str, &str, &[&str])] = &[(
    "sim",
    "cloud",
    &["proto", "error", "nid", "schema", "reset_mask"],
)];

/// The crate's own test-only module, which reads the tree rather than using it.
const EXEMPT: &[&str] = &["architecture"];

/// Whether `name` is one of the crate's top-level modules (a file or folder in src/).
fn top_level(name: &str) -> bool {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    src.join(format!("{name}.rs")).exists() || src.join(name).is_dir()
}

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// A source file's module path: `src/cloud/nebius/vpc.rs` → `[cloud, nebius, vpc]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments (prose naming a module is not an arrow) and without
/// its trailing `#[cfg(test)] mod tests { … }`, where `super` means the file itself.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| {
            w[0].trim() == "#[cfg(test)]" && w[1].starts_with("mod ") && w[1].ends_with('{')
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths of a use-tree group starting at `text[at] == '{'`: `{a, b::c, d::{e, f}}` gives
/// `a`, `b::c`, `d::e`, `d::f`; and where the group ends.
fn group(text: &str, at: usize) -> (Vec<String>, usize) {
    let bytes = text.as_bytes();
    let (mut out, mut i) = (Vec::new(), at + 1);
    let mut item = String::new();
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                let prefix = item.trim().trim_end_matches("::").to_string();
                let (inner, end) = group(text, i);
                out.extend(inner.into_iter().map(|p| format!("{prefix}::{p}")));
                item.clear();
                i = end;
                continue;
            }
            b',' | b'}' => {
                let path = item.trim();
                if !path.is_empty() {
                    out.push(path.split_whitespace().next().unwrap_or("").to_string());
                }
                item.clear();
                if bytes[i] == b'}' {
                    return (out, i + 1);
                }
            }
            b => item.push(b as char),
        }
        i += 1;
    }
    (out, i)
}

/// Every module path the file names, resolved to an absolute path in the crate: plain paths
/// (`crate::a::b`, `super::c`) and use-tree groups (`crate::{a, b::{c, d}}`). A path ends at
/// its first segment that is not a module name (a type, `*`, `self`).
fn references(path: &[String], text: &str) -> Vec<Vec<String>> {
    let re =
        regex::Regex::new(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)*)(::\{)?").expect("regex");
    let code = code(text);
    let mut out = Vec::new();
    for c in re.captures_iter(&code) {
        let head = format!("{}{}", &c[1], &c[2]);
        let full: Vec<String> = match c.get(3) {
            Some(brace) => group(&code, brace.end() - 1)
                .0
                .into_iter()
                .map(|tail| format!("{head}::{tail}"))
                .collect(),
            None if c[2].is_empty() => continue,
            None => vec![head],
        };
        for one in full {
            out.push(resolve(path, &one));
        }
    }
    out
}

/// `crate::a::b`, `self::x`, `super::super::y::Z` → an absolute module path.
fn resolve(path: &[String], written: &str) -> Vec<String> {
    let mut parts = written.split("::").map(str::trim);
    let mut base: Vec<String> = match parts.next() {
        Some("crate") => Vec::new(),
        Some("self") => path.to_vec(),
        _ => path[..path.len().saturating_sub(1)].to_vec(),
    };
    let mut parts = parts.peekable();
    // `super::super::x` climbs once per `super`.
    while parts.peek() == Some(&"super") {
        base.pop();
        parts.next();
    }
    let module = |p: &&str| {
        !p.is_empty()
            && *p != "self"
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    base.extend(parts.take_while(module).map(str::to_string));
    base
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Modules declared `#[cfg(test)] mod name;` in `text`: test code, which may reach for test
/// helpers anywhere and is not part of the layering.
fn test_modules(path: &[String], text: &str) -> Vec<Vec<String>> {
    let re =
        regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))? )?mod ([a-z_][a-z0-9_]*);")
            .expect("regex");
    re.captures_iter(text)
        .map(|c| {
            let mut p = path.to_vec();
            p.push(c[1].to_string());
            p
        })
        .collect()
}

/// (file, its module path, the paths it names) for every non-test file under src/.
fn graph() -> Vec<(String, Vec<String>, Vec<Vec<String>>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let texts: Vec<(PathBuf, Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            (f.clone(), module_path(&src, f), text)
        })
        .collect();
    let tests: Vec<Vec<String>> = texts
        .iter()
        .flat_map(|(_, path, text)| test_modules(path, text))
        .collect();
    texts
        .into_iter()
        .filter(|(_, path, _)| !tests.iter().any(|t| path.starts_with(t)))
        .map(|(f, path, text)| {
            let refs = references(&path, &text);
            (f.display().to_string(), path, refs)
        })
        .collect()
}

#[test]
fn no_module_uses_one_above_it() {
    let mut problems = BTreeSet::new();
    for (file, path, refs) in graph() {
        let Some(from) = path.first().filter(|m| !EXEMPT.contains(&m.as_str())) else {
            continue;
        };
        if path.len() == 1 && (from == "lib" || from == "main") {
            continue;
        }
        let from_rank = rank(from).unwrap_or_else(|| panic!("{from} has no rank in RANKS"));
        for r in &refs {
            let Some(to) = r.first() else { continue };
            if to == from || EXEMPT.contains(&to.as_str()) {
                continue;
            }
            // A top-level module the table does not know is a failure, not a pass.
            let Some(to_rank) = rank(to).or_else(|| top_level(to).then_some(u8::MAX)) else {
                continue;
            };
            let beside = BESIDE.iter().any(|(f, t, subs)| {
                f == from && t == to && r.get(1).is_some_and(|s| subs.contains(&s.as_str()))
            });
            if to_rank >= from_rank && !beside {
                problems.insert(format!(
                    "{file}: `{from}` uses `{}`, which is not below it",
                    r.join("::")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_modules_of_each_layer_form_no_cycle() {
    // Edges between sibling modules at every depth (`quota::evidence` → `quota::json`,
    // `github::client::auth` → `github::client::transport`), taken where a file's path and a
    // path it names part; a parent re-exporting its children is not an edge.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (_, path, refs) in graph() {
        for r in refs {
            let common = path.iter().zip(&r).take_while(|(a, b)| a == b).count();
            if common == 0 || common >= path.len() || common >= r.len() {
                continue;
            }
            edges
                .entry(path[..common].to_vec())
                .or_default()
                .entry(path[common].clone())
                .or_default()
                .insert(r[common].clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, siblings) in &edges {
        for start in siblings.keys() {
            // Depth-first search for a way back to `start`.
            let mut stack = vec![(start.clone(), vec![start.clone()])];
            let mut seen = BTreeSet::new();
            while let Some((at, trail)) = stack.pop() {
                for next in siblings.get(&at).into_iter().flatten() {
                    if next == start {
                        cycles.push(format!(
                            "{}: {} → {start}",
                            parent.join("::"),
                            trail.join(" → ")
                        ));
                    } else if seen.insert(next.clone()) {
                        let mut t = trail.clone();
                        t.push(next.clone());
                        stack.push((next.clone(), t));
                    }
                }
            }
        }
    }
    cycles.sort();
    cycles.dedup();
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
}

/// The engine's calls that change a fleet; outside the engine only [`MUTATOR`] names them.
const MUTATIONS: &[&str] = &["deploy", "deploy_prepared", "destroy"];

/// ARCHITECTURE.md: "only `fleet::apply` mutates a fleet".
const MUTATOR: &[&str] = &["fleet", "apply"];

/// Module paths whose `refs` name an engine call in [`MUTATIONS`] (as `engine::ops::deploy`,
/// or the function inside its own module).
fn mutations(refs: &[Vec<String>]) -> Vec<String> {
    refs.iter()
        .filter(|r| {
            r.len() >= 3
                && r[0] == "engine"
                && r[1] == "ops"
                && MUTATIONS.contains(&r[2].as_str())
                && (r.len() == 3 || MUTATIONS.contains(&r[3].as_str()))
        })
        .map(|r| r.join("::"))
        .collect()
}

#[test]
fn only_fleet_apply_mutates_a_fleet() {
    let mut problems = Vec::new();
    for (file, path, refs) in graph() {
        let exempt = path.first().is_some_and(|m| EXEMPT.contains(&m.as_str()));
        if exempt || path.first().is_some_and(|m| m == "engine") || path == MUTATOR {
            continue;
        }
        for call in mutations(&refs) {
            problems.push(format!("{file}: calls `{call}`; go through `fleet::apply`"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let old_cli_deploy = references(
        &["cli".into(), "deploy".into()],
        "use crate::engine::ops::{LifecycleOptions, deploy_prepared, prepare, select};\nlet r = crate::engine::ops::destroy(c, s);",
    );
    assert_eq!(
        mutations(&old_cli_deploy),
        ["engine::ops::deploy_prepared", "engine::ops::destroy"]
    );
}

/// The modules that speak to the library, never past it: for anything about a fleet, `cli`
/// and `bot` reach `fleet` (which re-exports the engine's words a caller needs), not `engine`.
const THROUGH_FLEET: &[&str] = &["cli", "bot"];

/// The engine paths `refs` (of the module at `path`) names where it may not.
fn past_the_library(path: &[String], refs: &[Vec<String>]) -> Vec<String> {
    if !path
        .first()
        .is_some_and(|m| THROUGH_FLEET.contains(&m.as_str()))
    {
        return Vec::new();
    }
    refs.iter()
        .filter(|r| r.first().is_some_and(|m| m == "engine"))
        .map(|r| r.join("::"))
        .collect()
}

#[test]
fn cli_and_bot_reach_the_engine_only_through_fleet() {
    let mut problems = Vec::new();
    for (file, path, refs) in graph() {
        for r in past_the_library(&path, &refs) {
            problems.push(format!("{file}: names `{r}`; reach it through `fleet`"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The CLI's deploy as it was.
    let cli_deploy = ["cli", "deploy"].map(String::from);
    let old = references(
        &cli_deploy,
        "use crate::engine::live::{Action, LivePlan};\nuse crate::engine::ops::{LifecycleOptions, select};",
    );
    assert_eq!(past_the_library(&cli_deploy, &old).len(), 4);
}

/// What every command speaks to: the library (`fleet`, and the spec and runtime values the
/// crate root re-exports with it) and the CLI's own helpers.
const CLI_LIBRARY: &[&str] = &["cli", "fleet", "spec", "runtime"];

/// The parts of the crate a subcommand reaches besides the library, being that part's own
/// command (`serve` is the App, `scan` the privacy guard, `sim` the simulator, …), by the
/// file under `src/cli/` that implements it.
const CLI_PARTS: &[(&str, &[&str])] = &[
    ("serve", &["server", "bot", "github", "store"]),
    ("serve_start", &["server", "store"]),
    ("register", &["github"]),
    ("preview", &["bot", "github"]),
    ("preview_post", &["bot", "github"]),
    ("scan", &["privacy"]),
    ("policy", &["policy"]),
    ("probe", &["probe"]),
    ("sim", &["sim"]),
    ("kubeconfig", &["clusters"]),
    ("verify", &["verify", "clusters"]),
    ("verify_mig", &["verify"]),
    ("preflight_run", &["quota"]),
    // The demo previews through `preview`, applies through `fleet::apply`, and shows the
    // dashboard: nothing of the App's GitHub glue (`bot`, `github`).
    ("demo", &["store", "sim", "server"]),
];

/// The modules `refs` (of the CLI file at `path`) reaches that are neither the library nor
/// its subcommand's part.
fn cli_reaches_past(path: &[String], refs: &[Vec<String>]) -> Vec<String> {
    if path.first().is_none_or(|m| m != "cli") {
        return Vec::new();
    }
    let command = path.get(1).map(String::as_str).unwrap_or("");
    let parts = CLI_PARTS
        .iter()
        .find(|(c, _)| *c == command)
        .map_or(&[][..], |(_, p)| *p);
    refs.iter()
        .filter_map(|r| r.first())
        .filter(|m| !CLI_LIBRARY.contains(&m.as_str()) && !parts.contains(&m.as_str()))
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn each_command_reaches_the_library_and_its_own_part_only() {
    let mut problems = BTreeSet::new();
    for (file, path, refs) in graph() {
        for m in cli_reaches_past(&path, &refs) {
            problems.insert(format!(
                "{file}: reaches `{m}`; speak to `fleet` (or name the part in CLI_PARTS if this is its command)"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
    // The CLI's deploy as it was: past the library into the cloud, the store and the quota.
    let deploy = ["cli", "deploy"].map(String::from);
    let old = references(
        &deploy,
        "use crate::cloud::profile::NebiusConfig;\nuse crate::store::SqliteStore;\nuse crate::fleet::Progress;",
    );
    assert_eq!(cli_reaches_past(&deploy, &old), ["cloud", "store"]);
}

/// The plainly `pub` functions (callable from outside the crate) in `text` whose bodies call
/// the cloud's mutating methods or are named as the engine's mutations.
fn public_mutators(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let head = regex::Regex::new(r"^(\s*)pub (?:async )?fn ([a-z_][a-z0-9_]*)").expect("regex");
    let mutating = regex::Regex::new(r"\.(create|update|delete)_[a-z_]+\(").expect("regex");
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = head.captures(line) else {
            continue;
        };
        let close = format!("{}}}", &c[1]);
        let end = lines[i..]
            .iter()
            .position(|l| *l == close)
            .map_or(lines.len(), |n| i + n);
        let body = lines[i..end].join("\n");
        if MUTATIONS.contains(&&c[2]) || mutating.is_match(&body) {
            out.push(c[2].to_string());
        }
    }
    out
}

#[test]
fn no_mutating_function_is_public_outside_fleet_apply() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src.join("engine"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = code(&std::fs::read_to_string(&file).expect("readable source"));
        for name in public_mutators(&text) {
            problems.push(format!(
                "{}: `pub fn {name}` changes a fleet; make it `pub(crate)` and reach it through `fleet::apply`",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The engine's deploy as it was, and a reader beside it.
    let old = "pub async fn deploy_prepared<C>(\n    c: &C,\n) {\n    x\n}\npub fn add(\n) {\n    c.update_node_group(a)\n}\npub fn read() {\n    c.list_x()\n}\npub(crate) fn inner() {\n    c.delete_x(a)\n}";
    assert_eq!(public_mutators(old), ["deploy_prepared", "add"]);
}

/// The App's applying methods and the guard's decision; only the guarded apply and the waves
/// it rolls out ([`APPLY_JOB`]) call them.
const APPLYING: &[&str] = &[".apply_judged(", ".apply_targets(", "guard::decide("];

/// ARCHITECTURE.md: "only the guarded apply applies" (after the guard allowed the plan): the
/// apply job, the demo and any later caller reach the cloud through `fleet::apply::guarded`.
const APPLY_JOB: &[&[&str]] = &[&["fleet", "apply"]];

/// The applying calls `text` (of the module at `path`) makes where it may not.
fn applying_calls(path: &[String], text: &str) -> Vec<&'static str> {
    let allowed = APPLY_JOB
        .iter()
        .any(|job| path.len() >= job.len() && path.iter().zip(*job).all(|(a, b)| a == b));
    if allowed || path.first().is_some_and(|m| m == "architecture") {
        return Vec::new();
    }
    let text = code(text);
    APPLYING
        .iter()
        .copied()
        .filter(|c| text.contains(*c))
        .collect()
}

#[test]
fn only_the_guarded_apply_applies_through_the_planner() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        for call in applying_calls(&module_path(&src, &file), &text) {
            problems.push(format!(
                "{}: calls `{call}…)`; only fleet::apply::guarded applies",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The apply job as it was: it decided and applied in `bot`.
    let old_job = "Ok(guard::decide(&GuardInput {\n  .applier\n  .apply_judged(&spec, &tenant, judged, false, p)";
    let bot_deploy = ["bot", "deploy", "job"].map(String::from);
    assert_eq!(
        applying_calls(&bot_deploy, old_job),
        [".apply_judged(", "guard::decide("]
    );
}

/// ARCHITECTURE.md: "`bot` holds only GitHub glue": the cloud (and what reads or changes it
/// without GitHub: live plans, the guard, applying) is reached through `fleet`, never named in
/// `bot`.
#[test]
fn bot_holds_only_github_glue() {
    let problems: Vec<String> = graph()
        .into_iter()
        .filter(|(_, path, _)| path.first().is_some_and(|m| m == "bot"))
        .flat_map(|(file, _, refs)| {
            refs.into_iter()
                .filter(|r| r.first().is_some_and(|m| m == "cloud"))
                .map(move |r| format!("{file}: names `{}`; that belongs in `fleet`", r.join("::")))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join("bot");
    for domain in ["guard.rs", "live.rs", "backend"] {
        assert!(
            !src.join(domain).exists(),
            "src/bot/{domain} imports nothing from GitHub; it lives in src/fleet/"
        );
    }
}

/// What an apply keeps besides the cloud — its fleets' leases, its run record, the audit log —
/// is none of GitHub's: `fleet::apply` writes it (`leases`, `guarded`, `audit`; the lease on
/// an apply's acknowledgement too), and `bot` calls these store methods never.
const APPLY_RECORDS: &[&str] = &[
    ".take_lease(",
    ".renew_lease(",
    ".release_lease(",
    ".break_lease(",
    ".record_apply_run(",
    ".append_audit(",
];

/// The calls of [`APPLY_RECORDS`] in `text`.
fn apply_records(text: &str) -> Vec<&'static str> {
    let text = code(text);
    APPLY_RECORDS
        .iter()
        .copied()
        .filter(|c| text.contains(*c))
        .collect()
}

#[test]
fn bot_keeps_no_lease_run_record_or_audit_of_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src.join("bot"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        for call in apply_records(&text) {
            problems.push(format!(
                "{}: calls `{call}…`; that belongs in fleet::apply",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The apply job as it was: its own renewal and audit.
    let old = "match state.renew_lease(lease, until).await {\nif let Err(e) = deployer.state.append_audit(&entry).await {";
    assert_eq!(apply_records(old), [".renew_lease(", ".append_audit("]);
}

#[test]
fn paths_resolve_like_the_compiler_does() {
    let path: Vec<String> = ["cloud", "nebius", "vpc"].map(String::from).to_vec();
    let refs = references(
        &path,
        "use super::conv::x;\nuse super::super::error::E; // crate::sim is prose\nuse crate::spec::y;\nuse self::inner::z;\nuse crate::{engine::live, bot::{report::X, pr}};",
    );
    let want: Vec<Vec<String>> = [
        vec!["cloud", "nebius", "conv", "x"],
        // Types (capitalised) end a path: only modules are arrows.
        vec!["cloud", "error"],
        vec!["spec", "y"],
        vec!["cloud", "nebius", "vpc", "inner", "z"],
        vec!["engine", "live"],
        vec!["bot", "report"],
        vec!["bot", "pr"],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(refs, want);
}

#[test]
fn no_production_file_is_too_long_to_read() {
    // ARCHITECTURE.md: one idea per file. Test modules at the end of a file do not count.
    const MAX_LINES: usize = 800;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            let lines = code(&text).lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "split these by idea:\n{}", long.join("\n"));
}

/// The struct fields in `text` that hold a cloud client, with the struct they are in.
fn cloud_holders(text: &str) -> Vec<String> {
    let head = regex::Regex::new(r"^\s*(?:pub(?:\([a-z]+\))? )?struct ([A-Z][A-Za-z0-9]*)")
        .expect("regex");
    let field = regex::Regex::new(
        r"^\s*(?:pub(?:\([a-z]+\))? )?[a-z_][a-z0-9_]*: (?:Option<|Arc<|std::sync::Arc<)*(?:crate::cloud::client::)?NebiusClient\b",
    )
    .expect("regex");
    let mut current = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(c) = head.captures(line) {
            current = c[1].to_string();
        } else if field.is_match(line) && !out.contains(&current) {
            out.push(current.clone());
        }
    }
    out
}

/// The one value that holds a cloud: `fleet::Session` (and its private `Link`, the reached
/// cloud before it has an inventory). The cloud client and the simulator hold their own.
const CLOUD_HOLDERS: &[&str] = &["fleet::connect::Link", "fleet::session::Session"];

#[test]
fn one_session_holds_the_cloud() {
    let mut found = Vec::new();
    for (file, path, _) in graph() {
        if matches!(path.first().map(String::as_str), Some("cloud" | "sim")) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).expect("readable source"));
        for name in cloud_holders(&text) {
            found.push(format!("{}::{name}", path.join("::")));
        }
    }
    found.sort();
    assert_eq!(
        found, CLOUD_HOLDERS,
        "one Session holds the cloud; fold a new holder into it"
    );
    let link =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fleet/connect.rs"))
            .expect("readable source");
    assert!(
        link.contains("pub(super) struct Link"),
        "Link stays fleet's own"
    );
    // The four holders of before: the CLI's connection, the planner, the deployer, the session.
    let old = "pub struct Connection {\n    pub client: NebiusClient,\n}\npub struct CloudPlanner {\n    cloud: NebiusClient,\n}\npub struct Deployer {\n    pub applier: Arc<CloudPlanner>,\n}\npub struct Session<S> {\n    connection: Connection,\n}";
    assert_eq!(cloud_holders(old), ["Connection", "CloudPlanner"]);
}

/// Where the environment is read: the edges (the commands, the server, the binary) and the
/// simulator's kubelet, which hands its own `PATH` to the processes it runs.
const READS_ENVIRONMENT: &[&str] = &["cli", "server", "main", "sim"];

#[test]
fn the_library_reads_no_environment_variable() {
    let reads = regex::Regex::new(r"\benv::var(?:_os|s|s_os)?\(").expect("regex");
    let mut problems = Vec::new();
    for (file, path, _) in graph() {
        if path.first().is_some_and(|m| {
            READS_ENVIRONMENT.contains(&m.as_str()) || EXEMPT.contains(&m.as_str())
        }) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).expect("readable source"));
        if reads.is_match(&text) {
            problems.push(format!(
                "{file}: reads the environment; take it as an option the CLI or the server fills (cli::env)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(reads.is_match("let t = std::env::var(\"FLEETBOT_TENANT_ID\");"));
    assert!(!reads.is_match("let exe = std::env::current_exe();"));
}
