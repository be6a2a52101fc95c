//! Demand and budget for a generated 1,000-cluster fleet across two regions, with STRICT
//! reservations, preemptible and CPU-only clusters, new projects and buckets (design target for
//! plan plus budget: under 200 ms).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::quota::allowances::{AllowanceRecord, AllowanceStatus, StatusField};
use fleetbot::quota::render::json_report;
use fleetbot::quota::wire::Wire;
use fleetbot::quota::{
    AllowanceDocument, CapacityBlockDocument, CapacityBlockGroup, InMemoryEvidence, ProvenState,
    ScopeOptions, fleet_demand, run_preflight,
};
use fleetbot::spec::load_str;

const TENANT: &str = "tenant-example";
const REGIONS: [&str; 2] = ["eu-north1", "us-central1"];

/// 100 projects with 10 clusters each, alternating between two regions.
fn thousand_cluster_fleet() -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: bench-fleet\nregion: eu-north1\nproject_prefix: bench-\ndefaults:\n  cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 2, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}\n  enable_gpu_cluster: true\n  infiniband_fabric: fabric-3\n  enable_filestore: true\n  filestore_disk_size_gibibytes: 2048\nprojects:\n",
    );
    for p in 0..100 {
        let region = REGIONS[p % 2];
        out.push_str(&format!(
            "  - name: team-{p}\n    region: {region}\n    object_storage: {{storage_class: enhanced, size_gibibytes: 1024}}\n    clusters:\n"
        ));
        for c in 0..10 {
            match c % 4 {
                0 => out.push_str(&format!("      - name: train-{c}\n")),
                1 => out.push_str(&format!(
                    "      - name: reserved-{c}\n        gpu_nodes: {{count: {}, capacity_block_group: capacityblockgroup-bench-{region}}}\n",
                    c + 1
                )),
                2 => out.push_str(&format!(
                    "      - name: spot-{c}\n        enable_gpu_cluster: false\n        gpu_nodes: {{count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb, preemptible: true}}\n"
                )),
                _ => out.push_str(&format!(
                    "      - name: cpu-{c}\n        gpu_nodes: null\n        enable_gpu_cluster: false\n        cpu_nodes: {{count: 4, preset: 32vcpu-128gb}}\n"
                )),
            }
        }
    }
    out
}

/// A generous tenant catalog for every needed quota, plus 2,000 records of other regions.
fn evidence(needed: impl Iterator<Item = (String, String)>) -> InMemoryEvidence {
    let record = |name: &str, region: &str| AllowanceRecord {
        name: name.to_string(),
        parent_id: TENANT.to_string(),
        container_id: String::new(),
        region: region.to_string(),
        limit: Wire::Value(1 << 60),
        status: StatusField::Present(AllowanceStatus {
            state: "STATE_ACTIVE".into(),
            unit: if name.contains(".size.") {
                "byte"
            } else {
                "count"
            }
            .into(),
            usage: Wire::Value(1 << 20),
            usage_percentage: Wire::Absent,
            usage_state: "USAGE_STATE_USED".into(),
        }),
    };
    let mut items: Vec<AllowanceRecord> = needed.map(|(r, n)| record(&n, &r)).collect();
    for i in 0..2000 {
        items.push(record(&format!("other.quota.{i}.count"), "me-west1"));
    }
    let blocks = REGIONS
        .iter()
        .map(|region| CapacityBlockGroup {
            id: format!("capacityblockgroup-bench-{region}"),
            parent_id: TENANT.into(),
            region: region.to_string(),
            state: "STATE_ACTIVE".into(),
            platform: "gpu-h200-sxm".into(),
            fabric: "fabric-3".into(),
            current_limit: Wire::Value(100_000),
            usage: Wire::Absent,
            usage_percentage: Wire::Value("0.17".into()),
            usage_state: "USAGE_STATE_USED".into(),
        })
        .collect();
    InMemoryEvidence::new(
        AllowanceDocument {
            items,
            next_page_token: String::new(),
        },
        CapacityBlockDocument {
            items: blocks,
            next_page_token: String::new(),
        },
    )
}

fn bench(c: &mut Criterion) {
    let text = thousand_cluster_fleet();
    let spec = load_str(&text, "bench.yaml").expect("valid");
    assert_eq!(spec.cluster_count(), 1000);
    let options = ScopeOptions::default();
    let proven = ProvenState::default();
    let demand = fleet_demand(&spec, &options, &proven).expect("regions resolve");
    let needed: Vec<(String, String)> = demand
        .regions
        .iter()
        .flat_map(|r| r.quotas.names().map(|n| (r.region.clone(), n.to_string())))
        .collect();
    let evidence = evidence(needed.into_iter());
    let report = run_preflight(demand, TENANT, &evidence, &mut |_| {});
    assert!(report.fits(), "{:?}", report.message());
    assert_eq!(report.reservation_checks().count(), 2);

    c.bench_function("quota_demand_1000_clusters", |b| {
        b.iter(|| fleet_demand(black_box(&spec), &options, &proven).expect("demand"))
    });
    c.bench_function("quota_demand_and_budget_1000_clusters", |b| {
        b.iter(|| {
            let demand = fleet_demand(black_box(&spec), &options, &proven).expect("demand");
            run_preflight(demand, TENANT, &evidence, &mut |line| {
                black_box(line);
            })
        })
    });
    c.bench_function("quota_budget_json_1000_clusters", |b| {
        b.iter(|| serde_json::to_string_pretty(&json_report(black_box(&report))).expect("json"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
