//! Verification of deployed targets (fleet-engine §7): which targets a run covers, the typed
//! public reports and how their verdicts follow from typed evidence, the JSON and text they
//! are printed as, and the owner-private evidence directory. The public reports (storage,
//! graphics) have no field for a node name, an address, a cloud ID or a path, so nothing
//! private can reach their text. The MIG report names nodes, as the reference's does, and is
//! printed with each node as its worker ordinal (`mig_public`).

pub mod cluster_checks;
pub mod evidence_dir;
pub mod graphics_report;
pub mod graphics_run;
pub mod identity;
pub mod json;
pub mod manifests;
pub mod mig_public;
pub mod mig_report;
pub mod mig_run;
pub mod options;
pub mod select;
pub mod storage_phases;
pub mod storage_report;
pub mod storage_run;
pub mod workload;

pub use graphics_report::{
    GraphicsCategory, GraphicsClusterReport, GraphicsJudgement, GraphicsReport, judge_graphics,
    validate_target,
};
pub use graphics_run::{GraphicsRun, verify_graphics};
pub use mig_report::{MigExpectation, MigVerificationReport, judge_mig};
pub use mig_run::{
    MigError, MigFleetReport, MigTarget, mig_targets, select_mig_target, verify_mig,
    verify_mig_fleet,
};
pub use options::{
    Graphics, GraphicsOptions, Kind, Mig, MigOptions, Options, Storage, StorageOptions,
};
pub use select::{Selection, select_targets};
pub use storage_report::{Category, ClusterReport, NodeReport, StorageReport};
pub use storage_run::{StorageRun, VerifyError, verify_storage};
