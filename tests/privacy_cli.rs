//! `fleetbot scan` end to end: inputs (paths, --stdin, --diff), outputs, keys, allowlists
//! and exit codes (0 clean, 1 findings, 2 bad usage or unreadable input).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use fleetbot::privacy::{DEFAULT_LOCAL_KEY, PrivacyAllowlist, Scanner, ScannerConfig, testdata};
use serde_json::Value;

fn fleetbot(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetbot"));
    cmd.current_dir(dir)
        .env_remove("FLEETBOT_PRIVACY_KEY")
        .env_remove("FLEETBOT_PRIVACY_KEY_FILE")
        .arg("scan");
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run fleetbot");
    (
        status.code().expect("exit code"),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

fn alias(key: &[u8], value: &str) -> String {
    Scanner::new(ScannerConfig {
        key: key.to_vec(),
        allowlist: PrivacyAllowlist::default(),
    })
    .unwrap()
    .alias(value.as_bytes())
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn clean_directory_exits_zero_silently() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "specs/fleet.yaml",
        "apiVersion: npa.fleet/v0.0.1\ntenant_id: \"\"\n",
    );
    let (code, out, _) = run(fleetbot(dir.path()).arg("specs"));
    assert_eq!(code, 0);
    assert_eq!(out, "");
}

#[test]
fn findings_exit_one_in_every_format_without_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let id = testdata::nid("project", "e00", 19);
    let token = testdata::github("ghp_", 36);
    write(
        dir.path(),
        "fleet.yaml",
        &format!(
            "apiVersion: npa.fleet/v0.0.1\ntenant_id: acme-prod\nprojects:\n  - project_id: {id}\n"
        ),
    );
    write(
        dir.path(),
        "ci/env.sh",
        &format!("export GITHUB_TOKEN={token}\n"),
    );

    let (code, out, err) = run(fleetbot(dir.path()).args(["fleet.yaml", "ci"]));
    assert_eq!(code, 1);
    let default_alias = alias(DEFAULT_LOCAL_KEY, &id);
    assert_eq!(
        out,
        format!(
            "ci/env.sh:1:21 github-token {}\nfleet.yaml:2:12 spec-tenant-id {}\nfleet.yaml:4:17 nebius-id {default_alias}\n",
            alias(DEFAULT_LOCAL_KEY, &token),
            alias(DEFAULT_LOCAL_KEY, "acme-prod"),
        )
    );
    assert!(err.contains("3 finding(s)"));

    let (code, json, _) = run(fleetbot(dir.path()).args(["--output", "json", "."]));
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["clean"], false);
    assert_eq!(json["findings"].as_array().unwrap().len(), 3);

    let (code, sarif, _) = run(fleetbot(dir.path()).args(["--output", "sarif", "."]));
    assert_eq!(code, 1);
    let sarif_json: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(sarif_json["version"], "2.1.0");
    assert_eq!(
        sarif_json["runs"][0]["results"].as_array().unwrap().len(),
        3
    );

    for output in [&out, &json.to_string(), &sarif, &err] {
        assert!(!output.contains(&id) && !output.contains(&token) && !output.contains("acme-prod"));
    }
}

#[test]
fn stdin_uses_the_given_path_for_spec_rules() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::cli_home::output_with_stdin(
        fleetbot(dir.path()).args(["--stdin", "--stdin-path", "specs/fleet.yaml"]),
        b"projects:\n  - subnet_id: private-net\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("specs/fleet.yaml:2:16 spec-subnet-id "),
        "{stdout}"
    );
}

#[test]
fn keys_come_from_key_file_then_environment_then_default() {
    let dir = tempfile::tempdir().unwrap();
    let id = testdata::nid("tenant", "e00", 15);
    write(dir.path(), "a.txt", &format!("{id}\n"));
    write(dir.path(), "key", "file-key\n");

    let (_, out, _) = run(fleetbot(dir.path()).arg("a.txt"));
    assert!(out.ends_with(&format!(" {}\n", alias(DEFAULT_LOCAL_KEY, &id))));
    let (_, out, _) = run(fleetbot(dir.path())
        .arg("a.txt")
        .env("FLEETBOT_PRIVACY_KEY", "env-key"));
    assert!(out.ends_with(&format!(" {}\n", alias(b"env-key", &id))));
    let (_, out, _) = run(fleetbot(dir.path())
        .args(["--key-file", "key", "a.txt"])
        .env("FLEETBOT_PRIVACY_KEY", "env-key"));
    assert!(out.ends_with(&format!(" {}\n", alias(b"file-key", &id))));

    write(dir.path(), "empty-key", "\n");
    let (code, _, err) = run(fleetbot(dir.path()).args(["--key-file", "empty-key", "a.txt"]));
    assert_eq!(code, 2);
    assert!(err.contains("empty"));
}

#[test]
fn allowlist_from_config_file_and_repo_config() {
    let dir = tempfile::tempdir().unwrap();
    let public = testdata::nid_seeded("project", "e00", 19, 1);
    let private = testdata::nid_seeded("project", "e00", 19, 2);
    write(dir.path(), "docs/a.md", &format!("{public}\n{private}\n"));
    write(dir.path(), "fixtures/x.txt", &format!("{private}\n"));
    write(
        dir.path(),
        "allow.yaml",
        &format!("allow:\n  patterns: ['^{public}$']\n  paths: ['fixtures/**']\n"),
    );
    let (code, out, _) =
        run(fleetbot(dir.path()).args(["--config", "allow.yaml", "docs", "fixtures"]));
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 1);
    assert!(out.starts_with("docs/a.md:2:1 nebius-id "));

    // Without --config, ./.fleetbot.yml's privacy section applies.
    write(
        dir.path(),
        ".fleetbot.yml",
        "privacy:\n  allow:\n    patterns: ['^project-']\n",
    );
    let (code, out, _) = run(fleetbot(dir.path()).arg("docs"));
    assert_eq!((code, out.as_str()), (0, ""));

    write(dir.path(), "bad.yaml", "allow:\n  patterns: ['(']\n");
    let (code, _, err) = run(fleetbot(dir.path()).args(["--config", "bad.yaml", "docs"]));
    assert_eq!(code, 2);
    assert!(err.contains("patterns[0]"));
}

#[test]
fn bad_usage_and_unreadable_input_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&mut fleetbot(dir.path()));
    assert_eq!(code, 2);
    assert!(err.contains("nothing to scan"));
    let (code, _, _) = run(fleetbot(dir.path()).arg("missing.yaml"));
    assert_eq!(code, 2);
    let (code, _, _) = run(fleetbot(dir.path()).args(["--diff", "main"]));
    assert_eq!(code, 2);
    let (code, _, _) = run(fleetbot(dir.path()).args(["--output", "xml", "."]));
    assert_eq!(code, 2);
    let (code, _, _) = run(fleetbot(dir.path()).args(["--stdin", "a.txt"]));
    assert_eq!(code, 2);
}

#[test]
fn binary_files_are_skipped_with_a_note_and_walks_skip_git_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let id = testdata::nid("tenant", "e00", 15);
    std::fs::write(
        dir.path().join("img.bin"),
        [b"\x00\x01".as_slice(), id.as_bytes()].concat(),
    )
    .unwrap();
    write(dir.path(), ".git/config", &format!("{id}\n"));
    write(
        dir.path(),
        "target/CACHEDIR.TAG",
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    );
    write(dir.path(), "target/debug/out.txt", &format!("{id}\n"));
    let (code, out, err) = run(fleetbot(dir.path()).arg("."));
    assert_eq!(code, 0, "{out}");
    assert!(
        err.contains("note: 1 binary file(s) (NUL bytes) not scanned: img.bin\n"),
        "{err}"
    );
    let (_, json, _) = run(fleetbot(dir.path()).args(["--output", "json", "."]));
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["clean"], true);
    assert_eq!(json["skipped"][0]["reason"], "binary");
}

#[test]
fn walks_honour_gitignore_unless_told_not_to_and_still_read_hidden_files() {
    // No .git here: an exported tree or a CI checkout without history scans the same.
    let dir = tempfile::tempdir().unwrap();
    let id = testdata::nid("tenant", "e00", 15);
    write(dir.path(), ".gitignore", "/build/\n*.log\n");
    write(dir.path(), "build/out.txt", &format!("{id}\n"));
    write(dir.path(), "sub/run.log", &format!("{id}\n"));
    let (code, out, err) = run(fleetbot(dir.path()).arg("."));
    assert_eq!(code, 0, "{out}{err}");

    // A file named on the command line is scanned even though .gitignore lists it.
    let (code, out, _) = run(fleetbot(dir.path()).arg("sub/run.log"));
    assert_eq!(code, 1, "{out}");

    let (code, out, _) = run(fleetbot(dir.path()).args(["--no-ignore", "."]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("build/out.txt:1:1"), "{out}");
    assert!(out.contains("sub/run.log:1:1"), "{out}");

    // Hidden files are where credentials live; ignoring by name is not ignoring dotfiles.
    write(dir.path(), ".env", &format!("TENANT={id}\n"));
    let (code, out, _) = run(fleetbot(dir.path()).arg("."));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(".env:1:"), "{out}");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn diff_mode_reports_only_added_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let old = testdata::nid_seeded("tenant", "e00", 15, 10);
    let new = testdata::nid_seeded("tenant", "e00", 15, 11);
    git(d, &["init", "-q", "-b", "main"]);
    write(
        d,
        "specs/fleet.yaml",
        &format!("apiVersion: npa.fleet/v0.0.1\n# old {old}\ntenant_id: \"\"\n"),
    );
    write(d, "moved.txt", &format!("{old}\n"));
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "base"]);
    write(
        d,
        "specs/fleet.yaml",
        &format!("apiVersion: npa.fleet/v0.0.1\n# old {old}\ntenant_id: acme\nnote: {new}\n"),
    );
    git(d, &["mv", "moved.txt", "renamed.txt"]);
    std::fs::write(
        d.join("blob.bin"),
        [b"\x00".as_slice(), new.as_bytes()].concat(),
    )
    .unwrap();
    git(d, &["add", "."]);
    git(d, &["commit", "-q", "-m", "change"]);

    let (code, out, err) = run(fleetbot(d).args(["--diff", "main~1..main"]));
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        format!(
            "specs/fleet.yaml:3:12 spec-tenant-id {}\nspecs/fleet.yaml:4:7 nebius-id {}\n",
            alias(DEFAULT_LOCAL_KEY, "acme"),
            alias(DEFAULT_LOCAL_KEY, &new)
        )
    );
    assert!(err.contains("blob.bin"));

    // PATHs narrow the range; a path with no added findings is clean.
    let (code, out, _) = run(fleetbot(d).args(["--diff", "main~1..", "renamed.txt"]));
    assert_eq!((code, out.as_str()), (0, ""));

    let (code, _, _) = run(fleetbot(d).args(["--diff", "nosuch..main"]));
    assert_eq!(code, 2);
}

/// At most 100 MB of data (heap and anonymous mappings): what `scan` must fit in whatever it
/// is given (issue #32, item 6).
fn capped(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    const CAP: libc::rlim_t = 100 * 1000 * 1000;
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: CAP,
                rlim_max: CAP,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Runs `cmd`, killing it after `limit`: a scan that blocks must fail the test, not hang it.
fn run_within(cmd: &mut Command, limit: std::time::Duration) -> (i32, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fleetbot");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn an_endless_device_is_refused_before_a_byte_is_read() {
    // Issue 22, item 10 capped the bytes read; issue #32: `scan /dev/zero` still read 256 MiB
    // (271 MB RSS) before refusing. A device is refused from its metadata, under a 100 MB cap.
    // The memory cap is what holds it: reading the device at all would run past it. The time
    // bound only turns a hang into a failure.
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_within(
        capped(fleetbot(dir.path()).arg("/dev/zero")),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "error: cannot read /dev/zero: not a regular file (a device, FIFO or socket); refusing to read it\n\
         fleetbot scan: 0 file(s) scanned, 0 skipped, 0 finding(s); some input could not be read (above), so the scan is incomplete\n"
    );
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (code, _, err) = run_within(
        fleetbot(dir.path()).arg("pipe.yaml"),
        std::time::Duration::from_secs(10),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot read pipe.yaml: not a regular file"),
        "{err}"
    );
}

#[test]
fn an_endless_binary_pipe_on_stdin_is_skipped_after_its_first_piece() {
    let dir = tempfile::tempdir().unwrap();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (code, out, err) = run_within(
        capped(
            fleetbot(dir.path())
                .args(["--stdin", "--output", "json"])
                .stdin(zero),
        ),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["skipped"][0]["reason"], "binary", "{doc}");
}

/// Issue #32, item 7: a standalone AWS secret access key (`aws_secret_access_key = …`,
/// `AWS_SECRET_ACCESS_KEY=…`) is found, and its value is never printed.
#[test]
fn aws_secret_access_keys_are_found_and_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let mut synth = testdata::Synth::new(32);
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+";
    let (a, b) = (synth.string(BASE64, 40), synth.string(BASE64, 40));
    write(
        dir.path(),
        "credentials",
        &format!("[default]\naws_secret_access_key = {a}\n"),
    );
    write(
        dir.path(),
        "deploy.env",
        &format!("AWS_SECRET_ACCESS_KEY={b}\n"),
    );
    for output in ["text", "json", "sarif"] {
        let (code, out, err) =
            run(fleetbot(dir.path()).args(["--output", output, "credentials", "deploy.env"]));
        assert_eq!(code, 1, "{output}: {err}");
        assert!(out.matches("aws-secret-access-key").count() >= 2, "{out}");
        for value in [&a, &b] {
            assert!(!out.contains(value.as_str()) && !err.contains(value.as_str()));
        }
    }
    let (_, out, _) = run(fleetbot(dir.path()).args(["credentials", "deploy.env"]));
    assert_eq!(
        out,
        format!(
            "credentials:2:25 aws-secret-access-key {}\ndeploy.env:1:23 aws-secret-access-key {}\n",
            alias(DEFAULT_LOCAL_KEY, &a),
            alias(DEFAULT_LOCAL_KEY, &b)
        )
    );
}

#[test]
fn many_skipped_files_are_summed_up_not_listed_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..7 {
        std::fs::write(dir.path().join(format!("blob-{i}.bin")), b"a\0b").unwrap();
    }
    std::fs::write(dir.path().join("spec.yaml"), "name: clean\n").unwrap();
    let (code, stdout, stderr) = run(fleetbot(dir.path()).arg("."));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "one note per reason and a summary: {stderr}"
    );
    assert!(
        lines[0].starts_with("note: 7 binary file(s) (NUL bytes) not scanned: blob-0.bin, blob-1.bin, blob-2.bin, and 4 more"),
        "{stderr}"
    );
    assert_eq!(
        lines[1],
        "fleetbot scan: 1 file(s) scanned, 7 skipped, 0 finding(s)"
    );
    // The JSON report still lists every skipped file.
    let (_, json, _) = run(fleetbot(dir.path()).args(["--output", "json", "."]));
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["skipped"].as_array().unwrap().len(), 7);
}
