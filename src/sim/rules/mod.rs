//! The rules the Nebius API applies to every request, read from the annotations of the
//! descriptor set rather than written per field: how an Update patches a resource under its
//! `X-ResetMask` ([`patch`]), and what a request must carry and may not change
//! ([`validate`]). The values the service fills in are per resource kind and live with the
//! kinds (`crate::sim::resources`).

pub mod patch;
pub mod validate;
