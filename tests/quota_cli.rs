//! `fleetbot preflight` through the binary: exit codes, the exact shortfall line, fail-closed
//! evidence, stdout holding one JSON document, and flags parsed as documented.

use std::process::{Command, Output};

/// Runs the binary with no Nebius configuration of the machine leaking in.
fn fleetbot(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(args)
        .env("HOME", home.path())
        .env("FLEETBOT_NEBIUS_CONFIG", home.path().join("absent.yaml"))
        .env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

const FLEET: &str = "fixtures/specs/fleet1-test.yaml";
const RESERVED: &str = "fixtures/specs/rtxpro-8gpu-five-cluster.yaml";

#[test]
fn tenant_with_room_exits_0() {
    let out = fleetbot(&[
        "preflight",
        "--spec",
        FLEET,
        "--quotas",
        "fixtures/quotas/allowances-room.json",
        "--tenant-id",
        "tenant-example",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(tenant tenant-example): fits"));
}

#[test]
fn one_gpu_short_exits_1_with_the_exact_line() {
    let out = fleetbot(&[
        "preflight",
        "-f",
        FLEET,
        "--quotas",
        "fixtures/quotas/allowances-one-gpu-short.json",
        "--tenant-id",
        "tenant-example",
        "--output",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(
        "\n  - compute.instance.gpu.rtx6000 [us-central1]: needs 2 count, 1 available from tenant limit 8; shortfall 1\n"
    ), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["fits"], false);
    assert_eq!(
        doc["demand"]["us-central1"]["compute.instance.gpu.rtx6000"],
        2
    );
    // Progress stays off stdout.
    assert!(stderr.contains("  - capacity/quota preflight: 2 cluster(s) in us-central1\n"));
}

#[test]
fn paginated_allowances_exit_1() {
    let out = fleetbot(&[
        "preflight",
        "--spec",
        FLEET,
        "--quotas",
        "fixtures/quotas/allowances-paginated.json",
        "--tenant-id",
        "tenant-example",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("quota allowance JSON is incomplete after paginated read"));
}

#[test]
fn unreadable_or_missing_evidence_exits_1() {
    for extra in [
        &["--quotas", "fixtures/quotas/no-such-file.json"][..],
        &["--offline"][..],
    ] {
        let mut args = vec![
            "preflight",
            "--spec",
            FLEET,
            "--tenant-id",
            "tenant-example",
        ];
        args.extend_from_slice(extra);
        let out = fleetbot(&args);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains(
            "could not read tenant quota allowances for us-central1; refusing to create projects or resources without capacity evidence"
        ));
    }
}

#[test]
fn reserved_fleet_needs_capacity_evidence_and_never_prints_the_block_id() {
    let base = [
        "preflight",
        "--spec",
        RESERVED,
        "--quotas",
        "fixtures/quotas/allowances-room.json",
        "--tenant-id",
        "tenant-example",
    ];
    let out = fleetbot(&base);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(
        "could not read capacity block groups; refusing to bypass STRICT reservation preflight"
    ));

    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("budget.md");
    let mut args = base.to_vec();
    let md_arg = md.to_str().unwrap();
    args.extend([
        "--capacity",
        "fixtures/quotas/capacity-blocks.json",
        "--output",
        "json",
        "--markdown",
        md_arg,
    ]);
    let out = fleetbot(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let markdown = std::fs::read_to_string(&md).unwrap();
    for published in [text(&out.stdout), markdown] {
        assert!(!published.contains("capacityblockgroup-"));
    }
}

#[test]
fn invalid_spec_exits_2_and_bad_output_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: nope\n").unwrap();
    let out = fleetbot(&["preflight", "--spec", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("Invalid fleet spec: "));
    let out = fleetbot(&["preflight", "--spec", FLEET, "--output", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unresolved_tenant_exits_1() {
    let out = fleetbot(&[
        "preflight",
        "--spec",
        FLEET,
        "--quotas",
        "fixtures/quotas/allowances-room.json",
        "--output",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("tenant_id could not be resolved"));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["error"].as_str().unwrap().contains("--tenant-id"));
}

#[test]
fn help_documents_the_flags() {
    let out = fleetbot(&["preflight", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for flag in [
        "--spec",
        "--quotas",
        "--capacity",
        "--tenant-id",
        "--profile",
        "--only-projects",
        "--only-clusters",
        "--output",
        "--markdown",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}
