//! Which clusters' Kubernetes view a change may have altered, so the simulator's Kubernetes
//! side re-reads only those: during a deploy of 1,000 clusters the cloud's generation moves
//! with every operation, and re-reading every cluster at each move was most of its CPU.
//!
//! A cluster's view (`k8s::nodes::views`) reads the cluster, its node groups, its deployed
//! releases, its project's region and the filesystems' sizes. A change to a cluster, node
//! group or release touches its one cluster; a change to a project or a filesystem, or a
//! caller reaching into the state directly, touches every cluster; any other kind (networks,
//! buckets, accounts) touches none.

use std::any::Any;
use std::collections::HashMap;

use super::Core;
use crate::cloud::nid;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::sim::resources::Resource;

/// The clusters a change reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reach {
    Nothing,
    Cluster(String),
    Everything,
}

/// Generations of the last change to each cluster's view, and to every cluster's.
#[derive(Debug, Default)]
pub(super) struct Touched {
    clusters: HashMap<String, u64>,
    everything: u64,
}

/// The clusters whose view may differ from one read at a given generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// Any cluster's.
    Every,
    /// These clusters' only (a cluster here may no longer exist).
    Clusters(Vec<String>),
}

impl Touched {
    pub(super) fn mark(&mut self, reach: Reach, generation: u64) {
        match reach {
            Reach::Nothing => {}
            Reach::Cluster(id) => {
                self.clusters.insert(id, generation);
            }
            Reach::Everything => {
                self.everything = generation;
                // Every cluster is due anyway: what was held per cluster says nothing more.
                self.clusters.clear();
            }
        }
    }

    fn reached(&self, id: &str, generation: u64) -> bool {
        self.everything > generation || self.clusters.get(id).is_some_and(|at| *at > generation)
    }

    fn since(&self, generation: u64) -> Since {
        if self.everything > generation {
            return Since::Every;
        }
        Since::Clusters(
            self.clusters
                .iter()
                .filter(|(_, at)| **at > generation)
                .map(|(id, _)| id.clone())
                .collect(),
        )
    }
}

/// What a change to `resource` reaches.
pub(super) fn reach_of<R: Resource>(resource: &R) -> Reach {
    match R::KIND {
        "mk8scluster" => Reach::Cluster(resource.id().to_string()),
        "mk8snodegroup" => Reach::Cluster(resource.parent_id().to_string()),
        "applicationrelease" => (resource as &dyn Any)
            .downcast_ref::<apps::K8sRelease>()
            .and_then(|r| r.spec.as_ref())
            .map_or(Reach::Everything, |s| Reach::Cluster(s.cluster_id.clone())),
        "project" | "computefilesystem" => Reach::Everything,
        _ => Reach::Nothing,
    }
}

impl Core {
    /// The clusters whose Kubernetes view may have changed since the world's generation was
    /// `generation`.
    pub fn touched_since(&self, generation: u64) -> Since {
        self.touched.since(generation)
    }

    /// Whether a change since the world's generation was `generation` may have altered
    /// cluster `id`'s view.
    pub fn touched_after(&self, id: &str, generation: u64) -> bool {
        self.touched.reached(id, generation)
    }

    /// Marks what a change to the resource with this ID reaches, at the generation the caller
    /// moved to and before the change (a completed operation reaches into its resource
    /// directly).
    pub(super) fn touch_id(&mut self, id: &str) {
        let kind = nid::parse(id)
            .map(|n| n.kind.to_string())
            .unwrap_or_default();
        let reach = match kind.as_str() {
            "mk8scluster" => Reach::Cluster(id.to_string()),
            "mk8snodegroup" => self
                .find::<mk8s::NodeGroup>(id)
                .map_or(Reach::Nothing, reach_of),
            "applicationrelease" => self
                .find::<apps::K8sRelease>(id)
                .map_or(Reach::Nothing, reach_of),
            "project" | "computefilesystem" => Reach::Everything,
            _ => Reach::Nothing,
        };
        self.touched.mark(reach, self.generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_due_to_the_clusters_it_reaches_until_read() {
        let mut t = Touched::default();
        t.mark(Reach::Cluster("c1".into()), 3);
        t.mark(Reach::Cluster("c2".into()), 5);
        t.mark(Reach::Nothing, 6);
        assert_eq!(sorted(&t, 0), ["c1", "c2"]);
        assert_eq!(sorted(&t, 3), ["c2"]);
        assert_eq!(t.since(5), Since::Clusters(vec![]));
        assert!(t.reached("c1", 2) && !t.reached("c1", 3) && !t.reached("c3", 0));
        t.mark(Reach::Everything, 7);
        assert!(t.reached("c3", 6) && !t.reached("c3", 7));
        assert_eq!(t.since(6), Since::Every);
        assert_eq!(t.since(7), Since::Clusters(vec![]));
        t.mark(Reach::Cluster("c1".into()), 8);
        assert_eq!(sorted(&t, 7), ["c1"]);
    }

    #[test]
    fn changes_reach_the_clusters_whose_view_they_alter() {
        use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
        use crate::cloud::proto::nebius::vpc::v1 as vpc;
        let world = crate::sim::world::World::from_yaml(
            "name: t\nregions: [eu-north1]\nprojects: [{name: p, region: eu-north1}]\n",
        )
        .unwrap();
        let mut core = Core::new(world, None).unwrap();
        let meta = |id: &str, parent: &str| {
            Some(ResourceMetadata {
                id: id.into(),
                parent_id: parent.into(),
                ..Default::default()
            })
        };
        let (c1, c2) = ("mk8scluster-e00one", "mk8scluster-e00two");
        for c in [c1, c2] {
            core.insert(mk8s::Cluster {
                metadata: meta(c, "project-e00p"),
                ..Default::default()
            });
        }
        let group = "mk8snodegroup-e00g";
        core.insert(mk8s::NodeGroup {
            metadata: meta(group, c2),
            ..Default::default()
        });
        let release = "applicationrelease-e00r";
        core.insert(apps::K8sRelease {
            metadata: meta(release, "project-e00p"),
            spec: Some(apps::K8sReleaseSpec {
                cluster_id: c1.into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let at = |core: &Core| core.generation();
        let named = |core: &Core, since: u64| match core.touched_since(since) {
            Since::Clusters(mut ids) => {
                ids.sort();
                ids
            }
            Since::Every => vec!["every".to_string()],
        };

        // A node group's change reaches its cluster, a release's its cluster_id's.
        let before = at(&core);
        core.find_mut::<mk8s::NodeGroup>(group).unwrap();
        assert_eq!(named(&core, before), [c2]);
        // As a completed operation does: the generation moves, then what it reaches.
        let before = at(&core);
        core.generation += 1;
        core.touch_id(release);
        assert_eq!(named(&core, before), [c1]);
        // A network reaches no cluster's view.
        let before = at(&core);
        core.insert(vpc::Network {
            metadata: meta("vpcnetwork-e00n", "project-e00p"),
            ..Default::default()
        });
        assert!(named(&core, before).is_empty());
        // Removing a cluster reaches it, so the Kubernetes side drops it.
        let before = at(&core);
        core.remove::<mk8s::Cluster>(c1).unwrap();
        assert_eq!(named(&core, before), [c1]);
        // A project's change (its region) and a direct reach into the state reach all.
        let before = at(&core);
        core.generation += 1;
        core.touch_id("project-e00p");
        assert_eq!(named(&core, before), ["every"]);
        let before = at(&core);
        core.forget_positions();
        assert_eq!(named(&core, before), ["every"]);
    }

    /// A change to the world, by index into small pools of IDs.
    #[derive(Debug, Clone)]
    enum Change {
        AddCluster(u8, bool),
        StopCluster(u8),
        RemoveCluster(u8),
        AddGroup(u8, u8, i64),
        Scale(u8, i64),
        RemoveGroup(u8),
        AddRelease(u8, u8, bool),
        Deploy(u8, bool),
        AddNetwork(u8),
    }

    fn change() -> impl proptest::strategy::Strategy<Value = Change> {
        use proptest::prelude::*;
        prop_oneof![
            (0..4u8, any::<bool>()).prop_map(|(c, up)| Change::AddCluster(c, up)),
            (0..4u8).prop_map(Change::StopCluster),
            (0..4u8).prop_map(Change::RemoveCluster),
            (0..6u8, 0..4u8, 0..3i64).prop_map(|(g, c, n)| Change::AddGroup(g, c, n)),
            (0..6u8, 0..3i64).prop_map(|(g, n)| Change::Scale(g, n)),
            (0..6u8).prop_map(Change::RemoveGroup),
            (0..4u8, 0..4u8, any::<bool>()).prop_map(|(r, c, ok)| Change::AddRelease(r, c, ok)),
            (0..4u8, any::<bool>()).prop_map(|(r, ok)| Change::Deploy(r, ok)),
            (0..4u8).prop_map(Change::AddNetwork),
        ]
    }

    fn apply(core: &mut Core, change: &Change) {
        use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
        use crate::cloud::proto::nebius::vpc::v1 as vpc;
        let project = core.state.projects[0].id().to_string();
        let meta = |id: String, parent: &str| {
            Some(ResourceMetadata {
                id,
                parent_id: parent.into(),
                ..Default::default()
            })
        };
        let cluster = |c: u8| format!("mk8scluster-e00c{c}");
        let group = |g: u8| format!("mk8snodegroup-e00g{g}");
        let release = |r: u8| format!("applicationrelease-e00r{r}");
        let state = |up: bool| mk8s::ClusterStatus {
            state: if up {
                mk8s::cluster_status::State::Running as i32
            } else {
                mk8s::cluster_status::State::Provisioning as i32
            },
            ..Default::default()
        };
        let deployed = |ok: bool| apps::K8sReleaseStatus {
            state: if ok {
                apps::k8s_release_status::State::Deployed as i32
            } else {
                apps::k8s_release_status::State::Installing as i32
            },
            ..Default::default()
        };
        match *change {
            Change::AddCluster(c, up) if core.find::<mk8s::Cluster>(&cluster(c)).is_none() => core
                .insert(mk8s::Cluster {
                    metadata: meta(cluster(c), &project),
                    status: Some(state(up)),
                    ..Default::default()
                }),
            Change::StopCluster(c) => {
                if let Some(found) = core.find_mut::<mk8s::Cluster>(&cluster(c)) {
                    found.status = Some(state(false));
                }
            }
            Change::RemoveCluster(c) => {
                core.remove::<mk8s::Cluster>(&cluster(c));
            }
            Change::AddGroup(g, c, n) if core.find::<mk8s::NodeGroup>(&group(g)).is_none() => core
                .insert(mk8s::NodeGroup {
                    metadata: meta(group(g), &cluster(c)),
                    status: Some(mk8s::NodeGroupStatus {
                        node_count: n,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            Change::Scale(g, n) => {
                if let Some(found) = core.find_mut::<mk8s::NodeGroup>(&group(g)) {
                    found.status.get_or_insert_with(Default::default).node_count = n;
                }
            }
            Change::RemoveGroup(g) => {
                core.remove::<mk8s::NodeGroup>(&group(g));
            }
            Change::AddRelease(r, c, ok)
                if core.find::<apps::K8sRelease>(&release(r)).is_none() =>
            {
                core.insert(apps::K8sRelease {
                    metadata: meta(release(r), &project),
                    spec: Some(apps::K8sReleaseSpec {
                        cluster_id: cluster(c),
                        product_slug: "nebius/nvidia-gpu-operator".into(),
                        ..Default::default()
                    }),
                    status: Some(deployed(ok)),
                })
            }
            Change::Deploy(r, ok) => {
                if let Some(found) = core.find_mut::<apps::K8sRelease>(&release(r)) {
                    found.status = Some(deployed(ok));
                }
            }
            Change::AddNetwork(n) => core.insert(vpc::Network {
                metadata: meta(format!("vpcnetwork-e00n{n}"), &project),
                ..Default::default()
            }),
            _ => {}
        }
    }

    proptest::proptest! {
        /// Views kept up to date by reading only the clusters each change reached are the
        /// views of every cluster read afresh, after any sequence of changes and reads.
        #[test]
        fn reading_what_changes_reached_keeps_every_view_true(
            changes in proptest::collection::vec((change(), proptest::bool::ANY), 1..40)
        ) {
            use std::collections::{BTreeMap, HashSet};
            use crate::sim::k8s::nodes::views;
            use crate::sim::k8s::scope::Scope;
            let world = crate::sim::world::World::from_yaml(
                "name: t\nregions: [eu-north1]\nprojects: [{name: p, region: eu-north1}]\n",
            )
            .unwrap();
            let mut core = Core::new(world, None).unwrap();
            let by_id = |v: Vec<crate::sim::k8s::nodes::ClusterView>| {
                v.into_iter().map(|v| (v.id.clone(), v)).collect::<BTreeMap<_, _>>()
            };
            let mut kept = by_id(views(&core, Scope::Every));
            let mut read_at = core.generation();
            for (change, read) in &changes {
                apply(&mut core, change);
                if !read {
                    continue;
                }
                match core.touched_since(read_at) {
                    Since::Every => kept = by_id(views(&core, Scope::Every)),
                    Since::Clusters(ids) => {
                        let ids: HashSet<String> = ids.into_iter().collect();
                        let fresh = by_id(views(&core, Scope::Named(&ids)));
                        for id in &ids {
                            match fresh.get(id) {
                                Some(v) => kept.insert(id.clone(), v.clone()),
                                None => kept.remove(id),
                            };
                        }
                    }
                }
                read_at = core.generation();
                proptest::prop_assert_eq!(&kept, &by_id(views(&core, Scope::Every)));
            }
        }
    }

    fn sorted(t: &Touched, generation: u64) -> Vec<String> {
        match t.since(generation) {
            Since::Clusters(mut ids) => {
                ids.sort();
                ids
            }
            Since::Every => panic!("every cluster"),
        }
    }
}
