//! [`Cloud`] over the Nebius gRPC API: domain calls mapped to services, operations awaited,
//! every page read, and protobuf messages converted to domain types.

use super::client::{Host, NebiusClient};
use super::domain::*;
use super::error::{CloudError, ErrorKind};
use super::proto::nebius::capacity::v1 as capacity;
use super::proto::nebius::common::v1::{self as common, ResourceMetadata};
use super::proto::nebius::compute::v1 as compute;
use super::proto::nebius::iam::v1 as iam;
use super::proto::nebius::mk8s::v1 as mk8s;
use super::proto::nebius::quotas::v1 as quotas;
use super::proto::nebius::storage::v1 as storage;
use super::proto::nebius::vpc::v1 as vpc;

const PAGE_SIZE: i64 = 100;

fn labels(meta: &Option<ResourceMetadata>) -> Labels {
    meta.as_ref()
        .map(|m| {
            m.labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn meta_field(meta: &Option<ResourceMetadata>, f: impl Fn(&ResourceMetadata) -> &String) -> String {
    meta.as_ref().map(|m| f(m).clone()).unwrap_or_default()
}

fn new_meta(parent_id: &str, name: &str, labels: &Labels) -> ResourceMetadata {
    ResourceMetadata {
        parent_id: parent_id.to_string(),
        name: name.to_string(),
        labels: labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ..Default::default()
    }
}

fn missing(what: &str) -> CloudError {
    CloudError::new(
        tonic::Code::Internal,
        format!("the service returned no {what}"),
        ErrorKind::Internal,
    )
}

fn project_from(c: iam::Container) -> Project {
    let status = c.status.clone().unwrap_or_default();
    let state = if status.suspension_state == iam::SuspensionState::Suspended as i32
        || status.suspension_state == iam::SuspensionState::Suspending as i32
    {
        State::Suspended
    } else {
        match iam::State::try_from(status.container_state) {
            Ok(iam::State::Active) => State::Ready,
            Ok(iam::State::Creating) | Ok(iam::State::Created) | Ok(iam::State::Activating) => {
                State::Creating
            }
            Ok(iam::State::SchedulingForDeletion)
            | Ok(iam::State::ScheduledForDeletion)
            | Ok(iam::State::SchedulingForDeletionByParent)
            | Ok(iam::State::ScheduledForDeletionByParent)
            | Ok(iam::State::Purging)
            | Ok(iam::State::Purged) => State::Deleting,
            _ => State::Other,
        }
    };
    let region = c
        .spec
        .as_ref()
        .map(|s| s.region.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or(status.region);
    Project {
        id: meta_field(&c.metadata, |m| &m.id),
        tenant_id: meta_field(&c.metadata, |m| &m.parent_id),
        name: meta_field(&c.metadata, |m| &m.name),
        region,
        state,
        labels: labels(&c.metadata),
    }
}

fn vpc_state(state: i32, creating: i32, ready: i32, deleting: i32) -> State {
    match state {
        s if s == creating => State::Creating,
        s if s == ready => State::Ready,
        s if s == deleting => State::Deleting,
        _ => State::Other,
    }
}

fn network_from(n: vpc::Network) -> Network {
    use vpc::network_status::State as S;
    Network {
        id: meta_field(&n.metadata, |m| &m.id),
        project_id: meta_field(&n.metadata, |m| &m.parent_id),
        name: meta_field(&n.metadata, |m| &m.name),
        state: vpc_state(
            n.status.as_ref().map_or(0, |s| s.state),
            S::Creating as i32,
            S::Ready as i32,
            S::Deleting as i32,
        ),
        labels: labels(&n.metadata),
    }
}

fn subnet_from(s: vpc::Subnet) -> Subnet {
    use vpc::subnet_status::State as S;
    let status = s.status.clone().unwrap_or_default();
    Subnet {
        id: meta_field(&s.metadata, |m| &m.id),
        project_id: meta_field(&s.metadata, |m| &m.parent_id),
        name: meta_field(&s.metadata, |m| &m.name),
        network_id: s
            .spec
            .as_ref()
            .map(|sp| sp.network_id.clone())
            .unwrap_or_default(),
        cidrs: status
            .ipv4_private_pools
            .iter()
            .flat_map(|p| p.cidrs.clone())
            .collect(),
        state: vpc_state(
            status.state,
            S::Creating as i32,
            S::Ready as i32,
            S::Deleting as i32,
        ),
        labels: labels(&s.metadata),
    }
}

fn filesystem_from(f: compute::Filesystem) -> Filesystem {
    use compute::filesystem_spec::Size;
    use compute::filesystem_status::State as S;
    let gib = 1024 * 1024 * 1024;
    let size = match f.spec.as_ref().and_then(|s| s.size) {
        Some(Size::SizeGibibytes(g)) => g,
        Some(Size::SizeMebibytes(m)) => m / 1024,
        Some(Size::SizeKibibytes(k)) => k / (1024 * 1024),
        Some(Size::SizeBytes(b)) => b / gib,
        None => 0,
    };
    let state = match f.status.as_ref().map(|s| s.state) {
        Some(s) if s == S::Creating as i32 => State::Creating,
        Some(s) if s == S::Ready as i32 => State::Ready,
        Some(s) if s == S::Updating as i32 => State::Updating,
        Some(s) if s == S::Deleting as i32 => State::Deleting,
        _ => State::Other,
    };
    Filesystem {
        id: meta_field(&f.metadata, |m| &m.id),
        resource_version: f.metadata.as_ref().map_or(0, |m| m.resource_version),
        project_id: meta_field(&f.metadata, |m| &m.parent_id),
        name: meta_field(&f.metadata, |m| &m.name),
        size_gibibytes: size,
        state,
        labels: labels(&f.metadata),
    }
}

fn gpu_cluster_from(g: compute::GpuCluster) -> GpuCluster {
    GpuCluster {
        id: meta_field(&g.metadata, |m| &m.id),
        project_id: meta_field(&g.metadata, |m| &m.parent_id),
        name: meta_field(&g.metadata, |m| &m.name),
        infiniband_fabric: g
            .spec
            .as_ref()
            .map(|s| s.infiniband_fabric.clone())
            .unwrap_or_default(),
        state: if g.status.as_ref().is_some_and(|s| s.reconciling) {
            State::Updating
        } else {
            State::Ready
        },
        labels: labels(&g.metadata),
    }
}

fn cluster_from(c: mk8s::Cluster) -> Cluster {
    use mk8s::cluster_status::State as S;
    let cp = c
        .spec
        .as_ref()
        .and_then(|s| s.control_plane.clone())
        .unwrap_or_default();
    let status = c.status.clone().unwrap_or_default();
    Cluster {
        id: meta_field(&c.metadata, |m| &m.id),
        resource_version: c.metadata.as_ref().map_or(0, |m| m.resource_version),
        project_id: meta_field(&c.metadata, |m| &m.parent_id),
        name: meta_field(&c.metadata, |m| &m.name),
        spec: ClusterSpec {
            k8s_version: cp.version.clone(),
            subnet_id: cp.subnet_id.clone(),
            public_endpoint: cp
                .endpoints
                .as_ref()
                .is_some_and(|e| e.public_endpoint.is_some()),
        },
        state: match status.state {
            s if s == S::Provisioning as i32 => State::Creating,
            s if s == S::Running as i32 => State::Ready,
            s if s == S::Deleting as i32 => State::Deleting,
            _ => State::Other,
        },
        public_endpoint: status
            .control_plane
            .as_ref()
            .and_then(|cp| cp.endpoints.as_ref())
            .map(|e| e.public_endpoint.clone())
            .unwrap_or_default(),
        version: status
            .control_plane
            .as_ref()
            .map(|cp| cp.version.clone())
            .unwrap_or_default(),
        labels: labels(&c.metadata),
    }
}

fn cluster_spec_to(spec: &ClusterSpec) -> mk8s::ClusterSpec {
    mk8s::ClusterSpec {
        control_plane: Some(mk8s::ControlPlaneSpec {
            version: spec.k8s_version.clone(),
            subnet_id: spec.subnet_id.clone(),
            endpoints: Some(mk8s::ControlPlaneEndpointsSpec {
                public_endpoint: spec.public_endpoint.then(mk8s::PublicEndpointSpec::default),
            }),
            ..Default::default()
        }),
        kube_network: None,
    }
}

fn policy_name(policy: i32) -> &'static str {
    match mk8s::reservation_policy::Policy::try_from(policy) {
        Ok(mk8s::reservation_policy::Policy::Strict) => "STRICT",
        Ok(mk8s::reservation_policy::Policy::Forbid) => "FORBID",
        _ => "AUTO",
    }
}

fn node_group_spec_to(spec: &NodeGroupSpec) -> mk8s::NodeGroupSpec {
    use mk8s::attached_filesystem_spec::{AttachMode, Type};
    let policy = |name: &str| match name {
        "STRICT" => mk8s::reservation_policy::Policy::Strict,
        "FORBID" => mk8s::reservation_policy::Policy::Forbid,
        _ => mk8s::reservation_policy::Policy::Auto,
    };
    mk8s::NodeGroupSpec {
        version: String::new(),
        size: Some(mk8s::node_group_spec::Size::FixedNodeCount(spec.node_count)),
        template: Some(mk8s::NodeTemplate {
            metadata: (!spec.node_labels.is_empty()).then(|| mk8s::NodeMetadataTemplate {
                labels: spec
                    .node_labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            }),
            resources: Some(mk8s::ResourcesSpec {
                platform: spec.platform.clone(),
                size: Some(mk8s::resources_spec::Size::Preset(spec.preset.clone())),
            }),
            boot_disk: Some(mk8s::DiskSpec {
                size: Some(mk8s::disk_spec::Size::SizeGibibytes(
                    spec.boot_disk_gibibytes,
                )),
                r#type: mk8s::disk_spec::DiskType::NetworkSsd as i32,
                ..Default::default()
            }),
            gpu_settings: (!spec.drivers_preset.is_empty()).then(|| mk8s::GpuSettings {
                drivers_preset: spec.drivers_preset.clone(),
            }),
            gpu_cluster: (!spec.gpu_cluster_id.is_empty()).then(|| mk8s::GpuClusterSpec {
                id: spec.gpu_cluster_id.clone(),
            }),
            network_interfaces: vec![mk8s::NetworkInterfaceTemplate {
                public_ip_address: spec.public_ip.then(mk8s::PublicIpAddress::default),
                subnet_id: spec.subnet_id.clone(),
                security_groups: Vec::new(),
            }],
            filesystems: spec
                .filesystems
                .iter()
                .map(|f| mk8s::AttachedFilesystemSpec {
                    attach_mode: if f.read_write {
                        AttachMode::ReadWrite
                    } else {
                        AttachMode::ReadOnly
                    } as i32,
                    mount_tag: f.mount_tag.clone(),
                    r#type: Some(Type::ExistingFilesystem(mk8s::ExistingFilesystem {
                        id: f.filesystem_id.clone(),
                    })),
                })
                .collect(),
            cloud_init_user_data: spec.cloud_init_user_data.clone(),
            preemptible: spec.preemptible.then(mk8s::PreemptibleSpec::default),
            reservation_policy: spec.reservation.as_ref().map(|r| mk8s::ReservationPolicy {
                policy: policy(&r.policy) as i32,
                reservation_ids: r.capacity_block_group_ids.clone(),
            }),
            ..Default::default()
        }),
        strategy: None,
        auto_repair: None,
    }
}

fn node_group_from(g: mk8s::NodeGroup) -> NodeGroup {
    use mk8s::node_group_status::State as S;
    let spec = g.spec.clone().unwrap_or_default();
    let template = spec.template.clone().unwrap_or_default();
    let resources = template.resources.clone().unwrap_or_default();
    let status = g.status.clone().unwrap_or_default();
    let gib = 1024 * 1024 * 1024;
    let boot = match template.boot_disk.as_ref().and_then(|d| d.size) {
        Some(mk8s::disk_spec::Size::SizeGibibytes(v)) => v,
        Some(mk8s::disk_spec::Size::SizeMebibytes(v)) => v / 1024,
        Some(mk8s::disk_spec::Size::SizeKibibytes(v)) => v / (1024 * 1024),
        Some(mk8s::disk_spec::Size::SizeBytes(v)) => v / gib,
        None => 0,
    };
    let interface = template
        .network_interfaces
        .first()
        .cloned()
        .unwrap_or_default();
    NodeGroup {
        id: meta_field(&g.metadata, |m| &m.id),
        resource_version: g.metadata.as_ref().map_or(0, |m| m.resource_version),
        cluster_id: meta_field(&g.metadata, |m| &m.parent_id),
        name: meta_field(&g.metadata, |m| &m.name),
        spec: NodeGroupSpec {
            node_count: match spec.size {
                Some(mk8s::node_group_spec::Size::FixedNodeCount(n)) => n,
                Some(mk8s::node_group_spec::Size::Autoscaling(a)) => a.max_node_count,
                None => 0,
            },
            platform: resources.platform.clone(),
            preset: match resources.size {
                Some(mk8s::resources_spec::Size::Preset(p)) => p,
                None => String::new(),
            },
            boot_disk_gibibytes: boot,
            gpu_cluster_id: template
                .gpu_cluster
                .as_ref()
                .map(|g| g.id.clone())
                .unwrap_or_default(),
            drivers_preset: template
                .gpu_settings
                .as_ref()
                .map(|g| g.drivers_preset.clone())
                .unwrap_or_default(),
            filesystems: template
                .filesystems
                .iter()
                .filter_map(|f| {
                    let Some(mk8s::attached_filesystem_spec::Type::ExistingFilesystem(e)) =
                        &f.r#type
                    else {
                        return None;
                    };
                    Some(AttachedFilesystem {
                        filesystem_id: e.id.clone(),
                        mount_tag: f.mount_tag.clone(),
                        read_write: f.attach_mode
                            == mk8s::attached_filesystem_spec::AttachMode::ReadWrite as i32,
                    })
                })
                .collect(),
            cloud_init_user_data: template.cloud_init_user_data.clone(),
            preemptible: template.preemptible.is_some(),
            reservation: template.reservation_policy.as_ref().map(|r| Reservation {
                policy: policy_name(r.policy).to_string(),
                capacity_block_group_ids: r.reservation_ids.clone(),
            }),
            subnet_id: interface.subnet_id.clone(),
            public_ip: interface.public_ip_address.is_some(),
            node_labels: template
                .metadata
                .as_ref()
                .map(|m| {
                    m.labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default(),
        },
        state: match status.state {
            s if s == S::Provisioning as i32 => State::Creating,
            s if s == S::Running as i32 => State::Ready,
            s if s == S::Deleting as i32 => State::Deleting,
            _ => State::Other,
        },
        node_count: status.node_count,
        ready_node_count: status.ready_node_count,
        labels: labels(&g.metadata),
    }
}

fn storage_class_to(name: &str) -> storage::StorageClass {
    match name {
        "enhanced_throughput" | "enhanced" => storage::StorageClass::EnhancedThroughput,
        "intelligent" => storage::StorageClass::Intelligent,
        _ => storage::StorageClass::Standard,
    }
}

fn bucket_from(b: storage::Bucket) -> Bucket {
    use storage::bucket_status::State as S;
    let spec = b.spec.clone().unwrap_or_default();
    let status = b.status.clone().unwrap_or_default();
    Bucket {
        id: meta_field(&b.metadata, |m| &m.id),
        resource_version: b.metadata.as_ref().map_or(0, |m| m.resource_version),
        project_id: meta_field(&b.metadata, |m| &m.parent_id),
        name: meta_field(&b.metadata, |m| &m.name),
        storage_class: match storage::StorageClass::try_from(spec.default_storage_class) {
            Ok(storage::StorageClass::EnhancedThroughput) => "enhanced_throughput",
            Ok(storage::StorageClass::Intelligent) => "intelligent",
            _ => "standard",
        }
        .to_string(),
        max_size_bytes: spec.max_size_bytes,
        region: status.region.clone(),
        state: if status.suspension_state
            == storage::bucket_status::SuspensionState::Suspended as i32
        {
            State::Suspended
        } else {
            match status.state {
                s if s == S::Creating as i32 => State::Creating,
                s if s == S::Active as i32 => State::Ready,
                s if s == S::Updating as i32 => State::Updating,
                s if s == S::ScheduledForDeletion as i32 => State::Deleting,
                _ => State::Other,
            }
        },
        scheduled_for_deletion: status.deleted_at.is_some() || status.purge_at.is_some(),
        labels: labels(&b.metadata),
    }
}

fn allowance_from(a: quotas::QuotaAllowance) -> QuotaAllowance {
    let spec = a.spec.clone().unwrap_or_default();
    let status = a.status.clone().unwrap_or_default();
    QuotaAllowance {
        id: meta_field(&a.metadata, |m| &m.id),
        parent_id: meta_field(&a.metadata, |m| &m.parent_id),
        name: meta_field(&a.metadata, |m| &m.name),
        region: spec.region,
        limit: spec.limit,
        usage: status.usage,
        usage_percentage: status.usage_percentage.clone(),
        usage_state: quotas::quota_allowance_status::UsageState::try_from(status.usage_state)
            .map(|s| {
                format!(
                    "USAGE_STATE_{}",
                    s.as_str_name().trim_start_matches("USAGE_STATE_")
                )
            })
            .unwrap_or_default(),
        unit: status.unit.clone(),
        state: quotas::quota_allowance_status::State::try_from(status.state)
            .map(|s| format!("STATE_{}", s.as_str_name().trim_start_matches("STATE_")))
            .unwrap_or_default(),
    }
}

fn block_from(b: capacity::CapacityBlockGroup) -> CapacityBlockGroup {
    let status = b.status.clone().unwrap_or_default();
    let affinity = status
        .resource_affinity
        .as_ref()
        .and_then(|a| a.versions.as_ref())
        .map(|capacity::resource_affinity::Versions::ComputeV1(c)| c.clone())
        .unwrap_or_default();
    CapacityBlockGroup {
        id: meta_field(&b.metadata, |m| &m.id),
        parent_id: meta_field(&b.metadata, |m| &m.parent_id),
        region: status.region.clone(),
        platform: affinity.platform,
        fabric: affinity.fabric,
        state: capacity::capacity_block_group_status::State::try_from(status.state)
            .map(|s| s.as_str_name().to_string())
            .unwrap_or_default(),
        current_limit: status.current_limit,
        usage: status.usage,
        usage_percentage: status.usage_percentage.clone(),
        usage_state: capacity::capacity_block_group_status::UsageState::try_from(
            status.usage_state,
        )
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_default(),
    }
}

/// Lists every page of a `parent_id`-scoped List RPC.
macro_rules! list_all {
    ($self:ident, $host:expr, $req:ident { $($field:ident: $value:expr),* }, $client:path, $convert:expr) => {{
        let this = $self.clone();
        $self
            .list_all(|page_token| {
                let this = this.clone();
                #[allow(clippy::needless_update)]
                let req = $req { $($field: $value.to_string(),)* page_size: PAGE_SIZE, page_token, ..Default::default() };
                async move {
                    let response = this
                        .call($host, None, req, |channel, request| async move { <$client>::new(channel).list(request).await })
                        .await?;
                    Ok((response.items.into_iter().map($convert).collect(), response.next_page_token))
                }
            })
            .await
    }};
}

/// Sends a mutation, waits for its operation, and returns the resource ID it names.
macro_rules! mutate {
    ($self:ident, $host:expr, $key:expr, $req:expr, $client:path, $method:ident) => {{
        let op = $self
            .call($host, Some($key), $req, |channel, request| async move {
                <$client>::new(channel).$method(request).await
            })
            .await?;
        let op = $self.wait($host, op).await?;
        op.resource_id
    }};
}

impl Cloud for NebiusClient {
    fn describe(&self) -> String {
        self.description().to_string()
    }

    async fn get_tenant(&self, id: &str) -> CloudResult<Tenant> {
        let req = iam::GetTenantRequest { id: id.to_string() };
        let t = self
            .call(Host::Iam, None, req, |c, r| async move {
                iam::tenant_service_client::TenantServiceClient::new(c)
                    .get(r)
                    .await
            })
            .await?;
        Ok(Tenant {
            id: meta_field(&t.metadata, |m| &m.id),
            name: meta_field(&t.metadata, |m| &m.name),
        })
    }

    async fn list_projects(&self, tenant_id: &str) -> CloudResult<Vec<Project>> {
        use iam::ListProjectsRequest;
        list_all!(
            self,
            Host::Iam,
            ListProjectsRequest {
                parent_id: tenant_id
            },
            iam::project_service_client::ProjectServiceClient<_>,
            project_from
        )
    }

    async fn get_project(&self, id: &str) -> CloudResult<Project> {
        let req = iam::GetProjectRequest { id: id.to_string() };
        let c = self
            .call(Host::Iam, None, req, |c, r| async move {
                iam::project_service_client::ProjectServiceClient::new(c)
                    .get(r)
                    .await
            })
            .await?;
        Ok(project_from(c))
    }

    async fn create_project(
        &self,
        tenant_id: &str,
        name: &str,
        region: &str,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Project> {
        let req = iam::CreateProjectRequest {
            metadata: Some(new_meta(tenant_id, name, labels)),
            spec: Some(iam::ContainerSpec {
                region: region.to_string(),
            }),
        };
        let id = mutate!(
            self,
            Host::Iam,
            key,
            req,
            iam::project_service_client::ProjectServiceClient<_>,
            create
        );
        self.get_project(&id).await
    }

    async fn list_networks(&self, project_id: &str) -> CloudResult<Vec<Network>> {
        use vpc::ListNetworksRequest;
        list_all!(
            self,
            Host::Vpc,
            ListNetworksRequest {
                parent_id: project_id
            },
            vpc::network_service_client::NetworkServiceClient<_>,
            network_from
        )
    }

    async fn create_network(
        &self,
        project_id: &str,
        name: &str,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Network> {
        let req = vpc::CreateNetworkRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(vpc::NetworkSpec::default()),
        };
        let id = mutate!(
            self,
            Host::Vpc,
            key,
            req,
            vpc::network_service_client::NetworkServiceClient<_>,
            create
        );
        let n = self
            .call(
                Host::Vpc,
                None,
                vpc::GetNetworkRequest { id },
                |c, r| async move {
                    vpc::network_service_client::NetworkServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        Ok(network_from(n))
    }

    async fn delete_network(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = vpc::DeleteNetworkRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Vpc,
            key,
            req,
            vpc::network_service_client::NetworkServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_subnets(&self, project_id: &str) -> CloudResult<Vec<Subnet>> {
        use vpc::ListSubnetsRequest;
        list_all!(
            self,
            Host::Vpc,
            ListSubnetsRequest {
                parent_id: project_id
            },
            vpc::subnet_service_client::SubnetServiceClient<_>,
            subnet_from
        )
    }

    async fn create_subnet(
        &self,
        project_id: &str,
        name: &str,
        network_id: &str,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Subnet> {
        let req = vpc::CreateSubnetRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(vpc::SubnetSpec {
                network_id: network_id.to_string(),
                ipv4_private_pools: Some(vpc::IPv4PrivateSubnetPools {
                    pools: Vec::new(),
                    use_network_pools: true,
                }),
                ..Default::default()
            }),
        };
        let id = mutate!(
            self,
            Host::Vpc,
            key,
            req,
            vpc::subnet_service_client::SubnetServiceClient<_>,
            create
        );
        let s = self
            .call(
                Host::Vpc,
                None,
                vpc::GetSubnetRequest { id },
                |c, r| async move {
                    vpc::subnet_service_client::SubnetServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        Ok(subnet_from(s))
    }

    async fn delete_subnet(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = vpc::DeleteSubnetRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Vpc,
            key,
            req,
            vpc::subnet_service_client::SubnetServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_filesystems(&self, project_id: &str) -> CloudResult<Vec<Filesystem>> {
        use compute::ListFilesystemsRequest;
        list_all!(
            self,
            Host::Compute,
            ListFilesystemsRequest {
                parent_id: project_id
            },
            compute::filesystem_service_client::FilesystemServiceClient<_>,
            filesystem_from
        )
    }

    async fn get_filesystem(&self, id: &str) -> CloudResult<Filesystem> {
        let f = self
            .call(
                Host::Compute,
                None,
                compute::GetFilesystemRequest { id: id.to_string() },
                |c, r| async move {
                    compute::filesystem_service_client::FilesystemServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        Ok(filesystem_from(f))
    }

    async fn create_filesystem(
        &self,
        project_id: &str,
        name: &str,
        size_gibibytes: i64,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Filesystem> {
        let req = compute::CreateFilesystemRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(compute::FilesystemSpec {
                size: Some(compute::filesystem_spec::Size::SizeGibibytes(
                    size_gibibytes,
                )),
                r#type: compute::filesystem_spec::FilesystemType::NetworkSsd as i32,
                ..Default::default()
            }),
        };
        let id = mutate!(
            self,
            Host::Compute,
            key,
            req,
            compute::filesystem_service_client::FilesystemServiceClient<_>,
            create
        );
        self.get_filesystem(&id).await
    }

    async fn resize_filesystem(
        &self,
        id: &str,
        size_gibibytes: i64,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Filesystem> {
        let current = self
            .call(
                Host::Compute,
                None,
                compute::GetFilesystemRequest { id: id.to_string() },
                |c, r| async move {
                    compute::filesystem_service_client::FilesystemServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        let mut metadata = current
            .metadata
            .clone()
            .ok_or_else(|| missing("filesystem metadata"))?;
        metadata.labels = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut spec = current.spec.unwrap_or_default();
        spec.size = Some(compute::filesystem_spec::Size::SizeGibibytes(
            size_gibibytes,
        ));
        let req = compute::UpdateFilesystemRequest {
            metadata: Some(metadata),
            spec: Some(spec),
        };
        mutate!(
            self,
            Host::Compute,
            key,
            req,
            compute::filesystem_service_client::FilesystemServiceClient<_>,
            update
        );
        self.get_filesystem(id).await
    }

    async fn delete_filesystem(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = compute::DeleteFilesystemRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Compute,
            key,
            req,
            compute::filesystem_service_client::FilesystemServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_gpu_clusters(&self, project_id: &str) -> CloudResult<Vec<GpuCluster>> {
        use compute::ListGpuClustersRequest;
        list_all!(
            self,
            Host::Compute,
            ListGpuClustersRequest {
                parent_id: project_id
            },
            compute::gpu_cluster_service_client::GpuClusterServiceClient<_>,
            gpu_cluster_from
        )
    }

    async fn create_gpu_cluster(
        &self,
        project_id: &str,
        name: &str,
        fabric: &str,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<GpuCluster> {
        let req = compute::CreateGpuClusterRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(compute::GpuClusterSpec {
                infiniband_fabric: fabric.to_string(),
            }),
        };
        let id = mutate!(
            self,
            Host::Compute,
            key,
            req,
            compute::gpu_cluster_service_client::GpuClusterServiceClient<_>,
            create
        );
        let g = self
            .call(
                Host::Compute,
                None,
                compute::GetGpuClusterRequest { id },
                |c, r| async move {
                    compute::gpu_cluster_service_client::GpuClusterServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        Ok(gpu_cluster_from(g))
    }

    async fn delete_gpu_cluster(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = compute::DeleteGpuClusterRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Compute,
            key,
            req,
            compute::gpu_cluster_service_client::GpuClusterServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_clusters(&self, project_id: &str) -> CloudResult<Vec<Cluster>> {
        use mk8s::ListClustersRequest;
        list_all!(
            self,
            Host::Mk8s,
            ListClustersRequest {
                parent_id: project_id
            },
            mk8s::cluster_service_client::ClusterServiceClient<_>,
            cluster_from
        )
    }

    async fn get_cluster(&self, id: &str) -> CloudResult<Cluster> {
        let req = mk8s::GetClusterRequest {
            id: id.to_string(),
            resource_version: String::new(),
        };
        let c = self
            .call(Host::Mk8s, None, req, |c, r| async move {
                mk8s::cluster_service_client::ClusterServiceClient::new(c)
                    .get(r)
                    .await
            })
            .await?;
        Ok(cluster_from(c))
    }

    async fn create_cluster(
        &self,
        project_id: &str,
        name: &str,
        spec: &ClusterSpec,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Cluster> {
        let req = mk8s::CreateClusterRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(cluster_spec_to(spec)),
        };
        let id = mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::cluster_service_client::ClusterServiceClient<_>,
            create
        );
        self.get_cluster(&id).await
    }

    async fn update_cluster(
        &self,
        id: &str,
        spec: &ClusterSpec,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Cluster> {
        let req = mk8s::GetClusterRequest {
            id: id.to_string(),
            resource_version: String::new(),
        };
        let current = self
            .call(Host::Mk8s, None, req, |c, r| async move {
                mk8s::cluster_service_client::ClusterServiceClient::new(c)
                    .get(r)
                    .await
            })
            .await?;
        let mut metadata = current
            .metadata
            .clone()
            .ok_or_else(|| missing("cluster metadata"))?;
        metadata.labels = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let req = mk8s::UpdateClusterRequest {
            metadata: Some(metadata),
            spec: Some(cluster_spec_to(spec)),
        };
        mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::cluster_service_client::ClusterServiceClient<_>,
            update
        );
        self.get_cluster(id).await
    }

    async fn delete_cluster(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = mk8s::DeleteClusterRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::cluster_service_client::ClusterServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_node_groups(&self, cluster_id: &str) -> CloudResult<Vec<NodeGroup>> {
        use mk8s::ListNodeGroupsRequest;
        list_all!(
            self,
            Host::Mk8s,
            ListNodeGroupsRequest {
                parent_id: cluster_id
            },
            mk8s::node_group_service_client::NodeGroupServiceClient<_>,
            node_group_from
        )
    }

    async fn create_node_group(
        &self,
        cluster_id: &str,
        name: &str,
        spec: &NodeGroupSpec,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<NodeGroup> {
        let req = mk8s::CreateNodeGroupRequest {
            metadata: Some(new_meta(cluster_id, name, labels)),
            spec: Some(node_group_spec_to(spec)),
        };
        let id = mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::node_group_service_client::NodeGroupServiceClient<_>,
            create
        );
        self.get_node_group(&id).await
    }

    async fn update_node_group(
        &self,
        id: &str,
        spec: &NodeGroupSpec,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<NodeGroup> {
        let current = self.raw_node_group(id).await?;
        let mut metadata = current
            .metadata
            .clone()
            .ok_or_else(|| missing("node group metadata"))?;
        metadata.labels = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let req = mk8s::UpdateNodeGroupRequest {
            metadata: Some(metadata),
            spec: Some(node_group_spec_to(spec)),
        };
        mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::node_group_service_client::NodeGroupServiceClient<_>,
            update
        );
        self.get_node_group(id).await
    }

    async fn delete_node_group(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = mk8s::DeleteNodeGroupRequest { id: id.to_string() };
        mutate!(
            self,
            Host::Mk8s,
            key,
            req,
            mk8s::node_group_service_client::NodeGroupServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_buckets(&self, project_id: &str) -> CloudResult<Vec<Bucket>> {
        use storage::ListBucketsRequest;
        list_all!(
            self,
            Host::Storage,
            ListBucketsRequest {
                parent_id: project_id
            },
            storage::bucket_service_client::BucketServiceClient<_>,
            bucket_from
        )
    }

    async fn create_bucket(
        &self,
        project_id: &str,
        name: &str,
        storage_class: &str,
        max_size_bytes: i64,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Bucket> {
        let req = storage::CreateBucketRequest {
            metadata: Some(new_meta(project_id, name, labels)),
            spec: Some(storage::BucketSpec {
                max_size_bytes,
                default_storage_class: storage_class_to(storage_class) as i32,
                ..Default::default()
            }),
        };
        let id = mutate!(
            self,
            Host::Storage,
            key,
            req,
            storage::bucket_service_client::BucketServiceClient<_>,
            create
        );
        self.get_bucket(&id).await
    }

    async fn update_bucket(
        &self,
        id: &str,
        storage_class: &str,
        max_size_bytes: i64,
        labels: &Labels,
        key: &str,
    ) -> CloudResult<Bucket> {
        let current = self
            .call(
                Host::Storage,
                None,
                storage::GetBucketRequest { id: id.to_string() },
                |c, r| async move {
                    storage::bucket_service_client::BucketServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        let mut metadata = current
            .metadata
            .clone()
            .ok_or_else(|| missing("bucket metadata"))?;
        metadata.labels = labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut spec = current.spec.clone().unwrap_or_default();
        spec.max_size_bytes = max_size_bytes;
        spec.default_storage_class = storage_class_to(storage_class) as i32;
        let req = storage::UpdateBucketRequest {
            metadata: Some(metadata),
            spec: Some(spec),
        };
        mutate!(
            self,
            Host::Storage,
            key,
            req,
            storage::bucket_service_client::BucketServiceClient<_>,
            update
        );
        self.get_bucket(id).await
    }

    async fn delete_bucket(&self, id: &str, key: &str) -> CloudResult<()> {
        let req = storage::DeleteBucketRequest {
            id: id.to_string(),
            purge: None,
        };
        mutate!(
            self,
            Host::Storage,
            key,
            req,
            storage::bucket_service_client::BucketServiceClient<_>,
            delete
        );
        Ok(())
    }

    async fn list_quota_allowances(&self, parent_id: &str) -> CloudResult<Vec<QuotaAllowance>> {
        use quotas::ListQuotaAllowancesRequest;
        list_all!(
            self,
            Host::Quotas,
            ListQuotaAllowancesRequest {
                parent_id: parent_id
            },
            quotas::quota_allowance_service_client::QuotaAllowanceServiceClient<_>,
            allowance_from
        )
    }

    async fn list_capacity_block_groups(
        &self,
        tenant_id: &str,
    ) -> CloudResult<Vec<CapacityBlockGroup>> {
        use capacity::ListCapacityBlockGroupsRequest;
        list_all!(
            self,
            Host::Capacity,
            ListCapacityBlockGroupsRequest {
                parent_id: tenant_id
            },
            capacity::capacity_block_group_service_client::CapacityBlockGroupServiceClient<_>,
            block_from
        )
    }
}

impl NebiusClient {
    async fn raw_node_group(&self, id: &str) -> CloudResult<mk8s::NodeGroup> {
        let req = mk8s::GetNodeGroupRequest {
            id: id.to_string(),
            resource_version: String::new(),
        };
        self.call(Host::Mk8s, None, req, |c, r| async move {
            mk8s::node_group_service_client::NodeGroupServiceClient::new(c)
                .get(r)
                .await
        })
        .await
    }

    pub async fn get_node_group(&self, id: &str) -> CloudResult<NodeGroup> {
        Ok(node_group_from(self.raw_node_group(id).await?))
    }

    pub async fn get_bucket(&self, id: &str) -> CloudResult<Bucket> {
        let b = self
            .call(
                Host::Storage,
                None,
                storage::GetBucketRequest { id: id.to_string() },
                |c, r| async move {
                    storage::bucket_service_client::BucketServiceClient::new(c)
                        .get(r)
                        .await
                },
            )
            .await?;
        Ok(bucket_from(b))
    }

    /// `OperationService.Get` on a host (tests and diagnostics).
    pub async fn get_operation(&self, host: Host, id: &str) -> CloudResult<common::Operation> {
        self.call(
            host,
            None,
            common::GetOperationRequest { id: id.to_string() },
            |c, r| async move {
                common::operation_service_client::OperationServiceClient::new(c)
                    .get(r)
                    .await
            },
        )
        .await
    }
}
