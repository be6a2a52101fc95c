//! What every apply step of one deploy works with: the cloud, the inventory, whose fleet and
//! tenant it is, and where progress goes.

use super::progress::Progress;
use crate::clusters::Connections;

pub(super) struct Apply<'a, C, S> {
    pub cloud: &'a C,
    pub store: &'a S,
    pub fleet: &'a str,
    pub tenant: &'a str,
    pub profile: &'a str,
    pub progress: &'a Progress,
    /// Kubernetes connections, shared by every target of the deploy.
    pub kube: &'a Connections,
}
