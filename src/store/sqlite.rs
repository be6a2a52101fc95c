//! The SQLite store: the embedded default, one file, WAL journal, every write a transaction.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
};
use sqlx::{Row, Sqlite, Transaction};

use super::StoreError;
use super::inventory::{InventoryStore, ProjectRecord, TargetRecord};
use super::migrate::{MIGRATIONS, statements};

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    path: PathBuf,
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unreadable {
        location: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Write {
        location: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the store at `path`.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| write_error(path, e))?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(|e| unreadable(path, e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| unreadable(path, e))?;
        let store = SqliteStore {
            pool,
            path: path.to_path_buf(),
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        sqlx::query("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)")
            .execute(&self.pool)
            .await
            .map_err(|e| unreadable(&self.path, e))?;
        for (version, sql) in MIGRATIONS {
            let applied: Option<i64> =
                sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = ?")
                    .bind(version)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| unreadable(&self.path, e))?;
            if applied.is_some() {
                continue;
            }
            let mut tx = self.begin().await?;
            for statement in statements(sql) {
                // Embedded migration text, never user input.
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| write_error(&self.path, e))?;
            }
            sqlx::query("INSERT INTO schema_migrations (version) VALUES (?)")
                .bind(version)
                .execute(&mut *tx)
                .await
                .map_err(|e| write_error(&self.path, e))?;
            tx.commit().await.map_err(|e| write_error(&self.path, e))?;
        }
        Ok(())
    }

    async fn begin(&self) -> Result<Transaction<'_, Sqlite>, StoreError> {
        self.pool
            .begin()
            .await
            .map_err(|e| write_error(&self.path, e))
    }
}

fn target_from(row: &SqliteRow) -> Result<TargetRecord, sqlx::Error> {
    let ids: String = row.try_get("node_group_ids")?;
    let node_group_ids =
        serde_json::from_str(&ids).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(TargetRecord {
        fleet: row.try_get("fleet")?,
        project_key: row.try_get("project_key")?,
        cluster_name: row.try_get("cluster_name")?,
        backend: row.try_get("backend")?,
        status: row.try_get("status")?,
        tenant_id: row.try_get("tenant_id")?,
        region: row.try_get("region")?,
        profile: row.try_get("profile")?,
        project_id: row.try_get("project_id")?,
        cluster_id: row.try_get("cluster_id")?,
        node_group_ids,
        filesystem_id: row.try_get("filesystem_id")?,
        filesystem_created: row.try_get::<i64, _>("filesystem_created")? != 0,
        gpu_cluster_id: row.try_get("gpu_cluster_id")?,
        subnet_id: row.try_get("subnet_id")?,
        applied_digest: row.try_get("applied_digest")?,
        error: row.try_get("error")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn project_from(row: &SqliteRow) -> Result<ProjectRecord, sqlx::Error> {
    Ok(ProjectRecord {
        fleet: row.try_get("fleet")?,
        project_key: row.try_get("project_key")?,
        project_id: row.try_get("project_id")?,
        project_created: row.try_get::<i64, _>("project_created")? != 0,
        created_network_id: row.try_get("created_network_id")?,
        created_subnet_id: row.try_get("created_subnet_id")?,
        subnet_id: row.try_get("subnet_id")?,
        bucket_id: row.try_get("bucket_id")?,
        bucket_name: row.try_get("bucket_name")?,
        updated_at: row.try_get("updated_at")?,
    })
}

impl InventoryStore for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    async fn targets(&self, fleet: &str) -> Result<Vec<TargetRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM inventory_targets WHERE fleet = ? ORDER BY project_key, cluster_name",
        )
        .bind(fleet)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| unreadable(&self.path, e))?;
        rows.iter()
            .map(target_from)
            .collect::<Result<_, _>>()
            .map_err(|e| unreadable(&self.path, e))
    }

    async fn upsert_target(&self, r: &TargetRecord) -> Result<(), StoreError> {
        let ids =
            serde_json::to_string(&r.node_group_ids).map_err(|e| write_error(&self.path, e))?;
        sqlx::query(
            "INSERT INTO inventory_targets (fleet, project_key, cluster_name, backend, status, tenant_id, region, profile, \
             project_id, cluster_id, node_group_ids, filesystem_id, filesystem_created, gpu_cluster_id, subnet_id, \
             applied_digest, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (fleet, project_key, cluster_name) DO UPDATE SET backend = excluded.backend, \
             status = excluded.status, tenant_id = excluded.tenant_id, region = excluded.region, \
             profile = excluded.profile, project_id = excluded.project_id, cluster_id = excluded.cluster_id, \
             node_group_ids = excluded.node_group_ids, filesystem_id = excluded.filesystem_id, \
             filesystem_created = excluded.filesystem_created, gpu_cluster_id = excluded.gpu_cluster_id, \
             subnet_id = excluded.subnet_id, applied_digest = excluded.applied_digest, error = excluded.error, \
             updated_at = excluded.updated_at",
        )
        .bind(&r.fleet)
        .bind(&r.project_key)
        .bind(&r.cluster_name)
        .bind(&r.backend)
        .bind(&r.status)
        .bind(&r.tenant_id)
        .bind(&r.region)
        .bind(&r.profile)
        .bind(&r.project_id)
        .bind(&r.cluster_id)
        .bind(ids)
        .bind(&r.filesystem_id)
        .bind(i64::from(r.filesystem_created))
        .bind(&r.gpu_cluster_id)
        .bind(&r.subnet_id)
        .bind(&r.applied_digest)
        .bind(&r.error)
        .bind(r.updated_at)
        .execute(&self.pool)
        .await
        .map_err(|e| write_error(&self.path, e))?;
        Ok(())
    }

    async fn remove_target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM inventory_targets WHERE fleet = ? AND project_key = ? AND cluster_name = ?")
            .bind(fleet)
            .bind(project_key)
            .bind(cluster_name)
            .execute(&self.pool)
            .await
            .map_err(|e| write_error(&self.path, e))?;
        Ok(())
    }

    async fn projects(&self, fleet: &str) -> Result<Vec<ProjectRecord>, StoreError> {
        let rows =
            sqlx::query("SELECT * FROM inventory_projects WHERE fleet = ? ORDER BY project_key")
                .bind(fleet)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| unreadable(&self.path, e))?;
        rows.iter()
            .map(project_from)
            .collect::<Result<_, _>>()
            .map_err(|e| unreadable(&self.path, e))
    }

    async fn upsert_project(&self, r: &ProjectRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO inventory_projects (fleet, project_key, project_id, project_created, created_network_id, \
             created_subnet_id, subnet_id, bucket_id, bucket_name, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (fleet, project_key) DO UPDATE SET project_id = excluded.project_id, \
             project_created = excluded.project_created, created_network_id = excluded.created_network_id, \
             created_subnet_id = excluded.created_subnet_id, subnet_id = excluded.subnet_id, \
             bucket_id = excluded.bucket_id, bucket_name = excluded.bucket_name, updated_at = excluded.updated_at",
        )
        .bind(&r.fleet)
        .bind(&r.project_key)
        .bind(&r.project_id)
        .bind(i64::from(r.project_created))
        .bind(&r.created_network_id)
        .bind(&r.created_subnet_id)
        .bind(&r.subnet_id)
        .bind(&r.bucket_id)
        .bind(&r.bucket_name)
        .bind(r.updated_at)
        .execute(&self.pool)
        .await
        .map_err(|e| write_error(&self.path, e))?;
        Ok(())
    }

    async fn remove_project(&self, fleet: &str, project_key: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM inventory_projects WHERE fleet = ? AND project_key = ?")
            .bind(fleet)
            .bind(project_key)
            .execute(&self.pool)
            .await
            .map_err(|e| write_error(&self.path, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(cluster: &str) -> TargetRecord {
        TargetRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            cluster_name: cluster.into(),
            backend: "mk8s".into(),
            status: "deployed".into(),
            node_group_ids: vec!["g1".into(), "g2".into()],
            filesystem_created: true,
            updated_at: 7,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn upsert_read_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("inv.sqlite"))
            .await
            .unwrap();
        store.upsert_target(&target("c1")).await.unwrap();
        store.upsert_target(&target("c2")).await.unwrap();
        let mut changed = target("c1");
        changed.status = "destroy-incomplete".into();
        store.upsert_target(&changed).await.unwrap();
        let all = store.targets("f").await.unwrap();
        assert_eq!(all, vec![changed, target("c2")]);
        assert!(store.targets("other").await.unwrap().is_empty());
        store.remove_target("f", "a", "c1").await.unwrap();
        assert_eq!(store.targets("f").await.unwrap().len(), 1);

        let project = ProjectRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            project_id: "p".into(),
            project_created: true,
            ..Default::default()
        };
        store.upsert_project(&project).await.unwrap();
        assert_eq!(store.projects("f").await.unwrap(), vec![project]);
        store.remove_project("f", "a").await.unwrap();
        assert!(store.projects("f").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn reopening_keeps_data_and_a_corrupt_file_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inv.sqlite");
        {
            let store = SqliteStore::open(&path).await.unwrap();
            store.upsert_target(&target("c1")).await.unwrap();
        }
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(store.targets("f").await.unwrap().len(), 1);
        drop(store);

        let corrupt = dir.path().join("corrupt.sqlite");
        std::fs::write(
            &corrupt,
            b"this is not a database, and never was one at all....",
        )
        .unwrap();
        let err = SqliteStore::open(&corrupt).await.err().unwrap();
        assert!(
            err.to_string()
                .contains("unreadable; refusing lifecycle action"),
            "{err}"
        );
    }
}
