//! Reaching PostgreSQL at start-up: each attempt is logged (the URL with its password
//! redacted), attempts go on with a growing pause for a bounded time, and giving up names the
//! store and the last error, instead of a pool's silent wait and a bare "timed out".

use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::time::Instant;

use super::url::redact_url;
use super::{PostgresStore, StoreError};

/// The pause after the first failed attempt; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(500);
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// The least time an attempt is given, even when the deadline is nearer.
const MIN_ATTEMPT: Duration = Duration::from_secs(1);

/// Opens (and migrates) the PostgreSQL store at `url`, trying for up to `within`. A malformed
/// URL is not tried again.
pub async fn connect_postgres(url: &str, within: Duration) -> Result<PostgresStore, StoreError> {
    let location = redact_url(url);
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| StoreError::Config(format!("{location}: {e}")))?
        .application_name("fleetbot");
    let deadline = Instant::now() + within;
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        tracing::info!(store = %location, attempt = attempts, "connecting to the store");
        let left = deadline.saturating_duration_since(Instant::now());
        let reason = match tokio::time::timeout(left.max(MIN_ATTEMPT), attempt(url, &options)).await
        {
            Ok(Ok(store)) => return Ok(store),
            Ok(Err(StoreError::Config(e))) => return Err(StoreError::Config(e)),
            Ok(Err(e)) => reason(e),
            Err(_) => "no answer in time".to_string(),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(StoreError::Unreachable {
                location,
                attempts,
                secs: within.as_secs(),
                reason,
            });
        }
        tracing::warn!(
            store = %location,
            attempt = attempts,
            "the store cannot be reached; trying again in {} ms: {reason}",
            pause.min(left).as_millis()
        );
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// One attempt. A single connection comes first: a pool retries a refused connection
/// silently until its own timeout and then reports only that it timed out.
async fn attempt(url: &str, options: &PgConnectOptions) -> Result<PostgresStore, StoreError> {
    let location = redact_url(url);
    let conn = PgConnection::connect_with(options)
        .await
        .map_err(|e| StoreError::Unreadable {
            location,
            reason: e.to_string(),
        })?;
    let _ = conn.close().await;
    PostgresStore::connect(url).await
}

/// What an attempt's error says, without repeating the location.
fn reason(e: StoreError) -> String {
    match e {
        StoreError::Unreadable { reason, .. }
        | StoreError::Write { reason, .. }
        | StoreError::Queue { reason, .. }
        | StoreError::Unreachable { reason, .. } => reason,
        StoreError::Config(reason) => reason,
    }
}
