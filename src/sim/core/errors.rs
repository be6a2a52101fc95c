//! The API's error replies: a gRPC status carrying the `ServiceError` details Nebius sends.

use tonic::{Code, Status};

use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::nebius::common::v1::{self as common, ServiceError, service_error};

/// A `ServiceError` the caller should not retry as is.
pub(super) fn service_error(
    service: &str,
    code: &str,
    details: service_error::Details,
) -> ServiceError {
    ServiceError {
        service: service.to_string(),
        code: code.to_string(),
        retry_type: service_error::RetryType::Nothing as i32,
        details: Some(details),
    }
}

pub fn not_found(service: &str, id: &str) -> Status {
    status_with_service_error(
        Code::NotFound,
        &format!("resource {id} not found"),
        service_error(
            service,
            "NotFound",
            service_error::Details::ResourceNotFound(common::ResourceNotFound {
                resource_id: id.to_string(),
            }),
        ),
    )
}

pub fn invalid(service: &str, field: &str, message: &str) -> Status {
    status_with_service_error(
        Code::InvalidArgument,
        message,
        service_error(
            service,
            "BadRequest",
            service_error::Details::BadRequest(common::BadRequest {
                violations: vec![common::bad_request::Violation {
                    field: field.to_string(),
                    message: message.to_string(),
                    related_fields: Vec::new(),
                }],
            }),
        ),
    )
}
