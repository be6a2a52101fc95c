//! The simulator's world state and the generic resource operations every service uses.
//!
//! [`Core`] holds the state; each concern lives in its own module, as methods on it:
//! persistence, seeding from the world, reads (here), creates, updates and deletes,
//! idempotency, long-running operations, quota and capacity charging, and pagination.

mod buckets;
mod charging;
mod errors;
mod idempotency;
mod index;
mod mutate;
mod operations;
mod paging;
mod persist;
mod releases;
mod seed;
mod touched;
mod update;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use tonic::Status;

use super::defaults::FillContext;
use super::resources::Resource;
use super::world::World;
use crate::cloud::nid;
use crate::cloud::proto::fleetbot::sim::v1::SimState;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;

pub use buckets::is_scheduled as bucket_is_scheduled;
pub use charging::default_unit;
pub use errors::{invalid as errors_invalid, not_found};
pub use mutate::CallContext;
pub use paging::{MAX_PAGE_SIZE, paginate};
pub use releases::PRODUCTS;
pub use touched::Since;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// The simulated cloud.
pub struct Core {
    pub world: World,
    pub state: SimState,
    pub tenant_id: String,
    state_file: Option<PathBuf>,
    /// Writes wait for [`Core::flush`] (the embedded simulator), and whether one is due.
    persistence_deferred: bool,
    unsaved: std::sync::atomic::AtomicBool,
    /// Bearer tokens issued by the token exchange, with their expiry (unix ms).
    pub issued_tokens: HashMap<String, i64>,
    /// The Kubernetes API's base URL and CA (PEM), once it listens.
    pub kube_api: Option<(String, String)>,
    /// The S3 endpoint's `host:port`, once it listens.
    pub s3_api: Option<String>,
    /// Bumped by every change to the resources ([`Core::insert`], [`Core::remove`],
    /// [`Core::find_mut`]).
    generation: u64,
    /// What [`Core::present_kube_api`] last presented: the generation, base URL and CA. A
    /// read of a 1,000-cluster world would otherwise rewrite every cluster's endpoint and
    /// compare every CA on each call.
    kube_presented: Option<(u64, String, String)>,
    /// Where each kind's resources sit, by ID and by parent.
    indexes: index::Indexes,
    /// Which clusters' Kubernetes view each change reached.
    touched: touched::Touched,
}

impl Core {
    fn next_serial(&mut self) -> u64 {
        self.state.next_serial += 1;
        self.state.next_serial
    }

    /// Points every running cluster's status at the Kubernetes API as it listens now (the
    /// port changes between runs; the stored state keeps the last one).
    pub fn present_kube_api(&mut self) {
        let Some((base, ca)) = &self.kube_api else {
            return;
        };
        if let Some((generation, b, c)) = &self.kube_presented
            && *generation == self.generation
            && b == base
            && c == ca
        {
            return;
        }
        let (base, ca) = (base.clone(), ca.clone());
        for cluster in &mut self.state.clusters {
            let id = cluster.id().to_string();
            let Some(plane) = cluster
                .status
                .as_mut()
                .and_then(|s| s.control_plane.as_mut())
            else {
                continue;
            };
            let endpoint = format!("{base}{id}");
            if let Some(endpoints) = plane.endpoints.as_mut()
                && endpoints.public_endpoint != endpoint
            {
                endpoints.public_endpoint = endpoint;
            }
            if let Some(auth) = plane.auth.as_mut()
                && auth.cluster_ca_certificate != ca
            {
                auth.cluster_ca_certificate = ca.clone();
            }
        }
        self.kube_presented = Some((self.generation, base, ca));
    }

    /// Counts changes to the world: equal generations, equal worlds.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Adds a resource at the end of its kind's list. Resources are added only here and
    /// removed only by [`Core::remove`], so each kind's positions stay true; these and
    /// [`Core::find_mut`] move the generation, so the presentation passes know when there is
    /// something new to present.
    pub(crate) fn insert<R: Resource>(&mut self, resource: R) {
        self.generation += 1;
        self.touched
            .mark(touched::reach_of(&resource), self.generation);
        let items = R::items_mut(&mut self.state);
        self.indexes
            .pushed::<R>(items.len(), resource.id(), resource.parent_id());
        items.push(resource);
    }

    /// Removes the resource of kind `R` with this ID (those after it move up one, as a
    /// `retain` would move them); `None` when there is none.
    pub(crate) fn remove<R: Resource>(&mut self, id: &str) -> Option<R> {
        let at = self.indexes.position::<R>(&self.state, id)?;
        self.generation += 1;
        let removed = R::items_mut(&mut self.state).remove(at);
        self.indexes
            .removed::<R>(at, removed.id(), removed.parent_id());
        self.touched
            .mark(touched::reach_of(&removed), self.generation);
        Some(removed)
    }

    /// One resource, to change where it is (its phase, status or spec; never its ID or
    /// parent).
    pub(crate) fn find_mut<R: Resource>(&mut self, id: &str) -> Option<&mut R> {
        self.generation += 1;
        let at = self.indexes.position::<R>(&self.state, id)?;
        // What the change reaches is read before it: a release never moves to another
        // cluster, nor a node group.
        let reach = touched::reach_of(&R::items(&self.state)[at]);
        self.touched.mark(reach, self.generation);
        R::items_mut(&mut self.state).get_mut(at)
    }

    /// Forgets where every kind's resources sit, for a caller that reached into
    /// [`Core::state`] directly.
    pub fn forget_positions(&mut self) {
        self.indexes.forget_all();
        self.generation += 1;
        self.touched
            .mark(touched::Reach::Everything, self.generation);
    }

    /// The resource of kind `R` with this ID.
    pub fn find<R: Resource>(&self, id: &str) -> Option<&R> {
        self.indexes.find::<R>(&self.state, id)
    }

    /// The resources of kind `R` under `parent_id`, in the order they are held.
    pub fn children<R: Resource>(&self, parent_id: &str) -> Vec<&R> {
        self.indexes.children::<R>(&self.state, parent_id)
    }

    /// Points every bucket's domain name at the S3 endpoint as it listens now, and applies
    /// the world's scripted bucket misbehaviour.
    pub fn present_s3_api(&mut self) {
        use crate::cloud::proto::nebius::storage::v1 as storage;
        let behaviour = self.world.object_storage.clone();
        let class = behaviour
            .report_storage_class
            .as_deref()
            .and_then(storage::StorageClass::from_str_name);
        for bucket in &mut self.state.buckets {
            if let (Some(class), Some(spec)) = (class, bucket.spec.as_mut()) {
                spec.default_storage_class = class as i32;
            }
            let Some(status) = bucket.status.as_mut() else {
                continue;
            };
            if behaviour.suspend_buckets {
                status.suspension_state = storage::bucket_status::SuspensionState::Suspended as i32;
            }
            if let Some(address) = &self.s3_api
                && &status.domain_name != address
            {
                status.domain_name = address.clone();
            }
        }
    }

    pub fn new_id(&mut self, kind: &str, region: &str) -> String {
        let serial = self.next_serial();
        nid::make(kind, region, &format!("{}/{serial}", self.world.name))
    }

    /// The region a child of `parent_id` lives in: the project's, followed up through clusters.
    pub fn region_of_parent(&self, parent_id: &str) -> Option<String> {
        if let Some(project) = self.find::<iam::Container>(parent_id) {
            return project.spec.as_ref().map(|s| s.region.clone());
        }
        if let Some(cluster) = self.find::<mk8s::Cluster>(parent_id) {
            return self.region_of_parent(cluster.parent_id());
        }
        None
    }

    /// What a resource's defaults are filled from: its region, and for a node group its
    /// cluster's control-plane subnet.
    pub(crate) fn fill_context<R: Resource>(&self, resource: &R) -> FillContext {
        let cluster_subnet_id = self
            .find::<mk8s::Cluster>(resource.parent_id())
            .and_then(|c| c.spec.as_ref())
            .and_then(|s| s.control_plane.as_ref())
            .map(|cp| cp.subnet_id.clone())
            .unwrap_or_default();
        FillContext {
            id: resource.id().to_string(),
            region: self.region_of(resource),
            cluster_subnet_id,
        }
    }

    pub(crate) fn region_of<R: Resource>(&self, resource: &R) -> String {
        resource
            .own_region()
            .or_else(|| self.region_of_parent(resource.parent_id()))
            .unwrap_or_default()
    }

    pub fn get<R: Resource>(&self, id: &str) -> Result<R, Status> {
        self.find::<R>(id)
            .cloned()
            .ok_or_else(|| not_found(R::SERVICE, id))
    }

    pub fn get_by_name<R: Resource>(&self, parent_id: &str, name: &str) -> Result<R, Status> {
        self.children::<R>(parent_id)
            .into_iter()
            .find(|r| r.name() == name)
            .cloned()
            .ok_or_else(|| not_found(R::SERVICE, &format!("{name} in {parent_id}")))
    }

    /// One page of the items matching `keep`, and the token of the next page.
    pub fn list<R: Resource>(
        &self,
        page_size: i64,
        page_token: &str,
        keep: impl Fn(&R) -> bool,
    ) -> Result<(Vec<R>, String), Status> {
        let all: Vec<&R> = R::items(&self.state).iter().filter(|r| keep(r)).collect();
        paginate(&all, page_size, page_token, R::SERVICE)
    }

    /// One page of the children of `parent_id` that match `keep`, and the token of the next
    /// page: what [`Core::list`] gives with a parent test first, at the cost of the children.
    pub fn list_children<R: Resource>(
        &self,
        parent_id: &str,
        page_size: i64,
        page_token: &str,
        keep: impl Fn(&R) -> bool,
    ) -> Result<(Vec<R>, String), Status> {
        let mut all = self.children::<R>(parent_id);
        all.retain(|r| keep(r));
        paginate(&all, page_size, page_token, R::SERVICE)
    }
}
