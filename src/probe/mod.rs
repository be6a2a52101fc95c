//! fleetbot's own probe: the program that runs inside a verification pod on each worker and
//! prints one typed evidence document on stdout, which the verifier parses strictly. It has
//! no simulation mode: in the simulator it runs as a local process against each simulated
//! node's own host directory and the cluster's shared filestore directory.
//!
//! Run as `fleetbot probe storage host …`, `fleetbot probe storage shared …` and
//! `fleetbot probe graphics …` (on a GPU worker: CUDA, GLX, EGL and Vulkan, every library
//! opened at run time) and `fleetbot probe mig …` (on a MIG worker: NVML's layout and
//! vectorAdd on every slice).

pub mod cuda;
pub mod dynlib;
pub mod evidence;
pub mod graphics;
pub mod graphics_evidence;
pub mod mig;
pub mod mig_evidence;
pub mod mounts;
pub mod nvml;
pub mod storage;

pub use evidence::{
    EvidenceError, HostEvidence, PathState, PathsEvidence, SharedEvidence, parse_host, parse_paths,
    parse_shared,
};
pub use graphics_evidence::{
    GRAPHICS_SCHEMA, GraphicsEvidence, Library, VectorAdd, VulkanDevice, parse_graphics,
};
pub use mig_evidence::{MIG_SCHEMA, MigEvidence, MigGpu, MigMode, SliceSmoke, parse_mig};
