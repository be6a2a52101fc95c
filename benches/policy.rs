//! The example policies (`examples/policy/`: GPUs per project, reserved capacity, regions,
//! preemptible GPU pools) over a generated 1,000-cluster fleet: the input built from the spec,
//! then one evaluation, as the App runs per changed spec (goal: under 50 ms an evaluation).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::policy::{Policies, input};
use fleetbot::spec::load_str;

/// 100 projects of 10 clusters each in two regions, with on-demand and reserved H200 pools,
/// preemptible GPU pools and CPU-only clusters: every example rule has work to do.
fn thousand_cluster_fleet() -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: bench-fleet\nregion: eu-north1\nproject_prefix: bench-\ndefaults:\n  cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 2, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}\n  enable_gpu_cluster: true\n  infiniband_fabric: fabric-3\nprojects:\n",
    );
    for p in 0..100 {
        let region = ["eu-north1", "us-central1"][p % 2];
        out.push_str(&format!(
            "  - name: team-{p}\n    region: {region}\n    clusters:\n"
        ));
        for c in 0..10 {
            match c % 4 {
                0 => out.push_str(&format!("      - name: train-{c}\n")),
                1 => out.push_str(&format!(
                    "      - name: reserved-{c}\n        gpu_nodes: {{count: 2, capacity_block_group: capacityblockgroup-bench}}\n"
                )),
                2 => out.push_str(&format!(
                    "      - name: spot-{c}\n        enable_gpu_cluster: false\n        gpu_nodes: {{count: 2, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb, preemptible: true}}\n"
                )),
                _ => out.push_str(&format!(
                    "      - name: cpu-{c}\n        gpu_nodes: null\n        enable_gpu_cluster: false\n"
                )),
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let spec = load_str(&thousand_cluster_fleet(), "fleets/bench.yaml").expect("valid spec");
    assert_eq!(spec.cluster_count(), 1_000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy");
    let policies = Policies::load(&dir).expect("the example policies load");
    let verdict = policies.check(&input::of_spec(&spec)).expect("they judge");
    // Every project holds more than 64 GPUs and every on-demand H200 pool is denied.
    assert!(verdict.denied(), "{}", verdict.render_text());
    c.bench_function("policy_input_1000_clusters", |b| {
        b.iter(|| black_box(input::of_spec(black_box(&spec))))
    });
    let doc = input::of_spec(&spec);
    c.bench_function("policy_check_1000_clusters", |b| {
        b.iter(|| black_box(policies.check(black_box(&doc)).expect("judges")))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
