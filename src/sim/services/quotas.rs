//! `nebius.quotas.v1`: the tenant's quota allowances, readable but not changeable (as on
//! Nebius, where the account team sets them).

use tonic::{Request, Response, Status};

use super::SimService;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::sim::core::{not_found, paginate};

fn tenant_allowances_only() -> Status {
    Status::permission_denied(
        "tenant quota allowances are changed by the Nebius account team, not through this API",
    )
}

#[tonic::async_trait]
impl quotas::quota_allowance_service_server::QuotaAllowanceService for SimService {
    async fn list(
        &self,
        request: Request<quotas::ListQuotaAllowancesRequest>,
    ) -> Result<Response<quotas::ListQuotaAllowancesResponse>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/List")
            .await?;
        let r = request.get_ref();
        let core = self.lock();
        let all: Vec<&quotas::QuotaAllowance> = core
            .state
            .quota_allowances
            .iter()
            .filter(|a| {
                a.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id)
            })
            .collect();
        let (items, next_page_token) = paginate(&all, r.page_size, &r.page_token, "quotas")?;
        Ok(Response::new(quotas::ListQuotaAllowancesResponse {
            items,
            next_page_token,
        }))
    }
    async fn get(
        &self,
        request: Request<quotas::GetQuotaAllowanceRequest>,
    ) -> Result<Response<quotas::QuotaAllowance>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Get")
            .await?;
        let id = &request.get_ref().id;
        self.lock()
            .state
            .quota_allowances
            .iter()
            .find(|a| a.metadata.as_ref().is_some_and(|m| &m.id == id))
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("quotas", id))
    }
    async fn get_by_name(
        &self,
        request: Request<quotas::GetByNameRequest>,
    ) -> Result<Response<quotas::QuotaAllowance>, Status> {
        self.enter(
            &request,
            "/nebius.quotas.v1.QuotaAllowanceService/GetByName",
        )
        .await?;
        let r = request.get_ref();
        self.lock()
            .state
            .quota_allowances
            .iter()
            .find(|a| {
                a.metadata
                    .as_ref()
                    .is_some_and(|m| m.parent_id == r.parent_id && m.name == r.name)
                    && a.spec.as_ref().is_some_and(|s| s.region == r.region)
            })
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found("quotas", &format!("{} in {}", r.name, r.region)))
    }
    async fn create(
        &self,
        request: Request<quotas::CreateQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Create")
            .await?;
        Err(tenant_allowances_only())
    }
    async fn update(
        &self,
        request: Request<quotas::UpdateQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Update")
            .await?;
        Err(tenant_allowances_only())
    }
    async fn delete(
        &self,
        request: Request<quotas::DeleteQuotaAllowanceRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.quotas.v1.QuotaAllowanceService/Delete")
            .await?;
        Err(tenant_allowances_only())
    }
}
