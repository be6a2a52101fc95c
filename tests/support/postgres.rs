//! A real PostgreSQL for tests: `FLEETBOT_TEST_POSTGRES_URL` names a server (started by
//! `scripts/with-postgres.sh`, which `scripts/test.sh` runs around the suite), and each test
//! gets a database of its own on it.
//!
//! Without the variable the tests fail, never skip: in CI (`CI=true`) that is a broken setup,
//! and locally the message says how to run them.
#![allow(dead_code)]

use sqlx::Connection;

pub const URL_VAR: &str = "FLEETBOT_TEST_POSTGRES_URL";

/// The server's URL, or a failure that says how to get one.
pub fn server_url() -> String {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            if ci {
                panic!(
                    "{URL_VAR} is not set and CI=true: the PostgreSQL tests never skip in CI. \
                     scripts/test.sh starts a throwaway PostgreSQL with scripts/with-postgres.sh \
                     and sets it; check that step."
                );
            }
            panic!(
                "{URL_VAR} is not set. These tests run against a real PostgreSQL. Start a \
                 throwaway one around them (initdb + pg_ctl in a temporary directory, stopped \
                 afterwards) with:\n\n    scripts/with-postgres.sh cargo test --test \
                 store_conformance --test github_durable\n\nor run the whole suite with \
                 scripts/test.sh, which does the same."
            );
        }
    }
}

/// `url` pointing at database `name` (the path replaced, the query kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = head.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = head[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(head.len());
    format!("{}/{name}{query}", &head[..authority_end])
}

/// A new, empty database on the test server; its URL.
pub async fn fresh_database() -> String {
    let server = server_url();
    let name = format!("fleetbot_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&server)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL at {server}: {e}"));
    // The name is made above from a UUID: nothing outside the test reaches this SQL.
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    let _ = conn.close().await;
    with_database(&server, &name)
}

#[test]
fn database_urls() {
    assert_eq!(
        with_database("postgres://postgres@localhost/postgres?host=/tmp/x", "t1"),
        "postgres://postgres@localhost/t1?host=/tmp/x"
    );
    assert_eq!(
        with_database("postgres://u:p@h:5432", "t2"),
        "postgres://u:p@h:5432/t2"
    );
}
