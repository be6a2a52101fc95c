//! IAM access: project-scoped service accounts (`nebius.iam.v1`) and their S3 access keys
//! (`nebius.iam.v2.AccessKeyService`; v1's is deprecated). A key's secret is read only with
//! `GetSecret` and handed on as an [`AccessKeySecret`], never as a plain string.

use tonic::transport::Channel;

use super::convert::{labels, meta_field, new_meta};
use super::rpc::{PAGE_SIZE, get, mutate};
use crate::cloud::client::{Host, NebiusClient};
use crate::cloud::domain::{AccessKey, AccessKeySecret, CloudResult, Labels, ServiceAccount};
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;

type ServiceAccountService =
    iam::service_account_service_client::ServiceAccountServiceClient<Channel>;
type AccessKeyService = iam2::access_key_service_client::AccessKeyServiceClient<Channel>;

pub(super) async fn find_service_account(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
) -> CloudResult<Option<ServiceAccount>> {
    let req = iam::GetServiceAccountByNameRequest {
        parent_id: project_id.to_string(),
        name: name.to_string(),
    };
    let found = client
        .call(Host::Iam, None, req, |channel, request| async move {
            ServiceAccountService::new(channel)
                .get_by_name(request)
                .await
        })
        .await;
    match found {
        Ok(sa) => Ok(Some(service_account_from(sa))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) async fn create_service_account(
    client: &NebiusClient,
    project_id: &str,
    name: &str,
    description: &str,
    labels: &Labels,
    key: &str,
) -> CloudResult<ServiceAccount> {
    let req = iam::CreateServiceAccountRequest {
        metadata: Some(new_meta(project_id, name, labels)),
        spec: Some(iam::ServiceAccountSpec {
            description: description.to_string(),
        }),
    };
    let id = mutate!(client, Host::Iam, key, req, ServiceAccountService, create);
    let req = iam::GetServiceAccountRequest { id };
    get!(client, Host::Iam, req, ServiceAccountService).map(service_account_from)
}

pub(super) async fn create_access_key(
    client: &NebiusClient,
    project_id: &str,
    service_account_id: &str,
    description: &str,
    key: &str,
) -> CloudResult<AccessKey> {
    let req = iam2::CreateAccessKeyRequest {
        metadata: Some(new_meta(project_id, "", &Labels::new())),
        spec: Some(iam2::AccessKeySpec {
            account: Some(service_account(service_account_id)),
            expires_at: None,
            description: description.to_string(),
            secret_delivery_mode: iam2::SecretDeliveryMode::Inline as i32,
        }),
    };
    let id = mutate!(client, Host::Iam, key, req, AccessKeyService, create);
    let req = iam2::GetAccessKeyRequest { id };
    get!(client, Host::Iam, req, AccessKeyService).map(access_key_from)
}

pub(super) async fn get_access_key_secret(
    client: &NebiusClient,
    id: &str,
) -> CloudResult<AccessKeySecret> {
    let req = iam2::GetAccessKeySecretRequest { id: id.to_string() };
    let response = client
        .call(Host::Iam, None, req, |channel, request| async move {
            AccessKeyService::new(channel).get_secret(request).await
        })
        .await?;
    Ok(AccessKeySecret::new(response.secret))
}

pub(super) async fn list_access_keys(
    client: &NebiusClient,
    service_account_id: &str,
) -> CloudResult<Vec<AccessKey>> {
    let this = client.clone();
    let account = service_account(service_account_id);
    client
        .list_all(|page_token| {
            let this = this.clone();
            let req = iam2::ListAccessKeysByAccountRequest {
                account: Some(account.clone()),
                page_size: PAGE_SIZE,
                page_token,
                filter: String::new(),
            };
            async move {
                let response = this
                    .call(Host::Iam, None, req, |channel, request| async move {
                        AccessKeyService::new(channel)
                            .list_by_account(request)
                            .await
                    })
                    .await?;
                Ok((
                    response.items.into_iter().map(access_key_from).collect(),
                    response.next_page_token,
                ))
            }
        })
        .await
}

pub(super) async fn delete_access_key(
    client: &NebiusClient,
    id: &str,
    key: &str,
) -> CloudResult<()> {
    let req = iam2::DeleteAccessKeyRequest { id: id.to_string() };
    mutate!(client, Host::Iam, key, req, AccessKeyService, delete);
    Ok(())
}

fn service_account(id: &str) -> iam::Account {
    iam::Account {
        r#type: Some(iam::account::Type::ServiceAccount(
            iam::account::ServiceAccount { id: id.to_string() },
        )),
    }
}

fn service_account_from(sa: iam::ServiceAccount) -> ServiceAccount {
    ServiceAccount {
        id: meta_field(&sa.metadata, |m| &m.id),
        project_id: meta_field(&sa.metadata, |m| &m.parent_id),
        name: meta_field(&sa.metadata, |m| &m.name),
        description: sa.spec.clone().unwrap_or_default().description,
        active: sa.status.as_ref().is_some_and(|s| s.active),
        labels: labels(&sa.metadata),
    }
}

/// The status's inline secret is dropped here: the domain key never carries one.
fn access_key_from(k: iam2::AccessKey) -> AccessKey {
    let spec = k.spec.clone().unwrap_or_default();
    let status = k.status.clone().unwrap_or_default();
    let service_account_id = match spec.account.and_then(|a| a.r#type) {
        Some(iam::account::Type::ServiceAccount(sa)) => sa.id,
        _ => String::new(),
    };
    AccessKey {
        id: meta_field(&k.metadata, |m| &m.id),
        project_id: meta_field(&k.metadata, |m| &m.parent_id),
        service_account_id,
        aws_access_key_id: status.aws_access_key_id,
        description: spec.description,
        state: iam2::access_key_status::State::try_from(status.state)
            .map_or("STATE_UNSPECIFIED", |s| s.as_str_name())
            .to_string(),
    }
}
