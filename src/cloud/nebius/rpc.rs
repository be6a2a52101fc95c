//! How every Nebius call is made: read one resource, read every page of a list, send a
//! mutation and wait for its operation. Macros, because each service has its own generated
//! client type with no trait in common.

use tonic::transport::Channel;

use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::CloudResult;
use crate::cloud::proto::nebius::common::v1 as common;

type OperationService = common::operation_service_client::OperationServiceClient<Channel>;

/// Items asked for per page of a List RPC.
pub(super) const PAGE_SIZE: i64 = 100;

/// Reads one resource with its service's `Get`.
macro_rules! get {
    ($client:expr, $host:expr, $req:expr, $service:path) => {
        $client
            .call($host, None, $req, |channel, request| async move {
                <$service>::new(channel).get(request).await
            })
            .await
    };
}

/// Lists every page of a `parent_id`-scoped List RPC.
macro_rules! list_all {
    (
        $client:ident, $host:expr, $proto:ident::$req:ident, $parent_id:expr, $service:path,
        $convert:expr
    ) => {{
        let this = $client.clone();
        $client
            .list_all(|page_token| {
                let this = this.clone();
                #[allow(clippy::needless_update)]
                let req = $proto::$req {
                    parent_id: $parent_id.to_string(),
                    page_size: $crate::cloud::nebius::rpc::PAGE_SIZE,
                    page_token,
                    ..Default::default()
                };
                async move {
                    let response = this
                        .call($host, None, req, |channel, request| async move {
                            <$service>::new(channel).list(request).await
                        })
                        .await?;
                    Ok((
                        response.items.into_iter().map($convert).collect(),
                        response.next_page_token,
                    ))
                }
            })
            .await
    }};
}

/// Sends a mutation, waits for its operation, and returns the resource ID it names. A failed
/// operation is reported with the request and trace IDs of the call that started it.
macro_rules! mutate {
    ($client:ident, $host:expr, $key:expr, $req:expr, $service:path, $method:ident) => {
        $crate::cloud::nebius::rpc::mutate!(@send $client, $host, $key, None, $req, $service, $method)
    };
    (@send $client:ident, $host:expr, $key:expr, $mask:expr, $req:expr, $service:path, $method:ident) => {{
        let headers = $crate::cloud::client::CallHeaders {
            idempotency_key: Some($key),
            reset_mask: $mask,
        };
        let (op, ids) = $client
            .call_with($host, headers, $req, |channel, request| async move {
                <$service>::new(channel).$method(request).await
            })
            .await?;
        let op = $client
            .wait($host, op)
            .await
            .map_err(|e| e.with_request_ids(&ids))?;
        op.resource_id
    }};
}

/// An Update, sent as the SDK sends it: with the `x-resetmask` of everything the request leaves
/// empty, so Nebius resets exactly that and keeps what fleetbot's protos do not know.
macro_rules! update {
    ($client:ident, $host:expr, $key:expr, $req:expr, $service:path) => {{
        let mask = $crate::cloud::reset_mask::for_update(&$req);
        $crate::cloud::nebius::rpc::mutate!(@send $client, $host, $key, Some(mask.as_str()), $req, $service, update)
    }};
}

pub(super) use {get, list_all, mutate, update};

impl NebiusClient {
    /// `OperationService.Get` on a host (tests and diagnostics).
    pub async fn get_operation(&self, host: Host, id: &str) -> CloudResult<common::Operation> {
        let req = common::GetOperationRequest { id: id.to_string() };
        get!(self, host, req, OperationService)
    }
}
