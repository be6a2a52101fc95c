//! The library's promise over any store: a `Session` whose inventory is PostgreSQL (as a
//! server keeps it) deploys, reports and destroys a fleet exactly as the CLI's SQLite one does,
//! and what it deployed is recorded there, not in the session's own SQLite file.

use fleetbot::store::{InventoryStore, PostgresStore};
use fleetbot::{Fleet, Options, Session, TargetStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_postgres_deploys_reports_and_destroys() {
    let dir = tempfile::tempdir().unwrap();
    let url = crate::pg::fresh_database().await;
    let postgres = PostgresStore::connect_with(&url, 4).await.unwrap();
    let session = Session::simulator(dir.path())
        .await
        .unwrap()
        .with_inventory(postgres.clone());
    let fleet = Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml").unwrap();

    let deployed = fleet.deploy(&session, &Options::default()).await.unwrap();
    assert_eq!((deployed.deployed, deployed.failed), (1, 0));
    let records = postgres.targets("docs").await.unwrap();
    assert_eq!(records.len(), 1, "the deploy is recorded in PostgreSQL");
    let sqlite = fleetbot::store::SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    assert!(
        sqlite.targets("docs").await.unwrap().is_empty(),
        "and not in the session's own SQLite inventory"
    );
    assert!(fleet.status(&session).await.unwrap().healthy());
    let again = fleet.deploy(&session, &Options::default()).await.unwrap();
    assert!(!again.changed, "a second deploy reads the same records");

    let destroyed = fleet.destroy(&session, &Options::default()).await.unwrap();
    assert_eq!(destroyed.failed, 0);
    assert_eq!(destroyed.clusters[0].status, TargetStatus::Destroyed);
    postgres.close().await;
}
