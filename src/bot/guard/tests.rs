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
    }
}

#[test]
fn a_merge_applies_exactly_the_reviewed_plan() {
    let p = plan("d1", vec![action("cluster", "train", Action::Create)]);
    let lines = plan_lines(&p);
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
    let lines = plan_lines(&reviewed);
    let Decision::Refuse(Refusal::Drifted { since_review }) =
        decide(&input(Trigger::Merge, Some(("d1", &lines)), &now, &[]))
    else {
        panic!("not refused as drifted");
    };
    assert_eq!(
        since_review,
        vec![
            "+ update node-group gpu in platform/train (node_count)".to_string(),
            "− create cluster train in platform/train".to_string(),
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
    let lines = plan_lines(&p);
    let d = [deletion()];
    for t in [Trigger::Merge, Trigger::Command, Trigger::Button] {
        let Decision::Refuse(Refusal::NeedsApproval { deletions }) =
            decide(&input(t, Some(("d1", &lines)), &p, &d))
        else {
            panic!("{t:?}: an unapproved deletion was not refused");
        };
        assert_eq!(
            deletions,
            vec!["delete cluster platform/old: removed from the spec".to_string()]
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
