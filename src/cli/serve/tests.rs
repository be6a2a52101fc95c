//! `serve`'s settings: what is checked before the server starts, and what is never shown.
use super::*;
use crate::github::DEFAULT_API_URL;

#[test]
fn urls_are_logged_without_credentials() {
    assert_eq!(
        public_url("https://x-access-token:ghs_s3cret@ghe.example/api/v3?token=t0k"),
        "https://ghe.example/api/v3"
    );
    assert_eq!(
        public_url("https://ghp_s3cret@api.github.com"),
        "https://api.github.com/"
    );
    assert_eq!(public_url("not a url ghp_s3cret"), "(not a valid URL)");
}

fn args() -> ServeArgs {
    ServeArgs {
        listen: "127.0.0.1:0".parse().unwrap(),
        webhook_secret: Some("a,b".parse().unwrap()),
        app_id: Some("1".into()),
        app_private_key_path: Some(crate::github::test_key::test_key().private_path.clone()),
        github_api_url: DEFAULT_API_URL.into(),
        store: Some("postgres://user:hunter2@db/fleetbot".parse().unwrap()),
        workers: 2,
        job_isolation: "process".into(),
        job_memory_mib: 1024,
        job_timeout_secs: 3600,
        apply_timeout_secs: 21600,
        retention_days: 7,
        cloud: "none".into(),
        tenant_id: None,
        apply_lease_secs: 120,
        job_lease_secs: 300,
        listen_backlog: 1024,
        max_connections: 4096,
        header_timeout_secs: 10,
        body_timeout_secs: 30,
        max_body_readers: 256,
        max_bodies_per_peer: 8,
        trusted_proxies: String::new(),
        max_unverified_bytes: 64 << 20,
        min_body_rate: 65536,
        webhook_source_ranges: String::new(),
        dashboard: "127.0.0.1:3001".into(),
        store_connect_secs: 60,
        max_spec_files: 100,
        max_spec_bytes: 4 << 20,
        max_scanned_files: 300,
        max_scanned_bytes: 1 << 20,
        probe_image: None,
        runtime_values: None,
        reconcile_now: false,
        reconcile_tick_secs: 60,
        shutdown_grace_secs: 25,
        evidence_dir: None,
    }
}

#[test]
fn the_cloud_choice_is_checked_before_anything_starts() {
    let mut a = args();
    assert_eq!(check(&a).unwrap().cloud, None);
    a.cloud = "Simulator".into();
    assert_eq!(check(&a).unwrap().cloud, Some(CloudChoice::Simulator));
    a.cloud = "auto".into();
    assert_eq!(check(&a).unwrap().cloud, Some(CloudChoice::Auto));
    a.cloud = "aws".into();
    let err = check(&a).unwrap_err();
    assert!(err.contains("--cloud \"aws\""), "{err}");
}

#[test]
fn checks_and_redacts() {
    let a = args();
    assert!(check(&a).is_ok());
    let shown = format!("{a:?} {:?}", check(&a).unwrap());
    assert!(
        !shown.contains("hunter2") && !shown.contains("\"a,b\""),
        "{shown}"
    );
    let mut missing = args();
    missing.webhook_secret = None;
    assert!(
        check(&missing)
            .unwrap_err()
            .contains("FLEETBOT_WEBHOOK_SECRET")
    );
    let mut no_key = args();
    no_key.app_private_key_path = None;
    assert!(check(&no_key).unwrap_err().contains("both required"));
    let mut bad_store = args();
    bad_store.store = Some("mysql://x:hunter2@db".parse().unwrap());
    let err = check(&bad_store).unwrap_err();
    assert!(
        err.contains("FLEETBOT_STORE") && !err.contains("hunter2"),
        "{err}"
    );
    let mut default_store = args();
    default_store.store = None;
    assert!(matches!(
        check(&default_store).unwrap().store,
        StoreUrl::Sqlite(p) if p.ends_with("fleetbot/fleetbot.sqlite")
    ));
    // On the embedded simulator the server and the CLI share one inventory.
    let mut simulated = args();
    simulated.store = None;
    simulated.cloud = "simulator".into();
    assert_eq!(
        check(&simulated).unwrap().store,
        StoreUrl::Sqlite(crate::cli::env::credentials_options("").inventory_path(true))
    );
    let mut short = args();
    short.retention_days = 2;
    assert!(check(&short).unwrap_err().contains("at least 3"));
    let mut small = args();
    small.max_unverified_bytes = 1 << 20;
    assert!(
        check(&small)
            .unwrap_err()
            .contains("FLEETBOT_MAX_UNVERIFIED_BYTES")
    );
    let mut ranges = args();
    ranges.webhook_source_ranges = "github,10.0.0.0/8".into();
    ranges.dashboard = "127.0.0.1:3001".into();
    let c = check(&ranges).unwrap();
    assert!(c.sources.is_some_and(|s| s.github && s.ranges.len() == 1));
    assert_eq!(
        c.dashboard,
        DashboardPlace::Listen("127.0.0.1:3001".parse().unwrap())
    );
    ranges.webhook_source_ranges = "10.0.0.0/99".into();
    assert!(
        check(&ranges)
            .unwrap_err()
            .contains("FLEETBOT_WEBHOOK_SOURCE_RANGES")
    );
    let mut proxies = args();
    proxies.trusted_proxies = "10.0.0.0/8".into();
    assert!(check(&proxies).unwrap().trusted_proxies.is_some());
    proxies.trusted_proxies = "ingress".into();
    assert!(
        check(&proxies)
            .unwrap_err()
            .contains("FLEETBOT_TRUSTED_PROXIES")
    );
    let mut isolation = args();
    assert!(check(&isolation).unwrap().isolated);
    isolation.job_isolation = "None".into();
    assert!(!check(&isolation).unwrap().isolated);
    isolation.job_isolation = "threads".into();
    assert!(
        check(&isolation)
            .unwrap_err()
            .contains("FLEETBOT_JOB_ISOLATION")
    );
}
