//! `fleetbot plan` end to end through the binary: snapshots of every fixture's text and JSON
//! plan, exit codes, and the `Invalid fleet spec:` contract.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Runs the binary with no Nebius configuration of the machine leaking in.
fn fleetbot(args: &[&str], nebius_config: Option<&Path>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetbot"));
    cmd.args(args)
        .env("HOME", home.path())
        .env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match nebius_config {
        Some(path) => cmd.env("FLEETBOT_NEBIUS_CONFIG", path),
        None => cmd.env("FLEETBOT_NEBIUS_CONFIG", home.path().join("absent.yaml")),
    };
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn text_and_json_plans_of_every_fixture() {
    for path in fixtures() {
        let rel = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .to_str()
            .unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        let text = fleetbot(&["plan", "--spec", rel], None);
        assert!(
            text.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&text.stderr)
        );
        insta::assert_snapshot!(format!("plan_text__{name}"), stdout(&text));
        let json = fleetbot(&["plan", "-f", rel, "--output", "json"], None);
        assert!(json.status.success());
        let out = stdout(&json);
        // Exactly one JSON document on stdout.
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(value.is_object());
        insta::assert_snapshot!(format!("plan_json__{name}"), out);
    }
}

#[test]
fn plans_never_show_private_runtime_values() {
    for path in fixtures() {
        let rel = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .to_str()
            .unwrap();
        let json = stdout(&fleetbot(&["plan", "-f", rel, "--output", "json"], None));
        for forbidden in [
            "capacityblockgroup-",
            "capacity_block_group",
            "bucket_name\"",
            "chart_repository",
        ] {
            assert!(!json.contains(forbidden), "{rel} plan shows {forbidden}");
        }
    }
}

#[test]
fn invalid_spec_exits_2_with_located_message() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fleet.yaml");
    std::fs::write(
        &spec,
        "apiVersion: npa.fleet/v0.0.1\nname: f\nprojects:\n  - name: a\n    clusters:\n      - gpu_nodes: {count: \"2\"}\n",
    )
    .unwrap();
    let out = fleetbot(&["plan", "--spec", spec.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(&format!(
            "Invalid fleet spec: {}:6:28: projects[0].clusters[0].gpu_nodes.count: expected an integer, found \"2\"",
            spec.display()
        )),
        "{err}"
    );
}

#[test]
fn backend_model_checks_refuse_at_plan_time() {
    // Passes the spec-level rules; the backend model `plan` builds refuses it (§2.12b).
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fleet.yaml");
    std::fs::write(
        &spec,
        "apiVersion: npa.fleet/v0.0.1\nname: f\nprojects:\n  - name: a\n    clusters:\n      - cpu_nodes: {count: 2}\n",
    )
    .unwrap();
    for output in ["text", "json"] {
        let out = fleetbot(
            &["plan", "--spec", spec.to_str().unwrap(), "--output", output],
            None,
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.starts_with(&format!(
                "Invalid fleet spec: {}:6:20: projects[0].clusters[0].cpu_nodes.preset: cluster 'cluster': mk8s cpu_nodes requires platform and preset when count is positive",
                spec.display()
            )),
            "{err}"
        );
    }
}

#[test]
fn an_endless_spec_is_refused_at_the_size_limit() {
    // `/dev/zero` has no length to check up front; the cap is on the bytes read.
    let out = fleetbot(&["plan", "--spec", "/dev/zero"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "Invalid fleet spec: /dev/zero: document is more than 4194304 bytes; the limit is 4194304 bytes"
        ),
        "{err}"
    );
}

#[test]
fn a_wrong_value_under_defaults_is_located_where_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs/fleet1-test.yaml"),
    )
    .unwrap()
    .replacen(
        "  gpu_nodes:\n    count: 1\n",
        "  gpu_nodes:\n    count: \"2\"\n",
        1,
    );
    let path = dir.path().join("fleet.yaml");
    std::fs::write(&path, spec).unwrap();
    let path = path.display().to_string();
    let out = fleetbot(&["plan", "--spec", &path], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "Invalid fleet spec: {path}:29:12: defaults.gpu_nodes.count: expected an integer, found \"2\" (inherited by projects[0].clusters[0].gpu_nodes.count)"
        )
    );
}

#[test]
fn missing_file_and_bad_output_are_usage_errors() {
    let out = fleetbot(&["plan", "--spec", "/nonexistent/fleet.yaml"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A file that cannot be read is not an invalid spec: it says so, and why.
    assert!(
        stderr.starts_with("Cannot read fleet spec /nonexistent/fleet.yaml: No such file"),
        "{stderr}"
    );
    assert!(!stderr.contains("Invalid"), "{stderr}");
    let out = fleetbot(
        &[
            "plan",
            "--spec",
            "fixtures/specs/fleet1-test.yaml",
            "--output",
            "yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn tenant_comes_from_the_named_profile_without_echoing_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "default: other\nprofiles:\n  other: {tenant-id: tenant-other}\n  sd: {tenant-id: tenant-sd}\n").unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            "-f",
            "fixtures/specs/fleet1-test.yaml",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&fleetbot(&args, Some(&config)))).unwrap();
        (
            v["tenant_id"].as_str().unwrap().to_string(),
            v["profile"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        plan(&["--profile", "sd"]),
        ("tenant-sd".into(), "sd".into())
    );
    assert_eq!(plan(&[]), ("tenant-other".into(), "(active)".into()));

    std::fs::write(&config, "profiles: [secret-token\n").unwrap();
    let out = fleetbot(
        &["plan", "-f", "fixtures/specs/fleet1-test.yaml"],
        Some(&config),
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not parse Nebius config"), "{err}");
    assert!(!err.contains("secret-token"));
}

#[test]
fn project_prefix_flag_overrides_the_spec() {
    let out = stdout(&fleetbot(
        &[
            "plan",
            "-f",
            "fixtures/specs/fleet1-test.yaml",
            "--project-prefix",
            "acme-",
        ],
        None,
    ));
    assert!(out.contains("prefix: 'acme-'"), "{out}");
    assert!(out.contains("- project [create] acme-a"), "{out}");
}

/// Issue 22, item 12: a key the reference ignores is a warning on stderr with its location and
/// the known key it is nearest to; stdout and the exit code are what they are without it.
#[test]
fn an_unknown_key_warns_on_stderr_and_changes_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs/fleet1-test.yaml"),
    )
    .unwrap();
    let clean = dir.path().join("clean.yaml");
    std::fs::write(&clean, &base).unwrap();
    // `projects:` is a top-level line; the typos go just before it.
    let at = base.find("\nprojects:\n").unwrap() + 1;
    let line = base[..at].lines().count() + 1;
    let typo = dir.path().join("fleet.yaml");
    std::fs::write(
        &typo,
        format!(
            "{}regoin: us-central1\nownr: team-a\n{}",
            &base[..at],
            &base[at..]
        ),
    )
    .unwrap();
    let path = typo.to_str().unwrap();
    for output in ["text", "json"] {
        let want = fleetbot(
            &["plan", "-f", clean.to_str().unwrap(), "--output", output],
            None,
        );
        let got = fleetbot(&["plan", "-f", path, "--output", output], None);
        assert_eq!(got.status.code(), Some(0));
        assert_eq!(stdout(&got), stdout(&want), "stdout unchanged ({output})");
        if output == "json" {
            serde_json::from_str::<serde_json::Value>(&stdout(&got)).unwrap();
        }
        assert_eq!(
            String::from_utf8(got.stderr).unwrap(),
            format!(
                "warning: {path}:{line}:1: regoin: unknown key; did you mean 'region'?\nwarning: {path}:{}:1: ownr: unknown key\n",
                line + 1
            )
        );
        assert!(want.stderr.is_empty());
    }
}

/// `--strict` makes each warning an error with the same text, exit 2 and nothing on stdout,
/// for every command that loads a spec, before it reads any cloud or file.
#[test]
fn strict_refuses_unknown_keys_in_every_command_that_loads_a_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fleet.yaml");
    std::fs::write(
        &spec,
        "apiVersion: npa.fleet/v0.0.1\nname: f\nregoin: eu-north1\nprojects:\n  - name: a\n    clusters:\n      - cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n",
    )
    .unwrap();
    let path = spec.to_str().unwrap();
    let line = format!("{path}:3:1: regoin: unknown key; did you mean 'region'?");
    let lenient = fleetbot(&["plan", "--spec", path], None);
    assert_eq!(lenient.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(lenient.stderr).unwrap(),
        format!("warning: {line}\n")
    );
    for command in [
        &["plan"][..],
        &["plan", "--output", "json"],
        &["preflight", "--offline"],
        &["deploy"],
        &["destroy"],
        &["status"],
        &["kubeconfig"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--spec", path, "--strict"]);
        let out = fleetbot(&args, None);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{command:?}: {err}");
        assert!(out.stdout.is_empty(), "{command:?}");
        assert_eq!(err, format!("error: {line}\n"), "{command:?}");
    }
}

#[test]
fn verify_mig_must_select_exactly_one_mig_cluster_before_contacting_anything() {
    for (args, matched) in [
        (vec!["--cluster", "absent"], 0),
        (vec!["--project", "elsewhere"], 0),
    ] {
        let mut all = vec!["verify-mig", "-f", "fixtures/specs/mixed-backends.yaml"];
        all.extend(args);
        let o = fleetbot(&all, None);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "fleetbot verify-mig: select exactly one MIG cluster with --project/--cluster (matched {matched})\n"
            )
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn completions_cover_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let o = fleetbot(&["completions", shell], None);
        assert_eq!(o.status.code(), Some(0));
        let script = stdout(&o);
        for command in ["plan", "deploy", "preview", "verify-mig", "completions"] {
            assert!(script.contains(command), "{shell}: {command}");
        }
    }
    let o = fleetbot(&["completions", "tcsh"], None);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn specs_planned_together_own_their_fleet_and_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("zz-copy.yaml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs/fleet1-test.yaml"),
        &copy,
    )
    .unwrap();
    let copy = copy.display().to_string();
    let out = fleetbot(
        &["plan", "-f", "fixtures/specs/fleet1-test.yaml", "-f", &copy],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "Invalid fleet spec: {copy}:8:7: name: fleet fleet1-test is also declared in fixtures/specs/fleet1-test.yaml:8:7"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("cluster cluster of project fleet1-test-b is also declared in fixtures/specs/fleet1-test.yaml:47:9"),
        "{stderr}"
    );
    // Two specs that own their own fleets plan together: one JSON array, in the order given.
    let out = fleetbot(
        &[
            "plan",
            "-f",
            "fixtures/specs/fleet1-test.yaml",
            "-f",
            "fixtures/specs/custom-and-mixed.yaml",
            "--output",
            "json",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plans: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = plans
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["fleet1-test", "custom-mixed"], "{plans}");
}
