//! Live plan of a deployed fleet against the simulator over loopback gRPC, at 200 and 1,000
//! clusters: time per plan, and the API calls one plan makes, by method (printed once each).

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::cloud::NebiusClient;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::Endpoints;
use fleetbot::engine::ops::{LifecycleOptions, prepare};
use fleetbot::fleet::apply::{Approved, plan_and_apply};
use fleetbot::sim::{Simulator, World};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;

/// `projects` projects of `clusters` CPU clusters each.
fn fleet(projects: usize, clusters: usize) -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: bench\nregion: eu-north1\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}\nprojects:\n",
    );
    for p in 0..projects {
        out.push_str(&format!("  - name: team-{p}\n    clusters:\n"));
        for c in 0..clusters {
            out.push_str(&format!("      - name: c{c}\n"));
        }
    }
    out
}

fn bench_fleet(c: &mut Criterion, projects: usize, clusters: usize) {
    let total = projects * clusters;
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let spec = load_str(&fleet(projects, clusters), "bench.yaml").expect("valid");
    let dir = tempfile::tempdir().expect("tempdir");
    let (sim, client, store, tenant) = rt.block_on(async {
        let mut world = World::embedded_default();
        world.operation_latency_ms = 0;
        world.projects.clear();
        world.capacity_block_groups.clear();
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
            concurrency: 16,
            preflight: false,
            ..LifecycleOptions::default()
        };
        let result = plan_and_apply(
            &fleetbot::Session::over(client.clone(), store.clone()),
            &spec,
            &tenant,
            &options,
            Approved::ByPerson {
                allow_destroy: false,
            },
            fleetbot::engine::ops::quiet(),
        )
        .await
        .expect("deploy");
        assert_eq!(result.deployed, total);
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
    let log = sim.service.call_log();
    let mut by_method: BTreeMap<String, usize> = BTreeMap::new();
    for call in &log {
        let method = call.rsplit('/').take(2).collect::<Vec<_>>();
        *by_method
            .entry(format!("{}/{}", method.get(1).unwrap_or(&""), method[0]))
            .or_default() += 1;
    }
    eprintln!(
        "live plan of {total} clusters in {projects} projects: {} API calls ({:.2} per cluster): {by_method:?}",
        log.len(),
        log.len() as f64 / total as f64
    );
    let mut group = c.benchmark_group("live_plan");
    group.sample_size(10);
    group.bench_function(format!("live_plan_{total}_clusters"), |b| {
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

fn bench(c: &mut Criterion) {
    bench_fleet(c, 20, 10);
    // The 1,000-cluster fleet takes a minute to deploy: only under `cargo bench`, not in the
    // test suite's smoke run of every benchmark.
    if std::env::args().any(|a| a == "--bench") {
        bench_fleet(c, 50, 20);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
