//! Schema migrations: numbered SQL files embedded in the binary, applied once each, in order,
//! each in its own transaction.

/// `(version, sql)`, in order. New migrations are appended, never edited.
pub const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("migrations/0001_inventory.sql"))];

/// Splits a migration into statements (the files hold no semicolons inside literals).
pub fn statements(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(';')
        .map(|s| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|s| !s.trim().is_empty())
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
    }
}
