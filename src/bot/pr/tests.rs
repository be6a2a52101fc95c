//! The preflight's rules end to end, on inputs built in memory.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::bot::config::LoadedConfig;
use crate::bot::report::{FleetStatus, LiveProblemKind, Verdict};
use crate::fleet::live::LiveError;
use crate::github::CheckConclusion;

const SPEC: &str = include_str!("../../../fixtures/specs/fleet1-test.yaml");

fn file(path: &str, status: FileStatus, head: Option<&str>, base: Option<&str>) -> ChangedFile {
    ChangedFile {
        path: path.into(),
        status,
        head: head.map(|h| h.as_bytes().to_vec()),
        base: base.map(|b| b.as_bytes().to_vec()),
        ..ChangedFile::default()
    }
}

fn run(files: &[ChangedFile], config: &LoadedConfig) -> PrOutcome {
    evaluate_pull_request(&PrInput {
        repo: "o/r",
        number: 1,
        head_sha: &"a".repeat(40),
        base_sha: &"b".repeat(40),
        files,
        files_truncated: false,
        config,
        alias_key: b"k",
        quota: None,
        live: &BTreeMap::new(),
        runtime: None,
        others: &[],
        others_unread: None,
    })
}

#[test]
fn a_removed_spec_is_reported_and_destroys_nothing() {
    let config = LoadedConfig::from_default_branch("main", None);
    let out = run(
        &[file("fleets/a.yaml", FileStatus::Removed, None, Some(SPEC))],
        &config,
    );
    let fleet = &out.report.fleets[0];
    assert_eq!(fleet.status, FleetStatus::Removed);
    assert_eq!(fleet.name.as_deref(), Some("fleet1-test"));
    assert!(fleet.plan.is_none(), "not a destroy plan: {fleet:?}");
    assert_eq!(out.report.verdict(), Verdict::Ready);
    assert_eq!(
        out.report.outcome.reasons()[0],
        "1 fleet spec removed: nothing is deleted on merge; run `fleetbot destroy` to tear the fleet down"
    );
    assert_eq!(out.preflight.conclusion, CheckConclusion::Success);
    assert!(
        out.comment.contains(
            "Spec removed: nothing is deleted on merge; run `fleetbot destroy` to tear the fleet down."
        ),
        "{}",
        out.comment
    );
    assert!(!out.comment.contains("**destroy**"), "{}", out.comment);
}

/// SPEC with a second cluster in project b, which the head (SPEC) drops.
fn with_old_cluster() -> String {
    SPEC.replace(
        "  - name: b   # display name fleet1-test-b\n",
        "  - name: b   # display name fleet1-test-b\n    clusters: [{name: cluster}, {name: old}]\n",
    )
}

#[test]
fn a_cluster_dropped_from_a_spec_is_deleted_only_with_approval_in_the_static_plan() {
    let config = LoadedConfig::from_default_branch("main", None);
    let base = with_old_cluster();
    assert_ne!(base, SPEC);
    let out = run(
        &[file(
            "fleets/a.yaml",
            FileStatus::Modified,
            Some(SPEC),
            Some(&base),
        )],
        &config,
    );
    let plan = out.report.fleets[0].plan.as_ref().unwrap();
    assert_eq!(plan.destroy.len(), 1, "{plan:?}");
    let row = &plan.destroy[0];
    assert_eq!(
        (row.kind, row.name.as_str()),
        ("cluster", "fleet1-test-b/old")
    );
    assert_eq!(
        row.details[0],
        "removed from the spec; deleted only with /approve-destroy"
    );
}
#[test]
fn an_invalid_config_fails_preflight_even_without_spec_changes() {
    let config = LoadedConfig::from_default_branch("main", Some(b"specz: []\n"));
    let out = run(
        &[file("README.md", FileStatus::Modified, Some("x\n"), None)],
        &config,
    );
    assert_eq!(out.report.verdict(), Verdict::Blocked);
    assert_eq!(out.preflight.conclusion, CheckConclusion::Failure);
    assert_eq!(out.privacy.conclusion, CheckConclusion::Skipped);
    assert!(out.preflight.output.summary.contains("unknown field"));
}

#[test]
fn spec_errors_on_a_line_with_a_private_value_lose_their_quoted_text() {
    assert_eq!(
        super::spec::without_quoted_text("expected an integer, found \"tenant-e00x\" at 'y'"),
        "expected an integer, found (value withheld) at (value withheld)"
    );
    let id = crate::privacy::testdata::nid("tenant", "e00", 15);
    let spec = SPEC.replace("region: us-central1", &format!("region: [\"{id}\"]"));
    let config = LoadedConfig::from_default_branch("main", None);
    let out = run(
        &[file("fleets/a.yaml", FileStatus::Added, Some(&spec), None)],
        &config,
    );
    let text = format!(
        "{}{:?}{:?}",
        out.comment, out.preflight.output, out.privacy.output
    );
    assert!(!text.contains(&id));
    assert_eq!(out.report.fleets[0].status, FleetStatus::Invalid);
    assert_eq!(out.privacy.conclusion, CheckConclusion::Failure);
}

#[test]
fn a_spec_too_large_to_diff_is_planned_and_its_diff_is_withheld_as_too_large() {
    // 40,000 comment lines: a valid spec whose diff is past the line cap.
    let grown: String = SPEC.to_string()
        + &(0..40_000)
            .map(|i| format!("# note {i}\n"))
            .collect::<String>();
    let config = LoadedConfig::from_default_branch("main", None);
    let out = run(
        &[file(
            "fleets/a.yaml",
            FileStatus::Modified,
            Some(&grown),
            Some(SPEC),
        )],
        &config,
    );
    assert_eq!(out.report.fleets[0].status, FleetStatus::Valid);
    let diff = &out.report.diffs[0];
    assert_eq!(
        diff.withheld,
        Some(crate::bot::report::DiffWithheld::TooLarge)
    );
    assert_eq!(diff.unified, None);
    assert!(
        out.comment.contains(
            "Diff not shown: the change is too large to diff here; it is in the pull request's Files tab."
        ),
        "{}",
        out.comment
    );
}

#[test]
fn the_digest_covers_spec_bytes_and_config() {
    let config = LoadedConfig::from_default_branch("main", None);
    let a = run(
        &[file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
        &config,
    );
    let b = run(
        &[file(
            "fleets/a.yaml",
            FileStatus::Added,
            Some(&format!("{SPEC}\n")),
            None,
        )],
        &config,
    );
    let other = LoadedConfig::from_default_branch("main", Some(b"specs: ['fleets/**']\n"));
    let c = run(
        &[file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
        &other,
    );
    assert_eq!(a.report.digest.len(), 64);
    assert_ne!(a.report.digest, b.report.digest);
    assert_ne!(a.report.digest, c.report.digest);
    assert_eq!(
        a.privacy.external_id.as_deref(),
        Some(a.report.digest.as_str())
    );
}

/// A live reading of `fleets/a.yaml` (the SPEC fleet) whose plan is `plan`, with quota
/// evidence that has room, so only the plan can block.
fn live_reading(plan: Result<Option<crate::fleet::live::PlannedFleet>, LiveError>) -> LiveSpec {
    let room = include_str!("../../../fixtures/quotas/allowances-room.json");
    LiveSpec {
        cloud: "the fleetbot simulator".into(),
        plan,
        tenant_id: "tenant-example".into(),
        evidence: Ok(std::sync::Arc::new(crate::quota::InMemoryEvidence {
            allowances: crate::quota::json::allowance_document(room),
            capacity: Ok(Default::default()),
        })),
    }
}

fn planned_with(problem: crate::fleet::live::Problem) -> crate::fleet::live::PlannedFleet {
    use crate::fleet::live::{LivePlan, ProjectPlan, Summary};
    crate::fleet::live::PlannedFleet {
        plan: LivePlan {
            fleet: "fleet1-test".into(),
            cloud: "sim".into(),
            projects: vec![ProjectPlan {
                key: "a".into(),
                actions: Vec::new(),
                problems: vec![problem],
            }],
            targets: Vec::new(),
            summary: Summary::default(),
            digest: "d".into(),
        },
        project_index: vec![0],
        target_index: Vec::new(),
        proven: Default::default(),
    }
}

fn run_live(live: LiveSpec) -> PrOutcome {
    run_live_over(SPEC, live)
}

/// The head is SPEC; the base is `base`.
fn run_live_over(base: &str, live: LiveSpec) -> PrOutcome {
    let config = LoadedConfig::from_default_branch("main", None);
    let files = [file(
        "fleets/a.yaml",
        FileStatus::Modified,
        Some(SPEC),
        Some(base),
    )];
    let live = BTreeMap::from([("fleets/a.yaml".to_string(), live)]);
    evaluate_pull_request(&PrInput {
        repo: "o/r",
        number: 1,
        head_sha: &"a".repeat(40),
        base_sha: &"b".repeat(40),
        files: &files,
        files_truncated: false,
        config: &config,
        alias_key: b"k",
        quota: None,
        live: &live,
        runtime: None,
        others: &[],
        others_unread: None,
    })
}

#[test]
fn a_live_plan_without_problems_and_room_in_the_quota_succeeds() {
    use crate::fleet::live::{LivePlan, Summary};
    let mut planned = planned_with(crate::fleet::live::Problem::new(
        crate::fleet::live::ProblemKind::NotOwned,
        "x",
    ));
    planned.plan = LivePlan {
        projects: Vec::new(),
        summary: Summary::default(),
        ..planned.plan
    };
    planned.project_index.clear();
    let out = run_live(live_reading(Ok(Some(planned))));
    assert_eq!(
        out.report.verdict(),
        Verdict::Ready,
        "{:?}",
        out.report.outcome
    );
    assert_eq!(out.preflight.conclusion, CheckConclusion::Success);
}

/// A live plan with only `targets` (and no project entries).
fn planned_targets(
    targets: Vec<crate::fleet::live::TargetPlan>,
) -> crate::fleet::live::PlannedFleet {
    let mut planned = planned_with(crate::fleet::live::Problem::new(
        crate::fleet::live::ProblemKind::NotOwned,
        "x",
    ));
    planned.plan.projects.clear();
    planned.project_index.clear();
    planned.plan.targets = targets;
    planned
}

#[test]
fn with_a_live_plan_only_the_engines_prune_entries_are_destroy_rows() {
    use crate::fleet::live::{Action, ResourceAction, TargetPlan};
    let delete = |resource: &'static str, name: &str| ResourceAction {
        resource,
        name: name.into(),
        action: Action::Delete,
        changes: Vec::new(),
        reason: "removed from the spec".into(),
    };
    let pruned = TargetPlan {
        target: "b/old".into(),
        actions: vec![delete("node-group", "old-ng-cpu"), delete("cluster", "old")],
        unchanged: false,
        problems: Vec::new(),
        prune: true,
    };
    let base = with_old_cluster();
    let out = run_live_over(&base, live_reading(Ok(Some(planned_targets(vec![pruned])))));
    let plan = out.report.fleets[0].plan.as_ref().unwrap();
    assert_eq!(plan.destroy.len(), 1, "{plan:?}");
    let row = &plan.destroy[0];
    assert_eq!(
        (row.kind, row.name.as_str()),
        ("cluster", "fleet1-test-b/old")
    );
    assert_eq!(
        row.details,
        [
            "removed from the spec; deleted only with /approve-destroy",
            "with node-group old-ng-cpu"
        ]
    );
    assert!(out.comment.contains("🗑️ **destroy**"), "{}", out.comment);
    assert!(
        out.comment.contains("deleted only with /approve-destroy"),
        "{}",
        out.comment
    );

    // The same change where the engine has nothing to prune (never deployed): no destroy row,
    // whatever the spec comparison says.
    let out = run_live_over(&base, live_reading(Ok(Some(planned_targets(Vec::new())))));
    let plan = out.report.fleets[0].plan.as_ref().unwrap();
    assert!(plan.destroy.is_empty(), "{plan:?}");
}

#[test]
fn a_pruned_target_of_a_project_gone_from_both_specs_is_not_named_by_its_key() {
    use crate::fleet::live::{Action, ResourceAction, TargetPlan};
    let pruned = TargetPlan {
        target: "project-e00secret/old".into(),
        actions: vec![ResourceAction {
            resource: "cluster",
            name: "old".into(),
            action: Action::Delete,
            changes: Vec::new(),
            reason: "removed from the spec".into(),
        }],
        unchanged: false,
        problems: Vec::new(),
        prune: true,
    };
    let out = run_live(live_reading(Ok(Some(planned_targets(vec![pruned])))));
    let plan = out.report.fleets[0].plan.as_ref().unwrap();
    assert_eq!(plan.destroy.len(), 1, "{plan:?}");
    assert_eq!(
        plan.destroy[0].name,
        "(a project no longer in the spec)/old"
    );
    assert!(!out.comment.contains("e00secret"));
}

/// Issue 13: the conclusion once ignored the live plan while the summary listed it.
#[test]
fn every_live_plan_problem_fails_preflight_with_its_kind_in_the_title_and_summary() {
    use crate::fleet::live::LiveErrorKind;
    use crate::fleet::live::{Problem, ProblemKind};
    let mut readings: Vec<(LiveProblemKind, LiveSpec)> = ProblemKind::ALL
        .into_iter()
        .map(|kind| {
            let problem = Problem::new(kind, format!("problem of kind {kind:?}"));
            (kind.into(), live_reading(Ok(Some(planned_with(problem)))))
        })
        .collect();
    for kind in [
        LiveErrorKind::Tenant,
        LiveErrorKind::Cloud,
        LiveErrorKind::Store,
        LiveErrorKind::Engine,
    ] {
        let error = LiveError::new(kind, format!("error of kind {kind:?}"));
        readings.push((kind.into(), live_reading(Err(error))));
    }
    let covered: BTreeSet<LiveProblemKind> = readings.iter().map(|(k, _)| *k).collect();
    assert_eq!(covered, LiveProblemKind::ALL.into());
    for (kind, live) in readings {
        let out = run_live(live);
        let check = &out.preflight;
        assert_eq!(out.report.verdict(), Verdict::Blocked, "{kind:?}");
        assert_eq!(
            check.conclusion,
            CheckConclusion::Failure,
            "{kind:?}: {}",
            check.output.title
        );
        assert_eq!(
            check.output.title,
            format!("Blocked: the live plan found problems ({})", kind.phrase())
        );
        assert!(
            check.output.summary.contains("**❌ blocked**"),
            "{}",
            check.output.summary
        );
        assert!(
            check.output.summary.contains("of kind"),
            "{}",
            check.output.summary
        );
        assert!(
            check
                .output
                .annotations
                .iter()
                .any(|a| a.title.as_deref() == Some(&*format!("Live plan: {}", kind.phrase()))),
            "{kind:?}"
        );
        assert!(out.comment.contains("## ❌ fleetbot preflight: blocked"));
        assert!(!format!("{out:?}").contains("tenant-example"));
        // The privacy guard found nothing: its check is independent of the live plan.
        assert_eq!(out.privacy.conclusion, CheckConclusion::Success);
    }
}

#[test]
fn a_private_value_fails_privacy_and_preflight_only_says_so() {
    let id = crate::privacy::testdata::nid("tenant", "e00", 15);
    let spec = SPEC.replace("tenant_id: \"\"", &format!("tenant_id: \"{id}\""));
    assert_ne!(spec, SPEC);
    let config = LoadedConfig::from_default_branch("main", None);
    let out = run(
        &[file(
            "fleets/a.yaml",
            FileStatus::Modified,
            Some(&spec),
            Some(SPEC),
        )],
        &config,
    );
    assert_eq!(out.privacy.conclusion, CheckConclusion::Failure);
    assert_eq!(out.privacy.output.title, "1 private value committed");
    // One leak fails one check; the preflight summary agrees with its own conclusion.
    assert_eq!(out.preflight.conclusion, CheckConclusion::Neutral);
    let summary = &out.preflight.output.summary;
    assert!(!summary.contains("blocked"), "{summary}");
    assert!(
        summary.contains("1 private value committed: fleet/privacy fails on it"),
        "{summary}"
    );
    // The comment is the pull request's overall verdict, and a leak blocks it.
    assert!(
        out.comment.contains("1 private value committed"),
        "{}",
        out.comment
    );
    // The withheld diff is worded from its typed reason.
    assert!(
        out.comment.contains(
            "Diff not shown: this file holds a private value (see fleet/privacy), so its diff is not shown."
        ),
        "{}",
        out.comment
    );
}

#[test]
fn the_conclusions_and_the_summaries_come_from_one_verdict() {
    let config = LoadedConfig::from_default_branch("main", None);
    let cases = [
        (
            vec![file("README.md", FileStatus::Modified, Some("x\n"), None)],
            CheckConclusion::Skipped,
            CheckConclusion::Skipped,
        ),
        (
            vec![file("fleets/a.yaml", FileStatus::Added, Some(SPEC), None)],
            CheckConclusion::Neutral,
            CheckConclusion::Success,
        ),
        (
            vec![file("fleets/a.yaml", FileStatus::Removed, None, Some(SPEC))],
            CheckConclusion::Success,
            CheckConclusion::Success,
        ),
        (
            vec![file(
                "fleets/a.yaml",
                FileStatus::Added,
                Some("name: [\n"),
                None,
            )],
            CheckConclusion::Failure,
            CheckConclusion::Success,
        ),
    ];
    for (files, preflight, privacy) in cases {
        let out = run(&files, &config);
        assert_eq!(
            out.preflight.conclusion, preflight,
            "{:?}",
            out.report.outcome
        );
        assert_eq!(out.privacy.conclusion, privacy, "{:?}", out.report.outcome);
        let blocked = out.preflight.output.summary.contains("❌ blocked");
        assert_eq!(blocked, preflight == CheckConclusion::Failure);
        assert_eq!(
            out.privacy.output.summary.contains("did not run"),
            privacy == CheckConclusion::Skipped
        );
    }
}

#[test]
fn a_privacy_scan_that_could_not_read_every_changed_line_never_passes() {
    let config = LoadedConfig::from_default_branch("main", None);
    let spec = file(
        "fleets/a.yaml",
        FileStatus::Modified,
        Some(SPEC),
        Some(SPEC),
    );
    let mut big = file("data/dump.json", FileStatus::Added, None, None);
    big.not_fetched = Some("larger than the scan limit".into());
    let out = run(&[spec.clone(), big], &config);
    assert_eq!(out.privacy.conclusion, CheckConclusion::Failure);
    assert_eq!(
        out.privacy.output.title,
        "Incomplete: 1 changed file could not be scanned"
    );
    assert!(
        out.privacy
            .output
            .summary
            .contains("Not every changed line could be scanned"),
        "{}",
        out.privacy.output.summary
    );
    assert!(
        out.comment.contains("1 changed file could not be scanned"),
        "{}",
        out.comment
    );
    // `fleet/preflight` decides on the plan: a privacy gap is not its failure.
    assert_ne!(out.preflight.conclusion, CheckConclusion::Failure);

    // A listing GitHub cut short leaves files unscanned too.
    let truncated = evaluate_pull_request(&PrInput {
        repo: "o/r",
        number: 1,
        head_sha: &"a".repeat(40),
        base_sha: &"b".repeat(40),
        files: &[spec],
        files_truncated: true,
        config: &config,
        alias_key: b"k",
        quota: None,
        live: &BTreeMap::new(),
        runtime: None,
        others: &[],
        others_unread: None,
    });
    assert_eq!(truncated.privacy.conclusion, CheckConclusion::Failure);
    assert!(
        truncated
            .privacy
            .output
            .title
            .contains("not all were scanned"),
        "{}",
        truncated.privacy.output.title
    );

    // A binary file is skipped by design: the scan is complete.
    let mut image = file("docs/logo.png", FileStatus::Added, None, None);
    image.head = Some(vec![0x89, b'P', b'N', b'G', 0, 0, 0]);
    let out = run(
        &[
            file(
                "fleets/a.yaml",
                FileStatus::Modified,
                Some(SPEC),
                Some(SPEC),
            ),
            image,
        ],
        &config,
    );
    assert_eq!(out.privacy.conclusion, CheckConclusion::Success);
}

/// Issue #32: `cuont:` for `count:` under `defaults.gpu_nodes` is only a warning to the CLI,
/// as in the reference, but it would empty every GPU pool; on a pull request it fails
/// `fleet/preflight` with an annotation on its own line and shows in the sticky comment.
#[test]
fn a_count_typo_in_the_gpu_defaults_fails_preflight_on_its_line() {
    let typo = SPEC.replacen(
        "  gpu_nodes:\n    count: 1\n",
        "  gpu_nodes:\n    cuont: 2\n",
        1,
    );
    assert_ne!(typo, SPEC);
    let line = typo.lines().position(|l| l == "    cuont: 2").unwrap() as u32 + 1;
    let config = LoadedConfig::from_default_branch("main", None);
    let out = run(
        &[file(
            "fleets/a.yaml",
            FileStatus::Modified,
            Some(&typo),
            Some(SPEC),
        )],
        &config,
    );
    assert_eq!(out.report.fleets[0].status, FleetStatus::Invalid);
    assert_eq!(out.preflight.conclusion, CheckConclusion::Failure);
    let annotations = &out.preflight.output.annotations;
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    let a = &annotations[0];
    assert_eq!(
        (a.path.as_str(), a.start_line, a.end_line),
        ("fleets/a.yaml", line, line)
    );
    assert_eq!(a.start_column, Some(5));
    assert!(
        a.message
            .contains("cuont: unknown key; did you mean 'count'?"),
        "{}",
        a.message
    );
    assert!(out.comment.contains("cuont"), "{}", out.comment);
    assert!(
        out.comment.contains("did you mean 'count'?"),
        "{}",
        out.comment
    );
}
