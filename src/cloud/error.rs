//! Typed cloud errors, decoded from gRPC statuses and their `ServiceError` details.

use prost::Message;
use tonic::Code;

use super::proto::nebius::common::v1::{ServiceError, service_error};

/// How the service says a failed call may be retried (`ServiceError.retry_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryType {
    /// The service did not say; the gRPC code decides.
    Unspecified,
    /// Retry this call.
    Call,
    /// Redo the whole sequence of calls, not just this one.
    UnitOfWork,
    /// Never retry.
    Nothing,
}

impl From<i32> for RetryType {
    fn from(value: i32) -> Self {
        match service_error::RetryType::try_from(value) {
            Ok(service_error::RetryType::Call) => RetryType::Call,
            Ok(service_error::RetryType::UnitOfWork) => RetryType::UnitOfWork,
            Ok(service_error::RetryType::Nothing) => RetryType::Nothing,
            _ => RetryType::Unspecified,
        }
    }
}

/// A quota the service refused to exceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaViolation {
    /// The quota name, such as `compute.instance.gpu.h100`.
    pub quota: String,
    pub message: String,
    pub limit: String,
    pub requested: String,
}

/// What went wrong, in the terms the engine acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound {
        resource_id: String,
    },
    AlreadyExists {
        resource_id: String,
    },
    /// Quota exhausted; the violations keep the quota names.
    QuotaExceeded {
        violations: Vec<QuotaViolation>,
    },
    /// Physical capacity ran out (not a quota problem).
    NotEnoughResources {
        resource_types: Vec<String>,
    },
    /// Another operation is running on the resource.
    OperationConflict {
        operation_id: String,
        resource_id: String,
    },
    PermissionDenied {
        resource_id: String,
    },
    Unauthenticated,
    InvalidArgument {
        fields: Vec<String>,
    },
    FailedPrecondition,
    TooManyRequests,
    Unavailable,
    DeadlineExceeded,
    Internal,
    Other,
}

/// A failed cloud call or operation. Its text ends with the request and trace IDs Nebius gave
/// the call (an operator quotes them to Nebius support); it is for the operator's terminal and
/// logs, never for GitHub (the bot's public reports are typed and carry no cloud text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}{}{}", service.as_deref().map(|s| format!(" (service {s})")).unwrap_or_default(), self.ids_suffix())]
pub struct CloudError {
    pub code: Code,
    pub message: String,
    pub kind: ErrorKind,
    pub retry_type: RetryType,
    /// The service that raised it (`ServiceError.service`), when known.
    pub service: Option<String>,
    /// The service's error code name (`ServiceError.code`), when known.
    pub service_code: Option<String>,
    /// `x-request-id` of the call (or of the call that started a failed operation), for
    /// support tickets.
    pub request_id: Option<String>,
    /// `x-trace-id` of the same call.
    pub trace_id: Option<String>,
}

/// The IDs Nebius gives a call in its reply headers (`x-request-id`, `x-trace-id`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestIds {
    pub request_id: Option<String>,
    pub trace_id: Option<String>,
}

impl RequestIds {
    /// The IDs in a reply's headers (a success's, or an error's, which tonic keeps as the
    /// status's metadata).
    pub fn from_metadata(metadata: &tonic::metadata::MetadataMap) -> RequestIds {
        let get = |key: &str| {
            metadata
                .get(key)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        RequestIds {
            request_id: get("x-request-id"),
            trace_id: get("x-trace-id"),
        }
    }
}

impl CloudError {
    pub fn new(code: Code, message: impl Into<String>, kind: ErrorKind) -> Self {
        CloudError {
            code,
            message: message.into(),
            kind,
            retry_type: RetryType::Unspecified,
            service: None,
            service_code: None,
            request_id: None,
            trace_id: None,
        }
    }

    /// `; request_id: …; trace_id: …`, as the SDK ends its errors; empty without IDs.
    fn ids_suffix(&self) -> String {
        let mut out = String::new();
        if let Some(id) = &self.request_id {
            out.push_str(&format!("; request_id: {id}"));
        }
        if let Some(id) = &self.trace_id {
            out.push_str(&format!("; trace_id: {id}"));
        }
        out
    }

    /// The error with the IDs of the call it came from, unless it has its own: a failed
    /// operation is reported with the IDs of the request that started it.
    pub fn with_request_ids(mut self, ids: &RequestIds) -> Self {
        if self.request_id.is_none() && self.trace_id.is_none() {
            self.request_id = ids.request_id.clone();
            self.trace_id = ids.trace_id.clone();
        }
        self
    }

    /// Whether the cloud refused the call without acting on it (quota, capacity, an invalid or
    /// forbidden request), so a later attempt is a new request rather than a retry. Transport
    /// failures and internal errors are not refusals: their effect is unknown.
    pub fn took_no_effect(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::QuotaExceeded { .. }
                | ErrorKind::NotEnoughResources { .. }
                | ErrorKind::InvalidArgument { .. }
                | ErrorKind::PermissionDenied { .. }
                | ErrorKind::Unauthenticated
        )
    }

    /// Whether retrying the same call (with the same idempotency key) may succeed, following
    /// the SDKs: the service's retry type wins; otherwise `UNAVAILABLE`, `RESOURCE_EXHAUSTED`
    /// without a quota violation, and `DEADLINE_EXCEEDED` are retried.
    pub fn is_retryable(&self) -> bool {
        match self.retry_type {
            RetryType::Call => true,
            RetryType::Nothing | RetryType::UnitOfWork => false,
            RetryType::Unspecified => match self.code {
                Code::Unavailable | Code::DeadlineExceeded => true,
                // A quota violation will not go away by asking again.
                Code::ResourceExhausted => !matches!(self.kind, ErrorKind::QuotaExceeded { .. }),
                Code::Unknown => self.message.contains("HTTP status code 52"),
                _ => false,
            },
        }
    }

    /// The quota names of a quota failure, if this is one.
    pub fn quota_names(&self) -> Vec<&str> {
        match &self.kind {
            ErrorKind::QuotaExceeded { violations } => {
                violations.iter().map(|v| v.quota.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, ErrorKind::NotFound { .. }) || self.code == Code::NotFound
    }

    /// Decodes a gRPC status, reading `ServiceError`s from its `grpc-status-details-bin`.
    pub fn from_status(status: &tonic::Status) -> Self {
        let details = decode_service_errors(status.details());
        let error = Self::from_parts(status.code(), status.message(), &details);
        error.with_request_ids(&RequestIds::from_metadata(status.metadata()))
    }

    /// Decodes a finished operation's failure status.
    pub fn from_operation_status(status: &tonic_types::Status) -> Self {
        let details: Vec<ServiceError> = status
            .details
            .iter()
            .filter_map(|any| any.to_msg::<ServiceError>().ok())
            .collect();
        Self::from_parts(Code::from_i32(status.code), &status.message, &details)
    }

    fn from_parts(code: Code, message: &str, details: &[ServiceError]) -> Self {
        let first = details.first();
        let kind = first
            .and_then(|e| e.details.as_ref())
            .map(kind_from_details)
            .unwrap_or_else(|| kind_from_code(code));
        CloudError {
            code,
            message: message.to_string(),
            kind,
            retry_type: first.map_or(RetryType::Unspecified, |e| e.retry_type.into()),
            service: first.map(|e| e.service.clone()).filter(|s| !s.is_empty()),
            service_code: first.map(|e| e.code.clone()).filter(|s| !s.is_empty()),
            request_id: None,
            trace_id: None,
        }
    }
}

/// Reads the `ServiceError`s packed in a status details blob (a `google.rpc.Status`).
pub fn decode_service_errors(details: &[u8]) -> Vec<ServiceError> {
    if details.is_empty() {
        return Vec::new();
    }
    match tonic_types::Status::decode(details) {
        Ok(status) => status
            .details
            .iter()
            .filter_map(|any| any.to_msg::<ServiceError>().ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn kind_from_code(code: Code) -> ErrorKind {
    match code {
        Code::NotFound => ErrorKind::NotFound {
            resource_id: String::new(),
        },
        Code::AlreadyExists => ErrorKind::AlreadyExists {
            resource_id: String::new(),
        },
        Code::PermissionDenied => ErrorKind::PermissionDenied {
            resource_id: String::new(),
        },
        Code::Unauthenticated => ErrorKind::Unauthenticated,
        Code::InvalidArgument => ErrorKind::InvalidArgument { fields: Vec::new() },
        Code::FailedPrecondition => ErrorKind::FailedPrecondition,
        Code::Unavailable => ErrorKind::Unavailable,
        Code::DeadlineExceeded => ErrorKind::DeadlineExceeded,
        Code::Internal => ErrorKind::Internal,
        Code::ResourceExhausted => ErrorKind::TooManyRequests,
        _ => ErrorKind::Other,
    }
}

fn kind_from_details(details: &service_error::Details) -> ErrorKind {
    use service_error::Details as D;
    match details {
        D::ResourceNotFound(d) => ErrorKind::NotFound {
            resource_id: d.resource_id.clone(),
        },
        D::ResourceAlreadyExists(d) => ErrorKind::AlreadyExists {
            resource_id: d.resource_id.clone(),
        },
        D::QuotaFailure(q) => ErrorKind::QuotaExceeded {
            violations: q
                .violations
                .iter()
                .map(|v| QuotaViolation {
                    quota: v.quota.clone(),
                    message: v.message.clone(),
                    limit: v.limit.clone(),
                    requested: v.requested.clone(),
                })
                .collect(),
        },
        D::NotEnoughResources(n) => ErrorKind::NotEnoughResources {
            resource_types: n
                .violations
                .iter()
                .map(|v| v.resource_type.clone())
                .collect(),
        },
        D::OperationConflict(c) => ErrorKind::OperationConflict {
            operation_id: c.conflicting_operation_id.clone(),
            resource_id: c.resource_id.clone(),
        },
        D::PermissionDenied(p) => ErrorKind::PermissionDenied {
            resource_id: p.resource_id.clone(),
        },
        D::BadRequest(b) => ErrorKind::InvalidArgument {
            fields: b.violations.iter().map(|v| v.field.clone()).collect(),
        },
        D::TooManyRequests(_) => ErrorKind::TooManyRequests,
        D::BadResourceState(_) | D::ResourceConflict(_) | D::OperationAborted(_) => {
            ErrorKind::FailedPrecondition
        }
        D::OutOfRange(_) => ErrorKind::InvalidArgument { fields: Vec::new() },
        D::InternalError(_) => ErrorKind::Internal,
    }
}

/// Builds a status carrying one `ServiceError`, as Nebius services send them. The simulator uses
/// this; tests use it to produce real status-details bytes.
pub fn status_with_service_error(code: Code, message: &str, error: ServiceError) -> tonic::Status {
    let details = tonic_types::Status {
        code: code as i32,
        message: message.to_string(),
        details: vec![prost_types::Any::from_msg(&error).expect("ServiceError encodes")],
    };
    tonic::Status::with_details(code, message, details.encode_to_vec().into())
}

/// The same, as an operation's final `status`.
pub fn operation_status(
    code: Code,
    message: &str,
    error: Option<ServiceError>,
) -> tonic_types::Status {
    tonic_types::Status {
        code: code as i32,
        message: message.to_string(),
        details: error
            .map(|e| vec![prost_types::Any::from_msg(&e).expect("ServiceError encodes")])
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::common::v1::{QuotaFailure, quota_failure};

    fn quota_error() -> ServiceError {
        ServiceError {
            service: "compute".into(),
            code: "QuotaExceeded".into(),
            retry_type: service_error::RetryType::Nothing as i32,
            details: Some(service_error::Details::QuotaFailure(QuotaFailure {
                violations: vec![quota_failure::Violation {
                    quota: "compute.instance.gpu.h100".into(),
                    message: "limit reached".into(),
                    limit: "16".into(),
                    requested: "24".into(),
                }],
            })),
        }
    }

    #[test]
    fn decodes_service_error_from_real_status_details_bytes() {
        let status = status_with_service_error(Code::ResourceExhausted, "quota", quota_error());
        // What travels in `grpc-status-details-bin`: an encoded google.rpc.Status.
        let bytes = status.details().to_vec();
        assert!(!bytes.is_empty());
        let decoded = decode_service_errors(&bytes);
        assert_eq!(decoded, vec![quota_error()]);
        let any = tonic_types::Status::decode(bytes.as_slice()).unwrap();
        assert_eq!(
            any.details[0].type_url,
            "type.googleapis.com/nebius.common.v1.ServiceError"
        );

        let error = CloudError::from_status(&status);
        assert_eq!(error.quota_names(), ["compute.instance.gpu.h100"]);
        assert_eq!(error.retry_type, RetryType::Nothing);
        assert!(!error.is_retryable());
        assert_eq!(error.service.as_deref(), Some("compute"));
    }

    #[test]
    fn retry_rules_follow_the_sdks() {
        let unavailable = CloudError::new(Code::Unavailable, "down", ErrorKind::Unavailable);
        assert!(unavailable.is_retryable());
        let mut told_not_to = unavailable.clone();
        told_not_to.retry_type = RetryType::Nothing;
        assert!(!told_not_to.is_retryable());
        let mut told_to = CloudError::new(Code::Internal, "x", ErrorKind::Internal);
        assert!(!told_to.is_retryable());
        told_to.retry_type = RetryType::Call;
        assert!(told_to.is_retryable());
    }

    #[test]
    fn garbage_details_decode_to_nothing() {
        assert!(decode_service_errors(&[0xff, 0x00, 0x13]).is_empty());
        let status = tonic::Status::not_found("gone");
        assert!(CloudError::from_status(&status).is_not_found());
    }
}
