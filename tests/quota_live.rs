//! Preflight with live evidence: the tenant's allowances and capacity blocks read from the
//! simulator through the real gRPC client.

use crate::support;

use fleetbot::engine::ops::{LifecycleOptions, prepare};
use fleetbot::engine::preflight::live_preflight;
use fleetbot::quota::scope::Selection;
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;
use support::{client, simulator};

const SPEC: &str = "apiVersion: npa.fleet/v0.0.1\nname: q\nregion: us-central1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}\nprojects:\n  - name: a\n";

fn world(gpu_limit: &str, extra: &str) -> String {
    include_str!("../fixtures/sim/default.yaml").replace(
        "    compute.instance.gpu.rtx6000: 512\n",
        &format!("    compute.instance.gpu.rtx6000: {gpu_limit}\n"),
    ) + extra
}

async fn check(
    world: &str,
) -> Result<fleetbot::quota::PreflightReport, fleetbot::engine::preflight::PreflightError> {
    let sim = simulator(world).await;
    let cloud = client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("i.sqlite"))
        .await
        .unwrap();
    let spec = load_str(SPEC, "q.yaml").unwrap();
    let tenant = sim.tenant_id();
    let prepared = prepare(&cloud, &store, &spec, &tenant, &LifecycleOptions::default())
        .await
        .unwrap();
    let selection = Selection {
        projects: vec![],
        clusters: vec![],
    };
    let mut lines = Vec::new();
    let report = live_preflight(
        &cloud,
        &spec,
        &tenant,
        selection,
        "",
        &prepared.plan,
        &mut |l: &str| lines.push(l.to_string()),
    )
    .await;
    if report.is_ok() {
        assert!(
            lines.iter().any(|l| l.starts_with("quota ")),
            "progress lines are produced: {lines:?}"
        );
    }
    report
}

#[tokio::test]
async fn a_tenant_with_room_passes() {
    let report = check(&world("512", "")).await.unwrap();
    assert!(report.fits(), "{:?}", report.message());
}

#[tokio::test]
async fn a_tenant_one_gpu_short_fails_with_the_exact_line() {
    let report = check(&world("{limit: 8, usage: 7}", "")).await.unwrap();
    assert!(!report.fits());
    let message = report.message().unwrap();
    assert!(
        message.contains("compute.instance.gpu.rtx6000 [us-central1]: needs 2 count, 1 available from tenant limit 8; shortfall 1"),
        "{message}"
    );
    assert!(message.starts_with("tenant "), "{message}");
}

#[tokio::test]
async fn an_unreadable_allowance_list_fails_closed() {
    let faults =
        "faults:\n  - {method: QuotaAllowanceService/List, code: unavailable, error_rate: 1.0}\n";
    let err = check(&world("512", faults)).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("could not read tenant quota allowances"),
        "{err}"
    );
    // Where it came from travels with it: a pull request is told the cloud's code, never the
    // cloud's words (they were once carried as the engine's own).
    let engine = fleetbot::engine::ops::EngineError::from(err);
    assert_eq!(
        engine.source,
        fleetbot::engine::ops::ErrorSource::Cloud(tonic::Code::Unavailable)
    );
    let public = fleetbot::fleet::live::public_error(&engine);
    assert_eq!(public.kind, fleetbot::fleet::live::LiveErrorKind::Cloud);
    assert!(!public.message.contains("allowances"), "{}", public.message);
}

/// A deploy the engine stops names which of its rules refused (as a variant, not only in
/// words), and a cloud read it needed and could not make stays the cloud's.
#[tokio::test]
async fn a_refused_deploy_says_which_rule_refused_and_a_failed_read_stays_the_cloud_s() {
    use fleetbot::engine::ops::{ErrorSource, Refusal};
    let run = |world: String| async move {
        let sim = simulator(&world).await;
        let cloud = client(&sim);
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("i.sqlite"))
            .await
            .unwrap();
        let spec = load_str(SPEC, "q.yaml").unwrap();
        support::deploy(
            &cloud,
            &store,
            &spec,
            &sim.tenant_id(),
            &LifecycleOptions::default(),
            fleetbot::fleet::quiet(),
        )
        .await
        .unwrap_err()
    };
    let short = run(world("{limit: 8, usage: 7}", "")).await;
    assert_eq!(short.refusal(), Some(Refusal::Quota), "{short}");
    let faults =
        "faults:\n  - {method: PlatformService/List, code: unavailable, error_rate: 1.0}\n";
    let unread = run(world("512", faults)).await;
    assert_eq!(
        unread.source,
        ErrorSource::Cloud(tonic::Code::Unavailable),
        "{unread}"
    );
    assert!(unread.message.contains("platform catalogue"), "{unread}");
    let public = fleetbot::fleet::live::public_error(&unread);
    assert_eq!(public.kind, fleetbot::fleet::live::LiveErrorKind::Cloud);
    assert!(!public.message.contains("catalogue"), "{}", public.message);
}
