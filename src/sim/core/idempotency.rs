//! `x-idempotency-key`: a retried call within the API's window is answered with the
//! operation the first one started, and a key reused for another request is refused.

use tonic::Status;

use super::{CallContext, Core, now_ms};
use crate::cloud::proto::fleetbot::sim::v1::IdempotencyRecord;
use crate::cloud::proto::nebius::common::v1::Operation;

impl Core {
    /// The operation an earlier call under the same key started, if the key is still live.
    pub(super) fn replay(&self, ctx: &CallContext) -> Result<Option<Operation>, Status> {
        let Some(key) = &ctx.idempotency_key else {
            return Ok(None);
        };
        let live_since = now_ms() - self.idempotency_window_ms();
        let Some(record) = self
            .state
            .idempotency
            .iter()
            .find(|r| &r.key == key && r.used_at_unix_ms > live_since)
        else {
            return Ok(None);
        };
        if record.request_digest != ctx.request_digest {
            return Err(Status::failed_precondition(
                "x-idempotency-key was already used for a different request",
            ));
        }
        Ok(self.operation(&record.operation_id).ok())
    }

    pub(super) fn remember(&mut self, ctx: &CallContext, operation_id: &str) {
        if let Some(key) = &ctx.idempotency_key {
            let now = now_ms();
            // Keys past the window are forgotten, as the API forgets them; that also keeps the
            // persisted state from growing with every call ever made.
            let live_since = now - self.idempotency_window_ms();
            self.state
                .idempotency
                .retain(|r| r.used_at_unix_ms > live_since && &r.key != key);
            self.state.idempotency.push(IdempotencyRecord {
                key: key.clone(),
                operation_id: operation_id.to_string(),
                request_digest: ctx.request_digest.clone(),
                used_at_unix_ms: now,
            });
        }
    }

    fn idempotency_window_ms(&self) -> i64 {
        self.world.idempotency_window_seconds.saturating_mul(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::common::v1::ResourceMetadata;
    use crate::cloud::proto::nebius::vpc::v1 as vpc;
    use crate::sim::world::World;

    fn core() -> Core {
        let world = World::from_yaml(
            "name: keys\nregions: [eu-north1]\nprojects: [{name: p, region: eu-north1}]\n",
        )
        .unwrap();
        Core::new(world, None).unwrap()
    }

    fn network(core: &mut Core, key: &str, name: &str) -> Result<Operation, Status> {
        let project = core.state.projects[0].metadata.clone().unwrap().id;
        let ctx = CallContext {
            idempotency_key: Some(key.into()),
            request_digest: name.into(),
            ..Default::default()
        };
        let meta = ResourceMetadata {
            parent_id: project,
            name: name.into(),
            ..Default::default()
        };
        core.create::<vpc::Network>(&ctx, meta, vpc::NetworkSpec::default(), 0)
    }

    #[test]
    fn idempotency_keys_are_remembered_for_the_window_only() {
        let mut core = core();
        let first = network(&mut core, "k", "a").unwrap();
        // A retry within the window is the same request: the same operation, nothing new.
        assert_eq!(network(&mut core, "k", "a").unwrap().id, first.id);
        let refused = network(&mut core, "k", "b").unwrap_err();
        assert!(
            refused
                .message()
                .contains("already used for a different request")
        );

        // Past the window the key is forgotten, as the API forgets it.
        let window = core.idempotency_window_ms();
        for r in &mut core.state.idempotency {
            r.used_at_unix_ms -= window + 1;
        }
        let later = network(&mut core, "k", "b").unwrap();
        assert_ne!(later.id, first.id);
        assert_eq!(
            core.state.idempotency.len(),
            1,
            "expired keys are dropped from the state"
        );
    }
}
