//! fleetbot: reconcile fleets of Nebius Managed Kubernetes clusters from declarative YAML.
//!
//! The library is the engine behind every surface (CLI, GitHub App, simulator). Its promise is
//! small and sits at the crate root:
//!
//! * [`Fleet`]: a spec (`apiVersion: npa.fleet/v0.0.1`), read and validated, with
//!   [`Fleet::plan`], [`Fleet::plan_live`], [`Fleet::preflight`], [`Fleet::deploy`],
//!   [`Fleet::status`], [`Fleet::destroy`], [`Fleet::verify_storage`] and
//!   [`Fleet::verify_graphics`];
//! * [`Session`]: the cloud they run against (Nebius, or the simulator) and the inventory
//!   fleetbot keeps for it;
//! * [`Options`]: selection and behaviour, defaulting to what the CLI does;
//! * the typed reports they return, which the CLI prints: [`FleetPlan`], [`LivePlan`],
//!   [`PreflightReport`], [`DeployResult`], [`StatusResult`], [`DestroyResult`],
//!   [`StorageReport`], [`GraphicsReport`]; and [`Error`].
//!
//! ```
//! # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
//! use fleetbot::{Fleet, Options, Session};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let session = Session::simulator(dir.path()).await?;
//! let fleet = Fleet::load("fixtures/specs/fleet1-test.yaml")?;
//! let result = fleet.deploy(&session, &Options::default()).await?;
//! assert_eq!(result.deployed, 2);
//! assert!(fleet.status(&session).await?.healthy());
//! fleet.destroy(&session, &Options::default()).await?;
//! # Ok(()) }
//! ```
//!
//! The modules below the root are fleetbot's own building blocks (the binary, the App and the
//! test suite use them); they are hidden from this documentation and may change in any
//! release. `examples/deploy_fleet.rs` is a whole program on the promise alone.

// Cloud errors carry the service's structured details; they are on the cold path, and boxing
// them everywhere would cost more clarity than the extra bytes cost anything.
#![allow(clippy::result_large_err)]

pub mod fleet;

#[doc(hidden)]
pub mod bot;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod cloud;
#[doc(hidden)]
pub mod clusters;
#[doc(hidden)]
pub mod engine;
#[doc(hidden)]
pub mod github;
#[doc(hidden)]
pub mod policy;
#[doc(hidden)]
pub mod privacy;
#[doc(hidden)]
pub mod probe;
#[doc(hidden)]
pub mod quota;
#[doc(hidden)]
pub mod runtime;
#[doc(hidden)]
pub mod server;
#[doc(hidden)]
pub mod sim;
#[doc(hidden)]
pub mod spec;
#[doc(hidden)]
pub mod store;
#[doc(hidden)]
pub mod verify;

pub use engine::FleetPlan;
pub use engine::live::LivePlan;
pub use engine::ops::{DeployResult, DestroyResult, StatusResult, TargetStatus};
pub use fleet::{Error, Fleet, Options, Session, SessionOptions};
pub use quota::budget::PreflightReport;
pub use runtime::RuntimeValues;
pub use spec::{FleetSpec, SpecError};
pub use verify::graphics_report::GraphicsReport;
pub use verify::storage_report::StorageReport;

#[cfg(test)]
mod architecture;
