//! Properties of the demand arithmetic: additive over clusters (and over projects and buckets),
//! never negative, and never reduced by adding a target.

use fleetbot::quota::demand::{bucket_demand, new_projects_demand};
use fleetbot::quota::{Demand, cluster_demand, required_quotas};
use fleetbot::spec::{ClusterSpec, MigSpec, NodePoolSpec, ObjectStorageSpec};
use proptest::prelude::*;

const PLATFORMS: &[&str] = &[
    "cpu-d3",
    "gpu-h200-sxm",
    "gpu-b200-sxm-a",
    "gpu-rtx6000",
    "gpu-l40s-d",
    "",
];

fn preset() -> impl Strategy<Value = String> {
    (0u32..9, 0u32..257, prop::bool::ANY).prop_map(|(gpus, vcpus, with_gpu)| {
        if with_gpu {
            format!("{gpus}gpu-{vcpus}vcpu-512gb")
        } else {
            format!("{vcpus}vcpu-64gb")
        }
    })
}

fn pool() -> impl Strategy<Value = Option<NodePoolSpec>> {
    prop::option::of((
        // Negative counts are rejected by validation; here they must simply add nothing.
        -3i64..40,
        prop::sample::select(PLATFORMS),
        preset(),
        -1i64..4096,
        prop::bool::ANY,
        prop::bool::ANY,
    ))
    .prop_map(|p| {
        p.map(
            |(count, platform, preset, disk, preemptible, reserved)| NodePoolSpec {
                count,
                platform: platform.to_string(),
                preset,
                disk_size_gib: disk,
                capacity_block_group: if reserved && !preemptible {
                    "capacityblockgroup-example".into()
                } else {
                    String::new()
                },
                preemptible,
            },
        )
    })
}

fn cluster() -> impl Strategy<Value = ClusterSpec> {
    (
        pool(),
        pool(),
        prop::option::of(prop::bool::ANY),
        prop::bool::ANY,
        prop::bool::ANY,
        0i64..100_000,
        prop::bool::ANY,
    )
        .prop_map(
            |(cpu, gpu, gpu_cluster, filestore, existing, fs_size, mig)| ClusterSpec {
                cpu_nodes: cpu,
                gpu_nodes: gpu,
                enable_gpu_cluster: gpu_cluster,
                infiniband_fabric: "fabric-example".into(),
                enable_filestore: filestore,
                existing_filestore: if existing {
                    "computefilesystem-example".into()
                } else {
                    String::new()
                },
                filestore_disk_size_gibibytes: fs_size,
                mig: mig.then(|| MigSpec {
                    enabled: true,
                    strategy: "mixed".into(),
                    config: "all-balanced".into(),
                }),
                ..ClusterSpec::default()
            },
        )
}

fn bucket() -> impl Strategy<Value = ObjectStorageSpec> {
    (
        prop::bool::ANY,
        prop::sample::select(&["standard", "enhanced", "intelligent"][..]),
        0i64..1_000_000,
    )
        .prop_map(|(enabled, class, size)| ObjectStorageSpec {
            enabled,
            storage_class: class.into(),
            size_gibibytes: size,
            bucket_name: String::new(),
        })
}

fn sum<'a>(parts: impl IntoIterator<Item = &'a Demand>) -> Demand {
    let mut total = Demand::new();
    for part in parts {
        total.merge(part);
    }
    total
}

fn nodes(c: &ClusterSpec) -> u128 {
    (c.cpu_count().max(0) + c.gpu_count().max(0)) as u128
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn demand_is_additive_over_clusters(
        clusters in prop::collection::vec(cluster(), 0..12),
        split in 0usize..12,
        new_projects in 0u128..6,
        buckets in prop::collection::vec(bucket(), 0..4),
    ) {
        let whole = required_quotas(&clusters, new_projects, &buckets);
        let parts: Vec<Demand> = clusters.iter().map(cluster_demand).collect();
        let mut expected = sum(&parts);
        expected.merge(&new_projects_demand(new_projects));
        for b in &buckets {
            expected.merge(&bucket_demand(b));
        }
        prop_assert_eq!(&whole, &expected);

        // Any split into two groups adds up to the whole.
        let split = split.min(clusters.len());
        let (left, right) = clusters.split_at(split);
        let mut halves = required_quotas(left, 0, []);
        halves.merge(&required_quotas(right, new_projects, &buckets));
        prop_assert_eq!(&whole, &halves);
    }

    #[test]
    fn demand_is_never_negative_and_counts_what_it_must(c in cluster()) {
        let d = cluster_demand(&c);
        for (name, amount) in d.iter() {
            prop_assert!(amount > 0, "{name} stored as zero");
        }
        prop_assert_eq!(d.get("mk8s.cluster.count"), 1);
        prop_assert_eq!(d.get("vpc.allocation.count"), 2 * nodes(&c));
        prop_assert_eq!(d.get("compute.disk.count"), nodes(&c));
        prop_assert_eq!(
            d.get("compute.instance.count") + d.get("compute.instance.preemptible.count"),
            nodes(&c)
        );
    }

    #[test]
    fn adding_a_target_never_lowers_any_quota(
        clusters in prop::collection::vec(cluster(), 0..8),
        extra in cluster(),
    ) {
        let before = required_quotas(&clusters, 0, []);
        let mut more = clusters.clone();
        more.push(extra);
        let after = required_quotas(&more, 0, []);
        for (name, amount) in before.iter() {
            prop_assert!(after.get(name) >= amount, "{name} went down");
        }
    }
}
