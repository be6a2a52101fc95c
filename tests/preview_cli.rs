//! `fleetbot preview` in a throwaway git repository: what the App would post, from local
//! commits, with the exit code a pre-push hook or a CI step acts on.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use support::{git, write_file as write};

/// A spec repository with `main` holding the example fleet, and a branch `change` on top.
fn repository(change: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    git(d, &["config", "user.email", "dev@example.com"]);
    git(d, &["config", "user.name", "dev"]);
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/specs/fleet1-test.yaml"
    ))
    .unwrap();
    write(d, "fleets/prod.yaml", &spec);
    write(d, ".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    git(d, &["checkout", "-qb", "change"]);
    let grown = spec.replacen(
        "  gpu_nodes:\n    count: 1\n",
        "  gpu_nodes:\n    count: 2\n",
        1,
    );
    write(d, "fleets/prod.yaml", &grown);
    for (path, text) in change {
        write(d, path, text);
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "change"]);
    dir
}

fn preview(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .arg("preview")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir.join(".home"))
        .env("XDG_DATA_HOME", dir.join(".home/data"))
        .env("FLEETBOT_NEBIUS_CONFIG", dir.join(".home/absent.yaml"))
        .env_remove("NEBIUS_IAM_TOKEN")
        .env_remove("FLEETBOT_CLOUD")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn a_clean_change_previews_the_comment_and_both_checks_against_the_embedded_cloud() {
    let repo = repository(&[]);
    let out = preview(repo.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("<!-- fleetbot:pr-comment v1 -->\n## ✅ fleetbot preflight: ready"),
        "{stdout}"
    );
    assert!(
        stdout.contains("planned against the live state in the fleetbot simulator"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Check run `fleet/privacy`: success"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Check run `fleet/preflight`: success"),
        "{stdout}"
    );
    assert!(
        stdout.contains("config `.fleetbot.yml` from `main`"),
        "{stdout}"
    );
}

#[test]
fn a_committed_private_id_fails_the_preview_as_it_would_fail_the_pull_request() {
    let id = format!("project-{}{}", "e00", "kq4fxh7m9tz2wab3c1");
    let note = format!("the old project was {id}\n");
    let repo = repository(&[("notes.md", &note)]);
    let out = preview(repo.path(), &["--no-cloud", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["checks"][0]["name"], "fleet/privacy");
    assert_eq!(doc["checks"][0]["conclusion"], "failure");
    let annotations = doc["checks"][0]["output"]["annotations"]
        .as_array()
        .unwrap();
    assert!(
        annotations
            .iter()
            .any(|a| a["path"] == "notes.md" && a["start_line"] == 1)
    );
    // Nothing of the value itself is shown.
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&id[8..]));
}

#[test]
fn a_ref_that_does_not_exist_is_a_usage_error() {
    let repo = repository(&[]);
    let out = preview(repo.path(), &["--base", "no-such-branch", "--no-cloud"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("fleetbot preview: --base `no-such-branch` is not a commit of "),
        "says which ref, in words, not git's: {stderr}"
    );
    assert!(!stderr.contains("rev-parse"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn uncommitted_changes_are_said_to_be_left_out() {
    let repo = repository(&[]);
    write(repo.path(), "fleets/wip.yaml", "name: not committed\n");
    let out = preview(repo.path(), &["--no-cloud"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 uncommitted change(s) in the work tree are not previewed"),
        "{stderr}"
    );
    // What is previewed is the commits: the uncommitted spec is not in the comment.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("wip.yaml"));
}

#[test]
fn open_writes_the_html_page_and_hands_it_to_the_desktop() {
    let repo = repository(&[]);
    // A stand-in for the desktop's opener that records what it was given.
    let bin = repo.path().join(".bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opener = bin.join("xdg-open");
    let log = repo.path().join(".opened");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$1\" > {}\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for args in [
        &["--no-cloud", "--open"][..],
        &["--no-cloud", "--output", "html", "--open"][..],
    ] {
        let _ = std::fs::remove_file(&log);
        let out = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
            .arg("preview")
            .args(args)
            .current_dir(repo.path())
            .env("PATH", &path)
            .env("HOME", repo.path().join(".home"))
            .env_remove("NEBIUS_IAM_TOKEN")
            .env_remove("FLEETBOT_CLOUD")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        let opened = std::fs::read_to_string(&log).expect("the opener ran");
        let page = std::fs::read_to_string(opened.trim()).unwrap();
        assert!(page.starts_with("<!doctype html>"), "{args:?}");
    }
    let json = preview(repo.path(), &["--no-cloud", "--output", "json", "--open"]);
    assert_eq!(json.status.code(), Some(2));
}

#[test]
fn the_html_page_renders_the_same_texts_as_one_document() {
    let repo = repository(&[]);
    let out = preview(repo.path(), &["--no-cloud", "--output", "html"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.ends_with("</body></html>\n"));
    // GitHub's table extension is on: the plan table is a table, not pipes.
    assert!(
        page.contains("<table>") && page.contains("<th>What</th>"),
        "{page}"
    );
    assert!(page.contains("<code>fleet/privacy</code>"), "{page}");
    assert!(
        page.contains("<details><summary><code>fleets/prod.yaml</code></summary>"),
        "{page}"
    );
}

#[test]
fn a_file_over_the_apps_limit_is_left_unread_and_fails_as_on_the_pull_request() {
    let big = "z".repeat(2 << 20);
    let repo = repository(&[("docs/big.md", &big)]);
    let out = preview(repo.path(), &["--no-cloud", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let privacy = &doc["checks"][0];
    assert_eq!(privacy["conclusion"], "failure");
    let shown = format!(
        "{}{}",
        privacy["output"]["summary"], privacy["output"]["text"]
    );
    assert!(
        shown.contains("2097152 bytes, more than the 1048576 bytes read; not fetched"),
        "{shown}"
    );
}
