//! Targets the inventory records that the spec no longer declares: read by their recorded IDs
//! and planned as deletions, with the same ownership proof destroy requires.
//!
//! Nothing is found by name alone: the recorded cluster, GPU cluster and filesystem are read by
//! ID (a cluster created by a run that crashed before recording its ID is found by name *and*
//! this target's labels, as destroy does), so an orphan never reaches a resource fleetbot did
//! not make for it.

use super::types::{Action, Problem, ProblemKind, ResourceAction, TargetPlan};
use crate::cloud::domain::{
    Cloud, CloudResult, Cluster, Filesystem, GpuCluster, Labels, NodeGroup,
};
use crate::engine::desired::owned_by;
use crate::store::{ProjectRecord, TargetRecord};

/// Why a pruned resource is deleted, as its actions say.
pub const REMOVED_FROM_SPEC: &str = "removed from the spec";

/// What exists of one target the spec no longer declares.
#[derive(Debug, Clone, Default)]
pub struct ObservedPrune {
    /// The inventory's record, its project ID taken from the project record where it has one.
    pub record: TargetRecord,
    /// The recorded cluster, if it still exists (whether or not it is proven ours).
    pub cluster: Option<Cluster>,
    /// The node groups of that cluster.
    pub node_groups: Vec<NodeGroup>,
    pub gpu_cluster: Option<GpuCluster>,
    /// The filesystem fleetbot created for the target, if it still exists.
    pub filesystem: Option<Filesystem>,
}

fn absent_if_not_found<T>(read: CloudResult<T>) -> CloudResult<Option<T>> {
    match read {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The recorded cluster by its ID; without one, the cluster of the record's name that carries
/// this target's labels.
async fn recorded_cluster<C: Cloud>(
    cloud: &C,
    fleet: &str,
    record: &TargetRecord,
) -> CloudResult<Option<Cluster>> {
    if !record.cluster_id.is_empty() {
        return absent_if_not_found(cloud.get_cluster(&record.cluster_id).await);
    }
    let clusters = absent_if_not_found(cloud.list_clusters(&record.project_id).await)?;
    Ok(clusters.into_iter().flatten().find(|c| {
        c.name == record.cluster_name
            && owned_by(&c.labels, fleet, &record.project_key, &record.cluster_name)
    }))
}

/// Reads what exists of one recorded target. Reads only.
async fn observe_one<C: Cloud>(
    cloud: &C,
    fleet: &str,
    mut record: TargetRecord,
    project: Option<&ProjectRecord>,
) -> CloudResult<ObservedPrune> {
    if let Some(id) = project.map(|p| &p.project_id).filter(|id| !id.is_empty()) {
        record.project_id = id.clone();
    }
    let mut obs = ObservedPrune::default();
    if record.project_id.is_empty() {
        // Without a project nothing can be proven, and the plan says so.
        obs.record = record;
        return Ok(obs);
    }
    obs.cluster = recorded_cluster(cloud, fleet, &record).await?;
    if let Some(c) = &obs.cluster {
        obs.node_groups =
            absent_if_not_found(cloud.list_node_groups(&c.id).await)?.unwrap_or_default();
    }
    if !record.gpu_cluster_id.is_empty() {
        let all = absent_if_not_found(cloud.list_gpu_clusters(&record.project_id).await)?;
        obs.gpu_cluster = all
            .into_iter()
            .flatten()
            .find(|g| g.id == record.gpu_cluster_id);
    }
    if record.filesystem_created && !record.filesystem_id.is_empty() {
        obs.filesystem = absent_if_not_found(cloud.get_filesystem(&record.filesystem_id).await)?;
    }
    obs.record = record;
    Ok(obs)
}

/// Reads what exists of each recorded target the spec no longer declares. Reads only.
pub async fn observe_pruned<C: Cloud>(
    cloud: &C,
    fleet: &str,
    records: &[TargetRecord],
    project_records: &[ProjectRecord],
) -> CloudResult<Vec<ObservedPrune>> {
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        let project = project_records
            .iter()
            .find(|p| p.project_key == record.project_key);
        out.push(observe_one(cloud, fleet, record.clone(), project).await?);
    }
    Ok(out)
}

fn deletion(resource: &'static str, name: &str) -> ResourceAction {
    let mut a = ResourceAction::new(resource, name, Action::Delete);
    a.reason = REMOVED_FROM_SPEC.into();
    a
}

/// One pruned target's plan as it is built, in teardown order.
struct PruneDiff<'a> {
    fleet: &'a str,
    obs: &'a ObservedPrune,
    actions: Vec<ResourceAction>,
    problems: Vec<Problem>,
}

impl PruneDiff<'_> {
    fn owned(&self, labels: &Labels) -> bool {
        let r = &self.obs.record;
        owned_by(labels, self.fleet, &r.project_key, &r.cluster_name)
    }

    fn not_owned(&mut self, what: &str) {
        // Spec names only: the record's IDs stay out of the text, which may reach a pull request.
        self.problems.push(Problem::new(
            ProblemKind::NotOwned,
            format!(
                "{what} recorded for this target, which the spec no longer declares, is not proven this fleet target's (project, name or ownership labels differ); refusing to delete it"
            ),
        ));
    }

    /// The cluster's node groups, then the cluster, as destroy deletes them.
    fn cluster(&mut self) {
        let obs = self.obs;
        let r = &obs.record;
        let Some(c) = &obs.cluster else {
            let mut a = ResourceAction::new("cluster", &r.cluster_name, Action::NoChange);
            a.reason = "already gone; deploy --prune drops its record".into();
            self.actions.push(a);
            return;
        };
        let proven =
            c.project_id == r.project_id && c.name == r.cluster_name && self.owned(&c.labels);
        if !proven {
            self.not_owned(&format!("the cluster {:?}", r.cluster_name));
            return;
        }
        for g in &obs.node_groups {
            if self.owned(&g.labels) {
                self.actions.push(deletion("node-group", &g.name));
            } else {
                self.problems.push(Problem::new(
                    ProblemKind::NotOwned,
                    format!(
                        "node group {:?} in the cluster {:?} is not managed by fleetbot; refusing to delete the cluster",
                        g.name, r.cluster_name
                    ),
                ));
            }
        }
        self.actions.push(deletion("cluster", &r.cluster_name));
    }

    fn gpu_cluster(&mut self) {
        let Some(g) = &self.obs.gpu_cluster else {
            return;
        };
        if self.owned(&g.labels) {
            self.actions.push(deletion("gpu-cluster", &g.name));
        } else {
            self.not_owned("the GPU cluster");
        }
    }

    fn filesystem(&mut self) {
        let Some(fs) = &self.obs.filesystem else {
            return;
        };
        if self.owned(&fs.labels) {
            self.actions.push(deletion("filesystem", &fs.name));
        } else {
            self.not_owned("the filesystem");
        }
    }
}

/// The plan of one target the spec no longer declares: everything fleetbot made for it is
/// deleted, and anything not proven its own is a problem that stops the apply.
pub(super) fn plan_pruned(fleet: &str, obs: &ObservedPrune) -> TargetPlan {
    let r = &obs.record;
    let mut diff = PruneDiff {
        fleet,
        obs,
        actions: Vec::new(),
        problems: Vec::new(),
    };
    if r.project_id.is_empty() {
        diff.problems.push(Problem::new(
            ProblemKind::NotOwned,
            "the inventory records no project for this target, which the spec no longer declares; refusing destructive name inference",
        ));
    } else {
        diff.cluster();
        diff.gpu_cluster();
        diff.filesystem();
    }
    TargetPlan {
        target: format!("{}/{}", r.project_key, r.cluster_name),
        actions: diff.actions,
        unchanged: false,
        problems: diff.problems,
        prune: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::domain::State;
    use crate::engine::desired::target_labels;

    fn record() -> TargetRecord {
        TargetRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            cluster_name: "old".into(),
            project_id: "project-1".into(),
            cluster_id: "cluster-1".into(),
            ..Default::default()
        }
    }

    fn cluster(labels: Labels) -> Cluster {
        Cluster {
            id: "cluster-1".into(),
            resource_version: 1,
            project_id: "project-1".into(),
            name: "old".into(),
            spec: Default::default(),
            state: State::Ready,
            public_endpoint: String::new(),
            ca_certificate: String::new(),
            version: String::new(),
            labels,
        }
    }

    fn node_group(name: &str, labels: Labels) -> NodeGroup {
        NodeGroup {
            id: "ng-1".into(),
            resource_version: 1,
            cluster_id: "cluster-1".into(),
            name: name.into(),
            spec: Default::default(),
            state: State::Ready,
            node_count: 1,
            ready_node_count: 1,
            labels,
        }
    }

    #[test]
    fn a_proven_orphan_is_deleted_in_teardown_order_by_names_only() {
        let labels = target_labels("f", "a", "old");
        let obs = ObservedPrune {
            record: record(),
            cluster: Some(cluster(labels.clone())),
            node_groups: vec![node_group("old-ng-cpu", labels.clone())],
            filesystem: Some(Filesystem {
                id: "fs-1".into(),
                resource_version: 1,
                project_id: "project-1".into(),
                name: "old-shared-fs".into(),
                size_gibibytes: 256,
                state: State::Ready,
                labels,
            }),
            ..Default::default()
        };
        let plan = plan_pruned("f", &obs);
        assert!(plan.prune && plan.problems.is_empty(), "{plan:?}");
        let actions: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.resource, a.name.as_str(), a.action, a.reason.as_str()))
            .collect();
        assert_eq!(
            actions,
            [
                (
                    "node-group",
                    "old-ng-cpu",
                    Action::Delete,
                    REMOVED_FROM_SPEC
                ),
                ("cluster", "old", Action::Delete, REMOVED_FROM_SPEC),
                (
                    "filesystem",
                    "old-shared-fs",
                    Action::Delete,
                    REMOVED_FROM_SPEC
                ),
            ]
        );
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains(r#""prune":true"#), "{json}");
        assert!(!json.contains("-1"), "no cloud ID in the plan: {json}");
    }

    #[test]
    fn an_unlabelled_cluster_is_a_problem_and_a_gone_one_is_only_said() {
        let obs = ObservedPrune {
            record: record(),
            cluster: Some(cluster(Labels::new())),
            ..Default::default()
        };
        let plan = plan_pruned("f", &obs);
        assert_eq!(plan.problems.len(), 1, "{plan:?}");
        assert_eq!(plan.problems[0].kind, ProblemKind::NotOwned);
        assert!(plan.actions.iter().all(|a| a.action != Action::Delete));
        assert!(!plan.problems[0].message.contains("cluster-1"));

        let gone = plan_pruned(
            "f",
            &ObservedPrune {
                record: record(),
                ..Default::default()
            },
        );
        assert!(gone.problems.is_empty());
        assert_eq!(gone.actions.len(), 1);
        assert_eq!(gone.actions[0].action, Action::NoChange);
        assert!(gone.actions[0].reason.contains("already gone"));
    }
}
