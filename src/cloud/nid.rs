//! Nebius resource IDs (NIDs): `<type>-<routing-code><weak-id>`, and region routing codes.

use sha2::{Digest, Sha256};

/// Routing codes of the regions seen in public configurations (nebius-api.md §7).
pub const KNOWN_ROUTING_CODES: &[(&str, &str)] = &[
    ("eu-north1", "e00"),
    ("eu-west1", "e01"),
    ("eu-north2", "e02"),
    ("uk-south1", "e03"),
    ("us-central1", "u00"),
    ("me-west1", "i00"),
];

/// The routing code for a region. Regions without a published code get one the simulator
/// invents (`x` + two digits from a hash); real IDs never carry those.
pub fn routing_code(region: &str) -> String {
    if let Some((_, code)) = KNOWN_ROUTING_CODES.iter().find(|(r, _)| *r == region) {
        return (*code).to_string();
    }
    let digest = Sha256::digest(region.as_bytes());
    format!("x{:02}", digest[0] % 100)
}

/// A parsed NID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nid<'a> {
    pub kind: &'a str,
    pub routing_code: &'a str,
    pub weak_id: &'a str,
}

/// Parses `<type>-<rc><weak>`; `None` when the text is not in the grammar.
pub fn parse(id: &str) -> Option<Nid<'_>> {
    if id.len() > 1024 {
        return None;
    }
    let (kind, rest) = id.split_once('-')?;
    let kind_ok = (3..=50).contains(&kind.len())
        && kind.as_bytes()[0].is_ascii_lowercase()
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !kind_ok || rest.len() < 4 {
        return None;
    }
    let (rc, weak) = rest.split_at(3);
    let rc_ok = rc.as_bytes()[0].is_ascii_lowercase()
        && rc
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let weak_core = weak.split("--").next().unwrap_or("");
    let weak_ok = !weak_core.is_empty()
        && weak_core
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !weak_core.ends_with('-');
    (rc_ok && weak_ok).then_some(Nid {
        kind,
        routing_code: rc,
        weak_id: weak,
    })
}

/// Makes a well-formed ID of `kind` in `region`, deterministically from `seed`.
pub fn make(kind: &str, region: &str, seed: &str) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let digest = Sha256::digest(format!("{kind}\0{region}\0{seed}").as_bytes());
    let weak: String = digest
        .iter()
        .take(15)
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect();
    format!("{kind}-{}{weak}", routing_code(region))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_ids_parse_back() {
        let id = make("mk8scluster", "us-central1", "1");
        let nid = parse(&id).unwrap();
        assert_eq!(nid.kind, "mk8scluster");
        assert_eq!(nid.routing_code, "u00");
        assert_eq!(nid.weak_id.len(), 15);
        assert_eq!(id, make("mk8scluster", "us-central1", "1"));
        assert_ne!(id, make("mk8scluster", "us-central1", "2"));
    }

    #[test]
    fn grammar() {
        assert!(parse("project-e00abc123").is_some());
        assert!(parse("root-g00root").is_some());
        assert!(parse("Project-e00abc").is_none());
        assert!(parse("pr-e00abc").is_none());
        assert!(parse("project-e00").is_none());
        assert_eq!(routing_code("eu-north1"), "e00");
        assert!(routing_code("uk-south2").starts_with('x'));
    }
}
