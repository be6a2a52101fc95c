//! fleetbot: reconcile fleets of Nebius Managed Kubernetes clusters from declarative YAML.
//!
//! The library is the engine behind every surface (CLI, GitHub App, simulator):
//! [`spec`] reads and validates fleet specs, [`engine`] turns them into plans,
//! [`privacy`] refuses committed private identifiers.

pub mod cli;
pub mod cloud;
pub mod engine;
pub mod privacy;
pub mod quota;
pub mod sim;
pub mod spec;
