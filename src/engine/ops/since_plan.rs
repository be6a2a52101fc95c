//! Applying exactly what was approved: before a target is changed, the cloud must still hold
//! it as the plan that was shown (to a person at a prompt) or judged (by the App's guard) read
//! it. A target changed by hand in between is not touched, so nothing happens that nobody was
//! shown — a pool grown by hand is not shrunk back, a node group added by hand is not deleted.

use super::apply::Apply;
use crate::cloud::domain::{
    Cloud, CloudResult, Cluster, Filesystem, GpuCluster, NodeGroup, Release,
};
use crate::engine::desired::{DesiredFilesystem, DesiredTarget};
use crate::engine::live::ObservedProject;
use crate::store::{InventoryStore, ProjectRecord};

/// What a target's result says when the cloud changed since the plan was read.
pub const CHANGED_SINCE_PLAN: &str = "the cloud changed since the plan was shown";

/// The most differences named in one message.
const NAMED: usize = 3;

/// A target's resources as the cloud holds them now.
#[derive(Debug, Default)]
pub(super) struct Now {
    pub cluster: Option<Cluster>,
    pub node_groups: Vec<NodeGroup>,
    pub filesystem: Option<Filesystem>,
    pub gpu_cluster: Option<GpuCluster>,
    /// `None` when the plan did not read the cluster's releases, so they are not compared.
    pub releases: Option<Vec<Release>>,
}

impl<C: Cloud, S: InventoryStore> Apply<'_, C, S> {
    /// What changed in the cloud, for `target`, since `observed` was read: `None` when
    /// nothing did. A project fleetbot has just created held nothing when the plan was read
    /// and holds nothing else now.
    pub(super) async fn changed_since_plan(
        &self,
        target: &DesiredTarget,
        project: &ProjectRecord,
        observed: &ObservedProject,
    ) -> CloudResult<Option<String>> {
        if project.project_id.is_empty() || observed.project.is_none() {
            return Ok(None);
        }
        let now = self.read_now(target, &project.project_id, observed).await?;
        let filesystem = match &target.filesystem {
            Some(DesiredFilesystem::Create { name, .. }) => Some(name.as_str()),
            _ => None,
        };
        let gpu_cluster = target.gpu_cluster.as_ref().map(|(name, _)| name.as_str());
        Ok(differences(
            &target.key.cluster,
            filesystem,
            gpu_cluster,
            observed,
            &now,
        ))
    }

    async fn read_now(
        &self,
        target: &DesiredTarget,
        project_id: &str,
        observed: &ObservedProject,
    ) -> CloudResult<Now> {
        let key = &target.key;
        let cluster = self
            .cloud
            .list_clusters(project_id)
            .await?
            .into_iter()
            .find(|c| c.name == key.cluster);
        let node_groups = match &cluster {
            Some(c) => self.cloud.list_node_groups(&c.id).await?,
            None => Vec::new(),
        };
        let filesystem = match &target.filesystem {
            Some(DesiredFilesystem::Create { name, .. }) => self
                .cloud
                .list_filesystems(project_id)
                .await?
                .into_iter()
                .find(|f| &f.name == name),
            _ => None,
        };
        let gpu_cluster = match &target.gpu_cluster {
            Some((name, _)) => self
                .cloud
                .list_gpu_clusters(project_id)
                .await?
                .into_iter()
                .find(|g| &g.name == name),
            None => None,
        };
        let releases = match &cluster {
            Some(c) if observed.releases.contains_key(&c.id) => {
                Some(self.cloud.list_releases(project_id, &c.id).await?)
            }
            _ => None,
        };
        Ok(Now {
            cluster,
            node_groups,
            filesystem,
            gpu_cluster,
            releases,
        })
    }
}

/// What differs between the plan's reading of a target (its cluster, the filesystem and GPU
/// cluster it creates) and the cloud now, in words that name resources by their names (never
/// an ID); `None` when nothing does.
pub(super) fn differences(
    cluster: &str,
    filesystem: Option<&str>,
    gpu_cluster: Option<&str>,
    observed: &ObservedProject,
    now: &Now,
) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    let then_cluster = observed.clusters.iter().find(|c| c.name == cluster);
    match (then_cluster, &now.cluster) {
        (None, Some(_)) => found.push("its cluster was created".into()),
        (Some(_), None) => found.push("its cluster was deleted".into()),
        (Some(a), Some(b))
            if a.id != b.id || a.resource_version != b.resource_version || a.labels != b.labels =>
        {
            found.push("its cluster was changed".into())
        }
        _ => {}
    }
    let then_groups: &[NodeGroup] = then_cluster
        .and_then(|c| observed.node_groups.get(&c.id))
        .map_or(&[], Vec::as_slice);
    for g in then_groups {
        match now.node_groups.iter().find(|n| n.name == g.name) {
            None => found.push(format!("node group {} was deleted", g.name)),
            Some(n)
                if n.id != g.id
                    || n.resource_version != g.resource_version
                    || n.labels != g.labels =>
            {
                found.push(format!("node group {} was changed", g.name))
            }
            Some(_) => {}
        }
    }
    for n in &now.node_groups {
        if !then_groups.iter().any(|g| g.name == n.name) {
            found.push(format!("node group {} was added", n.name));
        }
    }
    if let Some(name) = filesystem {
        let then = observed.filesystems.iter().find(|f| f.name == name);
        let same = as_read(then, now.filesystem.as_ref(), |a, b| {
            a.id == b.id && a.resource_version == b.resource_version && a.labels == b.labels
        });
        if !same {
            found.push(format!("filesystem {name} was created, deleted or changed"));
        }
    }
    if let Some(name) = gpu_cluster {
        let then = observed.gpu_clusters.iter().find(|g| g.name == name);
        let same = as_read(then, now.gpu_cluster.as_ref(), |a, b| {
            a.id == b.id && a.infiniband_fabric == b.infiniband_fabric && a.labels == b.labels
        });
        if !same {
            found.push(format!(
                "GPU cluster {name} was created, deleted or changed"
            ));
        }
    }
    if let (Some(c), Some(releases)) = (&now.cluster, &now.releases) {
        let then = observed.releases.get(&c.id).map_or(&[][..], Vec::as_slice);
        let shape = |r: &Release| {
            (
                r.id.clone(),
                r.product_slug.clone(),
                r.namespace.clone(),
                r.application_name.clone(),
            )
        };
        let mut a: Vec<_> = then.iter().map(shape).collect();
        let mut b: Vec<_> = releases.iter().map(shape).collect();
        a.sort();
        b.sort();
        if a != b {
            found.push("its add-on releases were changed".into());
        }
    }
    if found.is_empty() {
        return None;
    }
    let more = found.len().saturating_sub(NAMED);
    found.truncate(NAMED);
    let mut text = found.join("; ");
    if more > 0 {
        text.push_str(&format!("; {more} more"));
    }
    Some(text)
}

/// Whether a resource is as the plan read it: absent then and now, or present both times and
/// `same`.
fn as_read<T>(then: Option<&T>, now: Option<&T>, same: impl Fn(&T, &T) -> bool) -> bool {
    match (then, now) {
        (None, None) => true,
        (Some(a), Some(b)) => same(a, b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::domain::{ClusterSpec, Labels, NodeGroupSpec, State};

    fn group(name: &str, id: &str, version: i64, count: i64) -> NodeGroup {
        NodeGroup {
            id: id.into(),
            resource_version: version,
            cluster_id: "mk8scluster-1".into(),
            name: name.into(),
            spec: NodeGroupSpec {
                node_count: count,
                ..Default::default()
            },
            state: State::Ready,
            node_count: count,
            ready_node_count: count,
            labels: Labels::new(),
        }
    }

    fn cluster(id: &str, version: i64) -> Cluster {
        Cluster {
            id: id.into(),
            resource_version: version,
            project_id: "project-1".into(),
            name: "c".into(),
            spec: ClusterSpec::default(),
            state: State::Ready,
            public_endpoint: String::new(),
            ca_certificate: String::new(),
            version: String::new(),
            labels: Labels::new(),
        }
    }

    /// The differences of cluster `c`, which creates no filesystem or GPU cluster.
    fn of(then: &ObservedProject, now: &Now) -> Option<String> {
        differences("c", None, None, then, now)
    }

    fn observed(groups: Vec<NodeGroup>) -> ObservedProject {
        let mut o = ObservedProject {
            clusters: vec![cluster("mk8scluster-1", 3)],
            ..Default::default()
        };
        o.node_groups.insert("mk8scluster-1".into(), groups);
        o
    }

    #[test]
    fn a_target_as_the_plan_read_it_has_no_difference() {
        let then = observed(vec![group("cpu", "ng-1", 2, 2), group("gpu", "ng-2", 5, 1)]);
        let now = Now {
            cluster: Some(cluster("mk8scluster-1", 3)),
            node_groups: vec![group("gpu", "ng-2", 5, 1), group("cpu", "ng-1", 2, 2)],
            ..Default::default()
        };
        assert_eq!(of(&then, &now), None);
    }

    #[test]
    fn each_change_by_hand_is_named_without_an_id() {
        let then = observed(vec![group("cpu", "ng-1", 2, 2), group("gpu", "ng-2", 5, 1)]);
        // The GPU pool grown by hand (a spec change: a new version), a group added.
        let now = Now {
            cluster: Some(cluster("mk8scluster-1", 3)),
            node_groups: vec![
                group("cpu", "ng-1", 2, 2),
                group("gpu", "ng-2", 6, 2),
                group("extra", "ng-3", 1, 1),
            ],
            ..Default::default()
        };
        let found = of(&then, &now).unwrap();
        assert_eq!(
            found,
            "node group gpu was changed; node group extra was added"
        );
        assert!(!found.contains("ng-"), "{found}");
        // Deleted, and the cluster with it.
        let gone = Now::default();
        assert_eq!(
            of(&then, &gone).unwrap(),
            "its cluster was deleted; node group cpu was deleted; node group gpu was deleted"
        );
        // Created by hand where the plan saw nothing.
        let empty = ObservedProject::default();
        let made = Now {
            cluster: Some(cluster("mk8scluster-9", 1)),
            ..Default::default()
        };
        assert_eq!(of(&empty, &made).unwrap(), "its cluster was created");
        // Labels count as a change; many changes are counted, not all named.
        let mut relabelled = cluster("mk8scluster-1", 3);
        relabelled.labels = Labels::from([("team".to_string(), "x".to_string())]);
        let now = Now {
            cluster: Some(relabelled),
            node_groups: (0..5).map(|i| group(&format!("g{i}"), "x", 1, 1)).collect(),
            ..Default::default()
        };
        assert_eq!(
            of(&then, &now).unwrap(),
            "its cluster was changed; node group cpu was deleted; node group gpu was deleted; 5 more"
        );
    }
}
