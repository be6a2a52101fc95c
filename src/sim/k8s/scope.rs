//! Which clusters a sync of the simulator's Kubernetes side reads.

use std::collections::HashSet;

/// The clusters a sync reads: every one, or those named.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    Every,
    Named(&'a HashSet<String>),
}

impl Scope<'_> {
    pub fn holds(&self, id: &str) -> bool {
        match self {
            Scope::Every => true,
            Scope::Named(ids) => ids.contains(id),
        }
    }
}
