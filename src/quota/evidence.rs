//! Where quota and capacity evidence comes from: the [`QuotaEvidence`] trait, the offline source
//! that reads `--quotas FILE` / `--capacity FILE`, and an in-memory source for tests, benches and
//! the simulator.
//!
//! The live source (the Nebius gRPC client, or the simulator behind it) implements the same
//! trait and maps its protobuf messages into the same domain records.

use std::path::{Path, PathBuf};

use super::allowances::AllowanceDocument;
use super::error::EvidenceError;
use super::json;
use super::reservations::CapacityBlockDocument;

/// A source of a tenant's quota allowances and capacity block groups.
pub trait QuotaEvidence {
    /// Every quota allowance of the tenant, all regions, all pages.
    fn allowances(&self, tenant_id: &str) -> Result<AllowanceDocument, EvidenceError>;
    /// Every capacity block group of the tenant, all pages.
    fn capacity_block_groups(
        &self,
        tenant_id: &str,
    ) -> Result<CapacityBlockDocument, EvidenceError>;
}

/// The largest evidence file read; real lists are a few hundred kilobytes.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Evidence read from JSON files saved from the Nebius CLI, for air-gapped use and tests.
#[derive(Debug, Clone, Default)]
pub struct OfflineEvidence {
    /// `nebius quotas quota-allowance list --parent-id <tenant> --all --format json`.
    pub quotas: Option<PathBuf>,
    /// `nebius capacity capacity-block-group list --parent-id <tenant> --all --format json`.
    pub capacity: Option<PathBuf>,
}

impl OfflineEvidence {
    pub fn new(quotas: Option<PathBuf>, capacity: Option<PathBuf>) -> OfflineEvidence {
        OfflineEvidence { quotas, capacity }
    }
}

impl QuotaEvidence for OfflineEvidence {
    fn allowances(&self, _tenant_id: &str) -> Result<AllowanceDocument, EvidenceError> {
        // The hint names the flag, not the tenant: it may be pasted into a ticket.
        let Some(path) = &self.quotas else {
            return Err(EvidenceError::Unreadable(
                "no quota evidence was given: pass --quotas FILE with the output of `nebius quotas quota-allowance list --parent-id <tenant-id> --all --format json` (or leave out --quotas and --offline to read the cloud's allowances)".into(),
            ));
        };
        json::allowance_document(&read(path)?)
    }

    fn capacity_block_groups(
        &self,
        _tenant_id: &str,
    ) -> Result<CapacityBlockDocument, EvidenceError> {
        let Some(path) = &self.capacity else {
            return Err(EvidenceError::Unreadable(
                "no capacity evidence was given: pass --capacity FILE with the output of `nebius capacity capacity-block-group list --parent-id <tenant-id> --all --format json` (or leave out --quotas and --offline to read the cloud's capacity blocks)".into(),
            ));
        };
        json::capacity_document(&read(path)?)
    }
}

/// Reads a file, capped; the cause names the path and the error kind, never the content.
fn read(path: &Path) -> Result<String, EvidenceError> {
    let shown = path.display();
    let unreadable =
        |e: std::io::Error| EvidenceError::Unreadable(format!("cannot read {shown}: {}", e.kind()));
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(EvidenceError::Unreadable(format!(
            "{shown} is {} bytes; the limit is {MAX_FILE_BYTES} bytes",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    String::from_utf8(bytes)
        .map_err(|_| EvidenceError::Unreadable(format!("{shown} is not valid UTF-8")))
}

/// Evidence held in memory: each call returns a clone of the stored result.
#[derive(Debug, Clone)]
pub struct InMemoryEvidence {
    pub allowances: Result<AllowanceDocument, EvidenceError>,
    pub capacity: Result<CapacityBlockDocument, EvidenceError>,
}

impl InMemoryEvidence {
    pub fn new(allowances: AllowanceDocument, capacity: CapacityBlockDocument) -> InMemoryEvidence {
        InMemoryEvidence {
            allowances: Ok(allowances),
            capacity: Ok(capacity),
        }
    }
}

impl QuotaEvidence for InMemoryEvidence {
    fn allowances(&self, _tenant_id: &str) -> Result<AllowanceDocument, EvidenceError> {
        self.allowances.clone()
    }

    fn capacity_block_groups(
        &self,
        _tenant_id: &str,
    ) -> Result<CapacityBlockDocument, EvidenceError> {
        self.capacity.clone()
    }
}
