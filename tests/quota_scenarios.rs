//! `fleetbot preflight` scenarios through the library entry point (`cli::preflight_run`), with the
//! example specs and the allowance and capacity documents under fixtures/quotas/: a tenant with
//! room passes, a tenant one GPU short fails with the exact line, unreadable or incomplete
//! evidence fails closed, and nothing published names a capacity block.

use std::path::{Path, PathBuf};

use fleetbot::cli::preflight_run::{PreflightCommand, run, run_with};
use fleetbot::quota::scope::{ScopeOptions, Selection};
use fleetbot::quota::{InMemoryEvidence, ProvenState, TargetKey, UnchangedEvidence, fleet_demand};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn spec(name: &str) -> PathBuf {
    root().join("fixtures/specs").join(name)
}

fn quotas(name: &str) -> PathBuf {
    root().join("fixtures/quotas").join(name)
}

struct Outcome {
    code: u8,
    stdout: String,
    stderr: String,
}

fn command(spec_name: &str, allowances: Option<&str>) -> PreflightCommand {
    PreflightCommand {
        spec: spec(spec_name),
        quotas: allowances.map(quotas),
        tenant_id: "tenant-example".into(),
        // Never read the machine's ~/.nebius.
        nebius_config: Some(root().join("fixtures/quotas/absent-config.yaml")),
        ..PreflightCommand::default()
    }
}

fn exec(command: &PreflightCommand) -> Outcome {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(command, &mut out, &mut err);
    Outcome {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

fn json(outcome: &Outcome) -> Value {
    serde_json::from_str(&outcome.stdout).expect("stdout is exactly one JSON document")
}

#[test]
fn a_tenant_with_room_passes() {
    let out = exec(&command("fleet1-test.yaml", Some("allowances-room.json")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("Quota preflight for fleet 'fleet1-test' (tenant tenant-example): fits\n")
    );
    assert!(out.stdout.contains("2 target(s) charged in 1 region(s)"));
    assert!(out.stderr.contains(
        "  - quota compute.instance.gpu.rtx6000 [us-central1]: needs 2 count; 64 available from limit 64 (usage evidence: exact)\n"
    ));
    assert!(out.stderr.contains(
        "  - quota vpc.allocation.count [us-central1]: needs 8 count; tenant allowance is unlimited\n"
    ));
    assert!(out.stderr.contains(
        "  - quota vpc.pool.count [us-central1]: unadvertised optional quota in completed tenant catalog; treating it as not quota-controlled in this region\n"
    ));
    assert!(out.stderr.contains(
        "  - quota compute.disk.count [us-central1]: needs 4 count; 288 available from limit 300 (usage evidence: fraction)\n"
    ));
}

#[test]
fn a_tenant_one_gpu_short_fails_with_the_exact_line() {
    let out = exec(&command(
        "fleet1-test.yaml",
        Some("allowances-one-gpu-short.json"),
    ));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(
        "tenant tenant-example quota is too low for this fleet:\n  - compute.instance.gpu.rtx6000 [us-central1]: needs 2 count, 1 available from tenant limit 8; shortfall 1\nProject-level allowances only subdivide"
    ), "{}", out.stderr);
    assert!(out.stdout.contains("BLOCKED: 1 quota(s) short"));
    assert!(out.stdout.contains("SHORT by 1 GPU"));

    let mut cmd = command("fleet1-test.yaml", Some("allowances-one-gpu-short.json"));
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    let doc = json(&out);
    assert_eq!(doc["fits"], false);
    let shortfall = &doc["shortfalls"][0];
    assert_eq!(shortfall["quota"], "compute.instance.gpu.rtx6000");
    assert_eq!(shortfall["needed"], 2);
    assert_eq!(shortfall["available"], 1);
    assert_eq!(shortfall["shortfall"], 1);
    assert_eq!(
        shortfall["line"],
        "compute.instance.gpu.rtx6000 [us-central1]: needs 2 count, 1 available from tenant limit 8; shortfall 1"
    );
    let row = doc["budget"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["quota"] == "compute.instance.gpu.rtx6000")
        .unwrap();
    assert_eq!(row["verdict"], "short");
    assert_eq!(row["headroom"], -1);
    assert_eq!(row["usage"], 7);
    assert!(doc["error"].as_str().unwrap().contains("quota is too low"));
}

#[test]
fn json_holds_demand_per_region_budget_and_reservations() {
    let mut cmd = command("fleet1-test.yaml", Some("allowances-room.json"));
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = json(&out);
    let demand = &doc["demand"]["us-central1"];
    let gib: u64 = 1 << 30;
    for (quota, amount) in [
        ("mk8s.cluster.count", 2),
        ("vpc.allocation.count", 8),
        ("compute.instance.count", 4),
        ("compute.instance.gpu.rtx6000", 2),
        ("compute.disk.count", 4),
        ("compute.disk.size.network-ssd", 2302 * gib),
        ("compute.instance.non-gpu.vcpu", 96),
        ("compute.filesystem.count", 2),
        ("compute.filesystem.size.network-ssd", 2048 * gib),
        ("storage.bucket.count", 1),
        ("storage.bucket.size.enhanced-throughput", 1024 * gib),
        ("vpc.network.count", 2),
        ("vpc.subnet.count", 2),
        ("vpc.pool.count", 4),
        ("vpc.routetable.count", 2),
        ("vpc.route.count", 2),
    ] {
        assert_eq!(demand[quota], amount, "{quota}");
    }
    assert_eq!(demand.as_object().unwrap().len(), 16);
    assert_eq!(doc["tenant_id"], "tenant-example");
    assert_eq!(doc["new_projects"]["us-central1"], 2);
    assert_eq!(doc["new_buckets"]["us-central1"], 1);
    assert_eq!(doc["error"], Value::Null);
    let verdicts: Vec<(&str, &str)> = doc["budget"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["quota"].as_str().unwrap(), r["verdict"].as_str().unwrap()))
        .collect();
    assert!(verdicts.contains(&("vpc.allocation.count", "unlimited")));
    assert!(verdicts.contains(&("vpc.route.count", "not_quota_controlled")));
    assert!(verdicts.contains(&("compute.instance.count", "fits")));
}

#[test]
fn paginated_allowances_fail_closed() {
    let out = exec(&command(
        "fleet1-test.yaml",
        Some("allowances-paginated.json"),
    ));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .ends_with("quota allowance JSON is incomplete after paginated read\n")
    );
    assert!(out.stdout.contains("FAILED: capacity could not be proven"));
    assert!(out.stdout.contains("not checked"));
}

#[test]
fn unreadable_allowances_fail_closed() {
    let out = exec(&command("fleet1-test.yaml", Some("does-not-exist.json")));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(
        "could not read tenant quota allowances for us-central1; refusing to create projects or resources without capacity evidence\n  cannot read "
    ), "{}", out.stderr);

    let empty = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = command("fleet1-test.yaml", None);
    cmd.quotas = Some(empty.path().to_path_buf());
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("refusing to create projects or resources without capacity evidence\n  the document is empty"));
}

#[test]
fn missing_allowance_evidence_says_how_to_provide_it() {
    let mut cmd = command("fleet1-test.yaml", None);
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("could not read tenant quota allowances for us-central1")
    );
    assert!(out.stderr.contains(
        "pass --quotas FILE with the output of `nebius quotas quota-allowance list --parent-id <tenant-id> --all --format json`"
    ));
    // The demand is still reported.
    let doc = json(&out);
    assert_eq!(doc["demand"]["us-central1"]["compute.instance.count"], 4);
    assert!(doc["error"].as_str().unwrap().contains("--quotas FILE"));
}

#[test]
fn reserved_fleet_passes_and_never_shows_the_block_id() {
    let markdown = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = command(
        "rtxpro-8gpu-five-cluster.yaml",
        Some("allowances-room.json"),
    );
    cmd.capacity = Some(quotas("capacity-blocks.json"));
    cmd.json = true;
    cmd.markdown = Some(markdown.path().to_path_buf());
    let out = exec(&cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains(
        "  - validated 80 GPU(s) against 1 active capacity block group(s); ordinary GPU quota excluded\n"
    ));
    let doc = json(&out);
    let reservation = &doc["reservations"]["uk-south2"][0];
    assert_eq!(reservation["block"], "#1");
    assert_eq!(reservation["required_gpus"], 80);
    assert_eq!(reservation["available_gpus"], 88);
    assert_eq!(reservation["status"], "ok");
    assert_eq!(reservation["targets"].as_array().unwrap().len(), 5);
    // The on-demand RTX quota of this region is zero, and not needed.
    assert!(
        doc["demand"]["uk-south2"]
            .get("compute.instance.gpu.rtx6000")
            .is_none()
    );
    assert_eq!(doc["demand"]["uk-south2"]["compute.instance.count"], 23);
    assert_eq!(doc["demand"]["uk-south2"]["vpc.allocation.count"], 46);
    let md = std::fs::read_to_string(markdown.path()).unwrap();
    assert!(md.starts_with("### ✅ Quota preflight: fleet `rtx-render-fleet` fits"));
    for published in [&out.stdout, &md] {
        assert!(!published.contains("capacityblockgroup-"), "{published}");
    }
    assert!(!md.contains("tenant-example"));
    assert!(
        md.contains("| uk-south2 | #1 | `gpu-rtx6000-a` | - | 80 GPUs | 88 GPUs | 5 | ✅ ok |"),
        "{md}"
    );
    assert!(
        md.contains("| uk-south2 | `compute.filesystem.size.network-ssd` | 24.00 TiB |"),
        "{md}"
    );
}

#[test]
fn too_small_reservation_fails_with_the_id_only_in_the_operator_message() {
    let mut cmd = command(
        "rtxpro-8gpu-five-cluster.yaml",
        Some("allowances-room.json"),
    );
    cmd.capacity = Some(quotas("capacity-blocks-too-small.json"));
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    assert!(out.stderr.ends_with(
        "reserved capacity is insufficient or incompatible for this fleet:\n  - capacityblockgroup-REPLACE_AT_RUNTIME: needs 80 GPUs, only 72 reserved GPUs remain\nSTRICT reservation-backed node groups will not fall back to on-demand capacity.\n"
    ), "{}", out.stderr);
    assert!(!out.stdout.contains("capacityblockgroup-"));
    let doc = json(&out);
    assert_eq!(
        doc["error"],
        "reserved capacity is insufficient or incompatible for this fleet:\n  - capacity block #1: needs 80 GPUs, only 72 reserved GPUs remain\nSTRICT reservation-backed node groups will not fall back to on-demand capacity."
    );
    assert_eq!(doc["reservations"]["uk-south2"][0]["status"], "short");
    assert_eq!(doc["reservations"]["uk-south2"][0]["available_gpus"], 72);
    // Stopped before the quota read.
    assert!(doc["budget"].as_array().unwrap().is_empty());

    cmd.json = false;
    let out = exec(&cmd);
    assert!(
        !out.stdout.contains("capacityblockgroup-"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("BLOCKED: 1 capacity block(s) cannot serve the fleet\n")
    );
    assert!(out.stdout.contains(
        "  capacity block #1 (gpu-rtx6000-a) for large/render, medium-a/cluster, medium-b/cluster, medium-c/cluster, small/render: needs 80 GPUs, 72 free -> BLOCKED: needs 80 GPUs, only 72 reserved GPUs remain\n"
    ));
}

#[test]
fn missing_capacity_evidence_fails_closed() {
    let out = exec(&command(
        "rtxpro-8gpu-five-cluster.yaml",
        Some("allowances-room.json"),
    ));
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(
        "could not read capacity block groups; refusing to bypass STRICT reservation preflight\n  no capacity evidence was given: pass --capacity FILE"
    ), "{}", out.stderr);
}

#[test]
fn invalid_spec_exits_2() {
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bad.path(), "apiVersion: nope\n").unwrap();
    let mut cmd = command("fleet1-test.yaml", Some("allowances-room.json"));
    cmd.spec = bad.path().to_path_buf();
    let out = exec(&cmd);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("Invalid fleet spec: "));
    assert!(out.stdout.is_empty());
}

#[test]
fn unresolved_tenant_fails_closed() {
    let mut cmd = command("fleet1-test.yaml", Some("allowances-room.json"));
    cmd.tenant_id = String::new();
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains(
        "tenant_id could not be resolved from the spec, the credentials, or ~/.nebius/config.yaml (pass --tenant-id or set 'tenant_id' in the fleet spec)"
    ), "{}", out.stderr);
    let doc = json(&out);
    assert_eq!(doc["demand"]["us-central1"]["mk8s.cluster.count"], 2);

    // A named profile without a tenant is an error, never the active profile's tenant.
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        "default: main\nprofiles:\n  main:\n    tenant-id: tenant-example\n  bare: {}\n",
    )
    .unwrap();
    cmd.nebius_config = Some(config.path().to_path_buf());
    cmd.json = false;
    let out = exec(&cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("(tenant tenant-example)"));
    cmd.profile = "bare".into();
    let out = exec(&cmd);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("profile 'bare' has no 'tenant-id'"),
        "{}",
        out.stderr
    );
}

#[test]
fn selectors_narrow_the_demand() {
    let mut cmd = command("fleet1-test.yaml", Some("allowances-room.json"));
    cmd.json = true;
    cmd.only_projects = Some(" fleet1-test-b , ".into());
    let doc = json(&exec(&cmd));
    assert_eq!(doc["demand"]["us-central1"]["mk8s.cluster.count"], 1);
    assert_eq!(doc["new_buckets"]["us-central1"], 0);
    cmd.only_projects = Some("a".into());
    let doc = json(&exec(&cmd));
    assert_eq!(doc["new_buckets"]["us-central1"], 1);
    assert_eq!(doc["demand"]["us-central1"]["vpc.network.count"], 1);

    // A selector naming nothing is a typo, refused before any evidence is read; in JSON mode
    // the report document still says why.
    let mut cmd = command("fleet1-test.yaml", None);
    cmd.only_clusters = Some("no-such-cluster".into());
    let out = exec(&cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "fleetbot: cluster selector has no target in selected projects: no-such-cluster\n"
    );
    assert!(out.stdout.is_empty());
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        json(&out)["error"],
        "cluster selector has no target in selected projects: no-such-cluster"
    );

    // Issue #32: a comma is not "every cluster"; the document says which flag names nothing.
    cmd.only_clusters = Some(" , ".into());
    let out = exec(&cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let error = json(&out)["error"].as_str().unwrap().to_string();
    assert!(
        error.starts_with("--only-clusters names nothing"),
        "{error}"
    );
    assert!(
        json(&out)["demand"]
            .as_object()
            .is_none_or(|d| d.is_empty())
    );
}

#[test]
fn unresolved_region_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-region.yaml");
    std::fs::write(
        &path,
        "apiVersion: npa.fleet/v0.0.1\nname: f\nprojects:\n  - name: a\n    clusters:\n      - name: c\n        cpu_nodes: {count: 1, platform: cpu-d3, preset: 4vcpu-16gb}\n",
    )
    .unwrap();
    let mut cmd = command("fleet1-test.yaml", Some("allowances-room.json"));
    cmd.spec = path;
    cmd.json = true;
    let out = exec(&cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let expected = "region could not be resolved for project 'a': set 'region' in the fleet spec or on the project";
    assert!(out.stderr.contains(expected), "{}", out.stderr);
    assert_eq!(json(&out)["error"], expected);
}

#[test]
fn soperator_targets_are_reported_not_counted() {
    let mut cmd = command("mixed-backends.yaml", Some("allowances-room.json"));
    cmd.json = true;
    let out = exec(&cmd);
    let doc = json(&out);
    let skipped = doc["skipped_targets"].as_array().unwrap();
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[0]["backend"], "soperator");
    assert!(
        out.stderr
            .contains("is a soperator target; not counted here")
    );
}

/// §4.8: a target counts zero only with full proof; anything less counts full demand.
#[test]
fn unchanged_targets_add_nothing_only_with_full_proof() {
    let spec = fleetbot::spec::load(&spec("fleet1-test.yaml")).unwrap();
    let options = ScopeOptions {
        selection: Selection::default(),
        project_prefix: None,
    };
    let full = fleet_demand(&spec, &options, &ProvenState::default()).unwrap();
    assert_eq!(full.total().get("mk8s.cluster.count"), 2);

    let a = TargetKey::new("a", "cluster");
    for missing in 0..5 {
        let mut evidence = UnchangedEvidence::PROVEN;
        match missing {
            0 => evidence.inventory_deployed = false,
            1 => evidence.desired_state_matches = false,
            2 => evidence.project_verified = false,
            3 => evidence.cluster_running = false,
            _ => evidence.node_groups_match = false,
        }
        let mut proven = ProvenState::default();
        proven.unchanged.insert(a.clone(), evidence);
        let demand = fleet_demand(&spec, &options, &proven).unwrap();
        assert_eq!(
            demand.total(),
            full.total(),
            "partial proof {missing} discounted"
        );
        assert!(demand.unchanged.is_empty());
    }

    let mut proven = ProvenState::default();
    proven
        .unchanged
        .insert(a.clone(), UnchangedEvidence::PROVEN);
    let demand = fleet_demand(&spec, &options, &proven).unwrap();
    assert_eq!(demand.unchanged, vec![a]);
    let total = demand.total();
    assert_eq!(total.get("mk8s.cluster.count"), 1);
    assert_eq!(total.get("compute.instance.count"), 2);
    // Project a is proven to exist, so only b is new; a's bucket is still new.
    assert_eq!(total.get("vpc.network.count"), 1);
    assert_eq!(total.get("storage.bucket.count"), 1);

    proven.existing_buckets.insert("a".into());
    let demand = fleet_demand(&spec, &options, &proven).unwrap();
    assert_eq!(demand.total().get("storage.bucket.count"), 0);

    // Both targets unchanged and the bucket verified: nothing to check, no evidence needed.
    proven
        .unchanged
        .insert(TargetKey::new("b", "cluster"), UnchangedEvidence::PROVEN);
    let demand = fleet_demand(&spec, &options, &proven).unwrap();
    assert!(demand.regions.is_empty());
    let cmd = command("fleet1-test.yaml", None);
    let evidence = InMemoryEvidence {
        allowances: Err(fleetbot::quota::EvidenceError::Unreadable(
            "not consulted".into(),
        )),
        capacity: Err(fleetbot::quota::EvidenceError::Unreadable(
            "not consulted".into(),
        )),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&cmd, &evidence, &proven, &mut out, &mut err);
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(
        "  - capacity/quota preflight: a/cluster is provider-verified and unchanged; incremental demand is zero\n"
    ));
}
