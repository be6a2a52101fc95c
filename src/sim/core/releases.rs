//! Marketplace releases: what Create accepts (a known product into a running cluster of the
//! project, once per namespace and name) and how an install ends.

use tonic::Status;

use super::Core;
use super::errors::{invalid, not_found};
use crate::cloud::error::status_with_service_error;
use crate::cloud::proto::fleetbot::sim::v1::PendingOperation;
use crate::cloud::proto::nebius::applications::v1alpha1 as apps;
use crate::cloud::proto::nebius::common::v1::{ServiceError, service_error};
use crate::cloud::proto::nebius::mk8s::v1 as mk8s;
use crate::sim::resources::Resource;
use crate::sim::world::ReleaseOutcome;

/// The marketplace products the simulator knows (the public solution recipes' slugs).
pub const PRODUCTS: &[&str] = &[
    "nebius/nvidia-gpu-operator",
    "nebius/nvidia-device-plugin",
    "nebius/nvidia-network-operator",
    "nebius/ray-cluster",
    "nebius/grafana-and-prometheus",
    "nebius/loki",
];

impl Core {
    /// Whether a call repeats an accepted one under the same idempotency key.
    pub fn is_replay(&self, ctx: &super::CallContext) -> bool {
        matches!(self.replay(ctx), Ok(Some(_)))
    }

    /// Refuses a release the marketplace would not accept, before anything is created.
    pub fn check_new_release(
        &self,
        project_id: &str,
        spec: &apps::K8sReleaseSpec,
    ) -> Result<(), Status> {
        const SERVICE: &str = "applications";
        for (field, value) in [
            ("spec.cluster_id", &spec.cluster_id),
            ("spec.product_slug", &spec.product_slug),
            ("spec.namespace", &spec.namespace),
            ("spec.application_name", &spec.application_name),
        ] {
            if value.is_empty() {
                return Err(invalid(SERVICE, field, &format!("{field} is required")));
            }
        }
        let cluster = self
            .state
            .clusters
            .iter()
            .find(|c| c.id() == spec.cluster_id && c.parent_id() == project_id)
            .ok_or_else(|| not_found("mk8s", &spec.cluster_id))?;
        let running = mk8s::cluster_status::State::Running as i32;
        if cluster.status.as_ref().is_none_or(|s| s.state != running) {
            return Err(invalid(
                SERVICE,
                "spec.cluster_id",
                "the cluster is not running",
            ));
        }
        if !PRODUCTS.contains(&spec.product_slug.as_str()) {
            return Err(not_found(SERVICE, &spec.product_slug));
        }
        let taken = self.state.releases.iter().any(|r| {
            r.spec.as_ref().is_some_and(|s| {
                s.cluster_id == spec.cluster_id
                    && s.namespace == spec.namespace
                    && s.application_name == spec.application_name
            })
        });
        if taken {
            return Err(status_with_service_error(
                tonic::Code::AlreadyExists,
                &format!(
                    "application {:?} is already installed in namespace {:?}",
                    spec.application_name, spec.namespace
                ),
                ServiceError {
                    service: SERVICE.into(),
                    code: "AlreadyExists".into(),
                    retry_type: service_error::RetryType::Nothing as i32,
                    details: None,
                },
            ));
        }
        Ok(())
    }

    /// How an install ends: values that are not YAML fail as Helm would; a world may script
    /// a failure or an install that never ends, per product.
    pub(super) fn settle_release(&mut self, p: &PendingOperation) {
        if p.action == "delete" {
            return;
        }
        let outcomes = self.world.release_outcomes.clone();
        let Some(release) = self
            .state
            .releases
            .iter_mut()
            .find(|r| r.id() == p.resource_id)
        else {
            return;
        };
        let spec = release.spec.clone().unwrap_or_default();
        let status = release.status.get_or_insert_with(Default::default);
        use apps::k8s_release_status::State as S;
        if let Err(e) = serde_yaml::from_str::<serde_yaml::Value>(&spec.values) {
            status.state = S::Failed as i32;
            status.error_message = format!("helm: values are not valid YAML: {e}");
            return;
        }
        match outcomes.get(&spec.product_slug) {
            Some(ReleaseOutcome {
                failed: Some(message),
                ..
            }) => {
                status.state = S::Failed as i32;
                status.error_message = message.clone();
            }
            Some(ReleaseOutcome {
                installing: true, ..
            }) => status.state = S::Installing as i32,
            _ => {}
        }
    }
}
