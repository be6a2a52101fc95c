//! A target's part of the live plan: its filesystem, GPU cluster, cluster and node groups
//! diffed field by field, refusing anything of the same name that the target does not own.

use super::observe::ObservedProject;
use super::types::{Action, Change, Problem, ProblemKind, ResourceAction, TargetPlan};
use crate::cloud::domain::{Cluster, Labels, NodeGroup, NodeGroupSpec, State};
use crate::engine::desired::{DesiredFilesystem, DesiredNodeGroup, DesiredTarget, owned_by};
use crate::engine::target_status::TargetStatus;
use crate::store::TargetRecord;

/// A field whose values are safe to show.
fn shown<T: PartialEq + ToString>(out: &mut Vec<Change>, field: &'static str, have: &T, want: &T) {
    if have != want {
        out.push(Change {
            field,
            from: have.to_string(),
            to: want.to_string(),
        });
    }
}

/// A field whose values are private (capacity blocks, IDs) or too long to show: named only.
fn named(out: &mut Vec<Change>, field: &'static str, differs: bool) {
    if differs {
        out.push(Change {
            field,
            from: "(current)".into(),
            to: "(spec)".into(),
        });
    }
}

fn labels_change() -> Change {
    Change {
        field: "labels",
        from: "(differ)".into(),
        to: "(fleet labels)".into(),
    }
}

/// The fields only a replacement can change: a node group's (see [`replace_changes`]) and a GPU
/// cluster's fabric. [`super::destructive`] names them when it says why something is replaced.
pub(super) const REPLACE_ONLY_FIELDS: [&str; 6] = [
    "platform",
    "preset",
    "preemptible",
    "reservation",
    "gpu_cluster",
    "infiniband_fabric",
];

/// The node-group fields that only a replacement can change.
fn replace_changes(have: &NodeGroupSpec, want: &NodeGroupSpec) -> Vec<Change> {
    let mut out = Vec::new();
    shown(&mut out, "platform", &have.platform, &want.platform);
    shown(&mut out, "preset", &have.preset, &want.preset);
    shown(
        &mut out,
        "preemptible",
        &have.preemptible,
        &want.preemptible,
    );
    named(
        &mut out,
        "reservation",
        have.reservation != want.reservation,
    );
    named(
        &mut out,
        "gpu_cluster",
        have.gpu_cluster_id != want.gpu_cluster_id,
    );
    out
}

/// Why a node-group update is destructive although it changes in place: a filesystem the
/// group's nodes mount today is no longer attached ([`super::destructive`] reads it).
pub const DETACHES_FILESYSTEM: &str = "detaches a filesystem its nodes mount";

/// Whether `want` drops a filesystem `have` attaches (a changed mount tag is not a detach).
fn detaches_filesystem(have: &NodeGroupSpec, want: &NodeGroupSpec) -> bool {
    have.filesystems.iter().any(|h| {
        !want
            .filesystems
            .iter()
            .any(|w| w.filesystem_id == h.filesystem_id)
    })
}

/// The node-group fields that change in place.
fn update_changes(have: &NodeGroupSpec, want: &NodeGroupSpec) -> Vec<Change> {
    let mut out = Vec::new();
    shown(&mut out, "node_count", &have.node_count, &want.node_count);
    shown(
        &mut out,
        "boot_disk_gibibytes",
        &have.boot_disk_gibibytes,
        &want.boot_disk_gibibytes,
    );
    shown(
        &mut out,
        "drivers_preset",
        &have.drivers_preset,
        &want.drivers_preset,
    );
    named(
        &mut out,
        "filesystems",
        have.filesystems != want.filesystems,
    );
    named(
        &mut out,
        "cloud_init",
        have.cloud_init_user_data != want.cloud_init_user_data,
    );
    named(
        &mut out,
        "node_labels",
        have.node_labels != want.node_labels,
    );
    out
}

fn node_group_action(found: &NodeGroup, want: &NodeGroupSpec, labels: &Labels) -> ResourceAction {
    let mut a = ResourceAction::new("node-group", &found.name, Action::NoChange);
    let replace = replace_changes(&found.spec, want);
    let mut update = update_changes(&found.spec, want);
    if &found.labels != labels {
        update.push(labels_change());
    }
    if !replace.is_empty() {
        a.action = Action::Replace;
        a.reason = "changed fields cannot be updated in place".into();
        a.changes = replace;
        a.changes.extend(update);
    } else if !update.is_empty() {
        a.action = Action::Update;
        a.changes = update;
        if detaches_filesystem(&found.spec, want) {
            a.reason = DETACHES_FILESYSTEM.into();
        }
    }
    a
}

/// One target's diff as it is built: actions in apply order, and problems as they are found.
struct TargetDiff<'a> {
    fleet: &'a str,
    target: &'a DesiredTarget,
    obs: &'a ObservedProject,
    actions: Vec<ResourceAction>,
    problems: Vec<Problem>,
}

impl<'a> TargetDiff<'a> {
    /// Whether the target owns a same-named resource; a problem when it does not.
    fn owns(&mut self, labels: &Labels, kind: &str, name: &str) -> bool {
        let key = &self.target.key;
        if owned_by(labels, self.fleet, &key.project_key, &key.cluster) {
            return true;
        }
        self.problems.push(Problem::new(
            ProblemKind::NotOwned,
            format!(
                "a {kind} named {name:?} exists but is not owned by this fleet target; refusing to adopt, update or delete it"
            ),
        ));
        false
    }

    /// The filesystem's action; returns its ID where one exists.
    fn filesystem(&mut self) -> String {
        let target = self.target;
        match &target.filesystem {
            Some(DesiredFilesystem::Create {
                name,
                size_gibibytes,
            }) => self.created_filesystem(name, *size_gibibytes),
            Some(DesiredFilesystem::Existing { id }) => self.existing_filesystem(id),
            None => String::new(),
        }
    }

    fn created_filesystem(&mut self, name: &str, size_gibibytes: i64) -> String {
        let obs = self.obs;
        let Some(fs) = obs.filesystems.iter().find(|f| f.name == name) else {
            self.actions
                .push(ResourceAction::new("filesystem", name, Action::Create));
            return String::new();
        };
        if !self.owns(&fs.labels, "filesystem", name) {
            return String::new();
        }
        let mut a = ResourceAction::new("filesystem", name, Action::NoChange);
        if fs.size_gibibytes != size_gibibytes {
            shown(
                &mut a.changes,
                "size_gibibytes",
                &fs.size_gibibytes,
                &size_gibibytes,
            );
            if size_gibibytes > fs.size_gibibytes {
                a.action = Action::Update;
            } else {
                self.problems.push(Problem::new(
                    ProblemKind::FilesystemShrink,
                    format!(
                        "filesystem {name:?} cannot shrink from {} to {size_gibibytes} GiB",
                        fs.size_gibibytes
                    ),
                ));
            }
        }
        self.actions.push(a);
        fs.id.clone()
    }

    fn existing_filesystem(&mut self, id: &str) -> String {
        let problem = match self.obs.existing_filesystems.get(id) {
            Some(Some(fs)) => return fs.id.clone(),
            Some(None) => "existing_filestore does not exist",
            // The project does not exist yet, so neither can the filesystem.
            None if self.obs.project.is_none() => {
                "existing_filestore cannot be found in a project that does not exist yet"
            }
            None => "existing_filestore could not be read",
        };
        self.problems
            .push(Problem::new(ProblemKind::ExistingFilestore, problem));
        String::new()
    }

    /// The GPU cluster's action; returns its ID where one exists.
    fn gpu_cluster(&mut self) -> String {
        let (target, obs) = (self.target, self.obs);
        let Some((name, fabric)) = &target.gpu_cluster else {
            return String::new();
        };
        let Some(g) = obs.gpu_clusters.iter().find(|g| &g.name == name) else {
            self.actions
                .push(ResourceAction::new("gpu-cluster", name, Action::Create));
            return String::new();
        };
        if !self.owns(&g.labels, "GPU cluster", name) {
            return String::new();
        }
        if &g.infiniband_fabric == fabric {
            self.actions
                .push(ResourceAction::new("gpu-cluster", name, Action::NoChange));
        } else {
            let mut a = ResourceAction::new("gpu-cluster", name, Action::Replace);
            shown(
                &mut a.changes,
                "infiniband_fabric",
                &g.infiniband_fabric,
                fabric,
            );
            a.reason = "the fabric of a GPU cluster cannot change in place".into();
            self.actions.push(a);
        }
        g.id.clone()
    }

    /// The cluster's action; returns the node groups of a cluster the target owns.
    fn cluster(&mut self, cluster: Option<&'a Cluster>) -> Vec<&'a NodeGroup> {
        let (target, obs) = (self.target, self.obs);
        let name = &target.key.cluster;
        let Some(c) = cluster else {
            self.actions
                .push(ResourceAction::new("cluster", name, Action::Create));
            return Vec::new();
        };
        if !self.owns(&c.labels, "cluster", name) {
            return Vec::new();
        }
        let action = self.cluster_action(c);
        self.actions.push(action);
        obs.node_groups
            .get(&c.id)
            .map(|g| g.iter().collect())
            .unwrap_or_default()
    }

    fn cluster_action(&mut self, c: &Cluster) -> ResourceAction {
        let target = self.target;
        let mut a = ResourceAction::new("cluster", &target.key.cluster, Action::NoChange);
        if !target.k8s_version.is_empty()
            && !c.spec.k8s_version.is_empty()
            && c.spec.k8s_version != target.k8s_version
        {
            a.action = Action::Update;
            shown(
                &mut a.changes,
                "k8s_version",
                &c.spec.k8s_version,
                &target.k8s_version,
            );
        }
        if !target.subnet_id.is_empty() && c.spec.subnet_id != target.subnet_id {
            self.problems.push(Problem::new(
                ProblemKind::SubnetChanged,
                "the cluster's subnet changed; a control plane cannot move subnets and fleetbot does not replace clusters (destroy the target and deploy it again)",
            ));
        }
        if c.labels != target.labels {
            a.action = Action::Update;
            a.changes.push(labels_change());
        }
        if c.state != State::Ready && a.action == Action::NoChange {
            a.reason = format!("cluster is {:?}", c.state);
        }
        a
    }

    fn node_group(
        &mut self,
        group: &DesiredNodeGroup,
        observed: &[&NodeGroup],
        filesystem_id: &str,
        gpu_cluster_id: &str,
    ) {
        let Some(found) = observed.iter().find(|g| g.name == group.name) else {
            self.actions.push(ResourceAction::new(
                "node-group",
                &group.name,
                Action::Create,
            ));
            return;
        };
        if !self.owns(&found.labels, "node group", &group.name) {
            return;
        }
        let want = self.target.node_group_spec(
            group,
            filesystem_id,
            gpu_cluster_id,
            &found.spec.subnet_id,
        );
        let action = node_group_action(found, &want, &self.target.labels);
        self.actions.push(action);
    }

    /// Node groups fleetbot created for this target that the spec no longer wants.
    fn stale_node_groups(&mut self, observed: &[&NodeGroup]) {
        let target = self.target;
        let key = &target.key;
        for found in observed {
            if target.node_groups.iter().any(|g| g.name == found.name) {
                continue;
            }
            if owned_by(&found.labels, self.fleet, &key.project_key, &key.cluster) {
                let mut a = ResourceAction::new("node-group", &found.name, Action::Delete);
                a.reason = "no longer in the spec".into();
                self.actions.push(a);
            }
        }
    }
}

/// One target's plan, and whether it is unchanged: quiet, recorded as deployed at this digest,
/// and its cluster ready.
pub(super) fn plan_target(
    fleet: &str,
    target: &DesiredTarget,
    obs: &ObservedProject,
    record: Option<&TargetRecord>,
) -> TargetPlan {
    let mut diff = TargetDiff {
        fleet,
        target,
        obs,
        actions: Vec::new(),
        problems: Vec::new(),
    };
    let filesystem_id = diff.filesystem();
    let gpu_cluster_id = diff.gpu_cluster();
    let cluster = obs.clusters.iter().find(|c| c.name == target.key.cluster);
    let observed_groups = diff.cluster(cluster);
    for group in &target.node_groups {
        diff.node_group(group, &observed_groups, &filesystem_id, &gpu_cluster_id);
    }
    diff.stale_node_groups(&observed_groups);
    match cluster.filter(|c| {
        owned_by(
            &c.labels,
            fleet,
            &target.key.project_key,
            &target.key.cluster,
        )
    }) {
        Some(c) => {
            let releases = obs.releases.get(&c.id).map(Vec::as_slice).unwrap_or(&[]);
            diff.actions.extend(super::addon_diff::addon_actions(
                fleet, target, releases, record,
            ));
        }
        None if cluster.is_none() => diff.actions.extend(
            target
                .addons
                .iter()
                .map(|a| ResourceAction::new("add-on", &a.name, Action::Create)),
        ),
        None => {}
    }

    let all_quiet = diff.actions.iter().all(|a| a.action == Action::NoChange);
    let recorded_deployed = record.is_some_and(|r| {
        TargetStatus::from_record(&r.status) == TargetStatus::Deployed
            && r.applied_digest == target.digest
    });
    let unchanged = diff.problems.is_empty()
        && all_quiet
        && recorded_deployed
        && cluster.is_some_and(|c| c.state == State::Ready);
    TargetPlan {
        target: target.key.to_string(),
        actions: diff.actions,
        unchanged,
        problems: diff.problems,
        prune: false,
    }
}
