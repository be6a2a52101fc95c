//! Private locations: registry paths and bucket URLs whose names carry an ID, a random
//! suffix or a date, which public, shared names do not.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::body_is_filler;
use crate::privacy::Candidate;
use crate::privacy::noise::{is_lower_hex, is_placeholder};
use crate::privacy::rules::RuleId;

/// `cr.<region>.nebius.cloud/<name>` (fleet-engine.md §5.3).
static REGISTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\bcr\.[a-z0-9-]+\.nebius\.cloud/([A-Za-z0-9][A-Za-z0-9._-]*)")
        .expect("registry regex")
});

static BUCKET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\bs3://([a-z0-9][a-z0-9.-]*[a-z0-9])").expect("bucket regex")
});

pub(super) fn registry_locations(text: &[u8], out: &mut Vec<Candidate>) {
    for caps in REGISTRY.captures_iter(text) {
        let all = caps.get(0).expect("match");
        let name = caps.get(1).expect("name group").as_bytes();
        let bare_registry_id = name.len() >= 15
            && matches!(name[0], b'e' | b'u' | b'i')
            && name[1] == b'0'
            && name[2].is_ascii_digit()
            && name[3..]
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && !body_is_filler(&name[3..]);
        if (bare_registry_id || ends_with_private_suffix(name))
            && !location_is_placeholder(all.as_bytes())
        {
            out.push(Candidate::new(
                all.start(),
                all.end(),
                RuleId::PrivateRegistryLocation,
                all.as_bytes().to_vec(),
            ));
        }
    }
}

pub(super) fn bucket_locations(text: &[u8], out: &mut Vec<Candidate>) {
    for caps in BUCKET.captures_iter(text) {
        let all = caps.get(0).expect("match");
        let name = caps.get(1).expect("name group").as_bytes();
        if ends_with_private_suffix(name) && !location_is_placeholder(all.as_bytes()) {
            out.push(Candidate::new(
                all.start(),
                all.end(),
                RuleId::PrivateBucketLocation,
                all.as_bytes().to_vec(),
            ));
        }
    }
}

/// `-<8+ hex>` (a random suffix) or `-<19|20>YYMMDD` (a dated operational name).
fn ends_with_private_suffix(name: &[u8]) -> bool {
    let Some(dash) = name.iter().rposition(|&b| b == b'-') else {
        return false;
    };
    let suffix = &name[dash + 1..];
    let random = suffix.len() >= 8 && is_lower_hex(suffix);
    let dated = suffix.len() == 8
        && (suffix.starts_with(b"19") || suffix.starts_with(b"20"))
        && suffix.iter().all(u8::is_ascii_digit);
    (random || dated) && !body_is_filler(suffix)
}

fn location_is_placeholder(location: &[u8]) -> bool {
    std::str::from_utf8(location).is_ok_and(is_placeholder)
}
