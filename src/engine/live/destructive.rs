//! The destructive part of a live plan: every deletion, every replacement, every node group
//! that shrinks or stops mounting a filesystem, and every bucket whose size cap is lowered, by
//! the spec's names, so a caller can ask for approval before it applies one.

use serde::Serialize;

use super::target_diff::{DETACHES_FILESYSTEM, REPLACE_ONLY_FIELDS};
use super::types::{Action, LivePlan, ResourceAction, TargetPlan};

/// One action of a plan that deletes something, or takes nodes away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Destructive {
    /// `project/cluster` for a target's resources, the project key for a project's.
    pub target: String,
    /// `cluster`, `node-group`, `filesystem`, `gpu-cluster`, `subnet`, `network`, `bucket`, …
    pub resource: &'static str,
    /// The resource's name as the plan shows it: never a cloud ID.
    pub name: String,
    pub action: Action,
    /// `removed from the spec`, `replaced: preset cannot change in place`,
    /// `shrinks from 4 to 2 nodes`, …
    pub why: String,
}

fn replaced(a: &ResourceAction) -> String {
    let fields: Vec<&str> = a
        .changes
        .iter()
        .map(|c| c.field)
        .filter(|f| REPLACE_ONLY_FIELDS.contains(f))
        .collect();
    match (fields.is_empty(), a.reason.is_empty()) {
        (false, _) => format!("replaced: {} cannot change in place", fields.join(", ")),
        (true, false) => format!("replaced: {}", a.reason),
        (true, true) => "replaced".into(),
    }
}

/// A node-group update that lowers its node count. An autoscaling group is read as its maximum
/// (`cloud::nebius::node_groups`), so a lower maximum shows here as a lower `node_count` too.
fn shrinks(a: &ResourceAction) -> Option<String> {
    if a.resource != "node-group" {
        return None;
    }
    let change = a.changes.iter().find(|c| c.field == "node_count")?;
    let from: i64 = change.from.parse().ok()?;
    let to: i64 = change.to.parse().ok()?;
    (to < from).then(|| format!("shrinks from {from} to {to} nodes"))
}

/// A node-group update that takes a filesystem away from nodes that mount it: what they wrote
/// there is out of their reach, and whatever runs on them loses its data path.
fn detaches(a: &ResourceAction) -> Option<String> {
    (a.resource == "node-group" && a.reason == DETACHES_FILESYSTEM).then(|| a.reason.clone())
}

/// A bucket update that lowers its size cap: writes fail once the bucket holds more.
fn lowers_cap(a: &ResourceAction) -> Option<String> {
    if a.resource != "bucket" {
        return None;
    }
    let change = a.changes.iter().find(|c| c.field == "max_size_bytes")?;
    let from: i64 = change.from.parse().ok()?;
    let to: i64 = change.to.parse().ok()?;
    const GIB: i64 = 1 << 30;
    let size = |bytes: i64| {
        if bytes % GIB == 0 {
            format!("{} GiB", bytes / GIB)
        } else {
            format!("{bytes} bytes")
        }
    };
    (to < from).then(|| format!("size cap lowered from {} to {}", size(from), size(to)))
}

fn destructive(target: &str, a: &ResourceAction) -> Option<Destructive> {
    let why = match a.action {
        Action::Delete if a.reason.is_empty() => "deleted".to_string(),
        Action::Delete => a.reason.clone(),
        Action::Replace => replaced(a),
        Action::Update => shrinks(a)
            .or_else(|| detaches(a))
            .or_else(|| lowers_cap(a))?,
        Action::Create | Action::NoChange | Action::Reuse => return None,
    };
    Some(Destructive {
        target: target.to_string(),
        resource: a.resource,
        name: a.name.clone(),
        action: a.action,
        why,
    })
}

impl Destructive {
    /// One line for a terminal: `delete node-group a-ng-gpu-0 in p/a: no longer in the spec`.
    pub fn line(&self) -> String {
        let verb = match self.action {
            Action::Delete => "delete",
            Action::Replace => "replace",
            _ => "change",
        };
        let scope = if self.target.contains('/') {
            self.target.clone()
        } else {
            format!("project {}", self.target)
        };
        format!(
            "{verb} {} {} in {scope}: {}",
            self.resource, self.name, self.why
        )
    }
}

impl LivePlan {
    /// Every action that deletes or replaces something, every node group that shrinks or
    /// detaches a filesystem and every bucket whose cap is lowered, in plan order: what a
    /// reviewer must approve before a deploy may apply the plan.
    pub fn destructive(&self) -> Vec<Destructive> {
        self.destructive_where(|_| true)
    }

    /// [`LivePlan::destructive`] without the targets the spec no longer declares: what a
    /// deploy deletes, replaces or shrinks inside the projects and targets it applies, which
    /// the CLI asks for (`--allow-destroy`) apart from pruning whole targets (`--prune`).
    pub fn destructive_within(&self) -> Vec<Destructive> {
        self.destructive_where(|t| !t.prune)
    }

    fn destructive_where(&self, keep: impl Fn(&TargetPlan) -> bool) -> Vec<Destructive> {
        let projects = self
            .projects
            .iter()
            .flat_map(|p| p.actions.iter().map(move |a| (p.key.as_str(), a)));
        let targets = self
            .targets
            .iter()
            .filter(|t| keep(t))
            .flat_map(|t| t.actions.iter().map(move |a| (t.target.as_str(), a)));
        projects
            .chain(targets)
            .filter_map(|(target, a)| destructive(target, a))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::live::types::{Change, ProjectPlan, Summary};

    fn action(resource: &'static str, name: &str, action: Action) -> ResourceAction {
        ResourceAction::new(resource, name, action)
    }

    fn change(field: &'static str, from: &str, to: &str) -> Change {
        Change {
            field,
            from: from.into(),
            to: to.into(),
        }
    }

    fn plan(projects: Vec<ProjectPlan>, targets: Vec<TargetPlan>) -> LivePlan {
        LivePlan {
            fleet: "f".into(),
            cloud: "sim".into(),
            projects,
            targets,
            summary: Summary::default(),
            digest: String::new(),
        }
    }

    fn target(name: &str, actions: Vec<ResourceAction>, prune: bool) -> TargetPlan {
        TargetPlan {
            target: name.into(),
            actions,
            unchanged: false,
            problems: Vec::new(),
            prune,
        }
    }

    #[test]
    fn deletions_replacements_and_shrinks_are_destructive_and_nothing_else() {
        let mut stale = action("node-group", "a-ng-gpu-1", Action::Delete);
        stale.reason = "no longer in the spec".into();
        let mut replaced = action("node-group", "a-ng-cpu", Action::Replace);
        replaced.reason = "changed fields cannot be updated in place".into();
        replaced.changes = vec![
            change("preset", "8vcpu-32gb", "16vcpu-64gb"),
            change("node_count", "2", "1"),
        ];
        let mut shrunk = action("node-group", "b-ng-cpu", Action::Update);
        shrunk.changes = vec![change("node_count", "4", "2")];
        let mut grown = action("node-group", "b-ng-gpu-0", Action::Update);
        grown.changes = vec![change("node_count", "1", "3")];
        let mut disk = action("node-group", "b-ng-gpu-1", Action::Update);
        disk.changes = vec![change("boot_disk_gibibytes", "128", "256")];
        let mut fabric = action("gpu-cluster", "b-fabric-2", Action::Replace);
        fabric.changes = vec![change("infiniband_fabric", "fabric-2", "fabric-3")];
        let mut pruned = action("cluster", "old", Action::Delete);
        pruned.reason = "removed from the spec".into();
        let plan = plan(
            vec![ProjectPlan {
                key: "p".into(),
                actions: vec![
                    action("project", "eng-p", Action::Reuse),
                    action("subnet", "p-subnet", Action::Delete),
                    action("bucket", "(generated name)", Action::Create),
                ],
                problems: Vec::new(),
            }],
            vec![
                target("p/a", vec![stale, replaced], false),
                target(
                    "p/b",
                    vec![
                        shrunk,
                        grown,
                        disk,
                        fabric,
                        action("cluster", "b", Action::Update),
                    ],
                    false,
                ),
                target("p/old", vec![pruned], true),
            ],
        );
        let all = plan.destructive();
        let got: Vec<(&str, &str, &str, Action, &str)> = all
            .iter()
            .map(|d| {
                (
                    d.target.as_str(),
                    d.resource,
                    d.name.as_str(),
                    d.action,
                    d.why.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("p", "subnet", "p-subnet", Action::Delete, "deleted"),
                (
                    "p/a",
                    "node-group",
                    "a-ng-gpu-1",
                    Action::Delete,
                    "no longer in the spec"
                ),
                (
                    "p/a",
                    "node-group",
                    "a-ng-cpu",
                    Action::Replace,
                    "replaced: preset cannot change in place"
                ),
                (
                    "p/b",
                    "node-group",
                    "b-ng-cpu",
                    Action::Update,
                    "shrinks from 4 to 2 nodes"
                ),
                (
                    "p/b",
                    "gpu-cluster",
                    "b-fabric-2",
                    Action::Replace,
                    "replaced: infiniband_fabric cannot change in place"
                ),
                (
                    "p/old",
                    "cluster",
                    "old",
                    Action::Delete,
                    "removed from the spec"
                ),
            ]
        );
        let json = serde_json::to_value(&all[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"target": "p", "resource": "subnet", "name": "p-subnet", "action": "delete", "why": "deleted"})
        );
    }

    #[test]
    fn a_quiet_plan_has_nothing_destructive() {
        let plan = plan(
            Vec::new(),
            vec![target(
                "p/a",
                vec![
                    action("cluster", "a", Action::NoChange),
                    action("node-group", "a-ng-cpu", Action::Create),
                ],
                false,
            )],
        );
        assert!(plan.destructive().is_empty());
    }

    /// Issue #32: what deletes or shrinks inside a target is destructive like a pruned
    /// target: a detached filesystem and a lowered bucket cap too, not only deletions.
    #[test]
    fn a_detached_filesystem_and_a_lowered_bucket_cap_are_destructive() {
        let gib = |n: i64| (n << 30).to_string();
        let mut lowered = action("bucket", "(generated name)", Action::Update);
        lowered.changes = vec![change("max_size_bytes", &gib(2048), &gib(1024))];
        let mut raised = action("bucket", "(explicit name)", Action::Update);
        raised.changes = vec![change("max_size_bytes", &gib(1024), &gib(2048))];
        let mut detached = action("node-group", "a-ng-cpu", Action::Update);
        detached.changes = vec![change("filesystems", "(current)", "(spec)")];
        detached.reason = DETACHES_FILESYSTEM.into();
        let mut attached = action("node-group", "a-ng-gpu-0", Action::Update);
        attached.changes = vec![change("filesystems", "(current)", "(spec)")];
        let mut gone = action("node-group", "a-ng-gpu-1", Action::Delete);
        gone.reason = "no longer in the spec".into();
        let mut pruned = action("cluster", "old", Action::Delete);
        pruned.reason = "removed from the spec".into();
        let plan = plan(
            vec![
                ProjectPlan {
                    key: "p".into(),
                    actions: vec![lowered],
                    problems: Vec::new(),
                },
                ProjectPlan {
                    key: "q".into(),
                    actions: vec![raised],
                    problems: Vec::new(),
                },
            ],
            vec![
                target("p/a", vec![detached, attached, gone], false),
                target("p/old", vec![pruned], true),
            ],
        );
        let lines: Vec<String> = plan.destructive().iter().map(Destructive::line).collect();
        assert_eq!(
            lines,
            [
                "change bucket (generated name) in project p: size cap lowered from 2048 GiB to 1024 GiB",
                "change node-group a-ng-cpu in p/a: detaches a filesystem its nodes mount",
                "delete node-group a-ng-gpu-1 in p/a: no longer in the spec",
                "delete cluster old in p/old: removed from the spec",
            ]
        );
        // Within the declared targets: everything but the pruned target's deletions.
        let within: Vec<String> = plan
            .destructive_within()
            .iter()
            .map(|d| d.target.clone())
            .collect();
        assert_eq!(within, ["p", "p/a", "p/a"]);
    }
}
