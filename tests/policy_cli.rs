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
        stdout(&tests).contains("10/10 test(s) passed"),
        "{}",
        stdout(&tests)
    );
}
