//! How buckets end on Nebius: `Delete` is a soft delete — the bucket stays, visible to Get,
//! GetByName and List, `SCHEDULED_FOR_DELETION` with `deleted_at` and `purge_at` (7 days on,
//! or the request's `purge_at`/`ttl`), keeps its name, and is purged when `purge_at` passes;
//! a zero `ttl` (or a `purge_at` already past) purges at once. `Undelete` brings a scheduled
//! bucket back; `Purge` deletes a scheduled bucket now and refuses any other.
//! (bucket_service.proto, nebius/api 51010021; docs/cloud.md.)

use tonic::{Code, Status};

use super::errors::service_error;
use super::{CallContext, Core, now_ms, timestamp};
use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::nebius::common::v1::{self as common, Operation, service_error};
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::sim::resources::Resource;

use storage::bucket_status::State;
use storage::delete_bucket_request::Purge;

/// "Otherwise, default ttl of 7 days will be applied."
pub const DEFAULT_TTL_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// A bucket in another state than the call needs: `FAILED_PRECONDITION` with the state named.
pub(super) fn bad_state(id: &str, message: &str) -> Status {
    status_with_service_error(
        Code::FailedPrecondition,
        message,
        service_error(
            "storage",
            "BadResourceState",
            service_error::Details::BadResourceState(common::BadResourceState {
                resource_id: id.to_string(),
                message: message.to_string(),
            }),
        ),
    )
}

pub fn is_scheduled(bucket: &storage::Bucket) -> bool {
    bucket
        .status
        .as_ref()
        .is_some_and(|s| s.state == State::ScheduledForDeletion as i32)
}

fn ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds * 1000 + i64::from(t.nanos) / 1_000_000
}

impl Core {
    /// `BucketService.Delete`.
    pub fn delete_bucket(
        &mut self,
        ctx: &CallContext,
        id: &str,
        purge: Option<Purge>,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let bucket: storage::Bucket = self.get(id)?;
        self.conflict("storage", id)?;
        if is_scheduled(&bucket) {
            return Err(bad_state(
                id,
                "the bucket is already scheduled for deletion",
            ));
        }
        let now = now_ms();
        let purge_at = match purge {
            None => now + DEFAULT_TTL_MS,
            Some(Purge::PurgeAt(at)) => ms(&at),
            Some(Purge::Ttl(ttl)) => now + ttl.seconds * 1000 + i64::from(ttl.nanos) / 1_000_000,
        };
        if purge_at <= now {
            // "If you want to delete Active bucket instantly, use Delete with zero ttl."
            return self.delete::<storage::Bucket>(ctx, id, latency_ms);
        }
        let region = self.region_of(&bucket);
        let op = self.new_operation("storage", &region, "Delete storagebucket".into(), id, ctx);
        if let Some(status) = self
            .find_mut::<storage::Bucket>(id)
            .and_then(|b| b.status.as_mut())
        {
            status.state = State::ScheduledForDeletion as i32;
            status.deleted_at = Some(timestamp(now));
            status.purge_at = Some(timestamp(purge_at));
        }
        self.conclude(ctx, op, "schedule-deletion", latency_ms, None)
    }

    /// `BucketService.Purge`: only a bucket scheduled for deletion.
    pub fn purge_bucket(
        &mut self,
        ctx: &CallContext,
        id: &str,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let bucket: storage::Bucket = self.get(id)?;
        self.conflict("storage", id)?;
        if !is_scheduled(&bucket) {
            return Err(bad_state(id, "the bucket is not scheduled for deletion"));
        }
        let region = self.region_of(&bucket);
        let op = self.new_operation("storage", &region, "Purge storagebucket".into(), id, ctx);
        self.conclude(ctx, op, "delete", latency_ms, None)
    }

    /// `BucketService.Undelete`: a scheduled bucket is active again, its deletion times
    /// cleared.
    pub fn undelete_bucket(
        &mut self,
        ctx: &CallContext,
        id: &str,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let bucket: storage::Bucket = self.get(id)?;
        self.conflict("storage", id)?;
        if !is_scheduled(&bucket) {
            return Err(bad_state(id, "the bucket is not scheduled for deletion"));
        }
        let region = self.region_of(&bucket);
        let op = self.new_operation("storage", &region, "Undelete storagebucket".into(), id, ctx);
        if let Some(status) = self
            .find_mut::<storage::Bucket>(id)
            .and_then(|b| b.status.as_mut())
        {
            status.state = State::Updating as i32;
            status.deleted_at = None;
            status.purge_at = None;
        }
        self.conclude(ctx, op, "undelete", latency_ms, None)
    }

    /// Purges the scheduled buckets whose `purge_at` has passed, with their objects.
    pub(super) fn purge_due_buckets(&mut self) {
        if !self.state.buckets.iter().any(is_scheduled) {
            return;
        }
        let now = now_ms();
        let due: Vec<storage::Bucket> = self
            .state
            .buckets
            .iter()
            .filter(|b| is_scheduled(b))
            .filter(|b| {
                b.status
                    .as_ref()
                    .and_then(|s| s.purge_at.as_ref())
                    .is_some_and(|at| ms(at) <= now)
            })
            .cloned()
            .collect();
        for bucket in due {
            let id = bucket.id().to_string();
            // A purge already running finishes on its own.
            if self.state.pending.iter().any(|p| p.resource_id == id) {
                continue;
            }
            let region = self.region_of(&bucket);
            self.release(&region, &bucket.charges(), &id);
            self.state.objects.retain(|o| o.bucket_id != id);
            self.remove::<storage::Bucket>(&id);
            let _ = self.persist();
        }
    }
}
