//! VPC: networks and their subnets.

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta};
use super::rpc::{get, list_all, mutate};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{CloudResult, Labels, Network, State, Subnet};
use crate::cloud::proto::nebius::vpc::v1 as vpc;

type NetworkService = vpc::network_service_client::NetworkServiceClient<Channel>;
type SubnetService = vpc::subnet_service_client::SubnetServiceClient<Channel>;

pub(super) async fn list_networks(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Network>> {
    list_all!(
        client,
        Host::Vpc,
        vpc::ListNetworksRequest,
        project_id,
        NetworkService,
        network_from
    )
}

pub(super) async fn create_network(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    labels: &Labels,
    key: &str,
) -> CloudResult<Network> {
    let req = vpc::CreateNetworkRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(vpc::NetworkSpec::default()),
    };
    let id = mutate!(client, Host::Vpc, key, req, NetworkService, create);
    get!(
        client,
        Host::Vpc,
        vpc::GetNetworkRequest { id },
        NetworkService
    )
    .map(network_from)
}

pub(super) async fn delete_network(client: &NebiusClient, id: &str, key: &str) -> CloudResult<()> {
    let req = vpc::DeleteNetworkRequest { id: id.to_string() };
    mutate!(client, Host::Vpc, key, req, NetworkService, delete);
    Ok(())
}

pub(super) async fn list_subnets(
    client: &NebiusClient,
    project_id: &str,
) -> CloudResult<Vec<Subnet>> {
    list_all!(
        client,
        Host::Vpc,
        vpc::ListSubnetsRequest,
        project_id,
        SubnetService,
        subnet_from
    )
}

pub(super) async fn create_subnet(
    client: &NebiusClient,
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
    let id = mutate!(client, Host::Vpc, key, req, SubnetService, create);
    get!(
        client,
        Host::Vpc,
        vpc::GetSubnetRequest { id },
        SubnetService
    )
    .map(subnet_from)
}

pub(super) async fn delete_subnet(client: &NebiusClient, id: &str, key: &str) -> CloudResult<()> {
    let req = vpc::DeleteSubnetRequest { id: id.to_string() };
    mutate!(client, Host::Vpc, key, req, SubnetService, delete);
    Ok(())
}

/// Networks and subnets have separate state enums with the same meanings.
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
