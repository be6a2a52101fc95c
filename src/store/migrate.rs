//! Schema migrations: numbered SQL files embedded in the binary, applied once each, in order,
//! each in its own transaction.

/// `(version, sql)`, in order. New migrations are appended, never edited.
/// The same text runs on SQLite and PostgreSQL, so it keeps to what both accept (`TEXT`,
/// `BIGINT`, `BYTEA`, no auto-increment, no engine-specific functions).
pub const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/0001_inventory.sql")),
    (2, include_str!("migrations/0002_queue.sql")),
    (3, include_str!("migrations/0003_queue_claim_indexes.sql")),
    (4, include_str!("migrations/0004_lifecycles.sql")),
    (5, include_str!("migrations/0005_deploys.sql")),
    (6, include_str!("migrations/0006_queue_heads.sql")),
    (7, include_str!("migrations/0007_addons.sql")),
    (8, include_str!("migrations/0008_pr_heads.sql")),
    (9, include_str!("migrations/0009_job_payloads.sql")),
    (10, include_str!("migrations/0010_finished_jobs_index.sql")),
];

/// The PostgreSQL advisory-lock key that serializes migrations when several replicas start at
/// once (`fleetbot:migrate` hashed like a fleet lock key).
pub const MIGRATION_LOCK_NAME: &str = "schema_migrations";

/// Splits a migration into statements: whole-line `--` comments are dropped first (so a
/// comment may hold a semicolon), then the text is split at `;` (the files hold no semicolons
/// inside literals).
pub fn statements(sql: &str) -> impl Iterator<Item = String> + '_ {
    let code = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .into_iter()
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_numbered_in_order_and_split_cleanly() {
        let versions: Vec<i64> = super::MIGRATIONS.iter().map(|(v, _)| *v).collect();
        let mut sorted = versions.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(versions, sorted);
        assert_eq!(super::statements(super::MIGRATIONS[0].1).count(), 2);
        assert_eq!(super::statements(super::MIGRATIONS[1].1).count(), 8);
        assert_eq!(super::statements(super::MIGRATIONS[2].1).count(), 4);
        assert_eq!(super::statements(super::MIGRATIONS[3].1).count(), 1);
        assert_eq!(super::statements(super::MIGRATIONS[4].1).count(), 7);
        assert_eq!(super::statements(super::MIGRATIONS[5].1).count(), 8);
        assert_eq!(super::statements(super::MIGRATIONS[8].1).count(), 8);
        assert_eq!(super::statements(super::MIGRATIONS[9].1).count(), 2);
    }

    #[test]
    fn migrations_stay_portable() {
        // Each of these works on one engine only; the migrations run unchanged on both.
        for (version, sql) in super::MIGRATIONS {
            let upper = super::statements(sql)
                .collect::<Vec<_>>()
                .join(";")
                .to_ascii_uppercase();
            for token in [
                "AUTOINCREMENT",
                "SERIAL",
                "BLOB",
                "GENERATED",
                "PRAGMA",
                "NOW()",
                "DATETIME",
                "JSONB",
            ] {
                assert!(
                    !upper.contains(token),
                    "migration {version} uses {token}, which is not portable"
                );
            }
        }
    }
}
