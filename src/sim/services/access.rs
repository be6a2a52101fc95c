//! `nebius.iam.v1.ServiceAccountService` and `nebius.iam.v2.AccessKeyService`: project-scoped
//! service accounts and the S3 access keys of those accounts, which the simulator's S3
//! endpoint ([`crate::sim::s3`]) accepts while they are `ACTIVE`.

use tonic::{Request, Response, Status};

use super::crud::crud;
use super::{SimService, lost};
use crate::cloud::proto::nebius::common::v1 as common;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::sim::core::{Core, not_found};
use crate::sim::resources::Resource;

crud!(
    iam::service_account_service_server::ServiceAccountService, "nebius.iam.v1.ServiceAccountService", iam::ServiceAccount,
    get: iam::GetServiceAccountRequest, by_name: iam::GetServiceAccountByNameRequest,
    list: iam::ListServiceAccountRequest => iam::ListServiceAccountResponse,
    create: iam::CreateServiceAccountRequest, update: iam::UpdateServiceAccountRequest, delete: iam::DeleteServiceAccountRequest,
    {}
);

const SERVICE: &str = "nebius.iam.v2.AccessKeyService";

/// The service account an access key's spec names, when it is one in `project_id`.
fn key_account(core: &Core, spec: &iam2::AccessKeySpec, project_id: &str) -> Result<(), Status> {
    use iam::account::Type;
    let Some(Type::ServiceAccount(sa)) = spec.account.as_ref().and_then(|a| a.r#type.as_ref())
    else {
        return Err(Status::invalid_argument(
            "spec.account: the simulator issues access keys to service accounts only",
        ));
    };
    let account: iam::ServiceAccount = core.get(&sa.id)?;
    if account.parent_id() != project_id {
        return Err(Status::invalid_argument(format!(
            "spec.account: service account {} is not in {project_id}",
            sa.id
        )));
    }
    Ok(())
}

/// What Get and List show: the secret only when the key delivers it inline.
fn shown(mut key: iam2::AccessKey) -> iam2::AccessKey {
    let inline = key.spec.as_ref().is_none_or(|s| {
        s.secret_delivery_mode == iam2::SecretDeliveryMode::Inline as i32
            || s.secret_delivery_mode == iam2::SecretDeliveryMode::Unspecified as i32
    });
    if !inline && let Some(status) = key.status.as_mut() {
        status.secret.clear();
    }
    key
}

fn by_aws_id(core: &Core, aws_id: &str) -> Result<iam2::AccessKey, Status> {
    core.state
        .access_keys
        .iter()
        .find(|k| {
            k.status
                .as_ref()
                .is_some_and(|s| s.aws_access_key_id == aws_id)
        })
        .cloned()
        .ok_or_else(|| not_found("iam", aws_id))
}

fn unsimulated(method: &str) -> Status {
    Status::unimplemented(format!("{SERVICE}/{method} is not simulated"))
}

impl SimService {
    async fn delete_key(
        &self,
        ctx: crate::sim::core::CallContext,
        id: &str,
    ) -> Result<Response<common::Operation>, Status> {
        let mut core = self.lock();
        let latency = core.latency();
        let op = core.delete::<iam2::AccessKey>(&ctx, id, latency)?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }
}

#[tonic::async_trait]
impl iam2::access_key_service_server::AccessKeyService for SimService {
    async fn create(
        &self,
        request: Request<iam2::CreateAccessKeyRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v2.AccessKeyService/Create")
            .await?;
        let r = request.into_inner();
        let metadata = r.metadata.unwrap_or_default();
        let spec = r.spec.unwrap_or_default();
        let mut core = self.lock();
        key_account(&core, &spec, &metadata.parent_id)?;
        let latency = core.latency();
        let op = core.create::<iam2::AccessKey>(&ctx, metadata, spec, latency)?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }
    async fn get(
        &self,
        request: Request<iam2::GetAccessKeyRequest>,
    ) -> Result<Response<iam2::AccessKey>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/Get")
            .await?;
        let key: iam2::AccessKey = self.lock().get(&request.get_ref().id)?;
        Ok(Response::new(shown(key)))
    }
    async fn get_secret(
        &self,
        request: Request<iam2::GetAccessKeySecretRequest>,
    ) -> Result<Response<iam2::GetAccessKeySecretResponse>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/GetSecret")
            .await?;
        let key: iam2::AccessKey = self.lock().get(&request.get_ref().id)?;
        let status = key.status.unwrap_or_default();
        Ok(Response::new(iam2::GetAccessKeySecretResponse {
            aws_access_key_id: status.aws_access_key_id,
            secret: status.secret,
        }))
    }
    async fn list(
        &self,
        request: Request<iam2::ListAccessKeysRequest>,
    ) -> Result<Response<iam2::ListAccessKeysResponse>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/List")
            .await?;
        let r = request.get_ref();
        let (items, next_page_token) = self.lock().list_children::<iam2::AccessKey>(
            &r.parent_id,
            r.page_size,
            &r.page_token,
            |_| true,
        )?;
        Ok(Response::new(iam2::ListAccessKeysResponse {
            items: items.into_iter().map(shown).collect(),
            next_page_token,
        }))
    }
    async fn update(
        &self,
        request: Request<iam2::UpdateAccessKeyRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v2.AccessKeyService/Update")
            .await?;
        let r = request.into_inner();
        let metadata = r.metadata.unwrap_or_default();
        let mut core = self.lock();
        let current: iam2::AccessKey = core.get(&metadata.id)?;
        // Only the description may change; account, expiry and delivery are immutable.
        let mut spec = current.spec.unwrap_or_default();
        spec.description = r.spec.unwrap_or_default().description;
        let latency = core.latency();
        let op = core.update::<iam2::AccessKey>(&ctx, metadata, Some(spec), latency)?;
        lost(&ctx)?;
        Ok(Response::new(op))
    }
    async fn delete(
        &self,
        request: Request<iam2::DeleteAccessKeyRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v2.AccessKeyService/Delete")
            .await?;
        self.delete_key(ctx, &request.get_ref().id).await
    }
    async fn activate(
        &self,
        request: Request<iam2::ActivateAccessKeyRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/Activate")
            .await?;
        Err(unsimulated("Activate"))
    }
    async fn deactivate(
        &self,
        request: Request<iam2::DeactivateAccessKeyRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/Deactivate")
            .await?;
        Err(unsimulated("Deactivate"))
    }
    async fn list_by_account(
        &self,
        request: Request<iam2::ListAccessKeysByAccountRequest>,
    ) -> Result<Response<iam2::ListAccessKeysResponse>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/ListByAccount")
            .await?;
        let r = request.get_ref();
        let account = r.account.clone().unwrap_or_default();
        let (items, next_page_token) =
            self.lock()
                .list::<iam2::AccessKey>(r.page_size, &r.page_token, |k| {
                    k.spec.as_ref().and_then(|s| s.account.as_ref()) == Some(&account)
                })?;
        Ok(Response::new(iam2::ListAccessKeysResponse {
            items: items.into_iter().map(shown).collect(),
            next_page_token,
        }))
    }
    async fn get_by_aws_id(
        &self,
        request: Request<iam2::GetAccessKeyByAwsIdRequest>,
    ) -> Result<Response<iam2::AccessKey>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/GetByAwsId")
            .await?;
        let key = by_aws_id(&self.lock(), &request.get_ref().aws_access_key_id)?;
        Ok(Response::new(shown(key)))
    }
    async fn delete_by_aws_id(
        &self,
        request: Request<iam2::DeleteAccessKeyByAwsIdRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        let ctx = self
            .enter(&request, "/nebius.iam.v2.AccessKeyService/DeleteByAwsId")
            .await?;
        let id = by_aws_id(&self.lock(), &request.get_ref().aws_access_key_id)?
            .id()
            .to_string();
        self.delete_key(ctx, &id).await
    }
    async fn activate_by_aws_id(
        &self,
        request: Request<iam2::ActivateAccessKeyByAwsIdRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(&request, "/nebius.iam.v2.AccessKeyService/ActivateByAwsId")
            .await?;
        Err(unsimulated("ActivateByAwsId"))
    }
    async fn deactivate_by_aws_id(
        &self,
        request: Request<iam2::DeactivateAccessKeyByAwsIdRequest>,
    ) -> Result<Response<common::Operation>, Status> {
        self.enter(
            &request,
            "/nebius.iam.v2.AccessKeyService/DeactivateByAwsId",
        )
        .await?;
        Err(unsimulated("DeactivateByAwsId"))
    }
}
