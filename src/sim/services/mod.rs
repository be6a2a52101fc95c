//! The simulator's gRPC services: the Nebius service traits, implemented over [`Core`], one
//! module per Nebius service package.
//!
//! Every call goes through [`SimService::enter`]: scripted faults, then authentication, then
//! the completion of operations whose time has come.

mod access;
mod applications;
mod capacity;
mod compute;
mod crud;
mod faults;
mod iam;
mod iam2;
mod mk8s;
mod operations;
mod quotas;
mod storage;
mod vpc;

use std::sync::{Arc, Mutex, MutexGuard};

use prost::{Message, Name};
use sha2::{Digest, Sha256};
use tonic::{Request, Status};

use super::core::{CallContext, Core, now_ms};
use super::rules::validate;
use crate::cloud::{reset_mask, schema};
use faults::FaultState;

/// Shared state of one simulator instance.
pub struct Shared {
    core: Mutex<Core>,
    faults: Mutex<FaultState>,
}

/// The service object registered for every Nebius service.
#[derive(Clone)]
pub struct SimService {
    shared: Arc<Shared>,
}

impl SimService {
    pub fn new(core: Core) -> SimService {
        let faults = FaultState::new(core.world.seed);
        SimService {
            shared: Arc::new(Shared {
                core: Mutex::new(core),
                faults: Mutex::new(faults),
            }),
        }
    }

    /// The world state, with due operations completed.
    pub fn lock(&self) -> MutexGuard<'_, Core> {
        let mut core = self.core();
        core.advance();
        core.present_kube_api();
        core.present_s3_api();
        core
    }

    /// The world state as it is, no operations advanced. A poisoned lock is taken over rather
    /// than failing every later call.
    fn core(&self) -> MutexGuard<'_, Core> {
        self.shared.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Faults, authentication and the call context, in that order.
    async fn enter<M: Message + Name>(
        &self,
        request: &Request<M>,
        method: &str,
    ) -> Result<CallContext, Status> {
        let lost_reply = self.inject_fault(method).await?;
        let caller = self.authenticate(request)?;
        let body = request.get_ref();
        let violations = validate::request(method, &schema::to_dynamic(body));
        if !violations.is_empty() {
            return Err(validate::refusal(service_of(method), &violations));
        }
        let header = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let reset_mask = header(reset_mask::HEADER);
        // The mask is part of the request: the same key with another mask is another request.
        let mut digest = Sha256::new();
        digest.update(body.encode_to_vec());
        if let Some(mask) = &reset_mask {
            digest.update(b"\0x-resetmask\0");
            digest.update(mask.as_bytes());
        }
        Ok(CallContext {
            idempotency_key: header("x-idempotency-key"),
            request_digest: hex::encode(digest.finalize()),
            request: prost_types::Any::from_msg(body).ok(),
            caller,
            lost_reply,
            reset_mask,
        })
    }

    /// Checks the bearer token; returns who the caller is.
    fn authenticate<M>(&self, request: &Request<M>) -> Result<String, Status> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| Status::unauthenticated("authorization: Bearer <token> is required"))?;
        self.check_bearer(token)
    }

    /// Whether `token` is one the simulator accepts; who the caller is.
    pub fn check_bearer(&self, token: &str) -> Result<String, Status> {
        let core = self.core();
        if core.world.static_tokens.iter().any(|t| t == token) {
            return Ok("static-token".into());
        }
        match core.issued_tokens.get(token) {
            Some(expiry) if *expiry > now_ms() => Ok("service-account".into()),
            Some(_) => Err(Status::unauthenticated("token expired")),
            None => Err(Status::unauthenticated("unknown token")),
        }
    }

    /// Accepts `token` as a bearer token (the embedded default hands one to its client).
    pub fn accept_token(&self, token: &str, expires_at_ms: i64) {
        self.core()
            .issued_tokens
            .insert(token.to_string(), expires_at_ms);
    }

    /// Where the simulated clusters' Kubernetes API listens, and its CA: what cluster
    /// statuses report from now on.
    pub fn set_kube_api(&self, base_url: String, ca_pem: String) {
        self.core().kube_api = Some((base_url, ca_pem));
    }

    /// Where the simulated S3 endpoint listens (`127.0.0.1:<port>`): what bucket statuses
    /// report as their domain name from now on.
    pub fn set_s3_api(&self, address: String) {
        self.core().s3_api = Some(address);
    }

    /// A look at the world that changes nothing.
    pub fn read_core<T>(&self, f: impl FnOnce(&Core) -> T) -> T {
        f(&self.core())
    }

    /// The token exchange's access to the world, and a test's. `f` may change the resources
    /// directly (a test making a world the API would refuse), so the positions of every kind
    /// are read again afterwards.
    pub fn with_core<T>(&self, f: impl FnOnce(&mut Core) -> T) -> T {
        let mut core = self.core();
        let answer = f(&mut core);
        core.forget_positions();
        answer
    }
}

/// The service a method's errors name: its package's first part after `nebius.`
/// (`/nebius.mk8s.v1.ClusterService/Create` → `mk8s`).
fn service_of(method: &str) -> &str {
    method
        .trim_start_matches('/')
        .strip_prefix("nebius.")
        .and_then(|rest| rest.split('.').next())
        .unwrap_or("api")
}

/// Raises a fault scripted to strike after the effect.
fn lost(ctx: &CallContext) -> Result<(), Status> {
    match &ctx.lost_reply {
        Some((code, message)) => Err(Status::new(*code, message.clone())),
        None => Ok(()),
    }
}
