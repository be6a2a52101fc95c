//! The plan digest: what an approval of this preflight is bound to.

use sha2::{Digest, Sha256};

use super::{ChangedFile, PrInput};

/// SHA-256 over what the plan depends on: head and base commits, engine version, the repo
/// config bytes, every changed spec's bytes and its live plan's digest (which changes exactly
/// when the actions change), length-prefixed, in path order. Quota usage is deliberately left
/// out: it moves with everything else in the tenant, and an apply approved on this digest must
/// not be held back by it (the budget is checked again before any apply).
pub(super) fn digest(input: &PrInput<'_>, specs: &[&ChangedFile]) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"fleetbot-plan-digest/v1");
    field(input.head_sha.as_bytes());
    field(input.base_sha.as_bytes());
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(&input.config.raw);
    for spec in specs {
        field(spec.path.as_bytes());
        match &spec.head {
            Some(bytes) => field(bytes),
            None => field(b"\0removed-or-unread"),
        }
        // A live plan is part of what was shown: the same spec against a changed cloud is a
        // different plan.
        match input.live.get(&spec.path).map(|l| &l.plan) {
            Some(Ok(Some(planned))) => field(planned.plan.digest.as_bytes()),
            Some(Ok(None)) => field(b"\0nothing-planned-live"),
            Some(Err(_)) => field(b"\0live-plan-unavailable"),
            None => field(b"\0static"),
        }
    }

    hex::encode(h.finalize())
}
