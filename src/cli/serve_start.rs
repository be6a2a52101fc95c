//! What `fleetbot serve` settles before it listens: where the dashboard is served
//! (`FLEETBOT_DASHBOARD`), and the store, reached within a bounded time.

use std::net::SocketAddr;
use std::time::Duration;

use crate::store::{PostgresStore, SqliteStore, StoreUrl};

/// The dashboard's own listener unless told otherwise: the loopback address only.
pub const DEFAULT_DASHBOARD: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 3001);

/// Where the dashboard (which has no login) is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DashboardPlace {
    /// Beside the webhook, on `FLEETBOT_LISTEN`: whoever reaches the webhook reaches it.
    Same,
    /// Not at all.
    Off,
    /// On a listener of its own (the default: `127.0.0.1:3001`, the loopback address only).
    Listen(SocketAddr),
}

impl DashboardPlace {
    /// `same`, `off`, or `ADDR:PORT`.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("same") {
            return Ok(DashboardPlace::Same);
        }
        if value.is_empty() {
            return Ok(DashboardPlace::Listen(DEFAULT_DASHBOARD));
        }
        if value.eq_ignore_ascii_case("off") {
            return Ok(DashboardPlace::Off);
        }
        value.parse().map(DashboardPlace::Listen).map_err(|_| {
            format!("FLEETBOT_DASHBOARD={value:?}: expected ADDR:PORT (e.g. 127.0.0.1:3001), off or same")
        })
    }
}

/// The store, opened. SQLite is a local file, opened once: trying again would not change
/// the answer. PostgreSQL is tried, each attempt logged, for up to `within`.
pub enum OpenStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

pub async fn open_store(url: &StoreUrl, within: Duration) -> Result<OpenStore, String> {
    match url {
        StoreUrl::Sqlite(path) => SqliteStore::open(path)
            .await
            .map(OpenStore::Sqlite)
            .map_err(|e| e.to_string()),
        StoreUrl::Postgres(url) => crate::store::reach::connect_postgres(url, within)
            .await
            .map(OpenStore::Postgres)
            .map_err(|e| format!("{e} (FLEETBOT_STORE_CONNECT_SECS)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashboard_places() {
        assert_eq!(DashboardPlace::parse("same"), Ok(DashboardPlace::Same));
        assert_eq!(DashboardPlace::parse(" OFF "), Ok(DashboardPlace::Off));
        assert_eq!(
            DashboardPlace::parse("127.0.0.1:3001"),
            Ok(DashboardPlace::Listen("127.0.0.1:3001".parse().unwrap()))
        );
        assert_eq!(
            DashboardPlace::parse("[::1]:0"),
            Ok(DashboardPlace::Listen("[::1]:0".parse().unwrap()))
        );
        let e = DashboardPlace::parse("localhost").unwrap_err();
        assert!(e.contains("FLEETBOT_DASHBOARD"), "{e}");
        assert_eq!(
            DashboardPlace::parse(""),
            Ok(DashboardPlace::Listen(DEFAULT_DASHBOARD))
        );
        // `serve`'s default: a listener of its own on the loopback address, not the webhook's.
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            serve: super::super::serve::ServeArgs,
        }
        let cli = <Cli as clap::Parser>::try_parse_from(["serve"]).unwrap();
        if std::env::var_os("FLEETBOT_DASHBOARD").is_none() {
            assert_eq!(
                DashboardPlace::parse(&cli.serve.dashboard),
                Ok(DashboardPlace::Listen(DEFAULT_DASHBOARD))
            );
        }
    }

    #[tokio::test]
    async fn an_unreachable_postgres_is_given_up_on_with_its_url_redacted() {
        // Port 1 on loopback: refused at once, every time.
        let url = StoreUrl::Postgres("postgres://fleetbot:hunter2@127.0.0.1:1/fleetbot".into());
        let Err(e) = open_store(&url, Duration::from_secs(1)).await else {
            panic!("nothing listens on port 1");
        };
        assert!(e.contains("fleetbot:***@127.0.0.1:1"), "{e}");
        assert!(e.contains("attempts") && e.contains("last error"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}
