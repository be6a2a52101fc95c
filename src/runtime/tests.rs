//! Runtime values: binding placeholders, refusing what would change a fleet's shape, and
//! never showing a value in an error.

use super::*;
use crate::spec::load_str;

const MIG: &str = include_str!("../../fixtures/specs/rtxpro-mig.yaml");
const FIVE: &str = include_str!("../../fixtures/specs/rtxpro-8gpu-five-cluster.yaml");
const FLEET1: &str = include_str!("../../fixtures/specs/fleet1-test.yaml");

/// A value that looks like nothing else in the fixtures, so a leak is easy to find.
const SECRET_PROJECT: &str = "project-u00zzsecret1";
const SECRET_CBG: &str = "capacityblockgroup-u00zzsecret2";

fn values(text: &str) -> RuntimeValues {
    RuntimeValues::from_str(text, "private.yaml").unwrap()
}

fn apply_err(spec_text: &str, runtime: &str) -> String {
    let mut spec = load_str(spec_text, "f.yaml").unwrap();
    let e = values(runtime).apply(&mut spec).unwrap_err().to_string();
    assert!(!e.contains("zzsecret"), "a value leaked into {e}");
    e
}

/// The one note applying `runtime` gives, and that the spec did not change.
fn apply_note(spec_text: &str, runtime: &str) -> String {
    let mut spec = load_str(spec_text, "f.yaml").unwrap();
    let before = spec.clone();
    let notes = values(runtime).apply(&mut spec).unwrap();
    assert_eq!(spec, before, "an unused value changed the spec");
    assert_eq!(notes.len(), 1, "{notes:?}");
    let e = notes[0].to_string();
    assert!(!e.contains("zzsecret"), "a value leaked into {e}");
    e
}

#[test]
fn a_bound_project_keeps_its_public_key_and_name() {
    let mut spec = load_str(MIG, "rtxpro-mig.yaml").unwrap();
    let before = spec.projects[0].clone();
    values(&format!(
        "fleets:\n  rtxpro-mig:\n    projects:\n      project-replace-at-runtime:\n        project_id: {SECRET_PROJECT}\n        clusters:\n          rtxpro-mig:\n            capacity_block_group: {SECRET_CBG}\n"
    ))
    .apply(&mut spec)
    .unwrap();
    let p = &spec.projects[0];
    assert_eq!(p.key(), before.key());
    assert_eq!(p.display_name("x-"), before.display_name("x-"));
    assert_eq!(p.project_id, "project-REPLACE_AT_RUNTIME");
    assert_eq!(p.cloud_project_id(), SECRET_PROJECT);
    let gpu = p.clusters[0].gpu_nodes.as_ref().unwrap();
    assert_eq!(gpu.capacity_block_group, SECRET_CBG);
    crate::spec::validate::validate_fleet(&spec).unwrap();
}

#[test]
fn a_fleet_level_reservation_fills_every_placeholder_pool() {
    let mut spec = load_str(FIVE, "five.yaml").unwrap();
    values(&format!(
        "fleets:\n  rtx-render-fleet:\n    capacity_block_group: {SECRET_CBG}\n"
    ))
    .apply(&mut spec)
    .unwrap();
    let pools: Vec<&str> = spec
        .projects
        .iter()
        .flat_map(|p| &p.clusters)
        .map(|c| c.gpu_nodes.as_ref().unwrap().capacity_block_group.as_str())
        .collect();
    assert_eq!(pools, vec![SECRET_CBG; 5]);
}

#[test]
fn a_file_without_the_fleet_changes_nothing() {
    let mut spec = load_str(MIG, "rtxpro-mig.yaml").unwrap();
    let before = spec.clone();
    let runtime = values(&format!(
        "fleets:\n  other:\n    capacity_block_group: {SECRET_CBG}\n"
    ));
    runtime.apply(&mut spec).unwrap();
    assert_eq!(spec, before);
    assert!(!runtime.covers("rtxpro-mig"));
    assert!(runtime.covers("other"));
}

#[test]
fn unknown_projects_and_clusters_are_notes_and_unknown_keys_errors_with_their_place() {
    let e = apply_note(
        MIG,
        &format!(
            "fleets:\n  rtxpro-mig:\n    projects:\n      project-replace-at-runtim:\n        project_id: {SECRET_PROJECT}\n"
        ),
    );
    assert_eq!(
        e,
        "private.yaml:4:7: fleets.rtxpro-mig.projects.project-replace-at-runtim: fleet 'rtxpro-mig' has no project with key 'project-replace-at-runtim' (did you mean 'project-replace-at-runtime'?); not used"
    );
    let e = apply_note(
        FLEET1,
        &format!(
            "fleets:\n  fleet1-test:\n    projects:\n      a:\n        clusters:\n          clustr:\n            capacity_block_group: {SECRET_CBG}\n"
        ),
    );
    assert!(
        e.starts_with("private.yaml:6:11: fleets.fleet1-test.projects.a.clusters.clustr: project 'a' has no cluster named 'clustr'"),
        "{e}"
    );
    let e = RuntimeValues::from_str(
        &format!("fleets:\n  f:\n    projects:\n      a:\n        projectid: {SECRET_PROJECT}\n"),
        "private.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("private.yaml:5:9: fleets.f.projects.a.projectid: unknown key; expected one of project_id, bucket_name"),
        "{e}"
    );
    assert!(e.ends_with("(did you mean 'project_id'?)"), "{e}");
    assert!(!e.contains("zzsecret"), "{e}");
}

#[test]
fn a_runtime_value_never_contradicts_or_extends_the_spec() {
    // A reservation is declared in the spec; the runtime file only fills it in.
    let e = apply_note(
        FLEET1,
        &format!(
            "fleets:\n  fleet1-test:\n    projects:\n      a:\n        clusters:\n          cluster:\n            capacity_block_group: {SECRET_CBG}\n"
        ),
    );
    assert!(
        e.contains("declares no placeholder capacity_block_group"),
        "{e}"
    );
    // A bucket needs an enabled object_storage block.
    let e = apply_note(
        FLEET1,
        "fleets:\n  fleet1-test:\n    projects:\n      b:\n        bucket_name: zzsecret-bucket\n",
    );
    assert!(
        e.ends_with("bucket_name: the project has no enabled object_storage; not used"),
        "{e}"
    );
    // A concrete project_id in the spec is not overridden.
    let concrete = MIG.replace("project-REPLACE_AT_RUNTIME", "project-u00publicexample1");
    let e = apply_err(
        &concrete,
        &format!(
            "fleets:\n  rtxpro-mig:\n    projects:\n      project-u00publicexample1:\n        project_id: {SECRET_PROJECT}\n"
        ),
    );
    assert!(e.contains("already names a different project_id"), "{e}");
}

#[test]
fn values_must_be_real_strings() {
    for (text, want) in [
        (
            "fleets:\n  f:\n    capacity_block_group: 12\n",
            "expected a string, found a number",
        ),
        (
            "fleets:\n  f:\n    capacity_block_group: ''\n",
            "must not be empty",
        ),
        (
            "fleets:\n  f:\n    capacity_block_group: 'a b'\n",
            "must contain no whitespace",
        ),
        (
            "fleets:\n  f:\n    capacity_block_group: capacityblockgroup-REPLACE_AT_RUNTIME\n",
            "is itself a placeholder",
        ),
        (
            "fleets: [a]\n",
            "fleets: expected a mapping, found a sequence",
        ),
        (
            "fleet: {}\n",
            "fleet: unknown key; expected one of fleets (did you mean 'fleets'?)",
        ),
    ] {
        let e = RuntimeValues::from_str(text, "r.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.yaml:"), "{e}");
        assert!(e.contains(want), "{text:?}: {e}");
    }
    assert_eq!(
        RuntimeValues::from_str("", "r.yaml").unwrap(),
        RuntimeValues {
            file: "r.yaml".into(),
            fleets: BTreeMap::new(),
        }
    );
}

#[test]
fn debug_output_never_shows_a_value() {
    let runtime = values(&format!(
        "fleets:\n  f:\n    capacity_block_group: {SECRET_CBG}\n"
    ));
    let shown = format!("{runtime:?}");
    assert!(!shown.contains("zzsecret"), "{shown}");
    assert!(shown.contains("<private at 3:27>"), "{shown}");
}
