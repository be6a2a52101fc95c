//! What every conversion between protobuf and domain types shares: metadata fields, labels,
//! and the error for a reply that lacks a part the domain type needs.

use crate::cloud::domain::{CloudResult, Labels};
use crate::cloud::error::{CloudError, ErrorKind};
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;

/// A copy of a label map into another map type (protobuf maps and [`Labels`] differ).
pub(super) fn copied<'a, M: FromIterator<(String, String)>>(
    labels: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> M {
    labels
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

pub(super) fn labels(meta: &Option<ResourceMetadata>) -> Labels {
    meta.as_ref().map(|m| copied(&m.labels)).unwrap_or_default()
}

pub(super) fn meta_field(
    meta: &Option<ResourceMetadata>,
    f: impl Fn(&ResourceMetadata) -> &String,
) -> String {
    meta.as_ref().map(|m| f(m).clone()).unwrap_or_default()
}

pub(super) fn resource_version(meta: &Option<ResourceMetadata>) -> i64 {
    meta.as_ref().map_or(0, |m| m.resource_version)
}

pub(super) fn new_meta(parent_id: &str, name: &str, labels: &Labels) -> ResourceMetadata {
    ResourceMetadata {
        parent_id: parent_id.to_string(),
        name: name.to_string(),
        labels: copied(labels),
        ..Default::default()
    }
}

/// The metadata a resource was read with, its labels replaced: an update sends back the whole
/// metadata (with the resource version it was read at), not only what changed.
pub(super) fn relabelled(
    metadata: Option<ResourceMetadata>,
    labels: &Labels,
    what: &str,
) -> CloudResult<ResourceMetadata> {
    let mut metadata = metadata.ok_or_else(|| missing(what))?;
    metadata.labels = copied(labels);
    Ok(metadata)
}

pub(super) fn missing(what: &str) -> CloudError {
    CloudError::new(
        tonic::Code::Internal,
        format!("the service returned no {what}"),
        ErrorKind::Internal,
    )
}
