//! Parse, validate and plan a generated 1,000-cluster fleet (target: under 50 ms).

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::engine::{PlanOptions, plan};
use fleetbot::spec::load_str;

/// 100 projects with 10 clusters each, a mix of inherited and overridden pools.
pub fn thousand_cluster_fleet() -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: bench-fleet\nregion: eu-north1\nproject_prefix: bench-\ndefaults:\n  cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n  gpu_nodes: {count: 2, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb}\n  enable_gpu_cluster: true\n  infiniband_fabric: fabric-3\n  enable_filestore: true\n  filestore_disk_size_gibibytes: 2048\nprojects:\n",
    );
    for p in 0..100 {
        out.push_str(&format!(
            "  - name: team-{p}\n    object_storage: {{storage_class: enhanced, size_gibibytes: 1024}}\n    clusters:\n"
        ));
        for c in 0..10 {
            match c % 3 {
                0 => out.push_str(&format!("      - name: train-{c}\n")),
                1 => out.push_str(&format!("      - name: infer-{c}\n        gpu_nodes: {{count: {}}}\n", c + 1)),
                _ => out.push_str(&format!(
                    "      - name: cpu-{c}\n        gpu_nodes: null\n        enable_gpu_cluster: false\n        cpu_nodes: {{count: 4, preset: 32vcpu-128gb}}\n"
                )),
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = thousand_cluster_fleet();
    let spec = load_str(&text, "bench.yaml").expect("valid");
    assert_eq!(spec.cluster_count(), 1000);
    c.bench_function("parse_validate_plan_1000_clusters", |b| {
        b.iter(|| {
            let spec = load_str(std::hint::black_box(&text), "bench.yaml").expect("valid");
            plan(&spec, &PlanOptions::default())
        })
    });
    c.bench_function("plan_json_1000_clusters", |b| {
        let p = plan(&spec, &PlanOptions::default());
        b.iter(|| serde_json::to_string_pretty(std::hint::black_box(&p)).expect("serializes"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
