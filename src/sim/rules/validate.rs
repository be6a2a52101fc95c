//! What a request must carry and what an update may not change, from the annotations: a
//! field marked `(buf.validate.field).required` must hold a value and a oneof marked
//! `(buf.validate.oneof).required` a member, wherever the message holding them is present; a
//! field marked IMMUTABLE keeps its value across an update (a parent message may still be
//! cleared). Each breach is a field violation naming its path, as Nebius reports them:
//! `INVALID_ARGUMENT` with a `BadRequest` in the `ServiceError`.

use prost_reflect::{DynamicMessage, Kind, ReflectMessage, Value};
use tonic::{Code, Status};

use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::nebius::common::v1::{self as common, ServiceError, service_error};
use crate::cloud::schema::{self, Behavior};

/// One field that is not as the API wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The path from the request, e.g. `spec.template.resources.platform`.
    pub field: String,
    pub message: String,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The required fields and oneofs `message` leaves empty, here and in every message it holds.
/// `skip` names top-level fields not to look into (an Update's metadata and spec, which are
/// checked once patched).
pub fn required(message: &DynamicMessage, prefix: &str, skip: &[&str], out: &mut Vec<Violation>) {
    let descriptor = message.descriptor();
    for oneof in descriptor.oneofs() {
        if oneof.is_synthetic() || !schema::oneof_is_required(&oneof) {
            continue;
        }
        if !oneof.fields().any(|f| message.has_field(&f)) {
            out.push(Violation {
                field: join(prefix, oneof.name()),
                message: "exactly one field is required in oneof".into(),
            });
        }
    }
    for field in descriptor.fields() {
        let path = join(prefix, field.name());
        let has = schema::has_value(message, &field);
        if schema::is_required(&field) && !has {
            out.push(Violation {
                field: path.clone(),
                message: "value is required".into(),
            });
        }
        if !has || (prefix.is_empty() && skip.contains(&field.name())) {
            continue;
        }
        each_message(&message.get_field(&field), &path, &mut |m, p| {
            required(m, p, &[], out)
        });
    }
}

/// Calls `f` on every message a field's value holds, with its path.
fn each_message(value: &Value, path: &str, f: &mut dyn FnMut(&DynamicMessage, &str)) {
    match value {
        Value::Message(m) => f(m, path),
        Value::List(items) => {
            for (i, item) in items.iter().enumerate() {
                if let Value::Message(m) = item {
                    f(m, &format!("{path}.{i}"));
                }
            }
        }
        Value::Map(entries) => {
            for (key, item) in entries {
                if let Value::Message(m) = item {
                    let key = match key {
                        prost_reflect::MapKey::String(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    f(m, &format!("{path}.{key}"));
                }
            }
        }
        _ => {}
    }
}

/// The IMMUTABLE fields (and IMMUTABLE oneofs) an update changed between `before` and
/// `after`. Messages present on both sides are compared inside; one the update cleared is
/// not (clearing a parent is allowed).
pub fn immutable(
    before: &DynamicMessage,
    after: &DynamicMessage,
    prefix: &str,
    out: &mut Vec<Violation>,
) {
    let descriptor = before.descriptor();
    for oneof in descriptor.oneofs() {
        if oneof.is_synthetic() || !schema::oneof_has_behavior(&oneof, Behavior::Immutable) {
            continue;
        }
        let set = |m: &DynamicMessage| {
            oneof
                .fields()
                .find(|f| m.has_field(f))
                .map(|f| (f.number(), m.get_field(&f).into_owned()))
        };
        if set(before) != set(after) {
            out.push(Violation {
                field: join(prefix, oneof.name()),
                message: "the value cannot be changed".into(),
            });
        }
    }
    for field in descriptor.fields() {
        let path = join(prefix, field.name());
        let (had, has) = (before.has_field(&field), after.has_field(&field));
        if schema::has_behavior(&field, Behavior::Immutable) {
            if had != has || before.get_field(&field) != after.get_field(&field) {
                out.push(Violation {
                    field: path,
                    message: "the value cannot be changed".into(),
                });
            }
            continue;
        }
        if !(had && has && matches!(field.kind(), Kind::Message(_))) {
            continue;
        }
        match (
            before.get_field(&field).as_ref(),
            after.get_field(&field).as_ref(),
        ) {
            (Value::Message(b), Value::Message(a)) => immutable(b, a, &path, out),
            (Value::List(b), Value::List(a)) => {
                for (i, (b, a)) in b.iter().zip(a).enumerate() {
                    if let (Value::Message(b), Value::Message(a)) = (b, a) {
                        immutable(b, a, &format!("{path}.{i}"), out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The error Nebius answers a request with violations: `INVALID_ARGUMENT`, every violation in
/// one `BadRequest`.
pub fn refusal(service: &str, violations: &[Violation]) -> Status {
    let message = violations
        .iter()
        .map(|v| format!("{}: {}", v.field, v.message))
        .collect::<Vec<_>>()
        .join("; ");
    status_with_service_error(
        Code::InvalidArgument,
        &format!("validation failed: {message}"),
        ServiceError {
            service: service.to_string(),
            code: "BadRequest".into(),
            retry_type: service_error::RetryType::Nothing as i32,
            details: Some(service_error::Details::BadRequest(common::BadRequest {
                violations: violations
                    .iter()
                    .map(|v| common::bad_request::Violation {
                        field: v.field.clone(),
                        message: v.message.clone(),
                        related_fields: Vec::new(),
                    })
                    .collect(),
            })),
        },
    )
}

/// Checks a request as the API's front door does, before anything else looks at it: every
/// required field of the request and of what it holds. A Create must not name the resource's
/// ID, and a spec it leaves out is checked as the empty spec it stands for. An Update's
/// metadata and spec are checked once patched onto the resource (`Core::update`), since a
/// partial update need not repeat what the resource already has.
pub fn request(method: &str, message: &DynamicMessage) -> Vec<Violation> {
    let name = method.rsplit('/').next().unwrap_or(method);
    let mut out = Vec::new();
    let is_update = name == "Update";
    let skip: &[&str] = if is_update {
        &["metadata", "spec"]
    } else {
        &[]
    };
    required(message, "", skip, &mut out);
    if name == "Create" {
        let descriptor = message.descriptor();
        if let Some(metadata) = descriptor.get_field_by_name("metadata")
            && let Some(m) = message.get_field(&metadata).as_message()
            && let Some(id) = m.descriptor().get_field_by_name("id")
            && m.has_field(&id)
        {
            out.push(Violation {
                field: "metadata.id".into(),
                message: "must not be set on create".into(),
            });
        }
        if let Some(spec) = descriptor.get_field_by_name("spec")
            && !message.has_field(&spec)
            && !schema::is_required(&spec)
            && let Kind::Message(spec_type) = spec.kind()
        {
            required(&DynamicMessage::new(spec_type), "spec", &[], &mut out);
        }
    }
    out
}
