//! The cloud side: Nebius configuration, identity and (later) the gRPC client and simulator.

pub mod profile;
