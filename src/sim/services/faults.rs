//! Scripted faults (the world's `faults:`): latency and failures by method, on a count or at
//! a seeded rate, before a call takes effect or after (a lost reply); and the call log
//! tests read to see what a client sent.

use std::collections::HashMap;

use tonic::{Code, Status};

use super::SimService;
use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::nebius::common::v1 as common;
use crate::sim::world::FaultSpec;

/// Call counters and the seeded generator behind scripted faults.
#[derive(Debug, Default)]
pub(super) struct FaultState {
    /// Each method called, numbered in the order first seen.
    methods: Vec<String>,
    numbers: HashMap<String, u32>,
    /// Calls by method number.
    calls: Vec<u64>,
    /// Requests to the clusters' Kubernetes API, by HTTP method.
    kube_requests: HashMap<String, u64>,
    /// Clusters whose Kubernetes objects were brought in line with the cloud again.
    kube_cluster_reads: u64,
    rng: u64,
    fired: u64,
    /// Every method called, in order, by number (tests assert on it): a standalone
    /// simulator answers millions of calls, and a copy of the name for each grew it by
    /// about 80 bytes a call.
    log: Vec<u32>,
}

impl FaultState {
    pub(super) fn new(world_seed: u64) -> FaultState {
        FaultState {
            rng: world_seed ^ 0x9E37_79B9_7F4A_7C15,
            ..FaultState::default()
        }
    }

    /// xorshift64*: deterministic for a world seed, good enough to spread failures.
    fn next_unit(&mut self) -> f64 {
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Logs and counts a call to `method`; returns the latency the matching faults add up
    /// to and the first of them that strikes this time.
    fn roll(&mut self, faults: &[FaultSpec], method: &str) -> (u64, Option<FaultSpec>) {
        let mut latency = 0u64;
        let mut failure = None;
        let number = match self.numbers.get(method) {
            Some(&number) => number,
            None => {
                let number = u32::try_from(self.methods.len()).unwrap_or(u32::MAX);
                self.methods.push(method.to_string());
                self.numbers.insert(method.to_string(), number);
                self.calls.push(0);
                number
            }
        };
        self.log.push(number);
        let count = {
            let c = &mut self.calls[number as usize];
            *c += 1;
            *c
        };
        for fault in faults.iter().filter(|f| fault_matches(f, method)) {
            latency += fault.latency_ms;
            let roll = fault.error_rate > 0.0 && self.next_unit() < fault.error_rate;
            if failure.is_none() && (fault.fail_nth.contains(&count) || roll) {
                failure = Some(fault.clone());
                self.fired += 1;
            }
        }
        (latency, failure)
    }
}

/// `*`, the full method (`/nebius.mk8s.v1.ClusterService/Create`) or the short form
/// (`ClusterService/Create`).
fn fault_matches(fault: &FaultSpec, method: &str) -> bool {
    let short = method
        .trim_start_matches('/')
        .rsplit_once('/')
        .map(|(service, rpc)| format!("{}/{rpc}", service.rsplit('.').next().unwrap_or(service)))
        .unwrap_or_default();
    fault.method == "*" || method == fault.method || short == fault.method.trim_start_matches('/')
}

fn code_from_name(name: &str) -> Code {
    match name.to_ascii_lowercase().as_str() {
        "cancelled" => Code::Cancelled,
        "invalid_argument" => Code::InvalidArgument,
        "deadline_exceeded" => Code::DeadlineExceeded,
        "not_found" => Code::NotFound,
        "already_exists" => Code::AlreadyExists,
        "permission_denied" => Code::PermissionDenied,
        "resource_exhausted" => Code::ResourceExhausted,
        "failed_precondition" => Code::FailedPrecondition,
        "aborted" => Code::Aborted,
        "internal" => Code::Internal,
        "unauthenticated" => Code::Unauthenticated,
        "unknown" => Code::Unknown,
        _ => Code::Unavailable,
    }
}

/// The error a fault raises: a bare status, or one with the `ServiceError` retry hint the
/// fault names.
fn fault_status(fault: &FaultSpec, code: Code, message: String) -> Status {
    let Some(kind) = fault.retry_type.as_deref() else {
        return Status::new(code, message);
    };
    let retry = match kind {
        "call" => common::service_error::RetryType::Call,
        "unit_of_work" => common::service_error::RetryType::UnitOfWork,
        "nothing" => common::service_error::RetryType::Nothing,
        _ => common::service_error::RetryType::Unspecified,
    };
    status_with_service_error(
        code,
        &message,
        common::ServiceError {
            service: "sim".into(),
            code: "InjectedFault".into(),
            retry_type: retry as i32,
            details: None,
        },
    )
}

impl SimService {
    fn faults(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.shared.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Faults for calls that take no bearer token.
    pub async fn inject_fault_public(&self, method: &str) -> Result<(), Status> {
        self.inject_fault(method).await.map(|_| ())
    }

    /// Applies scripted latency and failures. A failure that strikes after the effect is
    /// returned for the handler to raise once it has acted.
    pub(super) async fn inject_fault(
        &self,
        method: &str,
    ) -> Result<Option<(Code, String)>, Status> {
        let (latency, failure) = {
            let faults = self.core().world.faults.clone();
            self.faults().roll(&faults, method)
        };
        if latency > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
        }
        let Some(fault) = failure else {
            return Ok(None);
        };
        let code = code_from_name(&fault.code);
        let message = format!("injected fault for {method}");
        if fault.after_effect {
            return Ok(Some((code, message)));
        }
        Err(fault_status(&fault, code, message))
    }

    /// How many times each method was called (the `--metrics` endpoint of `fleetbot sim`).
    pub fn call_counts(&self) -> std::collections::BTreeMap<String, u64> {
        let faults = self.faults();
        faults
            .methods
            .iter()
            .cloned()
            .zip(faults.calls.iter().copied())
            .collect()
    }

    /// Counts a request to a cluster's Kubernetes API.
    pub fn count_kube_request(&self, method: &str) {
        *self
            .faults()
            .kube_requests
            .entry(method.to_string())
            .or_insert(0) += 1;
    }

    /// Counts clusters whose Kubernetes objects a sync brought in line with the cloud.
    pub fn count_kube_cluster_reads(&self, clusters: usize) {
        self.faults().kube_cluster_reads += clusters as u64;
    }

    /// How many times a cluster's Kubernetes objects were brought in line with the cloud:
    /// each cluster a change reached once, not every cluster at every change.
    pub fn kube_cluster_reads(&self) -> u64 {
        self.faults().kube_cluster_reads
    }

    /// How many requests each HTTP method made to the clusters' Kubernetes API (the
    /// `--metrics` endpoint): a deploy's readiness reads and add-on applies, which the gRPC
    /// counters do not see.
    pub fn kube_request_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.faults()
            .kube_requests
            .iter()
            .map(|(m, n)| (m.clone(), *n))
            .collect()
    }

    /// Every method called so far, in order.
    pub fn call_log(&self) -> Vec<String> {
        let faults = self.faults();
        faults
            .log
            .iter()
            .map(|&number| faults.methods[number as usize].clone())
            .collect()
    }

    /// The calls that could change the world (creates, updates, deletes and the like).
    pub fn mutation_calls(&self) -> Vec<String> {
        const READS: &[&str] = &[
            "/Get",
            "/GetByName",
            "/List",
            "/ListByNetwork",
            "/ListByAccount",
            "/GetSecret",
            "/GetByAwsId",
            "/ListBySourcePool",
            "/ListResources",
            "/GetByResourceAffinity",
            "/ListControlPlaneVersions",
            "/GetCompatibilityMatrix",
            "/ListOperationsByParent",
            "/Exchange",
        ];
        self.call_log()
            .into_iter()
            .filter(|m| !READS.iter().any(|r| m.ends_with(r)))
            .collect()
    }

    /// Forgets the call log.
    pub fn clear_call_log(&self) {
        self.faults().log.clear();
    }

    /// How many scripted faults have struck so far.
    pub fn faults_fired(&self) -> u64 {
        self.faults().fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(method: &str) -> FaultSpec {
        FaultSpec {
            method: method.into(),
            code: "unavailable".into(),
            error_rate: 0.0,
            fail_nth: vec![],
            latency_ms: 0,
            retry_type: None,
            after_effect: false,
        }
    }

    #[test]
    fn faults_match_full_short_and_wildcard_methods() {
        let m = "/nebius.mk8s.v1.ClusterService/Create";
        assert!(fault_matches(&fault("ClusterService/Create"), m));
        assert!(fault_matches(&fault(m), m));
        assert!(fault_matches(&fault("*"), m));
        assert!(!fault_matches(&fault("NodeGroupService/Create"), m));
        assert!(!fault_matches(&fault("ClusterService/Get"), m));
    }

    #[test]
    fn the_nth_call_of_a_method_is_counted_per_method_and_the_log_keeps_the_order() {
        let (create, get) = (
            "/nebius.mk8s.v1.ClusterService/Create",
            "/nebius.mk8s.v1.ClusterService/Get",
        );
        let faults = [FaultSpec {
            fail_nth: vec![2],
            ..fault("ClusterService/Create")
        }];
        let mut state = FaultState::new(7);
        let struck: Vec<bool> = [create, get, get, create, create]
            .iter()
            .map(|m| state.roll(&faults, m).1.is_some())
            .collect();
        assert_eq!(struck, [false, false, false, true, false]);
        let log: Vec<&str> = state
            .log
            .iter()
            .map(|&n| state.methods[n as usize].as_str())
            .collect();
        assert_eq!(log, [create, get, get, create, create]);
        assert_eq!(state.calls, [3, 2]);
    }
}
