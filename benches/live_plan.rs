//! Live plan of a deployed 200-cluster fleet against the simulator over loopback gRPC: time per
//! plan, and the number of API calls one plan makes (printed once).

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::cloud::NebiusClient;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::Endpoints;
use fleetbot::engine::ops::{LifecycleOptions, deploy, prepare};
use fleetbot::sim::{Simulator, World};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;

fn fleet() -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: bench\nregion: eu-north1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\nprojects:\n",
    );
    for p in 0..20 {
        out.push_str(&format!("  - name: team-{p}\n    clusters:\n"));
        for c in 0..10 {
            out.push_str(&format!("      - name: c{c}\n"));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let spec = load_str(&fleet(), "bench.yaml").expect("valid");
    let dir = tempfile::tempdir().expect("tempdir");
    let (sim, client, store, tenant) = rt.block_on(async {
        let mut world = World::embedded_default();
        world.operation_latency_ms = 0;
        for region in world.quotas.values_mut() {
            region.clear();
        }
        world.static_tokens.push("bench".into());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let sim = Simulator::start(world, None, listener).await.expect("sim");
        let client = NebiusClient::new(
            Endpoints::Single {
                uri: sim.endpoint(),
            },
            Credentials::Static("bench".into()),
        );
        let store = SqliteStore::open(&dir.path().join("inv.sqlite"))
            .await
            .expect("store");
        let tenant = sim.tenant_id();
        let options = LifecycleOptions {
            concurrency: 8,
            preflight: false,
            ..LifecycleOptions::default()
        };
        let result = deploy(
            &client,
            &store,
            &spec,
            &tenant,
            &options,
            Arc::new(|_: &str| {}),
        )
        .await
        .expect("deploy");
        assert_eq!(result.deployed, 200);
        (sim, client, store, tenant)
    });
    sim.service.clear_call_log();
    rt.block_on(prepare(
        &client,
        &store,
        &spec,
        &tenant,
        &LifecycleOptions::default(),
    ))
    .expect("plan");
    eprintln!(
        "live plan of 200 clusters: {} API calls",
        sim.service.call_log().len()
    );
    let mut group = c.benchmark_group("live_plan");
    group.sample_size(10);
    group.bench_function("live_plan_200_clusters", |b| {
        b.iter(|| {
            rt.block_on(prepare(
                &client,
                &store,
                &spec,
                &tenant,
                &LifecycleOptions::default(),
            ))
            .expect("plan")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
