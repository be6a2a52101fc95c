//! The reference preflight's own tests, ported (fleet-engine §13 items 3, 4 and 5, and the worked
//! examples A–E of §4.9): demand arithmetic, fail-closed allowance reading, STRICT capacity
//! blocks, and the shortfall message text.

use std::collections::{BTreeMap, BTreeSet};

use fleetbot::quota::allowances::{Allowance, UsageSource};
use fleetbot::quota::json::{allowance_document, capacity_document};
use fleetbot::quota::reservations::{
    ReservationRequirement, find_reservation_shortfalls, reservation_shortfall_message,
};
use fleetbot::quota::shortfall::{DISK_GUIDANCE, GUIDANCE};
use fleetbot::quota::{
    Demand, EvidenceError, FleetDemand, InMemoryEvidence, PreflightReport, QuotaShortfall,
    RegionDemand, TargetKey, cluster_demand, find_shortfalls, parse_allowances, required_quotas,
    required_reservations, run_preflight, shortfall_message,
};
use fleetbot::spec::{ClusterSpec, NodePoolSpec, ObjectStorageSpec};
use serde_json::{Value, json};

const GIB: u128 = 1 << 30;
const TIB: u128 = 1 << 40;

fn pool(count: i64, platform: &str, preset: &str) -> Option<NodePoolSpec> {
    Some(NodePoolSpec {
        count,
        platform: platform.into(),
        preset: preset.into(),
        ..NodePoolSpec::default()
    })
}

fn cluster(cpu: Option<NodePoolSpec>, gpu: Option<NodePoolSpec>) -> ClusterSpec {
    ClusterSpec {
        name: "c".into(),
        cpu_nodes: cpu,
        gpu_nodes: gpu,
        ..ClusterSpec::default()
    }
}

fn needed(clusters: &[ClusterSpec]) -> Demand {
    required_quotas(clusters, 0, [])
}

// ------------------------------------------------------------------------------------------
// §13 item 3: demand arithmetic
// ------------------------------------------------------------------------------------------

/// Example A: nodes, vCPU, GPUs and filesystem; managed control plane not counted.
#[test]
fn example_a_counts_nodes_vcpu_gpus_and_filesystem() {
    let mut c = cluster(
        pool(2, "cpu-d3", "48vcpu-192gb"),
        pool(2, "gpu-rtx6000", "8gpu-192vcpu-1744gb"),
    );
    c.enable_gpu_cluster = Some(false);
    c.enable_filestore = true;
    c.filestore_disk_size_gibibytes = 2048;
    let n = needed(&[c]);
    assert_eq!(n.get("compute.instance.count"), 4);
    assert_eq!(n.get("compute.disk.count"), 4);
    assert_eq!(
        n.get("compute.disk.size.network-ssd"),
        (2 * 128 + 2 * 1023) * GIB
    );
    assert_eq!(n.get("compute.instance.non-gpu.vcpu"), 96);
    assert_eq!(n.get("compute.instance.gpu.rtx6000"), 16);
    assert_eq!(n.get("compute.filesystem.count"), 1);
    assert_eq!(n.get("compute.filesystem.size.network-ssd"), 2048 * GIB);
    assert_eq!(n.get("mk8s.cluster.count"), 1);
    assert_eq!(n.get("vpc.allocation.count"), 8);
    assert!(!n.contains("compute.gpucluster.count"));
    assert_eq!(n.len(), 9);
}

/// Example B: a new project adds its default topology.
#[test]
fn example_b_new_project_topology() {
    let n = required_quotas(&[cluster(pool(1, "", ""), None)], 1, []);
    assert_eq!(n.get("vpc.network.count"), 1);
    assert_eq!(n.get("vpc.pool.count"), 2);
    assert_eq!(n.get("vpc.route.count"), 1);
    assert_eq!(n.get("vpc.routetable.count"), 1);
    assert_eq!(n.get("vpc.subnet.count"), 1);
    assert!(!needed(&[cluster(pool(1, "", ""), None)]).contains("vpc.network.count"));
}

#[test]
fn managed_control_plane_uses_no_compute_or_disk_quota() {
    let n = needed(&[cluster(pool(1, "cpu-d3", "4vcpu-16gb"), None)]);
    assert_eq!(n.get("compute.instance.count"), 1);
    assert_eq!(n.get("compute.disk.count"), 1);
    assert_eq!(n.get("compute.disk.size.network-ssd"), 128 * GIB);
    assert_eq!(n.get("vpc.allocation.count"), 2);
}

/// Example C: a GPU cluster is counted; an existing filestore needs no filesystem quota.
#[test]
fn example_c_gpu_cluster_and_existing_filestore() {
    let mut c = cluster(None, pool(2, "gpu-h200-sxm", "8gpu-128vcpu-1600gb"));
    c.enable_gpu_cluster = Some(true);
    c.infiniband_fabric = "us-central1-a".into();
    c.enable_filestore = true;
    c.existing_filestore = "computefilesystem-example".into();
    let n = needed(&[c]);
    assert_eq!(n.get("compute.instance.gpu.h200"), 16);
    assert_eq!(n.get("compute.gpucluster.count"), 1);
    assert!(!n.contains("compute.filesystem.count"));
    assert!(!n.contains("compute.filesystem.size.network-ssd"));
}

/// Example D: STRICT-reserved GPUs leave the family quota; everything else still counts.
#[test]
fn example_d_reserved_gpus_leave_the_family_quota_only() {
    let mut c = cluster(
        pool(1, "cpu-d3", "48vcpu-192gb"),
        pool(2, "gpu-rtx6000", "8gpu-192vcpu-1744gb"),
    );
    c.gpu_nodes.as_mut().unwrap().capacity_block_group = "capacityblockgroup-example".into();
    c.enable_gpu_cluster = Some(false);
    let n = needed(std::slice::from_ref(&c));
    assert!(!n.contains("compute.instance.gpu.rtx6000"));
    assert_eq!(n.get("compute.instance.count"), 3);
    assert_eq!(n.get("compute.disk.count"), 3);
    assert_eq!(n.get("compute.instance.non-gpu.vcpu"), 48);
    let target = TargetKey::new("a", "c");
    let r = required_reservations([(&target, &c)], "us-central1").unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].block_id, "capacityblockgroup-example");
    assert_eq!(r[0].required_gpus, 16);
    assert_eq!(r[0].fabric, "");
    assert_eq!(r[0].targets, vec![target]);
}

fn preemptible_fixture(
    preemptible: bool,
    gpu_count: i64,
    gpus: u32,
    cpu_count: i64,
) -> ClusterSpec {
    let mut c = cluster(
        pool(cpu_count, "", "16vcpu-64gb"),
        pool(gpu_count, "gpu-rtx6000", &format!("{gpus}gpu-24vcpu-218gb")),
    );
    c.name = "quota-fixture".into();
    c.gpu_nodes.as_mut().unwrap().preemptible = preemptible;
    c.enable_gpu_cluster = Some(false);
    c
}

/// Example E: preemptible workers count VMs and keep boot-disk requirements.
#[test]
fn example_e_preemptible_workers() {
    for gpus in [1, 8] {
        let n = needed(&[preemptible_fixture(true, 2, gpus, 1)]);
        assert_eq!(n.get("compute.instance.preemptible.count"), 2);
        assert_eq!(n.get("compute.instance.count"), 1);
        assert!(!n.contains("compute.instance.gpu.rtx6000"));
        assert_eq!(n.get("compute.instance.non-gpu.vcpu"), 16);
        assert_eq!(n.get("compute.disk.count"), 3);
        assert_eq!(
            n.get("compute.disk.size.network-ssd"),
            (128 + 2 * 1023) * GIB
        );
    }
}

#[test]
fn mixed_regular_and_preemptible_pools_keep_independent_limits() {
    let regular = preemptible_fixture(false, 1, 1, 1);
    let preemptible = preemptible_fixture(true, 2, 8, 0);
    let n = needed(&[regular, preemptible]);
    assert_eq!(n.get("compute.instance.count"), 2);
    assert_eq!(n.get("compute.instance.preemptible.count"), 2);
    assert_eq!(n.get("compute.instance.gpu.rtx6000"), 1);
    assert_eq!(n.get("compute.disk.count"), 4);
}

#[test]
fn switching_allocation_mode_preserves_all_other_requirements() {
    let instance_names = [
        "compute.instance.count",
        "compute.instance.preemptible.count",
        "compute.instance.gpu.rtx6000",
    ];
    let other = |c: ClusterSpec| -> BTreeMap<String, u128> {
        cluster_demand(&c)
            .iter()
            .filter(|(n, _)| !instance_names.contains(n))
            .map(|(n, a)| (n.to_string(), a))
            .collect()
    };
    assert_eq!(
        other(preemptible_fixture(false, 2, 8, 1)),
        other(preemptible_fixture(true, 2, 8, 1))
    );
}

#[test]
fn object_storage_budgets_each_class_separately_from_filesystems() {
    let spec = fleetbot::spec::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/specs/rtxpro-8gpu-five-cluster.yaml"
    )))
    .unwrap();
    let n = required_quotas(
        spec.cluster_targets().map(|(_, c)| c),
        0,
        spec.projects
            .iter()
            .filter_map(|p| p.object_storage.as_ref()),
    );
    assert_eq!(n.get("storage.bucket.count"), 5);
    assert_eq!(n.get("storage.bucket.size.enhanced-throughput"), 16 * TIB);
    assert_eq!(n.get("compute.filesystem.size.network-ssd"), 24 * TIB);
    assert!(!n.contains("storage.bucket.size.standard"));
    assert!(required_quotas([], 0, [&ObjectStorageSpec::default()]).is_empty());
}

// ------------------------------------------------------------------------------------------
// Helpers for allowance documents (the reference's `_allowance` and `_complete_allowances`)
// ------------------------------------------------------------------------------------------

fn allowance(name: &str, region: &str, limit: Value, unit: &str, parent: &str) -> Value {
    let mut metadata = json!({ "name": name });
    if !parent.is_empty() {
        metadata["parent_id"] = json!(parent);
    }
    json!({
        "metadata": metadata,
        "spec": { "region": region, "limit": limit },
        "status": { "unit": unit, "usage_percentage": "0.00" },
    })
}

fn count(name: &str, limit: Value) -> Value {
    allowance(name, "us-central1", limit, "count", "")
}

fn document(items: &[Value]) -> String {
    json!({ "items": items }).to_string()
}

fn parse(
    items: &[Value],
    region: &str,
    required: &[&str],
    container: &str,
) -> Result<BTreeMap<String, Allowance>, String> {
    let doc = allowance_document(&document(items)).map_err(|e| e.to_string())?;
    let required: BTreeSet<&str> = required.iter().copied().collect();
    parse_allowances(&doc, region, &required, container).map_err(|e| e.0)
}

fn finite(
    parsed: &BTreeMap<String, Allowance>,
    name: &str,
) -> fleetbot::quota::allowances::FiniteAllowance {
    match &parsed[name] {
        Allowance::Finite(f) => f.clone(),
        other => panic!("{name} is {other:?}"),
    }
}

/// Sufficient evidence for every quota of the RTX fleet fixture, with overrides by name.
fn complete_allowances(overrides: &[Value]) -> Vec<Value> {
    let mut items: BTreeMap<String, Value> = BTreeMap::new();
    let defaults = [
        count("mk8s.cluster.count", json!(100)),
        count("compute.instance.count", json!(100)),
        count("compute.disk.count", json!(100)),
        allowance(
            "compute.disk.size.network-ssd",
            "us-central1",
            json!(100 * TIB as u64),
            "byte",
            "",
        ),
        count("compute.instance.non-gpu.vcpu", json!(1000)),
        count("compute.instance.gpu.rtx6000", json!(100)),
        count("vpc.allocation.count", json!(1000)),
        count("vpc.network.count", json!(100)),
        count("vpc.pool.count", json!(100)),
        count("vpc.route.count", json!(100)),
        count("vpc.routetable.count", json!(100)),
        count("vpc.subnet.count", json!(100)),
    ];
    for item in defaults.iter().chain(overrides) {
        items.insert(
            item["metadata"]["name"].as_str().unwrap().to_string(),
            item.clone(),
        );
    }
    items.into_values().collect()
}

struct Run {
    report: PreflightReport,
    progress: Vec<String>,
}

impl Run {
    fn message(&self) -> String {
        self.report.message().unwrap_or_default()
    }
}

/// The reference's `preflight_region` for one region, against in-memory evidence.
fn preflight_region(
    clusters: &[ClusterSpec],
    new_projects: u128,
    buckets: &[ObjectStorageSpec],
    tenant: &str,
    allowances: Result<String, EvidenceError>,
    capacity: Result<String, EvidenceError>,
) -> Run {
    let region = RegionDemand::new(
        "us-central1",
        clusters
            .iter()
            .enumerate()
            .map(|(i, c)| (TargetKey::new("a", format!("c{i}")), c)),
        new_projects,
        buckets.iter().map(|s| ("a".to_string(), s)),
    );
    let demand = FleetDemand {
        name: "f".into(),
        regions: vec![region],
        ..FleetDemand::default()
    };
    let evidence = InMemoryEvidence {
        allowances: allowances.and_then(|t| allowance_document(&t)),
        capacity: capacity.and_then(|t| capacity_document(&t)),
    };
    let mut progress = Vec::new();
    let report = run_preflight(demand, tenant, &evidence, &mut |l| {
        progress.push(l.to_string())
    });
    Run { report, progress }
}

fn unreadable() -> EvidenceError {
    EvidenceError::Unreadable("exit status 1".into())
}

/// The reference's `_rtx_cluster_spec`: two 8-GPU RTX nodes, no CPU pool, no GPU cluster.
fn rtx_cluster() -> ClusterSpec {
    let mut c = cluster(None, pool(2, "gpu-rtx6000", "8gpu-192vcpu-1744gb"));
    c.enable_gpu_cluster = Some(false);
    c
}

fn reserved_rtx_cluster() -> ClusterSpec {
    let mut c = rtx_cluster();
    c.gpu_nodes.as_mut().unwrap().capacity_block_group = "capacityblockgroup-test".into();
    c
}

fn shortfall_names(run: &Run) -> Vec<(String, u128, u64)> {
    run.report
        .shortfalls
        .iter()
        .map(|s| (s.name.clone(), s.required, s.available()))
        .collect()
}

// ------------------------------------------------------------------------------------------
// §13 item 4: fail-closed allowance interpretation
// ------------------------------------------------------------------------------------------

#[test]
fn parse_allowances_filters_region_and_preserves_unlimited() {
    let parsed = parse(
        &[
            count("compute.instance.count", json!("10")),
            allowance(
                "compute.instance.count",
                "eu-north1",
                json!("99"),
                "count",
                "",
            ),
            // An unset limit is "no limit at this container", not zero.
            count("compute.instance.gpu.rtx6000", Value::Null),
        ],
        "us-central1",
        &[],
        "",
    )
    .unwrap();
    assert_eq!(finite(&parsed, "compute.instance.count").limit, 10);
    assert!(parsed["compute.instance.gpu.rtx6000"].is_unlimited());
}

#[test]
fn tenant_finite_cannot_be_shadowed_by_project_unlimited() {
    let tenant = allowance(
        "compute.disk.count",
        "us-central1",
        json!(3),
        "count",
        "tenant-test",
    );
    let mut project = allowance(
        "compute.disk.count",
        "us-central1",
        Value::Null,
        "count",
        "project-test",
    );
    project.as_object_mut().unwrap().remove("status");
    for items in [
        [tenant.clone(), project.clone()],
        [project.clone(), tenant.clone()],
    ] {
        let parsed = parse(
            &items,
            "us-central1",
            &["compute.disk.count"],
            "tenant-test",
        )
        .unwrap();
        assert_eq!(finite(&parsed, "compute.disk.count").limit, 3);
        let needed: Demand = [("compute.disk.count", 4)].into_iter().collect();
        assert_eq!(find_shortfalls(&needed, &parsed, "us-central1").len(), 1);
    }
}

#[test]
fn unscoped_finite_wins_a_concrete_unlimited_collision() {
    let finite_item = count("compute.instance.count", json!(8));
    let mut unlimited = count("compute.instance.count", Value::Null);
    unlimited.as_object_mut().unwrap().remove("status");
    for items in [
        [unlimited.clone(), finite_item.clone()],
        [finite_item.clone(), unlimited.clone()],
    ] {
        let parsed = parse(&items, "us-central1", &[], "").unwrap();
        assert_eq!(finite(&parsed, "compute.instance.count").limit, 8);
    }
}

#[test]
fn authoritative_tenant_scope_beats_project_finite() {
    let mut tenant = allowance(
        "compute.instance.count",
        "us-central1",
        Value::Null,
        "count",
        "tenant-test",
    );
    tenant.as_object_mut().unwrap().remove("status");
    let project = allowance(
        "compute.instance.count",
        "us-central1",
        json!(0),
        "count",
        "project-test",
    );
    let parsed = parse(&[project, tenant], "us-central1", &[], "tenant-test").unwrap();
    assert!(parsed["compute.instance.count"].is_unlimited());
}

#[test]
fn tenant_unlimited_beside_unscoped_finite_is_ambiguous() {
    let mut tenant = allowance(
        "compute.instance.count",
        "us-central1",
        Value::Null,
        "count",
        "tenant-test",
    );
    tenant.as_object_mut().unwrap().remove("status");
    let legacy = count("compute.instance.count", json!(5));
    let err = parse(&[tenant, legacy], "us-central1", &[], "tenant-test").unwrap_err();
    assert_eq!(
        err,
        "quota 'compute.instance.count' has ambiguous scoped/unscoped candidates"
    );
}

#[test]
fn tenant_scoped_candidates_hide_legacy_and_project_ones() {
    let tenant = allowance(
        "compute.instance.count",
        "us-central1",
        json!(10),
        "count",
        "tenant-test",
    );
    let legacy = count("compute.instance.count", json!(99));
    let project = allowance(
        "compute.instance.count",
        "us-central1",
        json!(1),
        "count",
        "project-test",
    );
    let parsed = parse(
        &[legacy.clone(), project.clone(), tenant],
        "us-central1",
        &[],
        "tenant-test",
    )
    .unwrap();
    assert_eq!(finite(&parsed, "compute.instance.count").limit, 10);
    // Without a tenant-scoped candidate the legacy one is used; a project one never is.
    let parsed = parse(
        &[project.clone(), legacy],
        "us-central1",
        &[],
        "tenant-test",
    )
    .unwrap();
    assert_eq!(finite(&parsed, "compute.instance.count").limit, 99);
    let parsed = parse(&[project], "us-central1", &[], "tenant-test").unwrap();
    assert!(parsed.is_empty());
}

#[test]
fn conflicting_container_metadata_is_refused() {
    let mut item = allowance(
        "compute.instance.count",
        "us-central1",
        json!(10),
        "count",
        "tenant-test",
    );
    item["metadata"]["container_id"] = json!("tenant-other");
    let err = parse(&[item.clone()], "us-central1", &[], "tenant-test").unwrap_err();
    assert_eq!(
        err,
        "quota 'compute.instance.count' has conflicting container metadata"
    );
    // The same value under both keys is one scope.
    item["metadata"]["container_id"] = json!("tenant-test");
    assert!(parse(&[item], "us-central1", &[], "tenant-test").is_ok());
    // `container_id` alone scopes a record too.
    let mut legacy = count("compute.instance.count", json!(4));
    legacy["metadata"]["container_id"] = json!("tenant-test");
    let parsed = parse(&[legacy], "us-central1", &[], "tenant-test").unwrap();
    assert_eq!(finite(&parsed, "compute.instance.count").limit, 4);
}

#[test]
fn duplicate_finite_candidates_are_deterministic_or_fail_closed() {
    let first = allowance(
        "compute.instance.count",
        "us-central1",
        json!(10),
        "count",
        "tenant-test",
    );
    let parsed = parse(
        &[first.clone(), first.clone()],
        "us-central1",
        &[],
        "tenant-test",
    )
    .unwrap();
    assert_eq!(finite(&parsed, "compute.instance.count").limit, 10);
    let conflicting = allowance(
        "compute.instance.count",
        "us-central1",
        json!(11),
        "count",
        "tenant-test",
    );
    let err = parse(&[first, conflicting], "us-central1", &[], "tenant-test").unwrap_err();
    assert_eq!(
        err,
        "quota 'compute.instance.count' has ambiguous finite candidates"
    );
}

#[test]
fn accepts_only_known_compatible_units() {
    for (name, unit) in [
        ("compute.disk.size.network-ssd", "byte"),
        ("compute.disk.count", "count"),
        ("compute.instance.non-gpu.vcpu", "vcpu"),
        ("compute.instance.non-gpu.vcpu", "count"),
        ("compute.instance.gpu.b200", "gpu"),
        ("compute.instance.gpu.b200", "count"),
        ("storage.bucket.size.standard", "byte"),
        ("compute.instance.gpu.b200", " GPU "),
    ] {
        let parsed = parse(
            &[allowance(name, "us-central1", json!(10), unit, "")],
            "us-central1",
            &[],
            "",
        )
        .unwrap();
        assert_eq!(
            parsed[name].unit(),
            unit.trim().to_lowercase(),
            "{name} {unit}"
        );
    }
}

#[test]
fn rejects_incompatible_units_with_the_expected_ones() {
    for (name, unit, expected) in [
        ("compute.disk.size.network-ssd", "gibibyte", "byte"),
        ("compute.disk.count", "vcpu", "count"),
        ("compute.instance.non-gpu.vcpu", "byte", "count, vcpu"),
        ("compute.instance.gpu.b200", "vcpu", "count, gpu"),
        ("compute.instance.count", "", "count"),
    ] {
        let err = parse(
            &[allowance(name, "us-central1", json!(10), unit, "")],
            "us-central1",
            &[],
            "",
        )
        .unwrap_err();
        assert_eq!(
            err,
            format!(
                "quota '{name}' reported incompatible unit '{unit}'; expected one of: {expected}"
            )
        );
    }
}

#[test]
fn unlimited_may_omit_status_but_finite_may_not() {
    let mut unlimited = count("compute.instance.count", Value::Null);
    unlimited.as_object_mut().unwrap().remove("status");
    let parsed = parse(&[unlimited], "us-central1", &[], "").unwrap();
    assert!(parsed["compute.instance.count"].is_unlimited());
    let mut finite_item = count("compute.instance.count", json!(10));
    finite_item.as_object_mut().unwrap().remove("status");
    assert_eq!(
        parse(&[finite_item], "us-central1", &[], "").unwrap_err(),
        "quota 'compute.instance.count' has unusable capacity evidence"
    );
}

#[test]
fn unlimited_status_rules() {
    let mut frozen = count("compute.instance.count", Value::Null);
    frozen["status"]["state"] = json!("STATE_FROZEN");
    assert_eq!(
        parse(&[frozen], "us-central1", &[], "").unwrap_err(),
        "quota 'compute.instance.count' allowance state is not active: STATE_FROZEN"
    );
    let mut scalar = count("compute.instance.count", Value::Null);
    scalar["status"] = json!("active");
    assert_eq!(
        parse(&[scalar], "us-central1", &[], "").unwrap_err(),
        "quota 'compute.instance.count' has a non-mapping status"
    );
    let mut gpu = allowance(
        "compute.instance.gpu.h200",
        "us-central1",
        Value::Null,
        "gpu",
        "",
    );
    let other = allowance(
        "compute.instance.gpu.h200",
        "us-central1",
        Value::Null,
        "count",
        "",
    );
    assert_eq!(
        parse(&[gpu.clone(), other], "us-central1", &[], "").unwrap_err(),
        "quota 'compute.instance.gpu.h200' has ambiguous unlimited candidates"
    );
    gpu["status"]["unit"] = json!("");
    let parsed = parse(&[gpu], "us-central1", &[], "").unwrap();
    assert_eq!(
        parsed["compute.instance.gpu.h200"],
        Allowance::Unlimited {
            unit: String::new()
        }
    );
}

#[test]
fn duplicate_unlimited_candidates_are_deterministic() {
    let mut without_status = count("compute.instance.count", Value::Null);
    without_status.as_object_mut().unwrap().remove("status");
    let mut with_status = count("compute.instance.count", Value::Null);
    for items in [
        [without_status.clone(), with_status.clone()],
        [with_status.clone(), without_status.clone()],
    ] {
        let parsed = parse(&items, "us-central1", &[], "").unwrap();
        assert_eq!(
            parsed["compute.instance.count"],
            Allowance::Unlimited {
                unit: "count".into()
            }
        );
    }
    with_status["status"]["unit"] = json!("byte");
    let err = parse(&[without_status, with_status], "us-central1", &[], "").unwrap_err();
    assert!(err.contains("incompatible unit"), "{err}");
}

#[test]
fn finite_usage_from_exact_fraction_or_not_used() {
    let mut not_used = count("compute.instance.count", json!(10));
    not_used["status"] = json!({ "unit": "count", "usage_state": "USAGE_STATE_NOT_USED" });
    let f = finite(
        &parse(&[not_used], "us-central1", &[], "").unwrap(),
        "compute.instance.count",
    );
    assert_eq!(
        (f.available, f.usage, f.usage_source),
        (10, 0, UsageSource::NotUsed)
    );

    let mut over = count("compute.instance.count", json!(10));
    over["status"]["usage_percentage"] = json!("1.25");
    let f = finite(
        &parse(&[over], "us-central1", &[], "").unwrap(),
        "compute.instance.count",
    );
    assert_eq!(
        (f.available, f.usage, f.usage_source),
        (0, 10, UsageSource::Fraction)
    );

    let mut fraction = count("compute.instance.count", json!("48"));
    fraction["status"]["usage_percentage"] = json!(0.17);
    let f = finite(
        &parse(&[fraction], "us-central1", &[], "").unwrap(),
        "compute.instance.count",
    );
    assert_eq!((f.available, f.usage), (39, 9));

    let mut exact = count("compute.instance.count", json!("25"));
    exact["status"]["usage"] = json!("22");
    let f = finite(
        &parse(&[exact.clone()], "us-central1", &[], "").unwrap(),
        "compute.instance.count",
    );
    assert_eq!(
        (f.available, f.usage, f.usage_source),
        (3, 22, UsageSource::Exact)
    );
    exact["status"]["usage"] = json!(30);
    let f = finite(
        &parse(&[exact], "us-central1", &[], "").unwrap(),
        "compute.instance.count",
    );
    assert_eq!((f.available, f.usage), (0, 30));
}

#[test]
fn finite_without_usable_evidence_fails_closed() {
    let unusable = "quota 'compute.instance.count' has unusable capacity evidence";
    let mut cases = Vec::new();
    let mut no_usage = count("compute.instance.count", json!(10));
    no_usage["status"] = json!({ "unit": "count" });
    cases.push(no_usage);
    let mut used_state = count("compute.instance.count", json!(10));
    used_state["status"] = json!({ "unit": "count", "usage_state": "USAGE_STATE_USED" });
    cases.push(used_state);
    let mut frozen = count("compute.instance.count", json!(10));
    frozen["status"]["state"] = json!("STATE_FROZEN");
    cases.push(frozen);
    for (field, value) in [
        ("usage", json!(true)),
        ("usage", json!(1.5)),
        ("usage", json!(-1)),
        ("usage", json!("12a")),
        ("usage_percentage", json!("NaN")),
        ("usage_percentage", json!("-0.5")),
        ("usage_percentage", json!("Infinity")),
        ("usage_percentage", json!("lots")),
        ("usage_percentage", json!(false)),
    ] {
        let mut item = count("compute.instance.count", json!(10));
        item["status"][field] = value;
        cases.push(item);
    }
    for limit in [
        json!(true),
        json!(1.5),
        json!(10.0),
        json!(-3),
        json!("ten"),
        json!("1e3"),
        json!([1]),
    ] {
        cases.push(count("compute.instance.count", limit));
    }
    for item in cases {
        assert_eq!(
            parse(std::slice::from_ref(&item), "us-central1", &[], "").unwrap_err(),
            unusable,
            "{item}"
        );
    }
}

#[test]
fn limits_are_integers_or_digit_strings() {
    for (limit, expected) in [
        (json!(7), 7),
        (json!("7"), 7),
        (json!(" 7 "), 7),
        (json!("18446744073709551615"), u64::MAX),
    ] {
        let parsed = parse(
            &[count("compute.instance.count", limit)],
            "us-central1",
            &[],
            "",
        )
        .unwrap();
        assert_eq!(finite(&parsed, "compute.instance.count").limit, expected);
    }
}

#[test]
fn malformed_relevant_candidates_are_rejected() {
    let broken = [
        json!({ "metadata": { "name": "compute.instance.count" }, "spec": [] }),
        json!({
            "metadata": { "name": "compute.instance.count" },
            "spec": { "region": "us-central1", "limit": 1.5 },
            "status": { "unit": "count", "usage": 0 },
        }),
        json!({
            "metadata": { "name": "compute.instance.count" },
            "spec": { "region": "us-central1", "limit": 10 },
            "status": "active",
        }),
    ];
    for item in broken {
        assert!(
            parse(
                std::slice::from_ref(&item),
                "us-central1",
                &["compute.instance.count"],
                ""
            )
            .is_err(),
            "{item}"
        );
    }
}

#[test]
fn document_shape_is_checked_first() {
    let cases = [
        ("not json", "could not parse quota allowance JSON"),
        ("[]", "quota allowance JSON has a non-list 'items' field"),
        (
            r#"{"items": {}}"#,
            "quota allowance JSON has a non-list 'items' field",
        ),
        (r#"{}"#, "quota allowance JSON has a non-list 'items' field"),
        (
            r#"{"items": [1]}"#,
            "quota allowance JSON contains a non-mapping item",
        ),
        (
            r#"{"items": [{"metadata": {}}]}"#,
            "quota allowance has non-mapping metadata or spec",
        ),
        (
            r#"{"items": [{"metadata": [], "spec": {}}]}"#,
            "quota allowance has non-mapping metadata or spec",
        ),
        (
            r#"{"items": [], "next_page_token": "still-more"}"#,
            "quota allowance JSON is incomplete after paginated read",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(
            allowance_document(text),
            Err(EvidenceError::Malformed(message.to_string())),
            "{text}"
        );
    }
    // Irrelevant records are shape-checked but not value-checked.
    let items = [allowance(
        "compute.instance.count",
        "eu-north1",
        json!(true),
        "count",
        "",
    )];
    assert!(parse(&items, "us-central1", &[], "").unwrap().is_empty());
    assert_eq!(
        allowance_document("  "),
        Err(EvidenceError::Unreadable("the document is empty".into()))
    );
}

#[test]
fn rejects_incomplete_paginated_response() {
    let text = json!({
        "items": [count("compute.instance.count", json!(10))],
        "next_page_token": "still-more",
    })
    .to_string();
    let err = allowance_document(&text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "quota allowance JSON is incomplete after paginated read"
    );
}

#[test]
fn find_shortfalls_flags_zero_limit_and_ignores_unadvertised() {
    let parsed = parse(
        &[
            count("compute.instance.gpu.rtx6000", json!("0")),
            count("compute.instance.count", json!("10")),
        ],
        "us-central1",
        &[],
        "",
    )
    .unwrap();
    let needed: Demand = [
        ("compute.instance.gpu.rtx6000", 16),
        ("compute.instance.count", 4),
        ("mk8s.cluster.count", 1),
    ]
    .into_iter()
    .collect();
    let shortfalls = find_shortfalls(&needed, &parsed, "us-central1");
    assert_eq!(shortfalls.len(), 1);
    assert_eq!(shortfalls[0].name, "compute.instance.gpu.rtx6000");
    assert_eq!(
        shortfalls[0].describe(),
        "compute.instance.gpu.rtx6000 [us-central1]: needs 16 count, 0 available from tenant limit 0; shortfall 16"
    );
}

#[test]
fn preflight_blocks_on_zero_gpu_quota() {
    let items = complete_allowances(&[count("compute.instance.gpu.rtx6000", json!("0"))]);
    let run = rtx_preflight(&items);
    assert_eq!(run.report.exit_code(), 1);
    assert!(
        run.message()
            .starts_with("tenant t quota is too low for this fleet:\n")
    );
    assert!(run.message().contains("compute.instance.gpu.rtx6000"));
}

#[test]
fn preflight_passes_when_quota_is_sufficient() {
    let items = complete_allowances(&[count("compute.instance.gpu.rtx6000", json!("16"))]);
    let run = rtx_preflight(&items);
    assert!(run.report.fits(), "{:?}", run.report.message());
    assert_eq!(run.report.exit_code(), 0);
}

#[test]
fn four_workers_with_only_three_disk_slots_are_blocked() {
    let mut disk = count("compute.disk.count", json!("25"));
    disk["status"]["usage"] = json!("22");
    let mut c = rtx_cluster();
    c.cpu_nodes = pool(2, "cpu-d3", "16vcpu-64gb");
    let items = complete_allowances(&[disk]);
    let run = preflight_region(&[c], 0, &[], "t", Ok(document(&items)), Err(unreadable()));
    assert!(run.message().contains(
        "\n  - compute.disk.count [us-central1]: needs 4 count, 3 available from tenant limit 25; shortfall 1\n"
    ));
}

#[test]
fn unreadable_quota_api_fails_closed() {
    let run = preflight_region(
        &[rtx_cluster()],
        0,
        &[],
        "t",
        Err(unreadable()),
        Err(unreadable()),
    );
    assert_eq!(run.report.exit_code(), 1);
    assert_eq!(
        run.message(),
        "could not read tenant quota allowances for us-central1; refusing to create projects or resources without capacity evidence\n  exit status 1"
    );
}

#[test]
fn missing_required_allowance_fails_closed() {
    let items = [count("compute.instance.gpu.rtx6000", json!(100))];
    let run = rtx_preflight(&items);
    assert_eq!(
        run.message(),
        "tenant quota response for us-central1 omitted required allowances: compute.disk.count, compute.disk.size.network-ssd, compute.instance.count, mk8s.cluster.count, vpc.allocation.count"
    );
}

#[test]
fn only_the_five_topology_quotas_may_be_unadvertised() {
    let c = cluster(pool(1, "cpu-d3", "4vcpu-16gb"), None);
    let needed = required_quotas(std::slice::from_ref(&c), 1, []);
    let optional = [
        "vpc.network.count",
        "vpc.subnet.count",
        "vpc.pool.count",
        "vpc.routetable.count",
        "vpc.route.count",
    ];
    let items: Vec<Value> = needed
        .names()
        .filter(|n| !optional.contains(n))
        .map(|name| {
            let (limit, unit) = if name == "compute.disk.size.network-ssd" {
                (json!((10 * TIB) as u64), "byte")
            } else {
                (json!(100), "count")
            };
            allowance(name, "us-central1", limit, unit, "tenant-test")
        })
        .collect();
    let run = preflight_region(
        std::slice::from_ref(&c),
        1,
        &[],
        "tenant-test",
        Ok(document(&items)),
        Err(unreadable()),
    );
    assert!(run.report.fits(), "{:?}", run.report.message());
    let unadvertised: Vec<&String> = run
        .progress
        .iter()
        .filter(|l| l.contains("unadvertised optional quota"))
        .collect();
    assert_eq!(unadvertised.len(), 5);
    assert_eq!(
        unadvertised[0],
        "quota vpc.network.count [us-central1]: unadvertised optional quota in completed tenant catalog; treating it as not quota-controlled in this region"
    );
    let verdicts: Vec<_> = run
        .report
        .rows()
        .map(|r| (r.quota.as_str(), r.verdict))
        .collect();
    assert!(verdicts.contains(&(
        "vpc.pool.count",
        fleetbot::quota::Verdict::NotQuotaControlled
    )));

    let missing_core: Vec<Value> = items
        .into_iter()
        .filter(|i| i["metadata"]["name"] != "compute.instance.count")
        .collect();
    let run = preflight_region(
        &[c],
        1,
        &[],
        "tenant-test",
        Ok(document(&missing_core)),
        Err(unreadable()),
    );
    assert_eq!(
        run.message(),
        "tenant quota response for us-central1 omitted required allowances: compute.instance.count"
    );
}

#[test]
fn an_advertised_finite_topology_quota_is_enforced() {
    let items = complete_allowances(&[count("vpc.pool.count", json!(1))]);
    let run = preflight_region(
        &[rtx_cluster()],
        1,
        &[],
        "t",
        Ok(document(&items)),
        Err(unreadable()),
    );
    assert_eq!(
        shortfall_names(&run),
        vec![("vpc.pool.count".to_string(), 2, 1)]
    );
}

#[test]
fn progress_lines_name_amount_unit_and_evidence() {
    let mut exact = count("compute.disk.count", json!("25"));
    exact["status"]["usage"] = json!("5");
    let mut not_used = count("compute.instance.count", json!(100));
    not_used["status"] = json!({ "unit": "count", "usage_state": "USAGE_STATE_NOT_USED" });
    let mut unlimited = count("vpc.allocation.count", Value::Null);
    unlimited["status"] = json!({ "state": "STATE_ACTIVE" });
    let items = complete_allowances(&[exact, not_used, unlimited]);
    let run = rtx_preflight(&items);
    assert!(run.report.fits());
    for line in [
        "capacity/quota preflight: 1 cluster(s) in us-central1",
        "quota compute.disk.count [us-central1]: needs 2 count; 20 available from limit 25 (usage evidence: exact)",
        "quota compute.instance.count [us-central1]: needs 2 count; 100 available from limit 100 (usage evidence: not-used)",
        "quota compute.instance.gpu.rtx6000 [us-central1]: needs 16 count; 100 available from limit 100 (usage evidence: fraction)",
        "quota vpc.allocation.count [us-central1]: needs 4; tenant allowance is unlimited",
        "quota compute.disk.size.network-ssd [us-central1]: needs 2196875771904 byte; 109951162777600 available from limit 109951162777600 (usage evidence: fraction); in binary units: needs 2.00 TiB, 100.00 TiB available",
    ] {
        assert!(
            run.progress.iter().any(|l| l == line),
            "missing {line:?} in {:#?}",
            run.progress
        );
    }
}

#[test]
fn object_storage_preflight_uses_byte_units() {
    for (class, quota) in [
        ("standard", "standard"),
        ("enhanced", "enhanced-throughput"),
        ("intelligent", "intelligent"),
    ] {
        let storage = ObjectStorageSpec {
            enabled: true,
            storage_class: class.into(),
            size_gibibytes: 1,
            bucket_name: String::new(),
        };
        let invoke = |unit: &str| {
            let items = [
                count("storage.bucket.count", json!(1)),
                allowance(
                    &format!("storage.bucket.size.{quota}"),
                    "us-central1",
                    json!(GIB as u64),
                    unit,
                    "",
                ),
            ];
            preflight_region(
                &[],
                0,
                std::slice::from_ref(&storage),
                "t",
                Ok(document(&items)),
                Err(unreadable()),
            )
        };
        assert!(invoke("byte").report.fits());
        let run = invoke("count");
        assert!(run.message().contains("unit"), "{}", run.message());
    }
}

#[test]
fn storage_quota_shortfall_blocks() {
    let storage = ObjectStorageSpec {
        enabled: true,
        storage_class: "enhanced".into(),
        size_gibibytes: 1,
        bucket_name: String::new(),
    };
    let two = [storage.clone(), storage];
    for (bucket_limit, bytes_limit, short) in [
        (1, Some(2 * GIB), "storage.bucket.count"),
        (
            2,
            Some(2 * GIB - 1),
            "storage.bucket.size.enhanced-throughput",
        ),
        (2, None, "omitted"),
    ] {
        let mut items = complete_allowances(&[count("storage.bucket.count", json!(bucket_limit))]);
        if let Some(limit) = bytes_limit {
            items.push(allowance(
                "storage.bucket.size.enhanced-throughput",
                "us-central1",
                json!(limit as u64),
                "byte",
                "",
            ));
        }
        let run = preflight_region(
            &[rtx_cluster()],
            0,
            &two,
            "t",
            Ok(document(&items)),
            Err(unreadable()),
        );
        assert_eq!(run.report.exit_code(), 1);
        assert!(run.message().contains(short), "{}", run.message());
    }
}

// ------------------------------------------------------------------------------------------
// Preemptible pools (`test_preemptible_quota_preflight.py`)
// ------------------------------------------------------------------------------------------

fn preemptible_allowances() -> BTreeMap<&'static str, Value> {
    let limits: [(&str, u128); 8] = [
        ("mk8s.cluster.count", 10),
        ("compute.instance.count", 10),
        ("compute.instance.preemptible.count", 128),
        ("compute.instance.non-gpu.vcpu", 100),
        ("compute.instance.gpu.rtx6000", 0),
        ("compute.disk.count", 10),
        ("compute.disk.size.network-ssd", 10 * TIB),
        ("vpc.allocation.count", 100),
    ];
    limits
        .into_iter()
        .map(|(name, limit)| {
            let unit = if name.contains("disk.size") {
                "byte"
            } else {
                "count"
            };
            (
                name,
                json!({
                    "metadata": { "name": name, "parent_id": "tenant-fixture" },
                    "spec": { "region": "us-central1", "limit": limit.to_string() },
                    "status": { "state": "STATE_ACTIVE", "unit": unit, "usage": "0" },
                }),
            )
        })
        .collect()
}

fn preemptible_preflight(clusters: &[ClusterSpec], allowances: &BTreeMap<&str, Value>) -> Run {
    let items: Vec<Value> = allowances.values().cloned().collect();
    preflight_region(
        clusters,
        0,
        &[],
        "tenant-fixture",
        Ok(document(&items)),
        Err(unreadable()),
    )
}

#[test]
fn preemptible_gpu_preflight_accepts_zero_regular_quotas() {
    for gpus in [1, 8] {
        let mut a = preemptible_allowances();
        a.get_mut("compute.instance.count").unwrap()["spec"]["limit"] = json!("0");
        a.get_mut("compute.instance.preemptible.count").unwrap()["spec"]["limit"] = json!("1");
        let run = preemptible_preflight(&[preemptible_fixture(true, 1, gpus, 0)], &a);
        assert!(run.report.fits(), "{:?}", run.report.message());
    }
}

#[test]
fn regular_gpu_workers_still_require_regular_family_quota() {
    let run = preemptible_preflight(
        &[preemptible_fixture(false, 1, 1, 0)],
        &preemptible_allowances(),
    );
    assert_eq!(
        shortfall_names(&run),
        vec![("compute.instance.gpu.rtx6000".to_string(), 1, 0)]
    );
}

#[test]
fn preemptible_gpu_pool_does_not_exempt_regular_cpu_workers() {
    let mut a = preemptible_allowances();
    a.get_mut("compute.instance.count").unwrap()["spec"]["limit"] = json!("0");
    let run = preemptible_preflight(&[preemptible_fixture(true, 1, 1, 1)], &a);
    assert_eq!(
        shortfall_names(&run),
        vec![("compute.instance.count".to_string(), 1, 0)]
    );
}

#[test]
fn exhausted_preemptible_vm_quota_blocks_despite_regular_gpu_capacity() {
    let mut a = preemptible_allowances();
    a.get_mut("compute.instance.gpu.rtx6000").unwrap()["spec"]["limit"] = json!("16");
    a.get_mut("compute.instance.preemptible.count").unwrap()["status"]["usage"] = json!("128");
    let run = preemptible_preflight(&[preemptible_fixture(true, 1, 8, 0)], &a);
    assert_eq!(
        shortfall_names(&run),
        vec![("compute.instance.preemptible.count".to_string(), 1, 0)]
    );
}

#[test]
fn missing_preemptible_vm_allowance_fails_closed() {
    let mut a = preemptible_allowances();
    a.remove("compute.instance.preemptible.count");
    let run = preemptible_preflight(&[preemptible_fixture(true, 1, 1, 0)], &a);
    assert!(
        run.message()
            .contains("omitted required allowances: compute.instance.preemptible.count")
    );
}

#[test]
fn malformed_preemptible_vm_allowance_fails_closed() {
    for malformation in ["missing-usage", "wrong-unit", "inactive"] {
        let mut a = preemptible_allowances();
        let status = &mut a.get_mut("compute.instance.preemptible.count").unwrap()["status"];
        match malformation {
            "missing-usage" => {
                status.as_object_mut().unwrap().remove("usage");
            }
            "wrong-unit" => status["unit"] = json!("gpu"),
            _ => status["state"] = json!("STATE_FROZEN"),
        }
        let run = preemptible_preflight(&[preemptible_fixture(true, 1, 1, 0)], &a);
        assert_eq!(run.report.exit_code(), 1);
        assert!(
            run.message().contains("compute.instance.preemptible.count"),
            "{malformation}: {}",
            run.message()
        );
    }
}

#[test]
fn preemptible_capacity_never_bypasses_boot_disk_quota() {
    for quota in ["compute.disk.count", "compute.disk.size.network-ssd"] {
        let mut a = preemptible_allowances();
        a.get_mut(quota).unwrap()["spec"]["limit"] = json!("0");
        let run = preemptible_preflight(&[preemptible_fixture(true, 1, 1, 0)], &a);
        let names: Vec<String> = run
            .report
            .shortfalls
            .iter()
            .map(|s| s.name.clone())
            .collect();
        assert_eq!(names, vec![quota.to_string()]);
    }
}

// ------------------------------------------------------------------------------------------
// Shortfall message (`test_quota_shortfall_guidance.py`)
// ------------------------------------------------------------------------------------------

#[test]
fn disk_shortfall_preserves_bytes_and_explains_reserved_capacity() {
    let shortage = QuotaShortfall {
        name: "compute.disk.size.network-ssd".into(),
        region: "us-central1".into(),
        required: 2302 * GIB,
        limit: (25600 * GIB) as u64,
        available: Some((137 * GIB) as u64),
        unit: "byte".into(),
    };
    let message = shortfall_message(std::slice::from_ref(&shortage), "<tenant>");
    assert_eq!(
        message,
        format!(
            "tenant <tenant> quota is too low for this fleet:\n  - compute.disk.size.network-ssd [us-central1]: needs {} byte, {} available from tenant limit {} (requires 2,302.00 GiB; available 137.00 GiB; shortfall 2,165.00 GiB)\n{GUIDANCE}\n{DISK_GUIDANCE}",
            2302 * GIB,
            137 * GIB,
            25600 * GIB
        )
    );
    assert!(message.contains("Reserved GPUs still require worker boot-disk quota"));
    assert!(message.contains("rerun the same deploy with preflight enabled"));
    assert!(!message.contains("Deploy with --no-preflight"));
}

#[test]
fn count_shortfall_stays_in_counts_and_uses_available_capacity() {
    let shortage = QuotaShortfall {
        name: "compute.instance.count".into(),
        region: "us-central1".into(),
        required: 4,
        limit: 65,
        available: Some(2),
        unit: "count".into(),
    };
    let message = shortfall_message(&[shortage], "<tenant>");
    assert!(message.contains("needs 4 count, 2 available from tenant limit 65; shortfall 2"));
    assert!(!message.contains("GiB"));
    assert!(!message.contains("worker boot-disk"));
    assert!(message.ends_with(GUIDANCE));
}

#[test]
fn shortfall_without_usage_uses_the_limit() {
    let shortage = QuotaShortfall {
        name: "compute.disk.count".into(),
        region: "us-central1".into(),
        required: 4,
        limit: 3,
        available: None,
        unit: String::new(),
    };
    assert!(shortage.describe().ends_with("tenant limit 3; shortfall 1"));
    assert_eq!(
        shortage.describe(),
        "compute.disk.count [us-central1]: needs 4, 3 available from tenant limit 3; shortfall 1"
    );
}

#[test]
fn guidance_paragraph_is_the_reference_text() {
    assert_eq!(
        GUIDANCE,
        "Project-level allowances only subdivide the tenant allowance, so raising these is a tenant (root) operation -- ask the Nebius account team. Increase the affected tenant allowance, release resources you own, or reduce the declared resource requirements, then rerun the same deploy with preflight enabled. Skipping preflight cannot resolve a provider quota deficit."
    );
}

#[test]
fn shortfalls_are_sorted_by_quota_name() {
    let items = complete_allowances(&[
        count("compute.instance.gpu.rtx6000", json!(0)),
        count("compute.disk.count", json!(1)),
        count("vpc.allocation.count", json!(0)),
    ]);
    let run = rtx_preflight(&items);
    let names: Vec<String> = run
        .report
        .shortfalls
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "compute.disk.count",
            "compute.instance.gpu.rtx6000",
            "vpc.allocation.count"
        ]
    );
}

// ------------------------------------------------------------------------------------------
// §13 item 5: STRICT capacity blocks
// ------------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn capacity_block(
    id: &str,
    tenant: &str,
    region: &str,
    platform: &str,
    fabric: &str,
    limit: &str,
    usage: Option<&str>,
    usage_percentage: &str,
    state: &str,
) -> Value {
    let mut compute_v1 = json!({ "platform": platform });
    if !fabric.is_empty() {
        compute_v1["fabric"] = json!(fabric);
    }
    let mut status = json!({
        "region": region,
        "resource_affinity": { "compute_v1": compute_v1 },
        "state": state,
        "current_limit": limit,
        "usage_percentage": usage_percentage,
        "usage_state": if usage_percentage == "0.00" { "USAGE_STATE_NOT_USED" } else { "USAGE_STATE_USED" },
    });
    if let Some(usage) = usage {
        status["usage"] = json!(usage);
    }
    json!({ "metadata": { "id": id, "parent_id": tenant }, "status": status })
}

fn block(limit: &str) -> Value {
    capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-rtx6000",
        "",
        limit,
        None,
        "0.00",
        "STATE_ACTIVE",
    )
}

fn blocks(items: &[Value]) -> fleetbot::quota::CapacityBlockDocument {
    capacity_document(&json!({ "items": items }).to_string()).unwrap()
}

fn requirement(platform: &str, fabric: &str, gpus: u128) -> ReservationRequirement {
    ReservationRequirement {
        block_id: "capacityblockgroup-test".into(),
        region: "us-central1".into(),
        platform: platform.into(),
        fabric: fabric.into(),
        required_gpus: gpus,
        targets: vec![TargetKey::new("a", "c")],
    }
}

#[test]
fn reservation_validation_matches_region_platform_and_fabric() {
    let doc = blocks(&[capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-b200-sxm",
        "us-central1-b",
        "40",
        None,
        "0.00",
        "STATE_ACTIVE",
    )]);
    let ok = requirement("gpu-b200-sxm", "us-central1-b", 16);
    assert!(find_reservation_shortfalls(std::slice::from_ref(&ok), &doc, "t").is_empty());
    let wrong = requirement("gpu-b200-sxm", "us-central1-a", 16);
    let s = find_reservation_shortfalls(&[wrong], &doc, "t");
    assert_eq!(
        s[0].reason,
        "fabric 'us-central1-b' does not match 'us-central1-a'"
    );
}

#[test]
fn single_gpu_strict_reservation_accepts_provider_scoped_fabric() {
    let mut c = cluster(None, pool(1, "gpu-b200-sxm", "1gpu-20vcpu-224gb"));
    c.gpu_nodes.as_mut().unwrap().capacity_block_group = "capacityblockgroup-test".into();
    c.enable_gpu_cluster = Some(false);
    let target = TargetKey::new("a", "b200-single");
    let r = required_reservations([(&target, &c)], "us-central1").unwrap();
    assert_eq!(r[0].fabric, "");
    let doc = blocks(&[capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-b200-sxm",
        "us-central1-b",
        "40",
        None,
        "0.00",
        "STATE_ACTIVE",
    )]);
    assert!(find_reservation_shortfalls(&r, &doc, "t").is_empty());
}

#[test]
fn clustered_pool_requires_its_fabric() {
    let mut c = cluster(None, pool(2, "gpu-h200-sxm", "8gpu-128vcpu-1600gb"));
    c.gpu_nodes.as_mut().unwrap().capacity_block_group = "capacityblockgroup-test".into();
    c.enable_gpu_cluster = Some(true);
    c.infiniband_fabric = "fabric-3".into();
    let target = TargetKey::new("a", "train");
    let r = required_reservations([(&target, &c)], "us-central1").unwrap();
    assert_eq!((r[0].fabric.as_str(), r[0].required_gpus), ("fabric-3", 16));
}

#[test]
fn live_usage_percentage_is_a_fraction_and_exact_usage_wins() {
    let free = |usage: Option<&str>, pct: &str| {
        let doc = blocks(&[capacity_block(
            "capacityblockgroup-test",
            "t",
            "us-central1",
            "gpu-rtx6000",
            "",
            "48",
            usage,
            pct,
            "STATE_ACTIVE",
        )]);
        doc.items[0].available_gpus()
    };
    // The live API emits 0.17 for about 17 %, not 0.17 %.
    assert_eq!(free(None, "0.17"), Some(39));
    assert_eq!(free(Some("8"), "0.17"), Some(40));
    // Above 1 is an old 0..100 percentage; exactly 1 is fully used.
    assert_eq!(free(None, "17"), Some(39));
    assert_eq!(free(None, "1"), Some(0));
    assert_eq!(free(None, "150"), Some(0));
    assert_eq!(free(Some("60"), "0.00"), Some(0));
    // Unusable usage evidence is unknown, never "all free".
    assert_eq!(free(Some("-1"), "0.00"), None);
    assert_eq!(free(None, "-0.5"), None);
    assert_eq!(free(None, "NaN"), None);
    let mut not_used = capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-rtx6000",
        "",
        "48",
        None,
        "0.00",
        "STATE_ACTIVE",
    );
    not_used["status"]
        .as_object_mut()
        .unwrap()
        .remove("usage_percentage");
    assert_eq!(
        blocks(&[not_used.clone()]).items[0].available_gpus(),
        Some(48)
    );
    not_used["status"]["usage_state"] = json!("USAGE_STATE_USED");
    assert_eq!(blocks(&[not_used.clone()]).items[0].available_gpus(), None);
    not_used["status"]["current_limit"] = json!(1.5);
    assert_eq!(blocks(&[not_used]).items[0].available_gpus(), None);
}

#[test]
fn every_reservation_check_has_its_reason_text() {
    let base = || requirement("gpu-rtx6000", "fabric-a", 16);
    let cases: Vec<(Value, &str)> = vec![
        (
            capacity_block(
                "capacityblockgroup-other",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "not found in tenant",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "tenant-other",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "belongs to another tenant",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "0.00",
                "STATE_SHUTTING",
            ),
            "is not active (STATE_SHUTTING)",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "0.00",
                "",
            ),
            "is not active (unknown)",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "eu-north1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "region 'eu-north1' does not match 'us-central1'",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-h200-sxm",
                "fabric-a",
                "16",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "platform 'gpu-h200-sxm' does not match 'gpu-rtx6000'",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "",
                "16",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "fabric '' does not match 'fabric-a'",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "16",
                None,
                "bad",
                "STATE_ACTIVE",
            ),
            "remaining GPU capacity is unavailable",
        ),
        (
            capacity_block(
                "capacityblockgroup-test",
                "t",
                "us-central1",
                "gpu-rtx6000",
                "fabric-a",
                "8",
                None,
                "0.00",
                "STATE_ACTIVE",
            ),
            "needs 16 GPUs, only 8 reserved GPUs remain",
        ),
    ];
    for (item, reason) in cases {
        let s = find_reservation_shortfalls(&[base()], &blocks(&[item]), "t");
        assert_eq!(s.len(), 1, "{reason}");
        assert_eq!(s[0].reason, reason);
        assert_eq!(s[0].block_id, "capacityblockgroup-test");
    }
    // The first failing check wins: another tenant's inactive block reads "another tenant".
    let item = capacity_block(
        "capacityblockgroup-test",
        "x",
        "eu-north1",
        "gpu-x",
        "",
        "0",
        None,
        "0.00",
        "STATE_INACTIVE",
    );
    assert_eq!(
        find_reservation_shortfalls(&[base()], &blocks(&[item]), "t")[0].reason,
        "belongs to another tenant"
    );
    // A later duplicate ID replaces an earlier one.
    let small = capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-rtx6000",
        "fabric-a",
        "8",
        None,
        "0.00",
        "STATE_ACTIVE",
    );
    let big = capacity_block(
        "capacityblockgroup-test",
        "t",
        "us-central1",
        "gpu-rtx6000",
        "fabric-a",
        "64",
        None,
        "0.00",
        "STATE_ACTIVE",
    );
    assert!(find_reservation_shortfalls(&[base()], &blocks(&[small, big]), "t").is_empty());
}

#[test]
fn reservation_message_is_the_reference_text() {
    let s = find_reservation_shortfalls(
        &[requirement("gpu-rtx6000", "", 16)],
        &blocks(&[block("8")]),
        "t",
    );
    assert_eq!(
        reservation_shortfall_message(&s),
        "reserved capacity is insufficient or incompatible for this fleet:\n  - capacityblockgroup-test: needs 16 GPUs, only 8 reserved GPUs remain\nSTRICT reservation-backed node groups will not fall back to on-demand capacity."
    );
}

#[test]
fn one_block_cannot_back_incompatible_pools() {
    let mut a = reserved_rtx_cluster();
    let mut b = reserved_rtx_cluster();
    b.gpu_nodes.as_mut().unwrap().platform = "gpu-rtx6000-a".into();
    let (ta, tb) = (TargetKey::new("p", "a"), TargetKey::new("p", "b"));
    let err = required_reservations([(&ta, &a), (&tb, &b)], "us-central1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "one capacity_block_group cannot back incompatible GPU pools: capacityblockgroup-test"
    );
    // Compatible pools add up.
    a.gpu_nodes.as_mut().unwrap().count = 3;
    let c = reserved_rtx_cluster();
    let r = required_reservations([(&ta, &a), (&tb, &c)], "us-central1").unwrap();
    assert_eq!(r[0].required_gpus, 40);
    assert_eq!(r[0].targets, vec![ta, tb]);
    // Through preflight, the conflict stops before any evidence is read.
    let mut b2 = reserved_rtx_cluster();
    b2.gpu_nodes.as_mut().unwrap().platform = "gpu-rtx6000-a".into();
    let run = preflight_region(
        &[reserved_rtx_cluster(), b2],
        0,
        &[],
        "t",
        Err(unreadable()),
        Err(unreadable()),
    );
    assert_eq!(
        run.message(),
        "one capacity_block_group cannot back incompatible GPU pools: capacityblockgroup-test"
    );
    assert_eq!(
        run.report.public_message().unwrap(),
        "one capacity_block_group cannot back incompatible GPU pools: capacity block #1"
    );
}

#[test]
fn reserved_preflight_uses_capacity_and_ignores_public_gpu_quota() {
    // The on-demand family quota is zero; the reserved pool does not touch it.
    let items = complete_allowances(&[count("compute.instance.gpu.rtx6000", json!(0))]);
    let capacity = json!({ "items": [block("16")] }).to_string();
    let run = preflight_region(
        &[reserved_rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(&items)),
        Ok(capacity),
    );
    assert!(run.report.fits(), "{:?}", run.report.message());
    assert!(run.progress.iter().any(|l| l
        == "validated 16 GPU(s) against 1 active capacity block group(s); ordinary GPU quota excluded"));
    assert!(
        run.progress
            .iter()
            .any(|l| l.contains("compute.disk.count"))
    );
    assert!(
        !run.report.demand.regions[0]
            .quotas
            .contains("compute.instance.gpu.rtx6000")
    );
}

#[test]
fn reserved_preflight_fails_closed_when_block_unreadable_or_too_small() {
    let items = complete_allowances(&[]);
    let run = preflight_region(
        &[reserved_rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(&items)),
        Err(unreadable()),
    );
    assert_eq!(
        run.message(),
        "could not read capacity block groups; refusing to bypass STRICT reservation preflight\n  exit status 1"
    );
    let small = json!({ "items": [block("8")] }).to_string();
    let run = preflight_region(
        &[reserved_rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(&items)),
        Ok(small),
    );
    assert!(run.message().contains("only 8 reserved GPUs remain"));
    // A reservation failure stops before the quota read: no quota line was logged.
    assert!(!run.progress.iter().any(|l| l.starts_with("quota ")));
    assert!(run.report.rows().next().is_none());
    // The public rendering never names the block.
    let public = run.report.public_message().unwrap();
    assert!(!public.contains("capacityblockgroup-test"), "{public}");
    assert!(public.contains("capacity block #1: needs 16 GPUs, only 8 reserved GPUs remain"));
}

#[test]
fn paginated_capacity_list_fails_closed() {
    let text = json!({ "items": [block("64")], "next_page_token": "more" }).to_string();
    let run = preflight_region(
        &[reserved_rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(&complete_allowances(&[]))),
        Ok(text),
    );
    assert!(run.message().starts_with(
        "could not read capacity block groups; refusing to bypass STRICT reservation preflight\n"
    ));
    assert!(run.message().contains("incomplete after paginated read"));
}

/// The reference sentence stays; after it, what the tenant's own allowances say is wrong: no
/// allowance at all in the region is the wrong tenant (or region), a GPU quota it lacks is a
/// GPU type it does not have there, named with the ones it has.
#[test]
fn missing_allowances_say_what_the_tenant_has() {
    let run = preflight_region(
        &[rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(&[])),
        Err(unreadable()),
    );
    let message = run.message();
    assert!(
        message.starts_with("tenant quota response for us-central1 omitted required allowances: "),
        "{message}"
    );
    assert!(
        message.contains(
            "\nthe tenant has no quota allowance at all in us-central1: check the tenant ID"
        ),
        "{message}"
    );

    let names = [
        "compute.disk.count",
        "compute.instance.count",
        "mk8s.cluster.count",
        "vpc.allocation.count",
        "compute.instance.gpu.h100",
        "compute.instance.gpu.h200",
    ];
    let items: Vec<Value> = names.iter().map(|n| count(n, json!(100))).collect();
    let run = rtx_preflight(&items);
    let message = run.message();
    assert!(
        message.contains("omitted required allowances: compute.disk.size.network-ssd, compute.instance.gpu.rtx6000\nGPU type \"rtx6000\": the tenant has no allowance for it in us-central1 (GPU types with allowances there: h100, h200); check the pool's platform"),
        "{message}"
    );
}

/// Preflight of one RTX cluster in an existing project against `items`, capacity unreadable.
fn rtx_preflight(items: &[Value]) -> Run {
    preflight_region(
        &[rtx_cluster()],
        0,
        &[],
        "t",
        Ok(document(items)),
        Err(unreadable()),
    )
}
