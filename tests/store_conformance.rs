//! One conformance suite for every store backend: each test is a generic function over a
//! [`Backend`], run once against SQLite (a temporary file) and once against a real PostgreSQL
//! (a fresh database on the server named by `FLEETBOT_TEST_POSTGRES_URL`; see
//! `scripts/with-postgres.sh`). A backend passes when it behaves the same in every test.
//!
//! Time is passed to the queue and to the deploy leases explicitly, so leases and backoff are
//! tested without sleeping.

use crate::stores;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use fleetbot::store::migrate::{MIGRATIONS, statements};
use fleetbot::store::queue::{WEBHOOK_JOB, now_ms, pr_key};
use fleetbot::store::{
    Approval, AuditEntry, DeployStore, Enqueued, InventoryStore, JobOutcome, JobQueue, Lease,
    LeaseTake, NewJob, OverviewStore, ProjectRecord, QueueCounts, ReviewedPlan, StoreError,
    TargetRecord,
};
use stores::{Backend, Postgres, Sqlite};

/// Runs each listed test against both backends.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(<super::Sqlite as super::Backend>::fresh().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(<super::Postgres as super::Backend>::fresh().await).await;
                }
            )*
        }
    };
}

conformance!(
    inventory_round_trip,
    lifecycle_generations_count_destroys_and_outlive_the_record,
    migrations_apply_once_on_every_open,
    a_delivery_is_stored_once_across_handles,
    concurrent_duplicates_store_one_delivery,
    a_batch_stores_each_new_delivery_once_in_order,
    payload_bytes_survive_exactly,
    a_retried_job_gets_its_payload_again_and_a_pruned_one_never_lends_it,
    an_upgrade_keeps_the_payloads_of_unfinished_jobs,
    a_job_without_its_payload_is_claimed_as_having_none,
    jobs_of_one_pull_request_run_one_at_a_time_in_order,
    jobs_of_one_fleet_run_one_at_a_time,
    an_expired_lease_is_taken_again_and_the_old_holder_is_fenced_off,
    renewing_keeps_a_job_from_being_taken,
    retries_wait_their_turn_and_failure_is_final,
    a_deferred_job_does_not_use_up_an_attempt,
    queued_and_abandoned_jobs_survive_a_restart,
    pruning_removes_only_old_rows,
    many_workers_on_two_handles_run_every_job_exactly_once,
    fleet_locks_are_exclusive_across_handles_and_released,
    reviewed_plans_and_approvals_upsert_and_miss_cleanly,
    an_apply_run_keeps_its_first_record_across_handles,
    a_pull_requests_heads_are_kept_in_time_order_across_handles,
    the_audit_is_newest_first_per_repository_within_the_limit,
    a_lease_is_held_until_it_expires_or_its_owner_takes_it_again,
    lease_tokens_strictly_increase_across_release_and_break,
    a_stale_token_neither_renews_nor_releases,
    racing_takers_on_two_handles_get_one_lease,
    a_closed_store_fails_closed_on_deploy_state,
    a_newer_head_supersedes_the_queued_preflight_but_never_a_command,
    a_delivery_that_needs_no_work_is_known_and_queues_nothing,
    a_deep_queue_behind_one_backoff_does_not_hold_other_work,
    the_next_due_time_is_the_earliest_retry_or_lease_end,
    an_idle_claim_answers_when_to_look_again,
    the_overview_lists_across_fleets_and_repositories_newest_first,
);

const T0: i64 = 1_700_000_000_000;
const LEASE: i64 = 60_000;

fn job(id: &str, pr: Option<u64>) -> NewJob {
    NewJob {
        id: id.to_string(),
        kind: WEBHOOK_JOB.into(),
        event: "pull_request".into(),
        payload: Bytes::from(format!("{{\"id\":\"{id}\"}}")),
        pr_key: pr.map(|n| pr_key("Octo-Org/Fleet", n)).unwrap_or_default(),
        fleet_key: String::new(),
        coalesce_key: String::new(),
        record_only: false,
    }
}

fn fleet_job(id: &str, fleet: &str) -> NewJob {
    NewJob {
        kind: "apply".into(),
        fleet_key: fleet.into(),
        ..job(id, None)
    }
}

async fn claim_id<S: JobQueue>(s: &S, now: i64) -> Option<String> {
    s.claim("w", now, LEASE).await.unwrap().map(|j| j.id)
}

async fn inventory_round_trip<B: Backend>(b: B) {
    let store = b.open().await;
    let target = |cluster: &str| TargetRecord {
        fleet: "f".into(),
        project_key: "a".into(),
        cluster_name: cluster.into(),
        backend: "mk8s".into(),
        status: "deployed".into(),
        node_group_ids: vec!["g1".into(), "g2".into()],
        filesystem_created: true,
        updated_at: 7,
        ..Default::default()
    };
    store.upsert_target(&target("c1")).await.unwrap();
    store.upsert_target(&target("c2")).await.unwrap();
    let mut changed = target("c1");
    changed.status = "destroy-incomplete".into();
    store.upsert_target(&changed).await.unwrap();
    assert_eq!(
        store.targets("f").await.unwrap(),
        vec![changed.clone(), target("c2")]
    );
    assert!(store.targets("other").await.unwrap().is_empty());
    // One target by key, as an apply of one target reads it.
    assert_eq!(store.target("f", "a", "c1").await.unwrap(), Some(changed));
    assert_eq!(store.target("f", "a", "c3").await.unwrap(), None);
    assert_eq!(store.target("other", "a", "c1").await.unwrap(), None);
    store.remove_target("f", "a", "c1").await.unwrap();
    assert_eq!(store.target("f", "a", "c1").await.unwrap(), None);
    assert_eq!(store.targets("f").await.unwrap().len(), 1);
    let project = ProjectRecord {
        fleet: "f".into(),
        project_key: "a".into(),
        project_id: "p".into(),
        project_created: true,
        bucket_name: "b".into(),
        updated_at: 9,
        ..Default::default()
    };
    store.upsert_project(&project).await.unwrap();
    // Another handle (a second replica) reads the same.
    let other = b.open().await;
    assert_eq!(other.projects("f").await.unwrap(), vec![project]);
    other.remove_project("f", "a").await.unwrap();
    assert!(store.projects("f").await.unwrap().is_empty());
    assert!(!store.location().contains("password"));
}

async fn lifecycle_generations_count_destroys_and_outlive_the_record<B: Backend>(b: B) {
    let store = b.open().await;
    assert_eq!(store.generation("f", "a", "c").await.unwrap(), 0);
    store
        .upsert_target(&TargetRecord {
            fleet: "f".into(),
            project_key: "a".into(),
            cluster_name: "c".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    store.bump_generation("f", "a", "c").await.unwrap();
    store.remove_target("f", "a", "c").await.unwrap();
    store.bump_generation("f", "a", "c").await.unwrap();
    // Kept without the record, seen by another handle, and per key: the project's network
    // lifecycle (cluster name '') and other fleets are their own.
    let other = b.open().await;
    assert_eq!(other.generation("f", "a", "c").await.unwrap(), 2);
    assert_eq!(other.generation("f", "a", "").await.unwrap(), 0);
    assert_eq!(other.generation("g", "a", "c").await.unwrap(), 0);
    other.bump_generation("f", "a", "").await.unwrap();
    assert_eq!(store.generation("f", "a", "").await.unwrap(), 1);
}

async fn migrations_apply_once_on_every_open<B: Backend>(b: B) {
    let all: Vec<i64> = MIGRATIONS.iter().map(|(v, _)| *v).collect();
    let first = b.open().await;
    assert_eq!(B::migrations(&first).await, all);
    // Opening again (a restart, or replicas starting together) applies nothing twice.
    let (second, third) = tokio::join!(b.open(), b.open());
    assert_eq!(B::migrations(&second).await, all);
    assert_eq!(B::migrations(&third).await, all);
}

async fn a_delivery_is_stored_once_across_handles<B: Backend>(b: B) {
    let a = b.open().await;
    let replica = b.open().await;
    let d = job("d-1", Some(12));
    assert!(!a.delivery_known("d-1").await.unwrap());
    assert_eq!(a.enqueue_delivery(&d, T0).await.unwrap(), Enqueued::New);
    assert_eq!(
        a.enqueue_delivery(&d, T0 + 1).await.unwrap(),
        Enqueued::Duplicate
    );
    assert_eq!(
        replica.enqueue_delivery(&d, T0 + 2).await.unwrap(),
        Enqueued::Duplicate
    );
    assert!(replica.delivery_known("d-1").await.unwrap());
    assert_eq!(
        a.counts().await.unwrap(),
        QueueCounts {
            deliveries: 1,
            queued: 1,
            ..Default::default()
        }
    );
    // Still a duplicate once it has run.
    let claimed = a.claim("w", T0 + 3, LEASE).await.unwrap().unwrap();
    assert!(a.finish(&claimed, &JobOutcome::Done, T0 + 4).await.unwrap());
    assert_eq!(
        replica.enqueue_delivery(&d, T0 + 5).await.unwrap(),
        Enqueued::Duplicate
    );
    let record = a.job("d-1").await.unwrap().unwrap();
    assert_eq!((record.state.as_str(), record.attempts), ("done", 1));
    assert_eq!(record.pr_key, "octo-org/fleet#12");
    // A job queued without a delivery is deduplicated by its id.
    let follow_up = fleet_job("apply-1", "prod");
    assert_eq!(a.enqueue(&follow_up, T0).await.unwrap(), Enqueued::New);
    assert_eq!(
        replica.enqueue(&follow_up, T0).await.unwrap(),
        Enqueued::Duplicate
    );
    assert!(!a.delivery_known("apply-1").await.unwrap());
}

async fn concurrent_duplicates_store_one_delivery<B: Backend>(b: B) {
    let handles = [b.open().await, b.open().await];
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = handles[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store
                .enqueue_delivery(&job("same-id", Some(1)), T0 + i as i64)
                .await
                .unwrap()
        }));
    }
    let mut new = 0;
    for t in tasks {
        if t.await.unwrap() == Enqueued::New {
            new += 1;
        }
    }
    assert_eq!(new, 1);
    let counts = handles[0].counts().await.unwrap();
    assert_eq!((counts.deliveries, counts.jobs()), (1, 1));
}

async fn a_batch_stores_each_new_delivery_once_in_order<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue_delivery(&job("b", None), T0).await.unwrap();
    let batch = [
        job("a", None),
        job("b", None),
        job("a", None),
        job("c", None),
    ];
    assert_eq!(
        store.enqueue_deliveries(&batch, T0 + 1).await.unwrap(),
        [
            Enqueued::New,
            Enqueued::Duplicate,
            Enqueued::Duplicate,
            Enqueued::New
        ]
    );
    assert!(store.enqueue_deliveries(&[], T0).await.unwrap().is_empty());
    // A full batch of new deliveries, then every job in arrival order.
    let many: Vec<NewJob> = (0..fleetbot::store::queue::MAX_ENQUEUE_BATCH)
        .map(|i| job(&format!("m{i:03}"), Some(7)))
        .collect();
    let answers = store.enqueue_deliveries(&many, T0 + 2).await.unwrap();
    assert!(answers.iter().all(|a| *a == Enqueued::New));
    let counts = store.counts().await.unwrap();
    assert_eq!((counts.deliveries, counts.queued), (67, 67));
    let mut order = Vec::new();
    while let Some(claimed) = store.claim("w", T0 + 3, LEASE).await.unwrap() {
        assert!(
            store
                .finish(&claimed, &JobOutcome::Done, T0 + 3)
                .await
                .unwrap()
        );
        order.push(claimed.id);
    }
    let mut expected = vec!["b".to_string(), "a".into(), "c".into()];
    expected.extend(many.iter().map(|j| j.id.clone()));
    assert_eq!(order, expected);
}

async fn payload_bytes_survive_exactly<B: Backend>(b: B) {
    let store = b.open().await;
    let mut bytes: Vec<u8> = (0..=255u8).collect();
    bytes.extend(std::iter::repeat_n(b'x', 2 << 20));
    let mut d = job("bin", None);
    d.payload = Bytes::from(bytes.clone());
    store.enqueue_delivery(&d, T0).await.unwrap();
    let claimed = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(claimed.payload.as_deref(), Some(bytes.as_slice()));
    assert_eq!(claimed.attempt, 1);
    assert_eq!(claimed.event, "pull_request");
    assert_eq!(claimed.kind, WEBHOOK_JOB);
}

async fn a_retried_job_gets_its_payload_again_and_a_pruned_one_never_lends_it<B: Backend>(b: B) {
    let store = b.open().await;
    let mut d = job("again", None);
    d.payload = Bytes::from_static(b"first body");
    store.enqueue(&d, T0).await.unwrap();
    let claimed = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let retry = JobOutcome::Retry {
        at: T0 + 10,
        error: "busy".into(),
    };
    assert!(store.finish(&claimed, &retry, T0 + 1).await.unwrap());
    let again = store.claim("w", T0 + 10, LEASE).await.unwrap().unwrap();
    assert_eq!(
        (again.attempt, again.payload.as_deref()),
        (2, Some(&b"first body"[..]))
    );
    let failed = JobOutcome::Failed {
        error: "gave up".into(),
    };
    assert!(store.finish(&again, &failed, T0 + 11).await.unwrap());
    assert_eq!(store.prune(T0 + 12).await.unwrap().jobs, 1);
    // The same id queued again after the prune carries its own body, not the old one.
    d.payload = Bytes::from_static(b"second body");
    assert_eq!(store.enqueue(&d, T0 + 20).await.unwrap(), Enqueued::New);
    let claimed = store.claim("w", T0 + 20, LEASE).await.unwrap().unwrap();
    assert_eq!(
        (claimed.attempt, claimed.payload.as_deref()),
        (1, Some(&b"second body"[..]))
    );
}

/// A store written by a fleetbot from before payloads moved out of the `jobs` row: the queued
/// job still runs with its body after the upgrade, and a done one is not brought back.
async fn an_upgrade_keeps_the_payloads_of_unfinished_jobs<B: Backend>(b: B) {
    let before_payloads = 8;
    let mut setup =
        vec!["CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)".into()];
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v <= before_payloads) {
        setup.extend(statements(sql));
        setup.push(format!(
            "INSERT INTO schema_migrations (version) VALUES ({version})"
        ));
    }
    let row = |id: &str, state: &str, seq: i64| {
        format!(
            "INSERT INTO jobs (id, kind, event, payload, state, seq, ready, finished_at) \
             VALUES ('{id}', '{WEBHOOK_JOB}', 'pull_request', {}, '{state}', {seq}, {}, {T0})",
            B::bytes_literal(format!("{{\"n\":{seq}}}").as_bytes()),
            i64::from(state == "queued")
        )
    };
    setup.extend([row("old-done", "done", 1), row("old-queued", "queued", 2)]);
    b.execute(&setup).await;
    let store = b.open().await;
    let all: Vec<i64> = MIGRATIONS.iter().map(|(v, _)| *v).collect();
    assert_eq!(B::migrations(&store).await, all);
    let claimed = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(claimed.id, "old-queued");
    assert_eq!(claimed.payload.as_deref(), Some(&br#"{"n":2}"#[..]));
    assert!(store.claim("w", T0, LEASE).await.unwrap().is_none());
}

/// A queued job whose payload row is gone (a store edited by hand) is handed out as having
/// none, not an empty body, so the worker can say so instead of failing on a parse.
async fn a_job_without_its_payload_is_claimed_as_having_none<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue(&job("bare", None), T0).await.unwrap();
    b.execute(&["DELETE FROM job_payloads WHERE id = 'bare'".into()])
        .await;
    let claimed = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!((claimed.id.as_str(), claimed.payload), ("bare", None));
}

async fn jobs_of_one_pull_request_run_one_at_a_time_in_order<B: Backend>(b: B) {
    let store = b.open().await;
    for (id, pr) in [("a1", 1), ("a2", 1), ("b1", 2), ("a3", 1), ("b2", 2)] {
        store
            .enqueue_delivery(&job(id, Some(pr)), T0)
            .await
            .unwrap();
    }
    store
        .enqueue_delivery(&job("free", None), T0)
        .await
        .unwrap();
    let first = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(first.id, "a1");
    // PR 1 is busy: the next is PR 2's oldest, then the job without a pull request.
    let second = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(second.id, "b1");
    assert_eq!(claim_id(&store, T0).await.as_deref(), Some("free"));
    assert_eq!(claim_id(&store, T0).await, None);
    assert!(store.finish(&first, &JobOutcome::Done, T0).await.unwrap());
    assert_eq!(claim_id(&store, T0).await.as_deref(), Some("a2"));
    assert_eq!(claim_id(&store, T0).await, None);
    assert!(store.finish(&second, &JobOutcome::Done, T0).await.unwrap());
    assert_eq!(claim_id(&store, T0).await.as_deref(), Some("b2"));
    let counts = store.counts().await.unwrap();
    assert_eq!((counts.queued, counts.running, counts.done), (1, 3, 2));
}

async fn jobs_of_one_fleet_run_one_at_a_time<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue(&fleet_job("p1", "prod"), T0).await.unwrap();
    store.enqueue(&fleet_job("p2", "prod"), T0).await.unwrap();
    store
        .enqueue(&fleet_job("s1", "staging"), T0)
        .await
        .unwrap();
    let p1 = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(p1.fleet_key, "prod");
    assert_eq!(claim_id(&store, T0).await.as_deref(), Some("s1"));
    assert_eq!(claim_id(&store, T0).await, None);
    let outcome = JobOutcome::Failed {
        error: "boom".into(),
    };
    assert!(store.finish(&p1, &outcome, T0).await.unwrap());
    // A failed job no longer holds its fleet.
    assert_eq!(claim_id(&store, T0).await.as_deref(), Some("p2"));
    let failed = store.job("p1").await.unwrap().unwrap();
    assert_eq!(
        (failed.state.as_str(), failed.last_error.as_str()),
        ("failed", "boom")
    );
}

async fn an_expired_lease_is_taken_again_and_the_old_holder_is_fenced_off<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    store
        .enqueue_delivery(&job("j", Some(5)), T0)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("k", Some(5)), T0)
        .await
        .unwrap();
    let crashed = store.claim("dead", T0, LEASE).await.unwrap().unwrap();
    // Within the lease nobody takes it, nor the next job of its pull request.
    assert_eq!(claim_id(&replica, T0 + LEASE - 1).await, None);
    let taken = replica
        .claim("alive", T0 + LEASE + 1, LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((taken.id.as_str(), taken.attempt), ("j", 2));
    assert_ne!(taken.lease_token, crashed.lease_token);
    // The first holder comes back: it can neither renew nor finish.
    assert!(!store.renew(&crashed, T0 + 10 * LEASE).await.unwrap());
    assert!(
        !store
            .finish(&crashed, &JobOutcome::Done, T0 + LEASE + 2)
            .await
            .unwrap()
    );
    assert_eq!(store.job("j").await.unwrap().unwrap().state, "running");
    assert!(
        replica
            .finish(&taken, &JobOutcome::Done, T0 + LEASE + 3)
            .await
            .unwrap()
    );
    assert_eq!(claim_id(&store, T0 + LEASE + 4).await.as_deref(), Some("k"));
}

async fn renewing_keeps_a_job_from_being_taken<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue_delivery(&job("j", None), T0).await.unwrap();
    let held = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert!(store.renew(&held, T0 + 3 * LEASE).await.unwrap());
    assert_eq!(claim_id(&store, T0 + 2 * LEASE).await, None);
    assert_eq!(
        claim_id(&store, T0 + 3 * LEASE + 1).await.as_deref(),
        Some("j")
    );
}

async fn retries_wait_their_turn_and_failure_is_final<B: Backend>(b: B) {
    let store = b.open().await;
    store
        .enqueue_delivery(&job("r", Some(9)), T0)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("later", Some(9)), T0)
        .await
        .unwrap();
    let first = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let retry = JobOutcome::Retry {
        at: T0 + 30_000,
        error: "GitHub said 502".into(),
    };
    assert!(store.finish(&first, &retry, T0 + 10).await.unwrap());
    // Neither the retried job nor the next one of its pull request runs before the retry.
    assert_eq!(claim_id(&store, T0 + 29_999).await, None);
    let second = store.claim("w", T0 + 30_000, LEASE).await.unwrap().unwrap();
    assert_eq!((second.id.as_str(), second.attempt), ("r", 2));
    let record = store.job("r").await.unwrap().unwrap();
    assert_eq!(record.last_error, "GitHub said 502");
    let failed = JobOutcome::Failed {
        error: "gave up".into(),
    };
    assert!(store.finish(&second, &failed, T0 + 30_001).await.unwrap());
    assert_eq!(store.job("r").await.unwrap().unwrap().state, "failed");
    let later = store.claim("w", T0 + 40_000, LEASE).await.unwrap().unwrap();
    assert_eq!(later.id, "later");
    assert!(
        store
            .finish(&later, &JobOutcome::Done, T0 + 40_001)
            .await
            .unwrap()
    );
    assert_eq!(claim_id(&store, T0 + 10 * LEASE).await, None, "never again");
}

async fn a_deferred_job_does_not_use_up_an_attempt<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue(&fleet_job("d", "prod"), T0).await.unwrap();
    let first = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let defer = JobOutcome::Deferred { at: T0 + 1_000 };
    assert!(store.finish(&first, &defer, T0).await.unwrap());
    assert_eq!(claim_id(&store, T0 + 999).await, None);
    let again = store.claim("w", T0 + 1_000, LEASE).await.unwrap().unwrap();
    assert_eq!(again.attempt, 1);
}

async fn queued_and_abandoned_jobs_survive_a_restart<B: Backend>(b: B) {
    {
        let before = b.open().await;
        before
            .enqueue_delivery(&job("q1", Some(1)), T0)
            .await
            .unwrap();
        before
            .enqueue_delivery(&job("q2", Some(2)), T0)
            .await
            .unwrap();
        // q1 was running when the process died.
        before.claim("gone", T0, LEASE).await.unwrap().unwrap();
        B::close(&before).await;
    }
    let after = b.open().await;
    assert_eq!(after.counts().await.unwrap().jobs(), 2);
    assert_eq!(claim_id(&after, T0 + 1).await.as_deref(), Some("q2"));
    assert_eq!(
        claim_id(&after, T0 + LEASE + 1).await.as_deref(),
        Some("q1")
    );
    assert!(
        after
            .enqueue_delivery(&job("q1", Some(1)), T0 + 2)
            .await
            .unwrap()
            == Enqueued::Duplicate,
        "the inbox survived too"
    );
}

async fn pruning_removes_only_old_rows<B: Backend>(b: B) {
    let store = b.open().await;
    store.enqueue_delivery(&job("old", None), T0).await.unwrap();
    store
        .enqueue_delivery(&job("old-open", None), T0)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("new", None), T0 + 100_000)
        .await
        .unwrap();
    let old = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    assert_eq!(old.id, "old");
    assert!(store.finish(&old, &JobOutcome::Done, T0 + 1).await.unwrap());
    let pruned = store.prune(T0 + 50_000).await.unwrap();
    // Both old delivery ids go; of the jobs only the finished one (an open job is never lost).
    assert_eq!((pruned.deliveries, pruned.jobs), (2, 1));
    assert!(!store.delivery_known("old").await.unwrap());
    assert!(store.delivery_known("new").await.unwrap());
    assert!(store.job("old").await.unwrap().is_none());
    assert_eq!(
        store.job("old-open").await.unwrap().unwrap().state,
        "queued"
    );
    // Past the retention a redelivery is new again; one whose job is still kept is not.
    assert_eq!(
        store
            .enqueue_delivery(&job("old", None), T0 + 60_000)
            .await
            .unwrap(),
        Enqueued::New
    );
    assert_eq!(
        store
            .enqueue_delivery(&job("old-open", None), T0 + 60_000)
            .await
            .unwrap(),
        Enqueued::Duplicate
    );
}

/// Eight workers on two handles (two replicas) race for 160 jobs over 8 pull requests and
/// some without one: every job runs exactly once, and no two jobs of one pull request ever
/// run at the same time.
async fn many_workers_on_two_handles_run_every_job_exactly_once<B: Backend>(b: B) {
    let handles = [b.open().await, b.open().await];
    let now = now_ms();
    let mut total = 0;
    for i in 0..160u64 {
        let pr = (i % 5 != 0).then_some(i % 8);
        let d = job(&format!("job-{i:03}"), pr);
        assert_eq!(
            handles[(i % 2) as usize]
                .enqueue_delivery(&d, now)
                .await
                .unwrap(),
            Enqueued::New
        );
        total += 1;
    }
    let runs: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let busy: Arc<Mutex<HashSet<String>>> = Arc::default();
    let finished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for w in 0..8 {
        let store = handles[w % 2].clone();
        let (runs, busy, finished) = (runs.clone(), busy.clone(), finished.clone());
        workers.push(tokio::spawn(async move {
            while finished.load(std::sync::atomic::Ordering::SeqCst) < total {
                let Some(job) = store
                    .claim(&format!("w{w}"), now_ms(), LEASE)
                    .await
                    .unwrap()
                else {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                };
                if !job.pr_key.is_empty() {
                    assert!(
                        busy.lock().unwrap().insert(job.pr_key.clone()),
                        "two jobs of {} ran at once",
                        job.pr_key
                    );
                }
                *runs.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                tokio::task::yield_now().await;
                // Cleared before the store hears of it: only then may the next job of this
                // pull request be claimed.
                if !job.pr_key.is_empty() {
                    busy.lock().unwrap().remove(&job.pr_key);
                }
                assert!(
                    store
                        .finish(&job, &JobOutcome::Done, now_ms())
                        .await
                        .unwrap()
                );
                finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }));
    }
    let all = async {
        for w in workers {
            w.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(120), all)
        .await
        .expect("every job ran in time");
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len(), total);
    assert!(runs.values().all(|n| *n == 1), "{runs:?}");
    assert_eq!(handles[1].counts().await.unwrap().done, total as u64);
}

async fn fleet_locks_are_exclusive_across_handles_and_released<B: Backend>(b: B) {
    let a = b.open().await;
    let replica = b.open().await;
    let lock = a.try_lock_fleet("prod").await.unwrap().expect("free");
    assert_eq!(lock.fleet(), "prod");
    assert!(replica.try_lock_fleet("prod").await.unwrap().is_none());
    assert!(a.try_lock_fleet("prod").await.unwrap().is_none());
    let staging = replica
        .try_lock_fleet("staging")
        .await
        .unwrap()
        .expect("another fleet");
    lock.release().await.unwrap();
    let again = replica
        .try_lock_fleet("prod")
        .await
        .unwrap()
        .expect("released");
    // A lock dropped without release (a panicking job) is released too, each on its own
    // time (on PostgreSQL after the drop, not during it).
    drop(again);
    drop(staging);
    for fleet in ["prod", "staging"] {
        let mut retook = None;
        for _ in 0..100 {
            if let Some(l) = a.try_lock_fleet(fleet).await.unwrap() {
                retook = Some(l);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            retook.is_some(),
            "the dropped lock of {fleet} was never released"
        );
    }
}

fn plan(head: &str, fleet: &str, digest: &str, at: i64) -> ReviewedPlan {
    ReviewedPlan {
        pr_key: pr_key("Octo-Org/Fleet", 7),
        head_sha: head.into(),
        fleet_path: fleet.into(),
        digest: digest.into(),
        summary: format!("{{\"lines\":[\"{digest}\"]}}"),
        recorded_at: at,
    }
}

async fn an_apply_run_keeps_its_first_record_across_handles<B: Backend>(b: B) {
    use fleetbot::store::ApplyRun;
    let store = b.open().await;
    let replica = b.open().await;
    let run = |digest: &str, approved: bool| ApplyRun {
        job_id: "apply:o/r#7@abc:merge".into(),
        fleet_path: "fleets/a.yaml".into(),
        digest: digest.into(),
        destructive_approved: approved,
        started_at: T0,
    };
    assert_eq!(
        store
            .apply_run("apply:o/r#7@abc:merge", "fleets/a.yaml")
            .await
            .unwrap(),
        None
    );
    store.record_apply_run(&run("d1", true)).await.unwrap();
    // A resumed job records again: what it was allowed when it first passed stays.
    replica.record_apply_run(&run("d2", false)).await.unwrap();
    assert_eq!(
        replica
            .apply_run("apply:o/r#7@abc:merge", "fleets/a.yaml")
            .await
            .unwrap(),
        Some(run("d1", true))
    );
    assert_eq!(
        store
            .apply_run("apply:o/r#7@abc:merge", "fleets/b.yaml")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.apply_run("other", "fleets/a.yaml").await.unwrap(),
        None
    );
}

async fn reviewed_plans_and_approvals_upsert_and_miss_cleanly<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    let pr = pr_key("Octo-Org/Fleet", 7);
    assert_eq!(
        store
            .reviewed_plan(&pr, "h1", "fleets/a.yaml")
            .await
            .unwrap(),
        None
    );
    store
        .record_reviewed_plan(&plan("h1", "fleets/a.yaml", "d1", T0))
        .await
        .unwrap();
    store
        .record_reviewed_plan(&plan("h1", "fleets/b.yaml", "e1", T0))
        .await
        .unwrap();
    // A later preflight of the same head replaces the plan; another head is its own.
    let latest = plan("h1", "fleets/a.yaml", "d2", T0 + 5);
    replica.record_reviewed_plan(&latest).await.unwrap();
    store
        .record_reviewed_plan(&plan("h2", "fleets/a.yaml", "d3", T0 + 9))
        .await
        .unwrap();
    assert_eq!(
        store
            .reviewed_plan(&pr, "h1", "fleets/a.yaml")
            .await
            .unwrap(),
        Some(latest)
    );
    assert_eq!(
        replica
            .reviewed_plan(&pr, "h1", "fleets/b.yaml")
            .await
            .unwrap()
            .map(|p| p.digest),
        Some("e1".into())
    );
    assert_eq!(
        store
            .reviewed_plan(&pr, "h2", "fleets/a.yaml")
            .await
            .unwrap()
            .map(|p| p.digest),
        Some("d3".into())
    );
    assert_eq!(
        store
            .reviewed_plan(&pr, "h3", "fleets/a.yaml")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .reviewed_plan("other#1", "h1", "fleets/a.yaml")
            .await
            .unwrap(),
        None
    );

    let approval = |approver: &str, digest: &str, at: i64| Approval {
        pr_key: pr.clone(),
        fleet_path: "fleets/a.yaml".into(),
        digest: digest.into(),
        approver: approver.into(),
        approved_at: at,
    };
    assert_eq!(
        store.approval(&pr, "fleets/a.yaml", "d2").await.unwrap(),
        None
    );
    store
        .record_approval(&approval("alice", "d2", T0))
        .await
        .unwrap();
    replica
        .record_approval(&approval("bob", "d2", T0 + 1))
        .await
        .unwrap();
    store
        .record_approval(&approval("carol", "d3", T0 + 2))
        .await
        .unwrap();
    assert_eq!(
        store.approval(&pr, "fleets/a.yaml", "d2").await.unwrap(),
        Some(approval("bob", "d2", T0 + 1))
    );
    assert_eq!(
        replica.approval(&pr, "fleets/a.yaml", "d3").await.unwrap(),
        Some(approval("carol", "d3", T0 + 2))
    );
    // An approval is of one digest and one fleet: a changed plan is not approved.
    assert_eq!(
        store.approval(&pr, "fleets/a.yaml", "d4").await.unwrap(),
        None
    );
    assert_eq!(
        store.approval(&pr, "fleets/b.yaml", "d2").await.unwrap(),
        None
    );
}

async fn a_pull_requests_heads_are_kept_in_time_order_across_handles<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    let pr = pr_key("Octo-Org/Fleet", 7);
    assert!(store.pr_heads(&pr).await.unwrap().is_empty());
    // Recorded out of order and on two handles; a force-push back to `a` is a row of its own,
    // and recording one head at one instant twice (a retried job) keeps one row.
    store.record_pr_head(&pr, "b", T0 + 20).await.unwrap();
    replica.record_pr_head(&pr, "a", T0 + 10).await.unwrap();
    store.record_pr_head(&pr, "a", T0 + 30).await.unwrap();
    replica.record_pr_head(&pr, "b", T0 + 20).await.unwrap();
    store
        .record_pr_head(&pr_key("octo-org/fleet", 8), "c", T0)
        .await
        .unwrap();
    let heads: Vec<(String, i64)> = replica
        .pr_heads(&pr)
        .await
        .unwrap()
        .into_iter()
        .map(|h| (h.head_sha, h.seen_at))
        .collect();
    assert_eq!(
        heads,
        vec![
            ("a".to_string(), T0 + 10),
            ("b".to_string(), T0 + 20),
            ("a".to_string(), T0 + 30),
        ]
    );
}

fn entry(repo: &str, at: i64, action: &str) -> AuditEntry {
    AuditEntry {
        at,
        actor: "octocat".into(),
        action: action.into(),
        repo: repo.into(),
        pr: 42,
        sha: "0123abc".into(),
        fleet: "fleets/prod.yaml".into(),
        outcome: "ok".into(),
        digest: "sha256:d".into(),
        detail: "applied 2 targets; it's \"quoted\"".into(),
    }
}

async fn the_audit_is_newest_first_per_repository_within_the_limit<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    assert!(store.audit("octo-org/fleet", 10).await.unwrap().is_empty());
    // Appended out of time order, two in one millisecond, and in two spellings of the name.
    let e1 = entry("Octo-Org/Fleet", T0 + 10, "plan");
    let e2 = entry("octo-org/fleet", T0 + 30, "approve-destroy");
    let e3 = entry("Octo-Org/Fleet", T0 + 20, "apply");
    let e4 = entry("OCTO-ORG/FLEET", T0 + 30, "unlock");
    let other = AuditEntry {
        pr: u64::from(u32::MAX) + 1,
        ..entry("octo-org/other", T0 + 40, "apply")
    };
    store.append_audit(&e1).await.unwrap();
    replica.append_audit(&e2).await.unwrap();
    store.append_audit(&e3).await.unwrap();
    store.append_audit(&other).await.unwrap();
    replica.append_audit(&e4).await.unwrap();
    // The same record twice is two records: the audit never deduplicates.
    store.append_audit(&e1).await.unwrap();

    let all = replica.audit("Octo-Org/Fleet", 100).await.unwrap();
    assert_eq!(
        all,
        vec![e4.clone(), e2.clone(), e3.clone(), e1.clone(), e1.clone()]
    );
    assert_eq!(
        store.audit("octo-org/FLEET", 2).await.unwrap(),
        vec![e4, e2]
    );
    assert!(store.audit("octo-org/fleet", 0).await.unwrap().is_empty());
    assert_eq!(
        store.audit("octo-org/other", 10).await.unwrap(),
        vec![other]
    );
    assert!(store.audit("octo-org/none", 10).await.unwrap().is_empty());
    assert!(store.audit("octo-org", 10).await.unwrap().is_empty());
}

fn acquired(take: LeaseTake) -> Lease {
    match take {
        LeaseTake::Acquired(lease) => lease,
        LeaseTake::Held(lease) => panic!("expected to acquire, held by {lease:?}"),
    }
}

fn held(take: LeaseTake) -> Lease {
    match take {
        LeaseTake::Held(lease) => lease,
        LeaseTake::Acquired(lease) => panic!("expected held, acquired {lease:?}"),
    }
}

async fn a_lease_is_held_until_it_expires_or_its_owner_takes_it_again<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    assert_eq!(store.lease("prod", T0).await.unwrap(), None);
    let first = acquired(
        store
            .take_lease("prod", "job-1", "replica-a", T0, LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(
        (
            first.fleet_key.as_str(),
            first.owner.as_str(),
            first.holder.as_str()
        ),
        ("prod", "job-1", "replica-a")
    );
    assert_eq!(first.expires_at, T0 + LEASE);
    assert_eq!(
        replica.lease("prod", T0 + 1).await.unwrap(),
        Some(first.clone())
    );
    // Another owner, on either handle, is told who holds it; other fleets are free.
    assert_eq!(
        held(
            replica
                .take_lease("prod", "job-2", "replica-b", T0 + 1, LEASE)
                .await
                .unwrap()
        ),
        first
    );
    assert_eq!(
        held(
            store
                .take_lease("prod", "job-2", "replica-a", T0 + LEASE - 1, LEASE)
                .await
                .unwrap()
        ),
        first
    );
    let staging = acquired(
        replica
            .take_lease("staging", "job-2", "replica-b", T0 + 1, LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(staging.owner, "job-2");
    // The owner resumed elsewhere re-takes its own lease, with a new token and holder.
    let resumed = acquired(
        replica
            .take_lease("prod", "job-1", "replica-b", T0 + 2, LEASE)
            .await
            .unwrap(),
    );
    assert!(resumed.token > first.token);
    assert_eq!(
        (resumed.holder.as_str(), resumed.expires_at),
        ("replica-b", T0 + 2 + LEASE)
    );
    // Expired (expires_at <= now) it is free: lease() shows none and anyone takes it over.
    assert_eq!(store.lease("prod", T0 + 2 + LEASE).await.unwrap(), None);
    assert_eq!(
        store.lease("prod", T0 + 1 + LEASE).await.unwrap(),
        Some(resumed.clone())
    );
    let taken_over = acquired(
        store
            .take_lease("prod", "job-3", "replica-a", T0 + 2 + LEASE, LEASE)
            .await
            .unwrap(),
    );
    assert!(taken_over.token > resumed.token);
    assert_eq!(
        replica.lease("prod", T0 + 3 + LEASE).await.unwrap(),
        Some(taken_over)
    );
    // An empty owner would read as a free lease: refused.
    assert!(
        store
            .take_lease("qa", "", "replica-a", T0, LEASE)
            .await
            .is_err()
    );
    assert_eq!(store.lease("qa", T0).await.unwrap(), None);
}

async fn lease_tokens_strictly_increase_across_release_and_break<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    let mut tokens = Vec::new();
    let mut now = T0;
    for round in 0..3 {
        // Released (from the second round on, taken over from an expired lease first).
        let lease = acquired(
            store
                .take_lease("prod", &format!("r{round}"), "a", now, LEASE)
                .await
                .unwrap(),
        );
        tokens.push(lease.token);
        assert!(replica.release_lease(&lease).await.unwrap());
        assert_eq!(store.lease("prod", now).await.unwrap(), None);
        // Broken by /unlock, which returns what it freed.
        let lease = acquired(
            replica
                .take_lease("prod", &format!("b{round}"), "b", now, LEASE)
                .await
                .unwrap(),
        );
        tokens.push(lease.token);
        assert_eq!(store.break_lease("prod").await.unwrap(), Some(lease));
        assert_eq!(store.lease("prod", now).await.unwrap(), None);
        // Taken after the break, then re-taken by its owner, and left to expire.
        let lease = acquired(
            store
                .take_lease("prod", &format!("e{round}"), "a", now, LEASE)
                .await
                .unwrap(),
        );
        tokens.push(lease.token);
        now += LEASE;
        let lease = acquired(
            replica
                .take_lease("prod", &format!("e{round}"), "b", now - 1, LEASE)
                .await
                .unwrap(),
        );
        tokens.push(lease.token);
        now += LEASE;
    }
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens must strictly increase: {tokens:?}"
    );
    // Breaking a free fleet, or one never leased, frees nothing.
    assert!(store.break_lease("prod").await.unwrap().is_some());
    assert_eq!(store.break_lease("prod").await.unwrap(), None);
    assert_eq!(replica.break_lease("never").await.unwrap(), None);
    // /unlock frees an expired lease too, and returns it.
    let expired = acquired(
        store
            .take_lease("prod", "late", "a", now, LEASE)
            .await
            .unwrap(),
    );
    assert!(expired.token > *tokens.last().unwrap());
    assert_eq!(store.lease("prod", now + LEASE).await.unwrap(), None);
    assert_eq!(replica.break_lease("prod").await.unwrap(), Some(expired));
    // Still counting after a restart.
    B::close(&store).await;
    let reopened = b.open().await;
    let after = acquired(
        reopened
            .take_lease("prod", "after", "a", now, LEASE)
            .await
            .unwrap(),
    );
    assert!(after.token > *tokens.last().unwrap() + 1);
}

async fn a_stale_token_neither_renews_nor_releases<B: Backend>(b: B) {
    let store = b.open().await;
    let replica = b.open().await;
    let first = acquired(
        store
            .take_lease("prod", "job-1", "a", T0, LEASE)
            .await
            .unwrap(),
    );
    // The current token renews; a renewed lease is held past its first expiry.
    assert!(store.renew_lease(&first, T0 + 3 * LEASE).await.unwrap());
    assert_eq!(
        held(
            replica
                .take_lease("prod", "job-2", "b", T0 + 2 * LEASE, LEASE)
                .await
                .unwrap()
        )
        .expires_at,
        T0 + 3 * LEASE
    );
    // Taken over after expiry: the first holder's token is stale.
    let second = acquired(
        replica
            .take_lease("prod", "job-2", "b", T0 + 3 * LEASE, LEASE)
            .await
            .unwrap(),
    );
    assert!(!store.renew_lease(&first, T0 + 10 * LEASE).await.unwrap());
    assert!(!store.release_lease(&first).await.unwrap());
    assert_eq!(
        store.lease("prod", T0 + 3 * LEASE).await.unwrap(),
        Some(second.clone())
    );
    // The same owner re-taking makes its own older token stale too.
    let third = acquired(
        store
            .take_lease("prod", "job-2", "a", T0 + 3 * LEASE, LEASE)
            .await
            .unwrap(),
    );
    assert!(!replica.renew_lease(&second, T0 + 10 * LEASE).await.unwrap());
    assert!(!replica.release_lease(&second).await.unwrap());
    // Broken: the holder can neither renew nor release any more, and a second release of a
    // released lease is refused.
    assert_eq!(
        replica.break_lease("prod").await.unwrap(),
        Some(third.clone())
    );
    assert!(!store.renew_lease(&third, T0 + 10 * LEASE).await.unwrap());
    assert!(!store.release_lease(&third).await.unwrap());
    assert_eq!(store.lease("prod", T0 + 3 * LEASE).await.unwrap(), None);
    let fourth = acquired(
        store
            .take_lease("prod", "job-4", "a", T0 + 3 * LEASE, LEASE)
            .await
            .unwrap(),
    );
    assert!(store.release_lease(&fourth).await.unwrap());
    assert!(!store.release_lease(&fourth).await.unwrap());
    assert!(!store.renew_lease(&fourth, T0 + 10 * LEASE).await.unwrap());
    assert_eq!(store.lease("prod", T0 + 3 * LEASE).await.unwrap(), None);
}

/// Eight takers on two handles (two replicas) race for one fleet: exactly one acquires, and
/// every other is told that one holds it.
async fn racing_takers_on_two_handles_get_one_lease<B: Backend>(b: B) {
    let handles = [b.open().await, b.open().await];
    for round in 0..5i64 {
        let now = T0 + round * 10 * LEASE;
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let mut tasks = Vec::new();
        for i in 0..8 {
            let store = handles[i % 2].clone();
            let barrier = barrier.clone();
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .take_lease(
                        "prod",
                        &format!("job-{round}-{i}"),
                        &format!("w{i}"),
                        now,
                        LEASE,
                    )
                    .await
                    .unwrap()
            }));
        }
        let mut winners = Vec::new();
        let mut holders = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                LeaseTake::Acquired(lease) => winners.push(lease),
                LeaseTake::Held(lease) => holders.push(lease),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        assert!(holders.iter().all(|h| *h == winners[0]), "{holders:?}");
        assert_eq!(
            handles[1].lease("prod", now).await.unwrap(),
            Some(winners[0].clone())
        );
    }
}

/// A store that cannot be reached answers every deploy read and write with an error, never
/// with "no plan", "no approval", "no audit" or "free".
async fn a_closed_store_fails_closed_on_deploy_state<B: Backend>(b: B) {
    let store = b.open().await;
    let lease = acquired(
        store
            .take_lease("prod", "job-1", "a", T0, LEASE)
            .await
            .unwrap(),
    );
    store
        .record_reviewed_plan(&plan("h1", "fleets/a.yaml", "d1", T0))
        .await
        .unwrap();
    B::close(&store).await;
    let unreadable = |e: StoreError| {
        assert!(matches!(e, StoreError::Unreadable { .. }), "{e:?}");
        assert!(e.to_string().contains("unreadable"), "{e}");
    };
    let pr = pr_key("Octo-Org/Fleet", 7);
    unreadable(
        store
            .reviewed_plan(&pr, "h1", "fleets/a.yaml")
            .await
            .unwrap_err(),
    );
    unreadable(
        store
            .approval(&pr, "fleets/a.yaml", "d1")
            .await
            .unwrap_err(),
    );
    unreadable(store.audit("octo-org/fleet", 10).await.unwrap_err());
    unreadable(store.pr_heads(&pr).await.unwrap_err());
    unreadable(store.lease("prod", T0).await.unwrap_err());
    let written = |e: StoreError| {
        assert!(matches!(e, StoreError::Write { .. }), "{e:?}");
    };
    written(
        store
            .record_reviewed_plan(&plan("h1", "fleets/a.yaml", "d2", T0))
            .await
            .unwrap_err(),
    );
    written(
        store
            .append_audit(&entry("octo-org/fleet", T0, "apply"))
            .await
            .unwrap_err(),
    );
    written(store.record_pr_head(&pr, "h2", T0).await.unwrap_err());
    written(
        store
            .take_lease("prod", "job-2", "a", T0 + LEASE, LEASE)
            .await
            .unwrap_err(),
    );
    written(store.renew_lease(&lease, T0 + LEASE).await.unwrap_err());
    written(store.release_lease(&lease).await.unwrap_err());
    written(store.break_lease("prod").await.unwrap_err());
    // Nothing was lost: a new handle sees the state as it was.
    let reopened = b.open().await;
    assert_eq!(reopened.lease("prod", T0).await.unwrap(), Some(lease));
    assert_eq!(
        reopened
            .reviewed_plan(&pr, "h1", "fleets/a.yaml")
            .await
            .unwrap()
            .map(|p| p.digest),
        Some("d1".into())
    );
}

fn preflight(id: &str, pr: u64) -> NewJob {
    let j = job(id, Some(pr));
    NewJob {
        coalesce_key: format!("preflight:{}", j.pr_key),
        ..j
    }
}

async fn a_newer_head_supersedes_the_queued_preflight_but_never_a_command<B: Backend>(b: B) {
    let store = b.open().await;
    // p1 is started and backs off: it ran, so a newer head does not drop it.
    store
        .enqueue_delivery(&preflight("p1", 5), T0)
        .await
        .unwrap();
    let started = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let retry = JobOutcome::Retry {
        at: T0 + 1_000,
        error: "502".into(),
    };
    assert!(store.finish(&started, &retry, T0 + 1).await.unwrap());
    store
        .enqueue_delivery(&preflight("p2", 5), T0 + 2)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("command", Some(5)), T0 + 3)
        .await
        .unwrap();
    store
        .enqueue_delivery(&preflight("p3", 5), T0 + 4)
        .await
        .unwrap();
    // Another pull request's preflight is not this one's to drop.
    store
        .enqueue_delivery(&preflight("other", 6), T0 + 5)
        .await
        .unwrap();
    let p2 = store.job("p2").await.unwrap().unwrap();
    assert_eq!(p2.state, "done");
    assert!(p2.last_error.contains("superseded"), "{}", p2.last_error);
    assert_eq!(store.job("p1").await.unwrap().unwrap().state, "queued");
    assert_eq!(store.job("command").await.unwrap().unwrap().state, "queued");
    assert_eq!(store.job("other").await.unwrap().unwrap().state, "queued");

    // In order: the retried p1 when due, the command, then the newest head.
    let mut order = Vec::new();
    let mut now = T0 + 1_000;
    while let Some(j) = store.claim("w", now, LEASE).await.unwrap() {
        assert!(store.finish(&j, &JobOutcome::Done, now).await.unwrap());
        order.push(j.id);
        now += 1;
    }
    order.retain(|id| id != "other");
    assert_eq!(order, ["p1", "command", "p3"]);
}

async fn a_delivery_that_needs_no_work_is_known_and_queues_nothing<B: Backend>(b: B) {
    let store = b.open().await;
    let quiet = NewJob {
        record_only: true,
        ..job("chatter", Some(2))
    };
    assert_eq!(
        store.enqueue_delivery(&quiet, T0).await.unwrap(),
        Enqueued::New
    );
    assert!(store.delivery_known("chatter").await.unwrap());
    assert_eq!(store.job("chatter").await.unwrap(), None);
    assert_eq!(
        store.enqueue_delivery(&quiet, T0 + 1).await.unwrap(),
        Enqueued::Duplicate
    );
    assert_eq!(claim_id(&store, T0 + 2).await, None);
    // It holds nothing back either.
    store
        .enqueue_delivery(&job("work", Some(2)), T0 + 3)
        .await
        .unwrap();
    assert_eq!(claim_id(&store, T0 + 4).await.as_deref(), Some("work"));
}

async fn a_deep_queue_behind_one_backoff_does_not_hold_other_work<B: Backend>(b: B) {
    let store = b.open().await;
    store
        .enqueue_delivery(&job("head", Some(1)), T0)
        .await
        .unwrap();
    let head = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let retry = JobOutcome::Retry {
        at: T0 + 3_600_000,
        error: "GitHub is down".into(),
    };
    assert!(store.finish(&head, &retry, T0 + 1).await.unwrap());
    let behind: Vec<NewJob> = (0..2_000)
        .map(|i| job(&format!("behind-{i}"), Some(1)))
        .collect();
    for chunk in behind.chunks(64) {
        store.enqueue_deliveries(chunk, T0 + 2).await.unwrap();
    }
    assert_eq!(
        claim_id(&store, T0 + 3).await,
        None,
        "all of pull request 1 waits for its head"
    );
    store
        .enqueue_delivery(&job("elsewhere", Some(2)), T0 + 4)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("keyless", None), T0 + 5)
        .await
        .unwrap();
    for (want, now) in [("elsewhere", T0 + 6), ("keyless", T0 + 7)] {
        let other = store.claim("w", now, LEASE).await.unwrap().unwrap();
        assert_eq!(other.id, want);
        assert!(store.finish(&other, &JobOutcome::Done, now).await.unwrap());
    }
    // When the head finally succeeds, its successors follow in arrival order.
    let head = store
        .claim("w", T0 + 3_600_000, LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.id, "head");
    assert!(
        store
            .finish(&head, &JobOutcome::Done, T0 + 3_600_001)
            .await
            .unwrap()
    );
    for i in 0..3 {
        let next = store
            .claim("w", T0 + 3_600_002, LEASE)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next.id, format!("behind-{i}"));
        assert!(
            store
                .finish(&next, &JobOutcome::Done, T0 + 3_600_003)
                .await
                .unwrap()
        );
    }
}

async fn the_next_due_time_is_the_earliest_retry_or_lease_end<B: Backend>(b: B) {
    let store = b.open().await;
    assert_eq!(store.next_due().await.unwrap(), None);
    store
        .enqueue_delivery(&job("a", Some(1)), T0)
        .await
        .unwrap();
    store
        .enqueue_delivery(&job("b", Some(2)), T0)
        .await
        .unwrap();
    assert_eq!(store.next_due().await.unwrap(), Some(T0));
    let a = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let b_job = store.claim("w", T0, LEASE).await.unwrap().unwrap();
    let retry = JobOutcome::Retry {
        at: T0 + 90_000,
        error: "502".into(),
    };
    assert!(store.finish(&a, &retry, T0 + 1).await.unwrap());
    // b runs on a lease that ends at T0 + LEASE, before a's retry.
    assert_eq!(store.next_due().await.unwrap(), Some(T0 + LEASE));
    assert!(
        store
            .finish(&b_job, &JobOutcome::Done, T0 + 2)
            .await
            .unwrap()
    );
    assert_eq!(store.next_due().await.unwrap(), Some(T0 + 90_000));
}

/// What an idle worker asks before it sleeps, in one call: a runnable job is claimed as
/// `claim` would claim it, and with nothing runnable the answer is `next_due`'s.
async fn an_idle_claim_answers_when_to_look_again<B: Backend>(b: B) {
    use fleetbot::store::queue::Claim;
    let store = b.open().await;
    let idle = |c: Claim| match c {
        Claim::Idle { next_due } => next_due,
        Claim::Job(j) => panic!("nothing is runnable, yet {} was claimed", j.id),
    };
    assert_eq!(
        idle(store.claim_or_next_due("w", T0, LEASE).await.unwrap()),
        None
    );
    store
        .enqueue_delivery(&job("a", Some(1)), T0)
        .await
        .unwrap();
    let a = match store.claim_or_next_due("w", T0, LEASE).await.unwrap() {
        Claim::Job(a) => a,
        Claim::Idle { next_due } => panic!("a is runnable, yet idle until {next_due:?}"),
    };
    assert_eq!((a.id.as_str(), a.attempt), ("a", 1));
    // Running: its lease is what comes due next.
    let running = store.claim_or_next_due("w", T0 + 1, LEASE).await.unwrap();
    assert_eq!(idle(running), Some(T0 + LEASE));
    let retry = JobOutcome::Retry {
        at: T0 + 90_000,
        error: "502".into(),
    };
    assert!(store.finish(&a, &retry, T0 + 2).await.unwrap());
    let backing_off = store.claim_or_next_due("w", T0 + 3, LEASE).await.unwrap();
    assert_eq!(idle(backing_off), Some(T0 + 90_000));
    match store
        .claim_or_next_due("w", T0 + 90_000, LEASE)
        .await
        .unwrap()
    {
        Claim::Job(again) => assert_eq!((again.id.as_str(), again.attempt), ("a", 2)),
        Claim::Idle { next_due } => panic!("a's retry is due, yet idle until {next_due:?}"),
    }
}

/// The dashboard's listings: every fleet's targets in key order, the newest jobs with their
/// times, only live leases, and the newest reviewed plans, apply runs and audit records of
/// every repository, each within its limit, on any handle.
async fn the_overview_lists_across_fleets_and_repositories_newest_first<B: Backend>(b: B) {
    use fleetbot::store::ApplyRun;
    let store = b.open().await;
    let replica = b.open().await;
    assert!(replica.all_targets(10).await.unwrap().is_empty());
    assert!(replica.recent_jobs(10).await.unwrap().is_empty());
    assert!(replica.live_leases(T0).await.unwrap().is_empty());
    assert!(replica.recent_reviewed_plans(10).await.unwrap().is_empty());
    assert!(replica.recent_apply_runs(10).await.unwrap().is_empty());
    assert!(replica.recent_audit(10).await.unwrap().is_empty());

    let target = |fleet: &str, project: &str, cluster: &str| TargetRecord {
        fleet: fleet.into(),
        project_key: project.into(),
        cluster_name: cluster.into(),
        backend: "mk8s".into(),
        status: "deployed".into(),
        node_group_ids: vec!["g1".into()],
        updated_at: T0,
        ..Default::default()
    };
    for t in [
        target("train", "b", "c1"),
        target("infer", "a", "c2"),
        target("train", "a", "c9"),
    ] {
        store.upsert_target(&t).await.unwrap();
    }
    let names: Vec<String> = replica
        .all_targets(10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| format!("{}/{}/{}", t.fleet, t.project_key, t.cluster_name))
        .collect();
    assert_eq!(names, ["infer/a/c2", "train/a/c9", "train/b/c1"]);
    assert_eq!(replica.all_targets(2).await.unwrap().len(), 2);
    assert_eq!(
        replica.all_targets(10).await.unwrap()[0],
        target("infer", "a", "c2")
    );

    store.enqueue(&job("j1", Some(1)), T0).await.unwrap();
    store.enqueue(&job("j2", None), T0 + 5).await.unwrap();
    store
        .enqueue(&fleet_job("j3", "apply:o/r"), T0 + 9)
        .await
        .unwrap();
    let claimed = store.claim("w", T0 + 10, LEASE).await.unwrap().unwrap();
    assert_eq!(claimed.id, "j1");
    assert!(
        store
            .finish(
                &claimed,
                &JobOutcome::Failed {
                    error: "boom".into()
                },
                T0 + 20
            )
            .await
            .unwrap()
    );
    let jobs = replica.recent_jobs(10).await.unwrap();
    let ids: Vec<&str> = jobs.iter().map(|j| j.job.id.as_str()).collect();
    assert_eq!(ids, ["j3", "j2", "j1"]);
    assert_eq!(jobs[2].job.state, "failed");
    assert_eq!(jobs[2].job.last_error, "boom");
    assert_eq!(jobs[2].job.pr_key, pr_key("Octo-Org/Fleet", 1));
    assert_eq!((jobs[2].created_at, jobs[2].finished_at), (T0, T0 + 20));
    assert_eq!(
        (jobs[0].job.kind.as_str(), jobs[0].finished_at),
        ("apply", 0)
    );
    assert_eq!(replica.recent_jobs(1).await.unwrap().len(), 1);

    let live = acquired(
        store
            .take_lease("t1:o/r:a.yaml", "job-a", "#1", T0, 1000)
            .await
            .unwrap(),
    );
    let freed = acquired(
        store
            .take_lease("t1:o/r:b.yaml", "job-b", "#2", T0, 1000)
            .await
            .unwrap(),
    );
    assert!(store.release_lease(&freed).await.unwrap());
    acquired(
        store
            .take_lease("t1:o/r:c.yaml", "job-c", "#3", T0, 10)
            .await
            .unwrap(),
    );
    acquired(
        store
            .take_lease("t1:a/z:d.yaml", "job-d", "#4", T0, 1000)
            .await
            .unwrap(),
    );
    let leases = replica.live_leases(T0 + 100).await.unwrap();
    let keys: Vec<&str> = leases.iter().map(|l| l.fleet_key.as_str()).collect();
    assert_eq!(keys, ["t1:a/z:d.yaml", "t1:o/r:a.yaml"]);
    assert_eq!(leases[1], live);
    assert!(replica.live_leases(T0 + 1000).await.unwrap().is_empty());

    store
        .record_reviewed_plan(&plan("h1", "a.yaml", "d1", T0 + 1))
        .await
        .unwrap();
    store
        .record_reviewed_plan(&plan("h2", "a.yaml", "d2", T0 + 3))
        .await
        .unwrap();
    replica
        .record_reviewed_plan(&plan("h1", "b.yaml", "d3", T0 + 2))
        .await
        .unwrap();
    let plans = replica.recent_reviewed_plans(10).await.unwrap();
    let digests: Vec<&str> = plans.iter().map(|p| p.digest.as_str()).collect();
    assert_eq!(digests, ["d2", "d3", "d1"]);
    assert_eq!(plans[0], plan("h2", "a.yaml", "d2", T0 + 3));
    assert_eq!(replica.recent_reviewed_plans(1).await.unwrap().len(), 1);

    let run = |job: &str, digest: &str, at: i64| ApplyRun {
        job_id: job.into(),
        fleet_path: "a.yaml".into(),
        digest: digest.into(),
        destructive_approved: at % 2 == 0,
        started_at: at,
    };
    store
        .record_apply_run(&run("apply:o/r#1@a:merge", "d1", T0 + 4))
        .await
        .unwrap();
    store
        .record_apply_run(&run("apply:o/r#2@b:merge", "d2", T0 + 7))
        .await
        .unwrap();
    let runs = replica.recent_apply_runs(10).await.unwrap();
    assert_eq!(
        runs,
        vec![
            run("apply:o/r#2@b:merge", "d2", T0 + 7),
            run("apply:o/r#1@a:merge", "d1", T0 + 4)
        ]
    );
    assert_eq!(replica.recent_apply_runs(1).await.unwrap().len(), 1);

    let e1 = entry("Octo-Org/Fleet", T0 + 10, "apply (merge)");
    let e2 = entry("octo-org/other", T0 + 30, "plan");
    let e3 = entry("Octo-Org/Fleet", T0 + 30, "unlock");
    store.append_audit(&e1).await.unwrap();
    replica.append_audit(&e2).await.unwrap();
    store.append_audit(&e3).await.unwrap();
    assert_eq!(
        replica.recent_audit(10).await.unwrap(),
        vec![e3.clone(), e2.clone(), e1]
    );
    assert_eq!(store.recent_audit(2).await.unwrap(), vec![e3, e2]);
    assert!(store.recent_audit(0).await.unwrap().is_empty());
}
