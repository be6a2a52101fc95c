//! Per-fleet exclusive locks: a PostgreSQL session advisory lock (shared by every replica and
//! the CLI on the same database), or a process-wide lock for SQLite (one replica).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};
use sqlx::Postgres;
use sqlx::pool::PoolConnection;

use super::StoreError;

/// SQLite's locks: `(store path, fleet)`. Process-wide, so two handles on one file (a test's
/// "second replica", or a restart inside one process) see each other's locks.
fn local_locks() -> &'static Mutex<HashSet<(PathBuf, String)>> {
    static LOCKS: OnceLock<Mutex<HashSet<(PathBuf, String)>>> = OnceLock::new();
    LOCKS.get_or_init(Default::default)
}

/// The advisory-lock key of a fleet: the first 8 bytes of a SHA-256, so distinct fleets
/// collide with negligible probability and the key is stable across versions and replicas.
pub(crate) fn advisory_key(namespace: &str, name: &str) -> i64 {
    let digest = Sha256::digest(format!("fleetbot:{namespace}:{name}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

enum Held {
    Local(PathBuf),
    /// The session holding the advisory lock, and the key.
    Postgres(PoolConnection<Postgres>, i64),
}

/// An exclusive lock on one fleet, held until [`FleetLock::release`] or drop.
pub struct FleetLock {
    fleet: String,
    held: Option<Held>,
}

impl std::fmt::Debug for FleetLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetLock")
            .field("fleet", &self.fleet)
            .finish_non_exhaustive()
    }
}

impl FleetLock {
    /// Takes the process-wide SQLite lock, or `None` when held.
    pub(crate) fn try_local(path: PathBuf, fleet: &str) -> Option<FleetLock> {
        let mut locks = local_locks().lock().unwrap_or_else(|e| e.into_inner());
        if !locks.insert((path.clone(), fleet.to_string())) {
            return None;
        }
        Some(FleetLock {
            fleet: fleet.to_string(),
            held: Some(Held::Local(path)),
        })
    }

    /// Wraps a session that holds the advisory lock `key`.
    pub(crate) fn postgres(fleet: &str, conn: PoolConnection<Postgres>, key: i64) -> FleetLock {
        FleetLock {
            fleet: fleet.to_string(),
            held: Some(Held::Postgres(conn, key)),
        }
    }

    /// The locked fleet.
    pub fn fleet(&self) -> &str {
        &self.fleet
    }

    /// Releases the lock now.
    pub async fn release(mut self) -> Result<(), StoreError> {
        match self.held.take() {
            Some(Held::Local(path)) => {
                release_local(&path, &self.fleet);
                Ok(())
            }
            Some(Held::Postgres(mut conn, key)) => {
                let unlocked = sqlx::query_scalar::<_, bool>("SELECT pg_advisory_unlock($1)")
                    .bind(key)
                    .fetch_one(&mut *conn)
                    .await;
                match unlocked {
                    Ok(true) => Ok(()),
                    other => {
                        // The session's state is unknown: closing it is what surely releases
                        // the lock, instead of handing a locked session back to the pool.
                        conn.close_on_drop();
                        other.map(|_| ()).map_err(|e| StoreError::Write {
                            location: format!("fleet lock {}", self.fleet),
                            reason: e.to_string(),
                        })
                    }
                }
            }
            None => Ok(()),
        }
    }
}

fn release_local(path: &Path, fleet: &str) {
    let mut locks = local_locks().lock().unwrap_or_else(|e| e.into_inner());
    locks.remove(&(path.to_path_buf(), fleet.to_string()));
}

impl Drop for FleetLock {
    fn drop(&mut self) {
        match self.held.take() {
            Some(Held::Local(path)) => release_local(&path, &self.fleet),
            // Dropped without `release` (a panic, a cancelled job): the session is closed
            // rather than returned to the pool still holding the lock; PostgreSQL releases
            // session locks when the session ends.
            Some(Held::Postgres(mut conn, _)) => conn.close_on_drop(),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_distinct() {
        assert_eq!(advisory_key("fleet", "a"), advisory_key("fleet", "a"));
        assert_ne!(advisory_key("fleet", "a"), advisory_key("fleet", "b"));
        assert_ne!(advisory_key("fleet", "a"), advisory_key("migrate", "a"));
    }

    #[test]
    fn local_locks_exclude_and_release_on_drop() {
        let path = PathBuf::from("/nonexistent/lock-test.sqlite");
        let a = FleetLock::try_local(path.clone(), "prod").unwrap();
        assert!(FleetLock::try_local(path.clone(), "prod").is_none());
        let other = FleetLock::try_local(path.clone(), "staging").unwrap();
        drop(a);
        assert!(FleetLock::try_local(path.clone(), "prod").is_some());
        drop(other);
    }
}
