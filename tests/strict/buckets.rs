//! Buckets end as on Nebius: Delete schedules the bucket for deletion (purge in 7 days,
//! visible meanwhile, its name kept), Undelete brings it back, Purge works only on a scheduled
//! bucket. fleetbot treats a scheduled bucket as unusable and says what to do.

use crate::support::deploy;
use fleetbot::cloud::Cloud;
use fleetbot::cloud::client::Host;
use fleetbot::cloud::domain::State;
use fleetbot::cloud::proto::nebius::storage::v1 as storage;
use fleetbot::engine::live::ProblemKind;
use fleetbot::engine::ops::{LifecycleOptions, prepare};
use fleetbot::spec::load_str;
use fleetbot::store::SqliteStore;

use super::{channel, labels, project, request};
use crate::support::{client, empty_default_world, roomy_world, simulator};

type Buckets = storage::bucket_service_client::BucketServiceClient<tonic::transport::Channel>;

#[tokio::test]
async fn delete_schedules_undelete_restores_and_purge_ends() {
    let sim = simulator(&roomy_world("")).await;
    let cloud = client(&sim);
    let p = project(&cloud, &sim.tenant_id(), "soft").await;
    let bucket = cloud
        .create_bucket(&p.id, "kept", "standard", 1 << 30, &labels(&[]), "k-b")
        .await
        .unwrap();
    let mut raw = Buckets::new(channel(&sim).await);
    let purge = |id: &str| storage::PurgeBucketRequest { id: id.into() };

    // Purge refuses an active bucket.
    let refused = raw
        .purge(request(purge(&bucket.id), &[]))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);

    cloud.delete_bucket(&bucket.id, "k-del").await.unwrap();
    let got = raw
        .get(request(
            storage::GetBucketRequest {
                id: bucket.id.clone(),
            },
            &[],
        ))
        .await
        .unwrap()
        .into_inner();
    let status = got.status.unwrap();
    assert_eq!(
        status.state,
        storage::bucket_status::State::ScheduledForDeletion as i32
    );
    let (deleted, purge_at) = (status.deleted_at.unwrap(), status.purge_at.unwrap());
    assert_eq!(purge_at.seconds - deleted.seconds, 7 * 24 * 3600);
    // The name stays taken.
    let taken = cloud
        .create_bucket(&p.id, "kept", "standard", 1 << 30, &labels(&[]), "k-b2")
        .await
        .unwrap_err();
    assert_eq!(taken.code, tonic::Code::AlreadyExists);
    // Neither updated nor deleted again while scheduled.
    let busy = cloud
        .update_bucket(&bucket.id, "standard", 2 << 30, &labels(&[]), "k-up")
        .await
        .unwrap_err();
    assert_eq!(busy.code, tonic::Code::FailedPrecondition);

    let op = raw
        .undelete(request(
            storage::UndeleteBucketRequest {
                id: bucket.id.clone(),
            },
            &[],
        ))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Storage, op).await.unwrap();
    let back = cloud.get_bucket(&bucket.id).await.unwrap();
    assert_eq!(
        (back.state, back.scheduled_for_deletion),
        (State::Ready, false)
    );

    // Delete with a zero ttl purges at once; a scheduled bucket can be purged.
    cloud.delete_bucket(&bucket.id, "k-del-2").await.unwrap();
    let op = raw
        .purge(request(purge(&bucket.id), &[]))
        .await
        .unwrap()
        .into_inner();
    cloud.wait(Host::Storage, op).await.unwrap();
    assert!(
        cloud
            .get_bucket(&bucket.id)
            .await
            .unwrap_err()
            .is_not_found()
    );
    let other = cloud
        .create_bucket(&p.id, "now", "standard", 0, &labels(&[]), "k-b3")
        .await
        .unwrap();
    let zero = storage::DeleteBucketRequest {
        id: other.id.clone(),
        purge: Some(storage::delete_bucket_request::Purge::Ttl(
            prost_types::Duration::default(),
        )),
    };
    let op = raw.delete(request(zero, &[])).await.unwrap().into_inner();
    cloud.wait(Host::Storage, op).await.unwrap();
    assert!(cloud.list_buckets(&p.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn fleetbot_never_reuses_or_renames_around_a_scheduled_bucket() {
    let sim = simulator(&empty_default_world()).await;
    let cloud = client(&sim);
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inventory.sqlite"))
        .await
        .unwrap();
    let text = "apiVersion: npa.fleet/v0.0.1\nname: sb\nregion: us-central1\nproject_prefix: sb-\nprojects:\n  - name: a\n    object_storage: {size_gibibytes: 64}\n    clusters: [{name: c, cpu_nodes: {count: 1, platform: cpu-d3, preset: 8vcpu-32gb}}]\n";
    let fleet = load_str(text, "fleet.yaml").unwrap();
    let options = LifecycleOptions::default();
    let quiet = || {
        std::sync::Arc::new(|_: &fleetbot::engine::ops::Event| {})
            as fleetbot::engine::ops::Progress
    };
    let first = deploy(&cloud, &store, &fleet, &tenant, &options, quiet())
        .await
        .unwrap();
    assert_eq!(first.failed, 0, "{first:#?}");
    let project = cloud
        .list_projects(&tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "sb-a")
        .unwrap();
    let bucket = cloud.list_buckets(&project.id).await.unwrap().remove(0);
    // Someone deletes the bucket out of band.
    cloud.delete_bucket(&bucket.id, "by-hand").await.unwrap();

    let plan = prepare(&cloud, &store, &fleet, &tenant, &options)
        .await
        .unwrap();
    let problem = plan
        .plan
        .projects
        .iter()
        .flat_map(|p| p.problems.iter())
        .find(|p| p.kind == ProblemKind::BucketUnusable)
        .expect("the scheduled bucket is a problem");
    assert!(problem.message.contains("undelete"), "{}", problem.message);
    assert!(
        problem.message.contains("bucket_name"),
        "{}",
        problem.message
    );

    sim.service.clear_call_log();
    let again = deploy(&cloud, &store, &fleet, &tenant, &options, quiet()).await;
    let mutated: Vec<String> = sim.service.mutation_calls();
    assert!(
        !mutated.iter().any(|m| m.contains("BucketService")),
        "{mutated:?}"
    );
    let buckets = cloud.list_buckets(&project.id).await.unwrap();
    assert_eq!(buckets.len(), 1, "no bucket of another name was made");
    assert!(buckets[0].scheduled_for_deletion);
    match again {
        Ok(result) => assert!(result.failed > 0, "{result:#?}"),
        Err(e) => assert!(e.message.contains("undelete"), "{e}"),
    }
}
