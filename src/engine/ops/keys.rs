//! Idempotency keys: each mutation's key names what it does and in which lifecycle, so a
//! retried call is recognised and a new lifecycle never replays an old one's request.

use crate::cloud::client::idempotency_key;

/// The idempotency-key part naming a lifecycle: none for the first, so keys of deployments
/// made before generations existed are unchanged.
pub(super) fn lifecycle_part(generation: i64) -> Option<String> {
    (generation > 0).then(|| format!("lifecycle-{generation}"))
}

/// The keys of one scope (a target in one lifecycle, a target's teardown): every key starts
/// with the scope's parts.
pub(super) struct Keys {
    scope: Vec<String>,
}

impl Keys {
    pub(super) fn new(scope: &[&str], lifecycle: Option<&str>) -> Keys {
        Keys {
            scope: scope
                .iter()
                .copied()
                .chain(lifecycle)
                .map(str::to_string)
                .collect(),
        }
    }

    pub(super) fn key(&self, parts: &[&str]) -> String {
        let mut all: Vec<&str> = self.scope.iter().map(String::as_str).collect();
        all.extend_from_slice(parts);
        idempotency_key(&all)
    }
}
