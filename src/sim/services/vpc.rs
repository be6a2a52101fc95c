//! `nebius.vpc.v1`: networks, subnets and pools.

use tonic::{Request, Response, Status};

use super::crud::crud;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

crud!(
    vpc::network_service_server::NetworkService, "nebius.vpc.v1.NetworkService", vpc::Network,
    get: vpc::GetNetworkRequest, by_name: vpc::GetNetworkByNameRequest,
    list: vpc::ListNetworksRequest => vpc::ListNetworksResponse,
    create: vpc::CreateNetworkRequest, update: vpc::UpdateNetworkRequest, delete: vpc::DeleteNetworkRequest,
    {
        async fn create_default(&self, request: Request<vpc::CreateDefaultNetworkRequest>) -> Result<Response<common::Operation>, Status> {
            let ctx = self.enter(&request, "/nebius.vpc.v1.NetworkService/CreateDefault").await?;
            let r = request.into_inner();
            let mut core = self.lock();
            let latency = core.latency();
            Ok(Response::new(core.create::<vpc::Network>(&ctx, r.metadata.unwrap_or_default(), vpc::NetworkSpec::default(), latency)?))
        }
    }
);

crud!(
    vpc::subnet_service_server::SubnetService, "nebius.vpc.v1.SubnetService", vpc::Subnet,
    get: vpc::GetSubnetRequest, by_name: vpc::GetSubnetByNameRequest,
    list: vpc::ListSubnetsRequest => vpc::ListSubnetsResponse,
    create: vpc::CreateSubnetRequest, update: vpc::UpdateSubnetRequest, delete: vpc::DeleteSubnetRequest,
    {
        async fn list_by_network(&self, request: Request<vpc::ListSubnetsByNetworkRequest>) -> Result<Response<vpc::ListSubnetsResponse>, Status> {
            self.enter(&request, "/nebius.vpc.v1.SubnetService/ListByNetwork").await?;
            let r = request.get_ref();
            let (items, next_page_token) = self.lock().list::<vpc::Subnet>(r.page_size, &r.page_token, |s| {
                s.spec.as_ref().is_some_and(|sp| sp.network_id == r.network_id)
            })?;
            Ok(Response::new(vpc::ListSubnetsResponse { items, next_page_token }))
        }
    }
);

crud!(
    vpc::pool_service_server::PoolService, "nebius.vpc.v1.PoolService", vpc::Pool,
    get: vpc::GetPoolRequest, by_name: vpc::GetPoolByNameRequest,
    list: vpc::ListPoolsRequest => vpc::ListPoolsResponse,
    create: vpc::CreatePoolRequest, update: vpc::UpdatePoolRequest, delete: vpc::DeletePoolRequest,
    {
        async fn list_by_source_pool(&self, request: Request<vpc::ListPoolsBySourcePoolRequest>) -> Result<Response<vpc::ListPoolsResponse>, Status> {
            self.enter(&request, "/nebius.vpc.v1.PoolService/ListBySourcePool").await?;
            let r = request.get_ref();
            let (items, next_page_token) = self.lock().list::<vpc::Pool>(r.page_size, &r.page_token, |p| {
                p.spec.as_ref().is_some_and(|sp| sp.source_pool_id == r.pool_id)
            })?;
            Ok(Response::new(vpc::ListPoolsResponse { items, next_page_token }))
        }
    }
);
