//! The privacy corpus: every case under fixtures/privacy/ yields exactly its expected findings.
//!
//! `positive/<case>.<ext>` has `<case>.expected` with one `line:col rule` per finding
//! (`#` comments allowed); `negative/<case>.<ext>` must be clean unless its `.expected`
//! says `skipped <reason>`. The example fleets under fixtures/specs/ are negative cases too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetbot::privacy::{FileScan, PrivacyAllowlist, Scanner, ScannerConfig};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn scanner() -> Scanner {
    Scanner::new(ScannerConfig {
        key: b"corpus-test-key".to_vec(),
        allowlist: PrivacyAllowlist::default(),
    })
    .expect("scanner")
}

/// Repository-relative path with `/` separators, as the CLI and the bot report it.
fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Case inputs in `dir` keyed by case name (file name without its last extension).
fn cases(dir: &str) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join(dir)).expect("corpus directory") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "expected") || !path.is_file() {
            continue;
        }
        let case = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            out.insert(case.clone(), path).is_none(),
            "two inputs for case {case} in {dir}"
        );
    }
    out
}

/// What a scan looks like in the `.expected` format.
fn render(scan: &FileScan) -> Vec<String> {
    match scan {
        FileScan::Findings(findings) => findings
            .iter()
            .map(|f| format!("{}:{} {}", f.line, f.column, f.rule))
            .collect(),
        FileScan::Skipped { reason } => vec![format!("skipped {}", reason.as_str())],
    }
}

fn expected(input: &Path) -> Option<Vec<String>> {
    let file = input.with_extension("expected");
    let text = std::fs::read_to_string(file).ok()?;
    Some(
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect(),
    )
}

fn scan_file(scanner: &Scanner, path: &Path) -> FileScan {
    let content = std::fs::read(path).expect("read case");
    scanner.scan_text(&relative(path), &content, None)
}

#[test]
fn positive_cases_yield_exactly_the_expected_findings() {
    let scanner = scanner();
    let cases = cases("fixtures/privacy/positive");
    assert!(cases.len() >= 10, "the positive corpus is missing");
    let mut failures = Vec::new();
    for (case, path) in &cases {
        let want =
            expected(path).unwrap_or_else(|| panic!("positive case {case} has no .expected"));
        assert!(!want.is_empty(), "positive case {case} expects nothing");
        let got = render(&scan_file(&scanner, path));
        if got != want {
            failures.push(format!("{case}:\n  expected {want:?}\n  got      {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn negative_cases_are_clean_or_skipped_as_expected() {
    let scanner = scanner();
    let cases = cases("fixtures/privacy/negative");
    assert!(cases.len() >= 5, "the negative corpus is missing");
    let mut failures = Vec::new();
    for (case, path) in &cases {
        let want = expected(path).unwrap_or_default();
        assert!(
            want.iter().all(|l| l.starts_with("skipped ")),
            "negative case {case} may only expect a skip"
        );
        let got = render(&scan_file(&scanner, path));
        if got != want {
            failures.push(format!("{case}: expected {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_expected_file_belongs_to_a_case() {
    for dir in ["fixtures/privacy/positive", "fixtures/privacy/negative"] {
        let cases = cases(dir);
        for entry in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "expected") {
                let case = path.file_stem().unwrap().to_string_lossy().into_owned();
                assert!(
                    cases.contains_key(&case),
                    "{} has no input",
                    relative(&path)
                );
            }
        }
    }
}

/// The example fleets are committed, public specs: the guard must accept all of them.
#[test]
fn example_fleets_under_fixtures_specs_are_clean() {
    let scanner = scanner();
    let mut specs = Vec::new();
    collect_yaml(&Path::new(ROOT).join("fixtures/specs"), &mut specs);
    assert!(!specs.is_empty(), "no YAML under fixtures/specs");
    let mut failures = Vec::new();
    for path in &specs {
        let got = render(&scan_file(&scanner, path));
        if !got.is_empty() {
            failures.push(format!("{}: {got:?}", relative(path)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn collect_yaml(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_yaml(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The guard's own sources, tests and docs hold no value in clear: tests build their
/// values at run time (fleetbot::privacy::testdata), and only fixture inputs hold them.
#[test]
fn privacy_sources_tests_and_docs_are_clean() {
    let scanner = scanner();
    let mut files = Vec::new();
    for dir in ["src/privacy", "tests"] {
        for entry in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_file() && (dir == "src/privacy" || name.starts_with("privacy_")) {
                files.push(path);
            }
        }
    }
    for file in [
        "src/cli/scan.rs",
        "docs/privacy.md",
        ".pre-commit-hooks.yaml",
        "benches/privacy_scan.rs",
    ] {
        let path = Path::new(ROOT).join(file);
        if path.exists() {
            files.push(path);
        }
    }
    let mut failures = Vec::new();
    for path in &files {
        let got = render(&scan_file(&scanner, path));
        if !got.is_empty() {
            failures.push(format!("{}: {got:?}", relative(path)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
