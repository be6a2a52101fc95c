//! The guard's rules, one test per rule a user relies on.

use super::*;
use crate::engine::live::{Change, Problem, ProblemKind, ResourceAction, Summary, TargetPlan};

fn action(resource: &'static str, name: &str, action: Action) -> ResourceAction {
    ResourceAction {
        resource,
        name: name.into(),
        action,
        changes: Vec::new(),
        reason: String::new(),
    }
}

fn plan(digest: &str, actions: Vec<ResourceAction>) -> LivePlan {
    let unchanged = actions
        .iter()
        .all(|a| matches!(a.action, Action::NoChange | Action::Reuse));
    LivePlan {
        fleet: "prod".into(),
        cloud: "sim".into(),
        projects: Vec::new(),
        targets: vec![TargetPlan {
            target: "platform/train".into(),
            actions,
            unchanged,
            problems: Vec::new(),
            prune: false,
        }],
        summary: Summary::default(),
        digest: digest.into(),
    }
}

fn deletion() -> Destructive {
    Destructive {
        target: "platform/old".into(),
        resource: "cluster",
        name: "old".into(),
        action: Action::Delete,
        why: "removed from the spec".into(),
    }
}

fn names() -> &'static PublicNames {
    static NAMES: std::sync::OnceLock<PublicNames> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| PublicNames::from_labels(&[("platform", "fleet-platform")]))
}

fn lines(plan: &LivePlan) -> String {
    plan_lines(plan, &mut names().clone())
}

fn input<'a>(
    trigger: Trigger,
    reviewed: Option<(&'a str, &'a str)>,
    plan: &'a LivePlan,
    destructive: &'a [Destructive],
) -> GuardInput<'a> {
    GuardInput {
        trigger,
        reviewed,
        plan,
        destructive,
        approved: false,
        resumed: None,
        names: names(),
    }
}

#[test]
fn a_merge_applies_exactly_the_reviewed_plan() {
    let p = plan("d1", vec![action("cluster", "train", Action::Create)]);
    let lines = lines(&p);
    assert_eq!(
        decide(&input(Trigger::Merge, Some(("d1", &lines)), &p, &[])),
        Decision::Apply { prune: false }
    );
}

#[test]
fn a_drifted_plan_waits_and_says_what_changed_since_review() {
    let reviewed = plan("d1", vec![action("cluster", "train", Action::Create)]);
    let mut grown = action("node-group", "gpu", Action::Update);
    grown.changes.push(Change {
        field: "node_count",
        from: "2".into(),
        to: "4".into(),
    });
    let now = plan("d2", vec![grown]);
    let lines = lines(&reviewed);
    let Decision::Refuse(Refusal::Drifted { since_review }) =
        decide(&input(Trigger::Merge, Some(("d1", &lines)), &now, &[]))
    else {
        panic!("not refused as drifted");
    };
    assert_eq!(
        since_review,
        vec![
            "+ update node-group gpu in fleet-platform/train (node_count)".to_string(),
            "− create cluster train in fleet-platform/train".to_string(),
        ]
    );
    // A re-run is held to review too; /apply and the button accept the new plan.
    assert!(matches!(
        decide(&input(Trigger::Rerun, Some(("d1", &lines)), &now, &[])),
        Decision::Refuse(Refusal::Drifted { .. })
    ));
    for t in [Trigger::Command, Trigger::Button] {
        assert_eq!(
            decide(&input(t, Some(("d1", &lines)), &now, &[])),
            Decision::Apply { prune: false }
        );
    }
}

#[test]
fn without_a_reviewed_plan_a_merge_applies_nothing() {
    let p = plan("d1", vec![action("cluster", "train", Action::Create)]);
    assert_eq!(
        decide(&input(Trigger::Merge, None, &p, &[])),
        Decision::Refuse(Refusal::NotReviewed)
    );
}

#[test]
fn deletions_need_an_approval_of_this_plan_even_for_apply() {
    let p = plan("d1", vec![action("cluster", "old", Action::Delete)]);
    let lines = lines(&p);
    let d = [deletion()];
    for t in [Trigger::Merge, Trigger::Command, Trigger::Button] {
        let Decision::Refuse(Refusal::NeedsApproval { deletions }) =
            decide(&input(t, Some(("d1", &lines)), &p, &d))
        else {
            panic!("{t:?}: an unapproved deletion was not refused");
        };
        assert_eq!(
            deletions,
            vec!["delete cluster fleet-platform/old: removed from the spec".to_string()]
        );
    }
    let mut approved = input(Trigger::Merge, Some(("d1", &lines)), &p, &d);
    approved.approved = true;
    assert_eq!(decide(&approved), Decision::Apply { prune: true });
}

#[test]
fn problems_refuse_whoever_asks_and_a_quiet_plan_does_nothing() {
    let mut p = plan("d1", vec![action("cluster", "train", Action::Create)]);
    p.targets[0].problems.push(Problem::new(
        ProblemKind::NotOwned,
        "cluster train is not fleetbot's",
    ));
    for t in [Trigger::Merge, Trigger::Command] {
        let d = decide(&input(t, Some(("d1", "")), &p, &[]));
        assert!(
            matches!(&d, Decision::Refuse(r @ Refusal::Problems { .. }) if !r.needs_action()),
            "{d:?}"
        );
    }
    let quiet = plan("d9", vec![action("cluster", "train", Action::NoChange)]);
    assert_eq!(
        decide(&input(Trigger::Merge, None, &quiet, &[])),
        Decision::NothingToDo
    );
}

#[test]
fn a_resumed_apply_keeps_what_it_was_allowed() {
    // After a crash the plan is what is left to do: it differs from review, and that is fine.
    let p = plan("d2", vec![action("cluster", "old", Action::Delete)]);
    let d = [deletion()];
    let mut resumed = input(Trigger::Merge, Some(("d1", "")), &p, &d);
    resumed.resumed = Some(true);
    assert_eq!(decide(&resumed), Decision::Apply { prune: true });
    // …but deletions it was not allowed before stay refused.
    resumed.resumed = Some(false);
    assert!(matches!(
        decide(&resumed),
        Decision::Refuse(Refusal::NeedsApproval { .. })
    ));
}

#[test]
fn projects_are_named_as_the_comment_names_them_never_by_key() {
    let text = include_str!("../../../fixtures/specs/fleet1-test.yaml").replace(
        "  - name: b   # display name fleet1-test-b",
        "  - project_id: project-e00abcdefgh",
    );
    let spec = crate::spec::load_str(&text, "fleets/prod.yaml").unwrap();
    let mut names = PublicNames::of(&spec);
    assert_eq!(names.target("a/train"), "fleet1-test-a/train");
    let id_key = spec.projects[1].key();
    assert_eq!(names.project(&id_key), "existing project #2");
    // Projects the spec no longer declares are numbered, the same way each time.
    assert_eq!(names.project("gone"), "removed project #1");
    assert_eq!(names.project("also-gone"), "removed project #2");
    assert_eq!(names.project("gone"), "removed project #1");
    let mut p = plan("d", vec![action("cluster", "x", Action::Create)]);
    p.targets[0].target = format!("{id_key}/x");
    p.targets[0]
        .problems
        .push(Problem::new(ProblemKind::NotOwned, "not fleetbot's"));
    let text = PublicNames::of(&spec).problems(&p).join("\n");
    assert_eq!(text, "existing project #2/x: not fleetbot's");
    assert!(!plan_lines(&p, &mut PublicNames::of(&spec)).contains("e00abcdefgh"));
}

#[test]
fn a_drift_repair_applies_only_the_plan_its_pass_published_and_never_a_deletion() {
    let published = plan("d1", vec![action("node-group", "gpu", Action::Update)]);
    let lines = lines(&published);
    assert_eq!(
        decide(&input(
            Trigger::Drift,
            Some(("d1", &lines)),
            &published,
            &[]
        )),
        Decision::Apply { prune: false }
    );
    // The cloud moved again between the pass and the apply: held, like a merge.
    let now = plan("d2", vec![action("cluster", "train", Action::Create)]);
    assert!(matches!(
        decide(&input(Trigger::Drift, Some(("d1", &lines)), &now, &[])),
        Decision::Refuse(Refusal::Drifted { .. })
    ));
    assert_eq!(
        decide(&input(Trigger::Drift, None, &published, &[])),
        Decision::Refuse(Refusal::NotReviewed)
    );
    // Nobody can approve a deletion for a repair.
    assert!(matches!(
        decide(&input(
            Trigger::Drift,
            Some(("d1", &lines)),
            &published,
            &[deletion()]
        )),
        Decision::Refuse(Refusal::NeedsApproval { .. })
    ));
}

/// Issue #32: a typo (`cuont:`) that empties a GPU pool deletes its node group and its device
/// plugin; a filesystem turned off detaches it; a smaller bucket lowers its cap. Each is
/// destructive as a pruned target is, so a merge waits for `/approve-destroy`.
#[test]
fn deletions_and_shrinks_inside_a_target_need_approval_like_a_pruned_target() {
    let mut gpu = action("node-group", "train-ng-gpu-0", Action::Delete);
    gpu.reason = "no longer in the spec".into();
    let mut plugin = action("add-on", "device-plugin", Action::Delete);
    plugin.reason = "no longer in the spec".into();
    let mut cpu = action("node-group", "train-ng-cpu", Action::Update);
    cpu.reason = crate::engine::live::DETACHES_FILESYSTEM.into();
    let mut p = plan("d1", vec![gpu, plugin, cpu]);
    let mut bucket = action("bucket", "(generated name)", Action::Update);
    bucket.changes.push(Change {
        field: "max_size_bytes",
        from: (2048_i64 << 30).to_string(),
        to: (1024_i64 << 30).to_string(),
    });
    p.projects.push(crate::engine::live::ProjectPlan {
        key: "platform".into(),
        actions: vec![bucket],
        problems: Vec::new(),
    });
    let lines = lines(&p);
    let d = p.destructive();
    let Decision::Refuse(Refusal::NeedsApproval { deletions }) =
        decide(&input(Trigger::Merge, Some(("d1", &lines)), &p, &d))
    else {
        panic!("an in-target deletion was applied without approval");
    };
    assert_eq!(
        deletions,
        vec![
            "shrink bucket (generated name) of fleet-platform: size cap lowered from 2048 GiB to 1024 GiB"
                .to_string(),
            "delete node-group train-ng-gpu-0 of fleet-platform/train: no longer in the spec"
                .to_string(),
            "delete add-on device-plugin of fleet-platform/train: no longer in the spec".to_string(),
            "shrink node-group train-ng-cpu of fleet-platform/train: detaches a filesystem its nodes mount"
                .to_string(),
        ]
    );
    let mut approved = input(Trigger::Merge, Some(("d1", &lines)), &p, &d);
    approved.approved = true;
    assert_eq!(decide(&approved), Decision::Apply { prune: true });
}
