//! The simulator held to what Nebius does (issue 33), each module one promise: updates patch
//! under the reset mask and removals converge ([`strict::updates`]), requests are validated
//! from the protos' annotations ([`strict::validation`]), the service fills its defaults
//! and plans never see them ([`strict::defaults`]), buckets are soft-deleted
//! ([`strict::buckets`]), every reply carries request IDs ([`strict::request_ids`]) and IAM
//! v2 is served beside v1 ([`strict::iam`]).

#[path = "strict/mod.rs"]
mod strict;
