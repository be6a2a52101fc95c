use super::*;

const SPEC: &str = "apiVersion: npa.fleet/v0.0.1\nname: f\nregion: eu-north1\nproject_prefix: f-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\n  gpu_nodes: {count: 4, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}\n  infiniband_fabric: fabric-2\nprojects:\n  - name: train\n    clusters:\n      - name: big\n  - name: infer\n    region: us-central1\n    clusters:\n      - name: small\n        gpu_nodes: {count: 1, platform: gpu-l40s-a, preset: 1gpu-8vcpu-32gb}\n";

const RULES: &str = r#"package fleetbot

deny contains {"msg": msg, "file": c.file, "line": c.line, "target": c.target} if {
  some p in input.fleet.projects
  some c in p.clusters
  c.gpus > 16
  msg := sprintf("%s asks for %d GPUs; a cluster may hold 16", [c.target, c.gpus])
}

warn contains "no bucket anywhere" if {
  every p in input.fleet.projects { p.bucket == null }
}
"#;

fn input() -> serde_json::Value {
    input::of_spec(&crate::spec::load_str(SPEC, "fleets/f.yaml").unwrap())
}

#[test]
fn a_denial_names_its_spec_line_and_target_and_a_warning_does_not_deny() {
    let policies = Policies::from_sources(vec![("gpus.rego".into(), RULES.into())]).unwrap();
    let verdict = policies.check(&input()).unwrap();
    assert!(verdict.denied(), "{verdict:?}");
    let [deny] = verdict
        .of(Level::Deny)
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    assert_eq!(
        deny.msg,
        "train/big asks for 32 GPUs; a cluster may hold 16"
    );
    assert_eq!(deny.file.as_deref(), Some("fleets/f.yaml"));
    assert_eq!(deny.line, Some(12));
    assert_eq!(deny.target.as_deref(), Some("train/big"));
    let [warn] = verdict
        .of(Level::Warn)
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    assert_eq!(warn.msg, "no bucket anywhere");
    assert!(
        verdict
            .render_text()
            .contains("fleets/f.yaml:12: train/big asks for 32 GPUs")
    );
}

#[test]
fn the_input_has_the_resolved_fleet_and_no_cloud_id() {
    let text = "apiVersion: npa.fleet/v0.0.1\nname: f\nregion: eu-north1\ntenant_id: tenant-e00secret\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\n  gpu_nodes: null\nprojects:\n  - project_id: project-e00hidden\n    clusters:\n      - name: c\n        subnet_id: vpcsubnet-e00hidden\n        gpu_nodes: {count: 1, platform: gpu-l40s-a, preset: 1gpu-8vcpu-32gb, capacity_block_group: capacityblockgroup-e00hidden}\n";
    let spec = crate::spec::load_str(text, "f.yaml").unwrap();
    let value = input::of_spec(&spec);
    let shown = value.to_string();
    assert!(!shown.contains("e00"), "{shown}");
    assert_eq!(value["apiVersion"], input::API_VERSION);
    let c = &value["fleet"]["projects"][0]["clusters"][0];
    assert_eq!(c["target"], "projects[0]/c");
    assert_eq!(c["own_subnet"], true);
    assert_eq!(value["fleet"]["projects"][0]["existing"], true);
    assert_eq!(c["gpu_pool"]["reserved"], true);
    let full = input();
    let big = &full["fleet"]["projects"][0]["clusters"][0];
    assert_eq!(big["gpu_pool"]["gpus_per_node"], 8);
    assert_eq!(big["gpus"], 32);
    assert_eq!(big["region"], "eu-north1");
    assert_eq!(full["fleet"]["projects"][1]["region"], "us-central1");
    assert_eq!(full["fleet"]["gpus"], 33);
}

#[test]
fn the_plan_s_targets_are_named_as_the_input_names_them_never_by_an_id() {
    use crate::engine::live::{Action, LivePlan, ResourceAction, Summary, TargetPlan};
    let text = "apiVersion: npa.fleet/v0.0.1\nname: f\nregion: eu-north1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\n  gpu_nodes: null\nprojects:\n  - project_id: project-e00hidden\n    clusters:\n      - name: c\n  - name: named\n    clusters:\n      - name: c\n";
    let spec = crate::spec::load_str(text, "f.yaml").unwrap();
    let target = |key: String| TargetPlan {
        target: key,
        actions: vec![ResourceAction {
            resource: "cluster",
            name: "c".into(),
            action: Action::Delete,
            changes: Vec::new(),
            reason: String::new(),
        }],
        unchanged: false,
        problems: Vec::new(),
        prune: false,
    };
    let plan = LivePlan {
        fleet: "f".into(),
        cloud: "Nebius".into(),
        projects: Vec::new(),
        targets: vec![
            target(format!("{}/c", spec.projects[0].key())),
            target("named/c".into()),
        ],
        summary: Summary::default(),
        digest: "d".into(),
    };
    let mut doc = input::of_spec(&spec);
    input::with_plan(&mut doc, &spec, &plan);
    assert!(!doc.to_string().contains("e00"), "{doc}");
    assert_eq!(doc["plan"]["targets"][0]["target"], "projects[0]/c");
    assert_eq!(doc["plan"]["targets"][1]["target"], "named/c");
    assert_eq!(
        doc["fleet"]["projects"][0]["clusters"][0]["target"],
        "projects[0]/c"
    );
}

#[test]
fn a_broken_erring_or_misshapen_policy_fails_closed() {
    let parse = Policies::from_sources(vec![(
        "bad.rego".into(),
        "package fleetbot\ndeny contains if {".into(),
    )])
    .unwrap_err();
    assert!(
        matches!(&parse, PolicyError::Parse { file, .. } if file == "bad.rego"),
        "{parse}"
    );
    let erring = Policies::from_sources(vec![(
        "err.rego".into(),
        "package fleetbot\ndeny contains msg if {\n  msg := sprintf(\"%d\", input.fleet.name)\n}\n"
            .into(),
    )])
    .unwrap();
    let e = erring.check(&input()).unwrap_err();
    assert!(matches!(e, PolicyError::Eval { rule: "deny", .. }), "{e}");
    let shape = Policies::from_sources(vec![(
        "n.rego".into(),
        "package fleetbot\ndeny := 3\n".into(),
    )])
    .unwrap();
    let e = shape.check(&input()).unwrap_err();
    assert!(matches!(e, PolicyError::Shape { rule: "deny", .. }), "{e}");
    let no_msg = Policies::from_sources(vec![(
        "m.rego".into(),
        "package fleetbot\ndeny contains {\"why\": 1} if { true }\n".into(),
    )])
    .unwrap();
    assert!(matches!(
        no_msg.check(&input()),
        Err(PolicyError::Shape { .. })
    ));
}

#[test]
fn a_policy_that_runs_too_long_is_an_error_not_a_pass() {
    // A comprehension of 10^12 pairs: the time bound ends it.
    let slow = Policies::from_sources(vec![(
        "slow.rego".into(),
        "package fleetbot\ndeny contains \"never\" if {\n  n := numbers.range(1, 1000000)\n  count([x | some a in n; some b in n; x := a * b]) < 0\n}\n".into(),
    )])
    .unwrap()
    .with_time_limit(std::time::Duration::from_millis(300));
    // The verdict is the error itself (a pass would be `Ok`); no clock decides it. Without the
    // bound this comprehension of 10^12 pairs would not end within the suite.
    let e = slow.check(&input()).unwrap_err();
    assert!(matches!(e, PolicyError::Eval { .. }), "{e}");
}

#[test]
fn policies_that_judge_nothing_are_an_error_not_a_pass() {
    assert!(matches!(
        Policies::from_sources(Vec::new()),
        Err(PolicyError::NoPolicy { .. })
    ));
    let conftest = Policies::from_sources(vec![(
        "main.rego".into(),
        "package main
deny contains \"x\" if { true }\n"
            .into(),
    )])
    .unwrap_err();
    assert!(conftest.to_string().contains("main.rego"), "{conftest}");
}

#[test]
fn no_rule_is_no_finding() {
    let quiet =
        Policies::from_sources(vec![("q.rego".into(), "package fleetbot\nx := 1\n".into())])
            .unwrap();
    let verdict = quiet.check(&input()).unwrap();
    assert!(
        !verdict.denied() && verdict.findings.is_empty(),
        "{verdict:?}"
    );
}

#[test]
fn the_example_policies_pass_their_own_tests() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy");
    let report = tests_run::run(&dir).unwrap();
    assert!(report.passed(), "{}", report.render_text());
    assert!(report.tests.len() >= 10, "{}", report.render_text());
}
