//! The cloud side: the Nebius gRPC client (auth, endpoints, retries, operations), the domain
//! [`Cloud`] trait the engine uses, and Nebius configuration.

pub mod auth;
pub mod client;
pub mod credentials;
pub mod domain;
pub mod error;
pub mod nebius;
pub mod nid;
pub mod profile;
pub mod proto;
pub mod reset_mask;
pub mod schema;
#[cfg(test)]
mod wire_pins;

pub use client::NebiusClient;
pub use domain::Cloud;
pub use error::CloudError;
