//! Property: whatever sequence of creates, updates and deletes the simulator is sent, every
//! allowance's usage equals its seeded usage plus what the live resources add up to, and its
//! usage state says `USED` exactly when that is above zero.

use proptest::prelude::*;

use super::core::{CallContext, Core};
use super::resources::{Charges, Resource};
use super::world::World;
use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
use crate::cloud::proto::nebius::compute::v1 as compute;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::cloud::proto::nebius::quotas::v1 as quotas;
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::proto::nebius::vpc::v1 as vpc;

const REGION: &str = "eu-north1";

/// Tight limits, so a random sequence also meets refused creates and updates; some usage by
/// resources the simulator does not model.
const WORLD: &str = r#"
name: usage-props
regions: [eu-north1]
quotas:
  eu-north1:
    mk8s.cluster.count: 3
    vpc.allocation.count: 40
    vpc.network.count: 10
    vpc.subnet.count: 10
    vpc.pool.count: 40
    vpc.routetable.count: 20
    compute.instance.count: 12
    compute.instance.non-gpu.vcpu: {limit: 200, usage: 16}
    compute.instance.gpu.h200: 24
    compute.disk.count: 14
    compute.disk.size.network-ssd: 3298534883328
    compute.filesystem.count: 3
    compute.filesystem.size.network-ssd: 4398046511104
    compute.gpucluster.count: 2
    storage.bucket.count: 2
    storage.bucket.size.standard: 1099511627776
projects:
  - {name: p, region: eu-north1}
"#;

#[derive(Debug, Clone)]
enum Op {
    Filesystem {
        gib: i64,
    },
    GpuCluster,
    Cluster,
    NodeGroup {
        cluster: usize,
        count: i64,
        gpu: bool,
        disk_gib: i64,
    },
    Resize {
        group: usize,
        count: i64,
    },
    Bucket {
        gib: i64,
    },
    Delete {
        kind: usize,
        index: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1i64..2048).prop_map(|gib| Op::Filesystem { gib }),
        Just(Op::GpuCluster),
        Just(Op::Cluster),
        (0usize..4, 0i64..6, any::<bool>(), 64i64..512).prop_map(
            |(cluster, count, gpu, disk_gib)| Op::NodeGroup {
                cluster,
                count,
                gpu,
                disk_gib
            }
        ),
        (0usize..6, 0i64..8).prop_map(|(group, count)| Op::Resize { group, count }),
        (1i64..800).prop_map(|gib| Op::Bucket { gib }),
        (0usize..5, 0usize..6).prop_map(|(kind, index)| Op::Delete { kind, index }),
    ]
}

fn ctx(n: usize) -> CallContext {
    CallContext {
        caller: "props".into(),
        idempotency_key: Some(format!("op-{n}")),
        request_digest: format!("op-{n}"),
        ..Default::default()
    }
}

fn meta(parent: &str, name: &str) -> ResourceMetadata {
    ResourceMetadata {
        parent_id: parent.to_string(),
        name: name.to_string(),
        ..Default::default()
    }
}

fn group_spec(count: i64, gpu: bool, disk_gib: i64) -> mk8s::NodeGroupSpec {
    let (platform, preset) = if gpu {
        ("gpu-h200-sxm", "8gpu-128vcpu-1600gb")
    } else {
        ("cpu-d3", "16vcpu-64gb")
    };
    mk8s::NodeGroupSpec {
        size: Some(mk8s::node_group_spec::Size::FixedNodeCount(count)),
        template: Some(mk8s::NodeTemplate {
            resources: Some(mk8s::ResourcesSpec {
                platform: platform.into(),
                size: Some(mk8s::resources_spec::Size::Preset(preset.into())),
            }),
            boot_disk: Some(mk8s::DiskSpec {
                size: Some(mk8s::disk_spec::Size::SizeGibibytes(disk_gib)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ids<R: Resource>(core: &Core) -> Vec<String> {
    R::items(&core.state)
        .iter()
        .map(|r| r.id().to_string())
        .collect()
}

fn add(total: &mut Vec<(String, u64)>, charges: Charges) {
    for (name, amount) in charges.quotas {
        match total.iter_mut().find(|(n, _)| *n == name) {
            Some((_, sum)) => *sum += amount,
            None => total.push((name, amount)),
        }
    }
}

/// What the live resources add up to, per quota name.
fn charged(core: &Core) -> Vec<(String, u64)> {
    fn all<R: Resource>(core: &Core, total: &mut Vec<(String, u64)>) {
        for r in R::items(&core.state) {
            add(total, r.charges());
        }
    }
    let mut total = Vec::new();
    all::<iam::Container>(core, &mut total);
    all::<vpc::Network>(core, &mut total);
    all::<vpc::Subnet>(core, &mut total);
    all::<vpc::Pool>(core, &mut total);
    all::<mk8s::Cluster>(core, &mut total);
    all::<mk8s::NodeGroup>(core, &mut total);
    all::<compute::Filesystem>(core, &mut total);
    all::<compute::GpuCluster>(core, &mut total);
    all::<storage::Bucket>(core, &mut total);
    total
}

fn check_usage(core: &Core) -> Result<(), TestCaseError> {
    let charged = charged(core);
    for allowance in &core.state.quota_allowances {
        let name = allowance.metadata.as_ref().map_or("", |m| m.name.as_str());
        let status = allowance.status.clone().unwrap_or_default();
        let seeded = core.world.quotas[REGION][name].spec().usage;
        let live = charged
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v);
        prop_assert_eq!(status.usage, seeded + live, "usage of {}", name);
        let used = quotas::quota_allowance_status::UsageState::Used as i32;
        let not_used = quotas::quota_allowance_status::UsageState::NotUsed as i32;
        let expected = if status.usage > 0 { used } else { not_used };
        prop_assert_eq!(status.usage_state, expected, "usage state of {}", name);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn usage_always_equals_what_the_resources_add_up_to(ops in prop::collection::vec(op(), 1..40)) {
        let mut core = Core::new(World::from_yaml(WORLD).unwrap(), None).unwrap();
        let project = ids::<iam::Container>(&core)[0].clone();
        let subnet = ids::<vpc::Subnet>(&core)[0].clone();
        check_usage(&core)?;
        for (n, op) in ops.into_iter().enumerate() {
            let name = format!("r{n}");
            // Refusals (quota, name, blockers) are part of the property: a refused call must
            // leave usage as it was.
            let _ = match op {
                Op::Filesystem { gib } => core.create::<compute::Filesystem>(
                    &ctx(n),
                    meta(&project, &name),
                    compute::FilesystemSpec {
                        size: Some(compute::filesystem_spec::Size::SizeGibibytes(gib)),
                        ..Default::default()
                    },
                    0,
                ),
                Op::GpuCluster => core.create::<compute::GpuCluster>(
                    &ctx(n),
                    meta(&project, &name),
                    compute::GpuClusterSpec {
                        infiniband_fabric: "fabric-2".into(),
                    },
                    0,
                ),
                Op::Cluster => core.create::<mk8s::Cluster>(
                    &ctx(n),
                    meta(&project, &name),
                    mk8s::ClusterSpec {
                        control_plane: Some(mk8s::ControlPlaneSpec {
                            subnet_id: subnet.clone(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    0,
                ),
                Op::NodeGroup { cluster, count, gpu, disk_gib } => {
                    let clusters = ids::<mk8s::Cluster>(&core);
                    let Some(parent) = clusters.get(cluster % clusters.len().max(1)).cloned()
                    else {
                        continue;
                    };
                    core.create::<mk8s::NodeGroup>(
                        &ctx(n),
                        meta(&parent, &name),
                        group_spec(count, gpu, disk_gib),
                        0,
                    )
                }
                Op::Resize { group, count } => {
                    let groups: Vec<mk8s::NodeGroup> =
                        mk8s::NodeGroup::items(&core.state).clone();
                    let Some(g) = groups.get(group % groups.len().max(1)) else {
                        continue;
                    };
                    let mut spec = g.spec.clone().unwrap_or_default();
                    spec.size = Some(mk8s::node_group_spec::Size::FixedNodeCount(count));
                    core.update::<mk8s::NodeGroup>(
                        &ctx(n),
                        g.metadata.clone().unwrap_or_default(),
                        Some(spec),
                        0,
                    )
                }
                Op::Bucket { gib } => core.create::<storage::Bucket>(
                    &ctx(n),
                    meta(&project, &name),
                    storage::BucketSpec {
                        max_size_bytes: gib << 30,
                        ..Default::default()
                    },
                    0,
                ),
                Op::Delete { kind, index } => {
                    let pick = |all: Vec<String>| all.get(index % all.len().max(1)).cloned();
                    match kind {
                        0 => match pick(ids::<compute::Filesystem>(&core)) {
                            Some(id) => core.delete::<compute::Filesystem>(&ctx(n), &id, 0),
                            None => continue,
                        },
                        1 => match pick(ids::<compute::GpuCluster>(&core)) {
                            Some(id) => core.delete::<compute::GpuCluster>(&ctx(n), &id, 0),
                            None => continue,
                        },
                        // A cluster's delete takes its node groups with it.
                        2 => match pick(ids::<mk8s::Cluster>(&core)) {
                            Some(id) => core.delete::<mk8s::Cluster>(&ctx(n), &id, 0),
                            None => continue,
                        },
                        3 => match pick(ids::<mk8s::NodeGroup>(&core)) {
                            Some(id) => core.delete::<mk8s::NodeGroup>(&ctx(n), &id, 0),
                            None => continue,
                        },
                        _ => match pick(ids::<storage::Bucket>(&core)) {
                            Some(id) => core.delete::<storage::Bucket>(&ctx(n), &id, 0),
                            None => continue,
                        },
                    }
                }
            };
            check_usage(&core)?;
        }
    }
}
