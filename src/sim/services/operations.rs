//! `nebius.common.v1.OperationService`: the operations every change answers with.

use tonic::{Request, Response, Status};

use super::SimService;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::sim::core::paginate;

#[tonic::async_trait]
impl common::operation_service_server::OperationService for SimService {
    async fn get(
        &self,
        request: Request<common::GetOperationRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.common.v1.OperationService/Get")
            .await?;
        Ok(Response::new(self.lock().operation(&request.get_ref().id)?))
    }
    async fn list(
        &self,
        request: Request<common::ListOperationsRequest>,
    ) -> Result<Response<common::ListOperationsResponse>, Status> {
        self.enter(&request, "/nebius.common.v1.OperationService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let ops: Vec<&common::Operation> = core
            .state
            .operations
            .iter()
            .filter(|o| o.resource_id == r.resource_id)
            .collect();
        let (operations, next_page_token) = paginate(&ops, r.page_size, &r.page_token, "common")?;
        Ok(Response::new(common::ListOperationsResponse {
            operations,
            next_page_token,
        }))
    }
}
