//! The live plan: read what exists, diff it field by field against the desired state, and list
//! the actions (create, update, replace, delete, no change) with their reasons.
//!
//! The plan names resources, never cloud IDs, so it can be shown on a pull request; the IDs the
//! apply step needs travel beside it in [`Observed`].

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::desired::{
    DesiredFilesystem, DesiredProject, DesiredTarget, TargetKey, generated_bucket_name, owned_by,
};
use crate::cloud::domain::*;
use crate::store::{ProjectRecord, TargetRecord};

/// What to do with one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    Update,
    /// Delete and create again: a field that cannot change in place changed.
    Replace,
    Delete,
    NoChange,
    /// Reused as it is (a pre-existing project or subnet fleetbot does not own).
    Reuse,
}

/// One field that differs: values are shown only for fields that are safe to publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub field: &'static str,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceAction {
    /// `project`, `subnet`, `bucket`, `cluster`, `node-group`, `filesystem`, `gpu-cluster`.
    pub resource: &'static str,
    pub name: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// What kind of problem stops a plan. Every kind blocks an apply; the kinds exist so that
/// callers which must not show the cloud's text (a pull request) can still name each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A project pinned by `project_id` is not there.
    ProjectNotFound,
    /// Several projects of the tenant carry the name.
    ProjectAmbiguous,
    /// An existing project is not the spec's: another tenant, region or name.
    ProjectIdentity,
    /// An existing project is suspended, being deleted or otherwise not active.
    ProjectInactive,
    /// An existing bucket cannot serve as it is (storage class, state).
    BucketUnusable,
    /// A same-named resource exists that this fleet target does not own.
    NotOwned,
    /// A filesystem fleetbot owns would have to shrink.
    FilesystemShrink,
    /// `existing_filestore` cannot be found or read.
    ExistingFilestore,
    /// A cluster's subnet is not the spec's `subnet_id`.
    SubnetChanged,
}

impl ProblemKind {
    pub const ALL: [ProblemKind; 9] = [
        ProblemKind::ProjectNotFound,
        ProblemKind::ProjectAmbiguous,
        ProblemKind::ProjectIdentity,
        ProblemKind::ProjectInactive,
        ProblemKind::BucketUnusable,
        ProblemKind::NotOwned,
        ProblemKind::FilesystemShrink,
        ProblemKind::ExistingFilestore,
        ProblemKind::SubnetChanged,
    ];
}

/// One problem of a plan. The message names resources by the spec's names and public fields
/// only, never by a cloud ID, so it may be shown wherever the plan is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub message: String,
}

impl Problem {
    pub fn new(kind: ProblemKind, message: impl Into<String>) -> Self {
        Problem {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

// Serialized as its message alone: the plan's JSON and its digest stay what they were before
// problems had kinds.
impl Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectPlan {
    pub key: String,
    pub actions: Vec<ResourceAction>,
    /// Why the project cannot be used, if it cannot (identity, ambiguity, ownership).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetPlan {
    pub target: String,
    pub actions: Vec<ResourceAction>,
    /// Every resource exists, is owned by fleetbot and matches the spec.
    pub unchanged: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    pub unchanged: usize,
}

/// The live plan of the selected targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LivePlan {
    pub fleet: String,
    pub cloud: String,
    pub projects: Vec<ProjectPlan>,
    pub targets: Vec<TargetPlan>,
    pub summary: Summary,
    /// Changes exactly when the actions change.
    pub digest: String,
}

impl LivePlan {
    pub fn has_problems(&self) -> bool {
        self.projects.iter().any(|p| !p.problems.is_empty())
            || self.targets.iter().any(|t| !t.problems.is_empty())
    }

    pub fn problems(&self) -> Vec<String> {
        self.projects
            .iter()
            .flat_map(|p| {
                p.problems
                    .iter()
                    .map(move |m| format!("project {}: {m}", p.key))
            })
            .chain(
                self.targets
                    .iter()
                    .flat_map(|t| t.problems.iter().map(move |m| format!("{}: {m}", t.target))),
            )
            .collect()
    }

    /// Text layout for terminals.
    pub fn render_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Fleet '{}' live plan against {}:",
            self.fleet, self.cloud
        );
        let sigil = |a: Action| match a {
            Action::Create => "+",
            Action::Update => "~",
            Action::Replace => "-/+",
            Action::Delete => "-",
            Action::NoChange | Action::Reuse => "=",
        };
        let line = |out: &mut String, a: &ResourceAction| {
            let _ = write!(out, "      {} {} {}", sigil(a.action), a.resource, a.name);
            if !a.changes.is_empty() {
                let changes: Vec<String> = a
                    .changes
                    .iter()
                    .map(|c| format!("{}: {} -> {}", c.field, c.from, c.to))
                    .collect();
                let _ = write!(out, " ({})", changes.join(", "));
            }
            if !a.reason.is_empty() {
                let _ = write!(out, " [{}]", a.reason);
            }
            out.push('\n');
        };
        for p in &self.projects {
            let _ = writeln!(out, "  project {}", p.key);
            for a in &p.actions {
                line(&mut out, a);
            }
            for problem in &p.problems {
                let _ = writeln!(out, "      ! {problem}");
            }
        }
        for t in &self.targets {
            let _ = writeln!(
                out,
                "  target {}{}",
                t.target,
                if t.unchanged { " (unchanged)" } else { "" }
            );
            for a in t.actions.iter().filter(|a| a.action != Action::NoChange) {
                line(&mut out, a);
            }
            for problem in &t.problems {
                let _ = writeln!(out, "      ! {problem}");
            }
        }
        let s = self.summary;
        let _ = writeln!(
            out,
            "Plan: {} to create, {} to update, {} to replace, {} to delete, {} unchanged target(s).",
            s.create, s.update, s.replace, s.delete, s.unchanged
        );
        out
    }
}

/// What exists for one project, read once.
#[derive(Debug, Clone, Default)]
pub struct ObservedProject {
    pub project: Option<Project>,
    pub subnets: Vec<Subnet>,
    pub networks: Vec<Network>,
    pub clusters: Vec<Cluster>,
    pub filesystems: Vec<Filesystem>,
    pub gpu_clusters: Vec<GpuCluster>,
    pub buckets: Vec<Bucket>,
    /// Node groups by cluster ID.
    pub node_groups: BTreeMap<String, Vec<NodeGroup>>,
    /// Existing filesystems named by `existing_filestore`, by ID (`None`: not found).
    pub existing_filesystems: BTreeMap<String, Option<Filesystem>>,
    pub problems: Vec<Problem>,
}

/// Everything observed, by project key.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub tenant_id: String,
    pub projects: BTreeMap<String, ObservedProject>,
}

/// Project identity checks (fleet-engine §6.10.3): at most one problem of each kind, naming
/// what differs but never the project's ID.
fn identity_problems(
    project: &Project,
    tenant_id: &str,
    region: &str,
    expected_name: &str,
) -> Vec<Problem> {
    let mut identity = Vec::new();
    if !expected_name.is_empty() && project.name != expected_name {
        identity.push(format!(
            "name {:?} is not {:?}",
            project.name, expected_name
        ));
    }
    if project.tenant_id != tenant_id {
        identity.push("it belongs to another tenant".to_string());
    }
    if !region.is_empty() && project.region != region {
        identity.push(format!(
            "region {:?} does not match {:?}",
            project.region, region
        ));
    }
    let inactive = match project.state {
        State::Ready => None,
        State::Suspended => Some("it is suspended".to_string()),
        State::Deleting => Some("it is being deleted".to_string()),
        other => Some(format!("it is not active ({other:?})")),
    };
    let mut problems = Vec::new();
    if !identity.is_empty() {
        problems.push(Problem::new(
            ProblemKind::ProjectIdentity,
            format!(
                "the existing project failed immutable identity verification: {}",
                identity.join("; ")
            ),
        ));
    }
    if let Some(why) = inactive {
        problems.push(Problem::new(
            ProblemKind::ProjectInactive,
            format!("the existing project cannot be used: {why}"),
        ));
    }
    problems
}

/// Reads what exists for the desired projects and targets. Reads only.
pub async fn observe<C: Cloud>(
    cloud: &C,
    tenant_id: &str,
    projects: &[DesiredProject],
    targets: &[DesiredTarget],
) -> CloudResult<Observed> {
    let mut observed = Observed {
        tenant_id: tenant_id.to_string(),
        ..Default::default()
    };
    // List the tenant's projects once, and only when some project is found by name.
    let listing = if projects.iter().any(|p| p.project_id.is_empty()) {
        Some(cloud.list_projects(tenant_id).await?)
    } else {
        None
    };
    for desired in projects {
        let mut op = ObservedProject::default();
        let found = if !desired.project_id.is_empty() {
            match cloud.get_project(&desired.project_id).await {
                Ok(p) => Some(p),
                Err(e) if e.is_not_found() => {
                    // The project is already named by its key; the ID stays out of the text.
                    op.problems.push(Problem::new(
                        ProblemKind::ProjectNotFound,
                        "the pinned project_id is not a project of the tenant (not found)",
                    ));
                    None
                }
                Err(e) => return Err(e),
            }
        } else {
            let matches: Vec<&Project> = listing
                .iter()
                .flatten()
                .filter(|p| p.name == desired.display_name)
                .collect();
            if matches.len() > 1 {
                op.problems.push(Problem::new(
                    ProblemKind::ProjectAmbiguous,
                    format!(
                        "project name '{}' is ambiguous under the selected tenant; use an explicit project_id",
                        desired.display_name
                    ),
                ));
            }
            matches.first().map(|p| (*p).clone())
        };
        if let Some(project) = &found {
            // An explicit project_id is not name-checked: local roles can differ from the provider name.
            let expected_name = if desired.project_id.is_empty() {
                desired.display_name.as_str()
            } else {
                ""
            };
            op.problems.extend(identity_problems(
                project,
                tenant_id,
                &desired.region,
                expected_name,
            ));
            op.subnets = cloud.list_subnets(&project.id).await?;
            op.networks = cloud.list_networks(&project.id).await?;
            op.clusters = cloud.list_clusters(&project.id).await?;
            op.filesystems = cloud.list_filesystems(&project.id).await?;
            op.gpu_clusters = cloud.list_gpu_clusters(&project.id).await?;
            op.buckets = cloud.list_buckets(&project.id).await?;
            for target in targets.iter().filter(|t| t.key.project_key == desired.key) {
                if let Some(cluster) = op.clusters.iter().find(|c| c.name == target.key.cluster) {
                    let groups = cloud.list_node_groups(&cluster.id).await?;
                    op.node_groups.insert(cluster.id.clone(), groups);
                }
                if let Some(DesiredFilesystem::Existing { id }) = &target.filesystem {
                    let fs = match cloud.get_filesystem(id).await {
                        Ok(fs) => Some(fs),
                        Err(e) if e.is_not_found() => None,
                        Err(e) => return Err(e),
                    };
                    op.existing_filesystems.insert(id.clone(), fs);
                }
            }
        }
        op.project = found;
        observed.projects.insert(desired.key.clone(), op);
    }
    Ok(observed)
}

fn action(resource: &'static str, name: &str, action: Action) -> ResourceAction {
    ResourceAction {
        resource,
        name: name.to_string(),
        action,
        changes: Vec::new(),
        reason: String::new(),
    }
}

/// The subnet a project's clusters use: the one fleetbot recorded, else one named `default`,
/// else the lowest ID (fleet-engine §6.5).
pub fn choose_subnet<'a>(
    subnets: &'a [Subnet],
    record: Option<&ProjectRecord>,
) -> Option<&'a Subnet> {
    if let Some(recorded) = record
        .map(|r| r.subnet_id.as_str())
        .filter(|s| !s.is_empty())
        && let Some(s) = subnets.iter().find(|s| s.id == recorded)
    {
        return Some(s);
    }
    subnets
        .iter()
        .filter(|s| s.name.contains("default"))
        .min_by(|a, b| a.id.cmp(&b.id))
        .or_else(|| subnets.iter().min_by(|a, b| a.id.cmp(&b.id)))
}

/// The bucket name of a project once its ID is known.
pub fn bucket_name(
    bucket: &super::desired::DesiredBucket,
    record: Option<&ProjectRecord>,
    tenant_id: &str,
    project_id: &str,
    fleet: &str,
) -> String {
    if !bucket.explicit_name.is_empty() {
        return bucket.explicit_name.clone();
    }
    if let Some(name) = record
        .map(|r| r.bucket_name.clone())
        .filter(|n| !n.is_empty())
    {
        return name;
    }
    generated_bucket_name(tenant_id, project_id, fleet)
}

/// Diffs desired against observed.
pub fn plan(
    fleet: &str,
    cloud_name: &str,
    projects: &[DesiredProject],
    targets: &[DesiredTarget],
    observed: &Observed,
    project_records: &[ProjectRecord],
    target_records: &[TargetRecord],
) -> LivePlan {
    let empty = ObservedProject::default();
    let mut project_plans = Vec::new();
    for desired in projects {
        let obs = observed.projects.get(&desired.key).unwrap_or(&empty);
        let record = project_records
            .iter()
            .find(|r| r.project_key == desired.key);
        let mut actions = Vec::new();
        let mut problems = obs.problems.clone();
        let name = if desired.display_name.is_empty() {
            &desired.project_id
        } else {
            &desired.display_name
        };
        match &obs.project {
            Some(_) => actions.push(action("project", name, Action::Reuse)),
            None if desired.project_id.is_empty() => {
                actions.push(action("project", name, Action::Create))
            }
            None => {}
        }
        if desired.needs_subnet {
            match obs
                .project
                .as_ref()
                .and_then(|_| choose_subnet(&obs.subnets, record))
            {
                Some(subnet) => {
                    let owned = record.is_some_and(|r| r.created_subnet_id == subnet.id);
                    actions.push(action(
                        "subnet",
                        &subnet.name,
                        if owned {
                            Action::NoChange
                        } else {
                            Action::Reuse
                        },
                    ));
                }
                None if obs.project.is_none() => {
                    let mut a = action("subnet", "default-subnet", Action::Reuse);
                    a.reason = "created with the project".into();
                    actions.push(a);
                }
                None => {
                    actions.push(action(
                        "network",
                        &format!("{}-net", desired.key),
                        Action::Create,
                    ));
                    actions.push(action(
                        "subnet",
                        &format!("{}-subnet", desired.key),
                        Action::Create,
                    ));
                }
            }
        }
        if let Some(bucket) = &desired.bucket {
            let project_id = obs.project.as_ref().map(|p| p.id.as_str()).unwrap_or("");
            let bucket_label = if bucket.explicit_name.is_empty() {
                "(generated name)".to_string()
            } else {
                "(explicit name)".to_string()
            };
            if project_id.is_empty() {
                actions.push(action("bucket", &bucket_label, Action::Create));
            } else {
                let wanted = bucket_name(bucket, record, &observed.tenant_id, project_id, fleet);
                match obs.buckets.iter().find(|b| b.name == wanted) {
                    None => actions.push(action("bucket", &bucket_label, Action::Create)),
                    Some(found) => {
                        if found.storage_class != bucket.storage_class {
                            problems.push(Problem::new(
                                ProblemKind::BucketUnusable,
                                format!(
                                    "existing bucket has storage class {} but the spec asks for {}; changing the class of a bucket is not supported",
                                    found.storage_class, bucket.storage_class
                                ),
                            ));
                        }
                        if found.state != State::Ready || found.scheduled_for_deletion {
                            problems.push(Problem::new(
                                ProblemKind::BucketUnusable,
                                "existing bucket is not active (suspended or scheduled for deletion)",
                            ));
                        }
                        let mut a = action("bucket", &bucket_label, Action::NoChange);
                        if found.max_size_bytes != bucket.max_size_bytes {
                            a.action = Action::Update;
                            a.changes.push(Change {
                                field: "max_size_bytes",
                                from: found.max_size_bytes.to_string(),
                                to: bucket.max_size_bytes.to_string(),
                            });
                        }
                        actions.push(a);
                    }
                }
            }
        }
        project_plans.push(ProjectPlan {
            key: desired.key.clone(),
            actions,
            problems,
        });
    }

    let mut target_plans = Vec::new();
    for target in targets {
        let obs = observed
            .projects
            .get(&target.key.project_key)
            .unwrap_or(&empty);
        let record = target_records.iter().find(|r| {
            r.project_key == target.key.project_key && r.cluster_name == target.key.cluster
        });
        target_plans.push(plan_target(fleet, target, obs, record));
    }

    let mut summary = Summary::default();
    for a in project_plans
        .iter()
        .flat_map(|p| &p.actions)
        .chain(target_plans.iter().flat_map(|t| &t.actions))
    {
        match a.action {
            Action::Create => summary.create += 1,
            Action::Update => summary.update += 1,
            Action::Replace => summary.replace += 1,
            Action::Delete => summary.delete += 1,
            Action::NoChange | Action::Reuse => {}
        }
    }
    summary.unchanged = target_plans.iter().filter(|t| t.unchanged).count();
    let digest_input =
        serde_json::to_vec(&(&project_plans, &target_plans)).expect("plan serializes");
    LivePlan {
        fleet: fleet.to_string(),
        cloud: cloud_name.to_string(),
        projects: project_plans,
        targets: target_plans,
        summary,
        digest: hex::encode(Sha256::digest(digest_input)),
    }
}

fn plan_target(
    fleet: &str,
    target: &DesiredTarget,
    obs: &ObservedProject,
    record: Option<&TargetRecord>,
) -> TargetPlan {
    let key = &target.key;
    let mut actions = Vec::new();
    let mut problems = Vec::new();
    let owner_check = |labels: &Labels,
                       kind: &str,
                       name: &str,
                       problems: &mut Vec<Problem>|
     -> bool {
        if owned_by(labels, fleet, &key.project_key, &key.cluster) {
            true
        } else {
            problems.push(Problem::new(
                ProblemKind::NotOwned,
                format!(
                    "a {kind} named {name:?} exists but is not owned by this fleet target; refusing to adopt, update or delete it"
                ),
            ));
            false
        }
    };

    // Filesystem.
    let mut filesystem_id = String::new();
    match &target.filesystem {
        Some(DesiredFilesystem::Create {
            name,
            size_gibibytes,
        }) => match obs.filesystems.iter().find(|f| &f.name == name) {
            None => actions.push(action("filesystem", name, Action::Create)),
            Some(fs) if owner_check(&fs.labels, "filesystem", name, &mut problems) => {
                filesystem_id = fs.id.clone();
                let mut a = action("filesystem", name, Action::NoChange);
                if fs.size_gibibytes != *size_gibibytes {
                    a.changes.push(Change {
                        field: "size_gibibytes",
                        from: fs.size_gibibytes.to_string(),
                        to: size_gibibytes.to_string(),
                    });
                    if *size_gibibytes > fs.size_gibibytes {
                        a.action = Action::Update;
                    } else {
                        problems.push(Problem::new(
                            ProblemKind::FilesystemShrink,
                            format!(
                                "filesystem {name:?} cannot shrink from {} to {size_gibibytes} GiB",
                                fs.size_gibibytes
                            ),
                        ));
                    }
                }
                actions.push(a);
            }
            Some(_) => {}
        },
        Some(DesiredFilesystem::Existing { id }) => match obs.existing_filesystems.get(id) {
            Some(Some(fs)) => filesystem_id = fs.id.clone(),
            Some(None) => problems.push(Problem::new(
                ProblemKind::ExistingFilestore,
                "existing_filestore does not exist",
            )),
            // The project does not exist yet, so neither can the filesystem.
            None if obs.project.is_none() => problems.push(Problem::new(
                ProblemKind::ExistingFilestore,
                "existing_filestore cannot be found in a project that does not exist yet",
            )),
            None => problems.push(Problem::new(
                ProblemKind::ExistingFilestore,
                "existing_filestore could not be read",
            )),
        },
        None => {}
    }

    // GPU cluster.
    let mut gpu_cluster_id = String::new();
    if let Some((name, fabric)) = &target.gpu_cluster {
        match obs.gpu_clusters.iter().find(|g| &g.name == name) {
            None => actions.push(action("gpu-cluster", name, Action::Create)),
            Some(g) if owner_check(&g.labels, "GPU cluster", name, &mut problems) => {
                gpu_cluster_id = g.id.clone();
                if &g.infiniband_fabric == fabric {
                    actions.push(action("gpu-cluster", name, Action::NoChange));
                } else {
                    let mut a = action("gpu-cluster", name, Action::Replace);
                    a.changes.push(Change {
                        field: "infiniband_fabric",
                        from: g.infiniband_fabric.clone(),
                        to: fabric.clone(),
                    });
                    a.reason = "the fabric of a GPU cluster cannot change in place".into();
                    actions.push(a);
                }
            }
            Some(_) => {}
        }
    }

    // Cluster and node groups.
    let cluster = obs.clusters.iter().find(|c| c.name == key.cluster);
    let mut observed_groups: Vec<&NodeGroup> = Vec::new();
    match cluster {
        None => {
            actions.push(action("cluster", &key.cluster, Action::Create));
        }
        Some(c) if owner_check(&c.labels, "cluster", &key.cluster, &mut problems) => {
            let mut a = action("cluster", &key.cluster, Action::NoChange);
            if !target.k8s_version.is_empty()
                && !c.spec.k8s_version.is_empty()
                && c.spec.k8s_version != target.k8s_version
            {
                a.action = Action::Update;
                a.changes.push(Change {
                    field: "k8s_version",
                    from: c.spec.k8s_version.clone(),
                    to: target.k8s_version.clone(),
                });
            }
            if !target.subnet_id.is_empty() && c.spec.subnet_id != target.subnet_id {
                problems.push(Problem::new(
                    ProblemKind::SubnetChanged,
                    "the cluster's subnet changed; a control plane cannot move subnets and fleetbot does not replace clusters (destroy the target and deploy it again)",
                ));
            }
            if c.labels != target.labels {
                a.action = Action::Update;
                a.changes.push(Change {
                    field: "labels",
                    from: "(differ)".into(),
                    to: "(fleet labels)".into(),
                });
            }
            if c.state != State::Ready && a.action == Action::NoChange {
                a.reason = format!("cluster is {:?}", c.state);
            }
            actions.push(a);
            observed_groups = obs
                .node_groups
                .get(&c.id)
                .map(|g| g.iter().collect())
                .unwrap_or_default();
        }
        Some(_) => {}
    }
    for group in &target.node_groups {
        let Some(found) = observed_groups.iter().find(|g| g.name == group.name) else {
            actions.push(action("node-group", &group.name, Action::Create));
            continue;
        };
        if !owner_check(&found.labels, "node group", &group.name, &mut problems) {
            continue;
        }
        let want = target.node_group_spec(
            group,
            &filesystem_id,
            &gpu_cluster_id,
            &found.spec.subnet_id,
        );
        let have = &found.spec;
        let mut a = action("node-group", &group.name, Action::NoChange);
        let mut replace = Vec::new();
        let mut update = Vec::new();
        if have.platform != want.platform {
            replace.push(Change {
                field: "platform",
                from: have.platform.clone(),
                to: want.platform.clone(),
            });
        }
        if have.preset != want.preset {
            replace.push(Change {
                field: "preset",
                from: have.preset.clone(),
                to: want.preset.clone(),
            });
        }
        if have.preemptible != want.preemptible {
            replace.push(Change {
                field: "preemptible",
                from: have.preemptible.to_string(),
                to: want.preemptible.to_string(),
            });
        }
        if have.reservation != want.reservation {
            // Capacity block IDs are private: name the field, not the values.
            replace.push(Change {
                field: "reservation",
                from: "(current)".into(),
                to: "(spec)".into(),
            });
        }
        if have.gpu_cluster_id != want.gpu_cluster_id {
            replace.push(Change {
                field: "gpu_cluster",
                from: "(current)".into(),
                to: "(spec)".into(),
            });
        }
        if have.node_count != want.node_count {
            update.push(Change {
                field: "node_count",
                from: have.node_count.to_string(),
                to: want.node_count.to_string(),
            });
        }
        if have.boot_disk_gibibytes != want.boot_disk_gibibytes {
            update.push(Change {
                field: "boot_disk_gibibytes",
                from: have.boot_disk_gibibytes.to_string(),
                to: want.boot_disk_gibibytes.to_string(),
            });
        }
        if have.drivers_preset != want.drivers_preset {
            update.push(Change {
                field: "drivers_preset",
                from: have.drivers_preset.clone(),
                to: want.drivers_preset.clone(),
            });
        }
        if have.filesystems != want.filesystems {
            update.push(Change {
                field: "filesystems",
                from: "(current)".into(),
                to: "(spec)".into(),
            });
        }
        if have.cloud_init_user_data != want.cloud_init_user_data {
            update.push(Change {
                field: "cloud_init",
                from: "(current)".into(),
                to: "(spec)".into(),
            });
        }
        if have.node_labels != want.node_labels {
            update.push(Change {
                field: "node_labels",
                from: "(current)".into(),
                to: "(spec)".into(),
            });
        }
        if found.labels != target.labels {
            update.push(Change {
                field: "labels",
                from: "(differ)".into(),
                to: "(fleet labels)".into(),
            });
        }
        if !replace.is_empty() {
            a.action = Action::Replace;
            a.reason = "changed fields cannot be updated in place".into();
            a.changes = replace;
            a.changes.extend(update);
        } else if !update.is_empty() {
            a.action = Action::Update;
            a.changes = update;
        }
        actions.push(a);
    }
    // Node groups fleetbot created for this target that the spec no longer wants.
    for found in observed_groups {
        if target.node_groups.iter().any(|g| g.name == found.name) {
            continue;
        }
        if owned_by(&found.labels, fleet, &key.project_key, &key.cluster) {
            let mut a = action("node-group", &found.name, Action::Delete);
            a.reason = "no longer in the spec".into();
            actions.push(a);
        }
    }

    let all_quiet = actions.iter().all(|a| a.action == Action::NoChange);
    let recorded_deployed =
        record.is_some_and(|r| r.status == "deployed" && r.applied_digest == target.digest);
    let unchanged = problems.is_empty()
        && all_quiet
        && recorded_deployed
        && cluster.is_some_and(|c| c.state == State::Ready);
    TargetPlan {
        target: key.to_string(),
        actions,
        unchanged,
        problems,
    }
}

/// Finds the target key of a plan entry.
pub fn target_key_of(plan: &TargetPlan) -> TargetKey {
    let (project_key, cluster) = plan.target.split_once('/').unwrap_or((&plan.target, ""));
    TargetKey {
        project_key: project_key.to_string(),
        cluster: cluster.to_string(),
    }
}
