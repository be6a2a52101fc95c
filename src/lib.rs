//! fleetbot: reconcile fleets of Nebius Managed Kubernetes clusters from declarative YAML.
//!
//! The library is the engine behind every surface (CLI, GitHub App, simulator):
//! [`spec`] reads and validates fleet specs, [`engine`] turns them into plans,
//! [`privacy`] refuses committed private identifiers, [`clusters`] reaches inside the clusters.

// Cloud errors carry the service's structured details; they are on the cold path, and boxing
// them everywhere would cost more clarity than the extra bytes cost anything.
#![allow(clippy::result_large_err)]

pub mod bot;
pub mod cli;
pub mod cloud;
pub mod clusters;
pub mod engine;
pub mod github;
pub mod privacy;
pub mod probe;
pub mod quota;
pub mod server;
pub mod sim;
pub mod spec;
pub mod store;

#[cfg(test)]
mod architecture;
