//! The Nebius gRPC client: per-service endpoints, TLS, bearer auth, idempotency keys, retries,
//! operation polling and pagination. Above it, [`super::nebius`] maps calls to domain types.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

use super::auth::{Credentials, ServiceAccountKey};
use super::error::{CloudError, ErrorKind, RequestIds};
use super::proto::nebius::common::v1::{self as common, Operation};
use super::proto::nebius::iam::v1 as iam;
use super::reset_mask;

/// The public API domain.
pub const DEFAULT_DOMAIN: &str = "api.nebius.cloud:443";

/// The API hosts fleetbot calls, by their `<api_service_name>` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    Iam,
    Tokens,
    Quotas,
    Capacity,
    Vpc,
    Mk8s,
    Compute,
    Storage,
    Applications,
}

impl Host {
    pub fn service_name(self) -> &'static str {
        match self {
            Host::Iam => "cpl.iam",
            Host::Tokens => "tokens.iam",
            Host::Quotas => "quota-dispatcher.billing-cpl",
            Host::Capacity => "capacity-blocks.billing-cpl",
            Host::Vpc => "vpc",
            Host::Mk8s => "mk8s",
            Host::Compute => "compute",
            Host::Storage => "cpl.storage",
            Host::Applications => "deployment-manager.mkt",
        }
    }
}

/// Where each host is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoints {
    /// `https://<service>.<domain>` with TLS and the system roots.
    Public { domain: String },
    /// Every service at one address (`NEBIUS_ENDPOINT`, the simulator).
    Single { uri: String },
}

fn is_loopback_uri(uri: &str) -> bool {
    let rest = uri
        .strip_prefix("http://")
        .or_else(|| uri.strip_prefix("https://"))
        .unwrap_or(uri);
    let host = rest.split('/').next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    matches!(host, "localhost" | "[::1]" | "::1") || host.starts_with("127.")
}

/// Why an endpoint override is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Plaintext to a host that is not this machine: a token would cross a network in clear.
    #[error("NEBIUS_ENDPOINT {0}: plaintext http:// is only allowed for loopback addresses")]
    PlaintextOffLoopback(String),
    /// Nothing was given.
    #[error("NEBIUS_ENDPOINT is empty")]
    Empty,
}

impl Endpoints {
    /// Parses an endpoint override. A bare `host:port` means TLS; plaintext `http://` is only
    /// accepted for loopback, so a token is never sent in clear over a network.
    pub fn from_override(value: &str) -> Result<Endpoints, EndpointError> {
        let value = value.trim();
        if let Some(rest) = value.strip_prefix("http://") {
            if !is_loopback_uri(value) {
                return Err(EndpointError::PlaintextOffLoopback(rest.to_string()));
            }
            return Ok(Endpoints::Single {
                uri: value.to_string(),
            });
        }
        if value.starts_with("https://") {
            return Ok(Endpoints::Single {
                uri: value.to_string(),
            });
        }
        if value.is_empty() {
            return Err(EndpointError::Empty);
        }
        // The SDKs treat a bare value as the domain every service name is prefixed to.
        Ok(Endpoints::Public {
            domain: value.to_string(),
        })
    }

    pub fn uri(&self, host: Host) -> String {
        match self {
            Endpoints::Public { domain } => format!("https://{}.{domain}", host.service_name()),
            Endpoints::Single { uri } => uri.clone(),
        }
    }

    /// How output names the cloud.
    pub fn describe(&self) -> String {
        match self {
            Endpoints::Public { domain } => format!("Nebius ({domain})"),
            Endpoints::Single { uri } => format!("Nebius endpoint {uri}"),
        }
    }
}

/// Retry and timeout policy (nebius-api.md §4.5): 3 attempts, 20 s each, 60 s overall.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub per_attempt: Duration,
    pub overall: Duration,
    pub first_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 3,
            per_attempt: Duration::from_secs(20),
            overall: Duration::from_secs(60),
            first_backoff: Duration::from_millis(200),
        }
    }
}

/// How long to wait for a long-running operation, and how often to look.
#[derive(Debug, Clone, Copy)]
pub struct PollPolicy {
    pub first_interval: Duration,
    pub max_interval: Duration,
    pub timeout: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            first_interval: Duration::from_millis(50),
            max_interval: Duration::from_secs(5),
            timeout: Duration::from_secs(120 * 60),
        }
    }
}

/// The headers a call carries besides `authorization`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallHeaders<'a> {
    /// `x-idempotency-key`: the same for every retry of one logical mutation.
    pub idempotency_key: Option<&'a str>,
    /// `x-resetmask`: sent with every Update ([`reset_mask::for_update`]).
    pub reset_mask: Option<&'a str>,
}

/// The client. Cheap to clone; channels are made lazily, one per host.
#[derive(Clone)]
pub struct NebiusClient {
    inner: Arc<Inner>,
}

struct Inner {
    endpoints: Endpoints,
    credentials: Credentials,
    channels: Mutex<HashMap<Host, Channel>>,
    retry: RetryPolicy,
    poll: PollPolicy,
    user_agent: String,
    /// Names the cloud in output ("the embedded simulator", "Nebius (api.nebius.cloud:443)").
    description: String,
}

fn transport_error(e: impl std::fmt::Display) -> CloudError {
    CloudError::new(
        Code::Unavailable,
        format!("transport: {e}"),
        ErrorKind::Unavailable,
    )
}

impl NebiusClient {
    pub fn new(endpoints: Endpoints, credentials: Credentials) -> NebiusClient {
        let description = endpoints.describe();
        NebiusClient {
            inner: Arc::new(Inner {
                endpoints,
                credentials,
                channels: Mutex::new(HashMap::new()),
                retry: RetryPolicy::default(),
                poll: PollPolicy::default(),
                user_agent: format!("fleetbot/{}", env!("CARGO_PKG_VERSION")),
                description,
            }),
        }
    }

    /// Same client with other policies (tests shorten them).
    pub fn with_policies(self, retry: RetryPolicy, poll: PollPolicy) -> NebiusClient {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|arc| Inner {
            endpoints: arc.endpoints.clone(),
            credentials: match &arc.credentials {
                Credentials::Static(t) => Credentials::Static(t.clone()),
                Credentials::ServiceAccount { key, .. } => {
                    Credentials::service_account(key.clone())
                }
            },
            channels: Mutex::new(HashMap::new()),
            retry: arc.retry,
            poll: arc.poll,
            user_agent: arc.user_agent.clone(),
            description: arc.description.clone(),
        });
        NebiusClient {
            inner: Arc::new(Inner {
                retry,
                poll,
                ..inner
            }),
        }
    }

    /// Renames the cloud for output.
    pub fn described_as(self, description: impl Into<String>) -> NebiusClient {
        let inner = Arc::try_unwrap(self.inner)
            .ok()
            .expect("describe a client before sharing it");
        NebiusClient {
            inner: Arc::new(Inner {
                description: description.into(),
                ..inner
            }),
        }
    }

    pub fn description(&self) -> &str {
        &self.inner.description
    }

    pub fn poll_policy(&self) -> PollPolicy {
        self.inner.poll
    }

    /// The channel for a host, created on first use.
    pub fn channel(&self, host: Host) -> Result<Channel, CloudError> {
        let mut channels = self
            .inner
            .channels
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(channel) = channels.get(&host) {
            return Ok(channel.clone());
        }
        let uri = self.inner.endpoints.uri(host);
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .map_err(transport_error)?
            .user_agent(self.inner.user_agent.clone())
            .map_err(transport_error)?
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        if uri.starts_with("https://") {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(transport_error)?;
        }
        let channel = endpoint.connect_lazy();
        channels.insert(host, channel.clone());
        Ok(channel)
    }

    /// A bearer token, exchanging a service-account JWT when the cache is cold: what every
    /// call sends, and what the clusters' Kubernetes APIs accept.
    pub async fn bearer_token(&self) -> Result<String, CloudError> {
        self.token().await
    }

    /// A bearer token, exchanging a service-account JWT when the cache is cold.
    async fn token(&self) -> Result<String, CloudError> {
        if let Some(token) = self.inner.credentials.cached() {
            return Ok(token);
        }
        let Credentials::ServiceAccount { key, .. } = &self.inner.credentials else {
            unreachable!("static credentials are always cached");
        };
        let token = self.exchange(key).await?;
        Ok(token)
    }

    async fn exchange(&self, key: &ServiceAccountKey) -> Result<String, CloudError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let jwt = key.sign_jwt(now)?;
        let mut client = iam::token_exchange_service_client::TokenExchangeServiceClient::new(
            self.channel(Host::Tokens)?,
        );
        let mut request = Request::new(ServiceAccountKey::exchange_request(jwt));
        request.set_timeout(self.inner.retry.per_attempt);
        let response = client
            .exchange(request)
            .await
            .map_err(|s| CloudError::from_status(&s))?
            .into_inner();
        if response.token_type != "Bearer" {
            return Err(CloudError::new(
                Code::Unauthenticated,
                format!(
                    "token exchange returned token type {:?}, expected Bearer",
                    response.token_type
                ),
                ErrorKind::Unauthenticated,
            ));
        }
        self.inner
            .credentials
            .store(response.access_token.clone(), response.expires_in);
        Ok(response.access_token)
    }

    /// One logical call: bearer auth, a deadline per attempt, up to three attempts for
    /// retryable failures, all sharing `idempotency_key` (so a retried mutation never acts
    /// twice). `UNAUTHENTICATED` with an exchanged token re-authenticates once.
    pub async fn call<Req, Resp, F, Fut>(
        &self,
        host: Host,
        idempotency_key: Option<&str>,
        body: Req,
        rpc: F,
    ) -> Result<Resp, CloudError>
    where
        Req: Clone,
        F: Fn(Channel, Request<Req>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<Resp>, Status>>,
    {
        let headers = CallHeaders {
            idempotency_key,
            ..CallHeaders::default()
        };
        self.call_with(host, headers, body, rpc)
            .await
            .map(|(reply, _)| reply)
    }

    /// [`NebiusClient::call`] with every header a call may carry, returning the reply with the
    /// request and trace IDs the service gave it. A failure keeps its IDs in the error and is
    /// logged with them (never with the service's message, which may name resources).
    pub async fn call_with<Req, Resp, F, Fut>(
        &self,
        host: Host,
        headers: CallHeaders<'_>,
        body: Req,
        rpc: F,
    ) -> Result<(Resp, RequestIds), CloudError>
    where
        Req: Clone,
        F: Fn(Channel, Request<Req>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<Resp>, Status>>,
    {
        let policy = self.inner.retry;
        let started = Instant::now();
        let mut attempt = 0u32;
        let mut reauthenticated = false;
        loop {
            attempt += 1;
            let token = self.token().await?;
            let mut request = Request::new(body.clone());
            let remaining = policy.overall.saturating_sub(started.elapsed());
            request.set_timeout(
                policy
                    .per_attempt
                    .min(remaining.max(Duration::from_millis(1))),
            );
            let bearer = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
                CloudError::new(
                    Code::Unauthenticated,
                    "token is not a valid header value",
                    ErrorKind::Unauthenticated,
                )
            })?;
            request.metadata_mut().insert("authorization", bearer);
            if let Some(key) = headers.idempotency_key
                && let Ok(value) = MetadataValue::try_from(key)
            {
                request.metadata_mut().insert("x-idempotency-key", value);
            }
            if let Some(mask) = headers.reset_mask {
                let value = MetadataValue::try_from(mask).map_err(|_| {
                    CloudError::new(
                        Code::InvalidArgument,
                        "the reset mask is not a valid header value",
                        ErrorKind::InvalidArgument { fields: Vec::new() },
                    )
                })?;
                request.metadata_mut().insert(reset_mask::HEADER, value);
            }
            let result = rpc(self.channel(host)?, request).await;
            let error = match result {
                Ok(response) => {
                    let ids = RequestIds::from_metadata(response.metadata());
                    return Ok((response.into_inner(), ids));
                }
                Err(status) => CloudError::from_status(&status),
            };
            if error.code == Code::Unauthenticated
                && !reauthenticated
                && matches!(self.inner.credentials, Credentials::ServiceAccount { .. })
            {
                reauthenticated = true;
                self.inner.credentials.invalidate();
                continue;
            }
            let out_of_time = started.elapsed() >= policy.overall;
            if !error.is_retryable() || attempt >= policy.attempts || out_of_time {
                tracing::info!(
                    host = host.service_name(),
                    code = ?error.code,
                    request_id = error.request_id.as_deref().unwrap_or(""),
                    trace_id = error.trace_id.as_deref().unwrap_or(""),
                    "a Nebius call failed"
                );
                return Err(error);
            }
            let backoff = policy.first_backoff * 2u32.pow(attempt - 1);
            tracing::debug!(attempt, code = ?error.code, request_id = error.request_id.as_deref().unwrap_or(""), "retrying a Nebius call");
            tokio::time::sleep(backoff.min(policy.overall.saturating_sub(started.elapsed()))).await;
        }
    }

    /// Polls an operation on its host until it is done; a failed operation is an error.
    pub async fn wait(&self, host: Host, operation: Operation) -> Result<Operation, CloudError> {
        let poll = self.inner.poll;
        let started = Instant::now();
        let mut interval = poll.first_interval;
        let mut op = operation;
        loop {
            if let Some(status) = &op.status {
                if status.code == 0 {
                    return Ok(op);
                }
                return Err(CloudError::from_operation_status(status));
            }
            if started.elapsed() >= poll.timeout {
                return Err(CloudError::new(
                    Code::DeadlineExceeded,
                    format!(
                        "operation {} did not finish within {:?}",
                        op.id, poll.timeout
                    ),
                    ErrorKind::DeadlineExceeded,
                ));
            }
            tokio::time::sleep(interval).await;
            interval = (interval * 2).min(poll.max_interval);
            let id = op.id.clone();
            op = self
                .call(
                    host,
                    None,
                    common::GetOperationRequest { id },
                    |channel, request| async move {
                        common::operation_service_client::OperationServiceClient::new(channel)
                            .get(request)
                            .await
                    },
                )
                .await?;
        }
    }

    /// Reads every page: `fetch(page_token)` returns the items and the next token.
    pub async fn list_all<T, F, Fut>(&self, mut fetch: F) -> Result<Vec<T>, CloudError>
    where
        F: FnMut(String) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, String), CloudError>>,
    {
        let mut all = Vec::new();
        let mut token = String::new();
        let mut pages = 0usize;
        loop {
            let (items, next) = fetch(token).await?;
            all.extend(items);
            pages += 1;
            if next.is_empty() {
                return Ok(all);
            }
            if pages > 100_000 {
                return Err(CloudError::new(
                    Code::Internal,
                    "pagination did not end",
                    ErrorKind::Internal,
                ));
            }
            token = next;
        }
    }
}

/// A deterministic idempotency key for one logical action: a UUIDv5 over its parts, so a
/// restarted apply sends the same key and the service replays instead of acting twice.
pub fn idempotency_key(parts: &[&str]) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6f1e_3b0a_5c2d_4e8f_9a7b_1c3d_5e7f_9a0b);
    uuid::Uuid::new_v5(&NAMESPACE, parts.join("\u{1f}").as_bytes()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_per_service_and_override_rules() {
        let public = Endpoints::Public {
            domain: DEFAULT_DOMAIN.into(),
        };
        assert_eq!(public.uri(Host::Mk8s), "https://mk8s.api.nebius.cloud:443");
        assert_eq!(
            public.uri(Host::Quotas),
            "https://quota-dispatcher.billing-cpl.api.nebius.cloud:443"
        );
        assert_eq!(
            public.uri(Host::Tokens),
            "https://tokens.iam.api.nebius.cloud:443"
        );
        assert!(Endpoints::from_override("http://127.0.0.1:5000").is_ok());
        assert!(Endpoints::from_override("http://localhost:5000").is_ok());
        let refused = Endpoints::from_override("http://10.1.2.3:5000").unwrap_err();
        assert_eq!(
            refused,
            EndpointError::PlaintextOffLoopback("10.1.2.3:5000".into())
        );
        assert!(
            refused.to_string().contains("only allowed for loopback"),
            "{refused}"
        );
        assert_eq!(
            Endpoints::from_override("api.eu.nebius.cloud:443").unwrap(),
            Endpoints::Public {
                domain: "api.eu.nebius.cloud:443".into()
            }
        );
    }

    #[test]
    fn idempotency_keys_are_deterministic_and_distinct() {
        let a = idempotency_key(&["fleet", "team-a", "train", "create-cluster"]);
        assert_eq!(
            a,
            idempotency_key(&["fleet", "team-a", "train", "create-cluster"])
        );
        assert_ne!(
            a,
            idempotency_key(&["fleet", "team-a", "train", "delete-cluster"])
        );
        assert_ne!(idempotency_key(&["ab", "c"]), idempotency_key(&["a", "bc"]));
        assert_eq!(a.len(), 36);
    }
}
