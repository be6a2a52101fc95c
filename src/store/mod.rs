//! Durable state behind one trait: the fleet inventory (what fleetbot created, per target and
//! per project). SQLite is the embedded default; other backends implement the same trait and
//! pass the same conformance tests.

pub mod inventory;
pub mod migrate;
pub mod sqlite;

pub use inventory::{InventoryStore, ProjectRecord, TargetRecord};
pub use sqlite::SqliteStore;

/// A store that cannot be read or written. Callers fail closed on it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "persisted fleet inventory at {location} is unreadable; refusing lifecycle action ({reason})"
    )]
    Unreadable { location: String, reason: String },
    #[error("cannot write the fleet inventory at {location}: {reason}")]
    Write { location: String, reason: String },
}
