//! The store backends as the tests see them: a fresh, empty store of each kind, and more
//! handles on it (a second replica, or the same process after a restart).
#![allow(dead_code)]

use fleetbot::store::{
    DeployStore, InventoryStore, JobQueue, OverviewStore, PostgresStore, SqliteStore,
};

/// A backend under test: a fresh, empty store, and more handles on it (a second replica, or
/// the same process after a restart).
pub trait Backend: Sized {
    type Store: InventoryStore + JobQueue + DeployStore + OverviewStore + Clone;
    async fn fresh() -> Self;
    async fn open(&self) -> Self::Store;
    async fn migrations(store: &Self::Store) -> Vec<i64>;
    async fn close(store: &Self::Store);
    /// Runs SQL straight on the backend's database, as an older fleetbot left it.
    async fn execute(&self, statements: &[String]);
    /// `bytes` as this engine's SQL literal for a byte string.
    fn bytes_literal(bytes: &[u8]) -> String;
}

/// Runs `statements` on one connection of its own, closed after.
async fn run_sql<C>(url: &str, statements: &[String])
where
    C: sqlx::Connection,
    for<'c> &'c mut C: sqlx::Executor<'c, Database = C::Database>,
{
    let mut conn = C::connect(url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(statements.join(";\n")))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub struct Sqlite {
    pub dir: tempfile::TempDir,
}

impl Backend for Sqlite {
    type Store = SqliteStore;
    async fn fresh() -> Self {
        Sqlite {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    async fn open(&self) -> SqliteStore {
        SqliteStore::open(&self.dir.path().join("store.sqlite"))
            .await
            .unwrap()
    }
    async fn migrations(store: &SqliteStore) -> Vec<i64> {
        store.applied_migrations().await.unwrap()
    }
    async fn close(store: &SqliteStore) {
        store.close().await
    }
    async fn execute(&self, statements: &[String]) {
        let url = format!(
            "sqlite://{}?mode=rwc",
            self.dir.path().join("store.sqlite").display()
        );
        run_sql::<sqlx::SqliteConnection>(&url, statements).await;
    }
    fn bytes_literal(bytes: &[u8]) -> String {
        format!("X'{}'", hex(bytes))
    }
}

pub struct Postgres {
    pub url: String,
}

impl Backend for Postgres {
    type Store = PostgresStore;
    async fn fresh() -> Self {
        Postgres {
            url: crate::pg::fresh_database().await,
        }
    }
    async fn open(&self) -> PostgresStore {
        PostgresStore::connect_with(&self.url, 6).await.unwrap()
    }
    async fn migrations(store: &PostgresStore) -> Vec<i64> {
        store.applied_migrations().await.unwrap()
    }
    async fn close(store: &PostgresStore) {
        store.close().await
    }
    async fn execute(&self, statements: &[String]) {
        run_sql::<sqlx::PgConnection>(&self.url, statements).await;
    }
    fn bytes_literal(bytes: &[u8]) -> String {
        format!("'\\x{}'::bytea", hex(bytes))
    }
}

/// An inventory that watches what is read through it: it counts the single-target reads
/// (`InventoryStore::target`, what a deploy reads per target, as opposed to the one read of the
/// whole fleet its plan makes), and its reads fail while `reads_fail` is set (a store that
/// cannot be read).
#[derive(Clone)]
pub struct WatchedStore<S> {
    pub inner: S,
    pub target_reads: Arc<AtomicUsize>,
    pub reads_fail: Arc<AtomicBool>,
}

impl<S: InventoryStore> WatchedStore<S> {
    pub fn new(inner: S) -> Self {
        WatchedStore {
            inner,
            target_reads: Default::default(),
            reads_fail: Default::default(),
        }
    }

    /// The single-target reads since the last call.
    pub fn take(&self) -> usize {
        self.target_reads.swap(0, Ordering::SeqCst)
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.reads_fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unreadable {
                location: self.inner.location(),
                reason: "the test made it unreadable".into(),
            });
        }
        Ok(())
    }
}

use fleetbot::store::{ProjectRecord, StoreError, TargetRecord};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[async_trait::async_trait]
impl<S: InventoryStore> InventoryStore for WatchedStore<S> {
    fn location(&self) -> String {
        self.inner.location()
    }
    async fn targets(&self, fleet: &str) -> Result<Vec<TargetRecord>, StoreError> {
        self.check()?;
        self.inner.targets(fleet).await
    }
    async fn target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster: &str,
    ) -> Result<Option<TargetRecord>, StoreError> {
        self.target_reads.fetch_add(1, Ordering::SeqCst);
        self.check()?;
        self.inner.target(fleet, project_key, cluster).await
    }
    async fn upsert_target(&self, record: &TargetRecord) -> Result<(), StoreError> {
        self.inner.upsert_target(record).await
    }
    async fn remove_target(
        &self,
        fleet: &str,
        project: &str,
        cluster: &str,
    ) -> Result<(), StoreError> {
        self.inner.remove_target(fleet, project, cluster).await
    }
    async fn projects(&self, fleet: &str) -> Result<Vec<ProjectRecord>, StoreError> {
        self.check()?;
        self.inner.projects(fleet).await
    }
    async fn upsert_project(&self, record: &ProjectRecord) -> Result<(), StoreError> {
        self.inner.upsert_project(record).await
    }
    async fn remove_project(&self, fleet: &str, project_key: &str) -> Result<(), StoreError> {
        self.inner.remove_project(fleet, project_key).await
    }
    async fn generation(
        &self,
        fleet: &str,
        project: &str,
        cluster: &str,
    ) -> Result<i64, StoreError> {
        self.check()?;
        self.inner.generation(fleet, project, cluster).await
    }
    async fn bump_generation(
        &self,
        fleet: &str,
        project: &str,
        cluster: &str,
    ) -> Result<(), StoreError> {
        self.inner.bump_generation(fleet, project, cluster).await
    }
}
