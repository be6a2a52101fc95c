//! Updates, as Nebius applies them: the request patches the resource under its
//! `X-ResetMask` ([`crate::sim::rules::patch`]), the result must still carry every required
//! field and keep every immutable one ([`crate::sim::rules::validate`]), and what the service
//! fills in is filled again where the update emptied it.

use prost_reflect::{DynamicMessage, ReflectMessage};
use tonic::Status;

use super::errors::invalid;
use super::{CallContext, Core, now_ms, timestamp};
use crate::cloud::proto::nebius::common::v1::{Operation, ResourceMetadata};
use crate::cloud::proto::nebius::storage::v1 as storage;
use crate::cloud::reset_mask::Mask;
use crate::cloud::schema::{self, ResourceBehavior};
use crate::sim::resources::{Phase, Resource};
use crate::sim::rules::{patch, validate};

impl Core {
    /// Applies an Update: `metadata` names the resource (and may carry new labels or a new
    /// name), `spec` is the request's spec as sent (`None`: the request left it out).
    pub fn update<R: Resource>(
        &mut self,
        ctx: &CallContext,
        metadata: ResourceMetadata,
        spec: Option<R::Spec>,
        latency_ms: u64,
    ) -> Result<Operation, Status> {
        if let Some(op) = self.replay(ctx)? {
            return Ok(op);
        }
        let id = metadata.id.clone();
        if id.is_empty() {
            return Err(invalid(R::SERVICE, "metadata.id", "value is required"));
        }
        let current: R = self.get(&id)?;
        self.conflict(R::SERVICE, &id)?;
        let any: &dyn std::any::Any = &current;
        if any
            .downcast_ref::<storage::Bucket>()
            .is_some_and(super::buckets::is_scheduled)
        {
            return Err(super::buckets::bad_state(
                &id,
                "the bucket is scheduled for deletion; undelete it first",
            ));
        }
        let current_version = current.metadata().map_or(0, |m| m.resource_version);
        if metadata.resource_version != 0 && metadata.resource_version != current_version {
            return Err(Status::failed_precondition(format!(
                "resource_version {} does not match the current {current_version}",
                metadata.resource_version
            )));
        }
        let mask = match &ctx.reset_mask {
            Some(text) => Some(
                Mask::parse(text)
                    .map_err(|e| invalid(R::SERVICE, "X-ResetMask", &format!("bad mask: {e}")))?,
            ),
            None => None,
        };
        let (mut next, mut violations) = patched(&current, &metadata, spec, mask.as_ref());
        // What the update emptied and the service fills is filled again before the checks,
        // so resetting a defaulted immutable field is no change.
        next.fill_defaults(&self.fill_context(&next));
        let before = schema::to_dynamic(&current.spec().unwrap_or_default());
        let after = schema::to_dynamic(&next.spec().unwrap_or_default());
        validate::immutable(&before, &after, "spec", &mut violations);
        validate::required(&after, "spec", &[], &mut violations);
        let region = self.region_of(&current);
        violations.extend(next.unavailable(&region));
        if !violations.is_empty() {
            return Err(validate::refusal(R::SERVICE, &violations));
        }
        let op = self.new_operation(R::SERVICE, &region, format!("Update {}", R::KIND), &id, ctx);
        self.release(&region, &current.charges(), &id);
        if let Err(failure) = self.charge(&region, &next.charges(), &id, R::SERVICE) {
            // Put the old charges back: a refused update changes nothing.
            let _ = self.charge(&region, &current.charges(), &id, R::SERVICE);
            return self.conclude(ctx, op, "update", 0, Some(failure));
        }
        next.set_phase(Phase::Updating, &region);
        // `patched` keeps the ID and the parent (a move is refused above), so the resource
        // stays where the positions say it is.
        if let Some(slot) = self.find_mut::<R>(&id) {
            *slot = next;
        }
        self.conclude(ctx, op, "update", latency_ms, None)
    }
}

/// `current` patched by the request, one version on, and what the metadata's change breaks.
fn patched<R: Resource>(
    current: &R,
    metadata: &ResourceMetadata,
    spec: Option<R::Spec>,
    mask: Option<&Mask>,
) -> (R, Vec<validate::Violation>) {
    let mut violations = Vec::new();
    let mut next = current.clone();
    let meta_mask = mask.and_then(|m| m.sub("metadata"));
    let stored = next.metadata_mut();
    // The service keeps the ID, the parent (no resource fleetbot touches is MOVABLE), the
    // version and the timestamps; labels and the name are the request's to change.
    if !metadata.parent_id.is_empty() && metadata.parent_id != stored.parent_id {
        violations.push(validate::Violation {
            field: "metadata.parent_id".into(),
            message: "the resource cannot be moved to another parent".into(),
        });
    }
    if !metadata.labels.is_empty() {
        stored.labels = metadata.labels.clone();
    } else if meta_mask
        .as_ref()
        .is_some_and(|m| m.sub("labels").is_some())
    {
        stored.labels.clear();
    }
    // An empty name keeps the old one: every resource fleetbot names must have one.
    if !metadata.name.is_empty() && metadata.name != stored.name {
        let fixed = schema::resource_behaviors(&schema::descriptor::<R>())
            .contains(&ResourceBehavior::ImmutableName);
        if fixed {
            violations.push(validate::Violation {
                field: "metadata.name".into(),
                message: "the name cannot be changed".into(),
            });
        } else {
            stored.name = metadata.name.clone();
        }
    }
    stored.resource_version += 1;
    stored.updated_at = Some(timestamp(now_ms()));

    let before = schema::to_dynamic(&current.spec().unwrap_or_default());
    let mut after = before.clone();
    let spec_mask = mask.and_then(|m| m.sub("spec"));
    match (spec, spec_mask) {
        (Some(spec), mask) => patch::patch(&mut after, &schema::to_dynamic(&spec), mask.as_ref()),
        // A spec left out but named by the mask is reset whole; one the mask reaches into is
        // reset at the paths it names (the SDK's partial-mask example).
        (None, Some(mask)) if mask.is_empty() => after = DynamicMessage::new(before.descriptor()),
        (None, Some(mask)) => {
            let empty = DynamicMessage::new(before.descriptor());
            patch::patch(&mut after, &empty, Some(&mask));
        }
        (None, None) => {}
    }
    next.set_spec(schema::from_dynamic(&after));
    (next, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::vpc::v1 as vpc;
    use crate::sim::world::World;

    /// The positions a listing reads rely on this: no update moves a resource to another
    /// parent, as none that fleetbot touches is movable in Nebius.
    #[test]
    fn an_update_that_moves_a_resource_to_another_parent_is_refused() {
        let world = World::from_yaml(
            "name: moves\nregions: [eu-north1]\nprojects: [{name: a, region: eu-north1}, {name: b, region: eu-north1}]\n",
        )
        .unwrap();
        let mut core = Core::new(world, None).unwrap();
        let project = |core: &Core, i: usize| core.state.projects[i].id().to_string();
        let (a, b) = (project(&core, 0), project(&core, 1));
        let ctx = CallContext::default();
        let meta = ResourceMetadata {
            parent_id: a.clone(),
            name: "net".into(),
            ..Default::default()
        };
        let op = core
            .create::<vpc::Network>(&ctx, meta, vpc::NetworkSpec::default(), 0)
            .unwrap();
        let moved = ResourceMetadata {
            id: op.resource_id.clone(),
            parent_id: b.clone(),
            ..Default::default()
        };
        let refused = core
            .update::<vpc::Network>(&ctx, moved, None, 0)
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(
            format!("{refused:?}").contains("metadata.parent_id"),
            "{refused:?}"
        );
        let names = |core: &Core, parent: &str| -> Vec<String> {
            core.children::<vpc::Network>(parent)
                .iter()
                .map(|n| n.name().to_string())
                .collect()
        };
        assert!(names(&core, &a).contains(&"net".to_string()));
        assert!(!names(&core, &b).contains(&"net".to_string()));
    }
}
