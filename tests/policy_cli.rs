//! `fleetbot policy` end to end through the binary: the example policies judge the fixtures
//! (exit 1 on a denial, with the spec line), a broken policy is exit 2 and never a pass, the
//! input holds no cloud ID, and the examples' own tests run.

use std::path::Path;
use std::process::{Command, Output};

fn fleetbot(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(args)
        .env("HOME", home.path())
        .env_remove("FLEETBOT_RUNTIME_VALUES")
        .env_remove("RUST_LOG")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn a_denied_spec_exits_1_naming_the_line_and_a_passing_one_exits_0() {
    let denied = fleetbot(&[
        "policy",
        "check",
        "--spec",
        "fixtures/specs/rtxpro-8gpu-five-cluster.yaml",
        "--policy",
        "examples/policy",
        "--output",
        "json",
    ]);
    assert_eq!(denied.status.code(), Some(1), "{denied:?}");
    let doc: serde_json::Value = serde_json::from_slice(&denied.stdout).unwrap();
    assert_eq!(doc["denied"], true);
    let first = &doc["findings"][0];
    assert_eq!(first["level"], "deny");
    assert_eq!(
        first["file"],
        "fixtures/specs/rtxpro-8gpu-five-cluster.yaml"
    );
    assert!(first["line"].as_u64().unwrap() > 1, "{doc}");
    assert!(
        first["msg"].as_str().unwrap().contains("uk-south2"),
        "{doc}"
    );
    let sarif = fleetbot(&[
        "policy",
        "check",
        "--spec",
        "fixtures/specs/rtxpro-8gpu-five-cluster.yaml",
        "--policy",
        "examples/policy",
        "--output",
        "sarif",
    ]);
    assert_eq!(sarif.status.code(), Some(1), "{sarif:?}");
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), doc["findings"].as_array().unwrap().len());
    assert_eq!(results[0]["ruleId"], "policy/deny");
    assert_eq!(results[0]["level"], "error");
    let location = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"],
        "fixtures/specs/rtxpro-8gpu-five-cluster.yaml"
    );
    assert_eq!(location["region"]["startLine"], first["line"]);
    let passed = fleetbot(&[
        "policy",
        "check",
        "--spec",
        "fixtures/specs/fleet1-test.yaml",
        "--policy",
        "examples/policy",
    ]);
    assert_eq!(passed.status.code(), Some(0), "{passed:?}");
    assert!(
        stdout(&passed).contains("policy: passed"),
        "{}",
        stdout(&passed)
    );
}

#[test]
fn a_policy_that_cannot_judge_exits_2_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.rego"),
        "package fleetbot\ndeny contains msg if {\n",
    )
    .unwrap();
    let out = fleetbot(&[
        "policy",
        "check",
        "--spec",
        "fixtures/specs/fleet1-test.yaml",
        "--policy",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.rego"), "{err}");
    assert!(!stdout(&out).contains("passed"), "{}", stdout(&out));
}

#[test]
fn the_input_is_the_resolved_fleet_and_the_examples_pass_their_tests() {
    let out = fleetbot(&[
        "policy",
        "input",
        "--spec",
        "fixtures/specs/rtxpro-mig.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let input: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(input["apiVersion"], "fleetbot.policy/v1");
    assert!(
        input["fleet"]["projects"][0]["clusters"][0]["gpu_pool"]["gpus"]
            .as_i64()
            .unwrap()
            > 0
    );
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/policy-input.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // Every field the input carries is one the schema documents, at each level.
    let documented = |node: &serde_json::Value, schema: &serde_json::Value, at: &str| {
        for key in node.as_object().unwrap().keys() {
            assert!(
                schema["properties"].get(key).is_some(),
                "{at}.{key} is not in docs/policy-input.schema.json"
            );
        }
    };
    documented(&input, &schema, "input");
    documented(&input["fleet"], &schema["$defs"]["fleet"], "fleet");
    documented(
        &input["fleet"]["projects"][0],
        &schema["$defs"]["project"],
        "project",
    );
    let cluster = &input["fleet"]["projects"][0]["clusters"][0];
    documented(cluster, &schema["$defs"]["cluster"], "cluster");
    documented(&cluster["gpu_pool"], &schema["$defs"]["pool"], "pool");
    let tests = fleetbot(&["policy", "test", "examples/policy"]);
    assert_eq!(tests.status.code(), Some(0), "{}", stdout(&tests));
    assert!(
        stdout(&tests).contains("13/13 test(s) passed"),
        "{}",
        stdout(&tests)
    );
}

/// The plan input is the live plan a deploy would apply: after a fleet is deployed into the
/// simulator, a change that shrinks a GPU pool in `fleets/prod.yaml` is denied by the example
/// rule for production fleets, and the same change in a staging file is not.
#[tokio::test]
async fn a_shrink_in_the_live_plan_of_a_production_fleet_is_denied() {
    use crate::support;
    use fleetbot::engine::ops::{LifecycleOptions, prepare};
    use fleetbot::policy::{Level, Policies, input};
    let text = "apiVersion: npa.fleet/v0.0.1\nname: eng\nregion: us-central1\nproject_prefix: eng-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}\nprojects:\n  - name: a\n    clusters:\n      - name: train\n";
    let sim = support::simulator(&support::empty_default_world()).await;
    let cloud = support::client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = fleetbot::store::SqliteStore::open(&dir.path().join("i.sqlite"))
        .await
        .unwrap();
    let tenant = sim.tenant_id();
    let deployed = fleetbot::spec::load_str(text, "fleets/prod.yaml").unwrap();
    support::deploy(
        &cloud,
        &store,
        &deployed,
        &tenant,
        &LifecycleOptions::default(),
        fleetbot::fleet::quiet(),
    )
    .await
    .unwrap();
    let policies =
        Policies::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy")).unwrap();
    let shrunk = text.replace("gpu_nodes: {count: 2,", "gpu_nodes: {count: 1,");
    let judge = |file: &str| {
        let spec = fleetbot::spec::load_str(&shrunk, file).unwrap();
        let (cloud, store, tenant) = (cloud.clone(), store.clone(), tenant.clone());
        let policies = policies.clone();
        async move {
            let plan = prepare(&cloud, &store, &spec, &tenant, &LifecycleOptions::default())
                .await
                .unwrap()
                .plan;
            let mut doc = input::of_spec(&spec);
            input::with_plan(&mut doc, &spec, &plan);
            assert!(!doc.to_string().contains("tenant-"), "{doc}");
            policies.check(&doc).unwrap()
        }
    };
    let prod = judge("fleets/prod.yaml").await;
    let denials: Vec<_> = prod.of(Level::Deny).collect();
    assert_eq!(denials.len(), 1, "{}", prod.render_text());
    assert!(denials[0].msg.contains("a/train"), "{}", denials[0].msg);
    assert!(
        denials[0].msg.contains("shrinks from 2 to 1"),
        "{}",
        denials[0].msg
    );
    let staging = judge("fleets/staging.yaml").await;
    assert!(!staging.denied(), "{}", staging.render_text());
}
