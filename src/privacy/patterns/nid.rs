//! Nebius IDs (`<type>-<routing code><weak id>`): found from the dash after the type, with
//! the type read back past any escape it is glued to, and look-alikes (digests, hyphenated
//! English) left out.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::is_stand_in;
use crate::privacy::Candidate;
use crate::privacy::noise::{is_digest_length, is_lower_hex};
use crate::privacy::rules::RuleId;

/// Type prefixes named by the API's `nid` annotations and seen in real IDs
/// (docs/nebius-api.md §7), and those the fleet's own guards name (fleet-engine.md §5.2:
/// `network`, and `cr`, shorter than the grammar's three-character minimum).
pub(crate) const KNOWN_TYPES: [&str; 64] = [
    "tenant",
    "aitenant",
    "tractotenant",
    "project",
    "aiproject",
    "serviceaccount",
    "group",
    "federation",
    "vpcnetwork",
    "vpcsubnet",
    "vpcpool",
    "vpcroutetable",
    "vpcroute",
    "vpcallocation",
    "vpcsecuritygroup",
    "vpcsecurityrule",
    "vpcscope",
    "vpctargetgroup",
    "vpcloadbalancer",
    "mk8scluster",
    "mk8snodegroup",
    "computeinstance",
    "computedisk",
    "computefilesystem",
    "computegpucluster",
    "computenvlinstancegroup",
    "computereservation",
    "capacityblockgroup",
    "capacityinterval",
    "capacityallowance",
    "quotaallowance",
    "storagebucket",
    "storagetransfer",
    "dnszone",
    "dnsrecord",
    "kmssymkey",
    "kmsasymkey",
    "mbsec",
    "mbsecver",
    "registry",
    "artifact",
    "aiendpoint",
    "aijob",
    "postgresql",
    "mlflow",
    "maintenance",
    "applicationrelease",
    "contract",
    "billingonetimeexport",
    "publickey",
    "accesskey",
    "useraccount",
    "groupmembership",
    "accesspermit",
    "federatedcredentials",
    "federationcertificate",
    "invitation",
    "computedisksnapshot",
    "applicationtunnel",
    "storagebucketinventory",
    "computeoperation",
    "pricingpolicy",
    "network",
    "cr",
];

/// Where an NID can be: a dash followed by a routing code (`<type>-<routing code><weak id>`).
/// The routing code must carry a digit in second position (every observed code does:
/// `e00`, `u00`, `i00`, legacy `e0t`), which keeps hyphenated English
/// (`project-management-tools`) out. Searching for this short anchor and reading the type
/// and weak id around it by hand is an order of magnitude faster than one regex for the
/// whole grammar, whose leading `[a-z]{3,50}` defeats the engine's literal prefilter.
static NID_ANCHOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)-[a-z][0-9][a-z0-9]").expect("NID anchor regex"));

/// Type: `[a-z][a-z0-9]{2,49}`.
const NID_TYPE_MAX: usize = 50;
/// Weak id: 12–71 lowercase alphanumerics (or a UUID, for types such as `storagetransfer`).
const NID_WEAK_MIN: usize = 12;
const NID_WEAK_MAX: usize = 71;

pub(super) fn nebius_ids(text: &[u8], out: &mut Vec<Candidate>) {
    for anchor in NID_ANCHOR.find_iter(text) {
        if let Some((start, end, rule)) = nid_at(text, anchor.start()) {
            out.push(Candidate::new(start, end, rule, text[start..end].to_vec()));
        }
    }
}

/// Reads the NID whose type/routing-code dash is at `dash`, if there is one there.
fn nid_at(text: &[u8], dash: usize) -> Option<(usize, usize, RuleId)> {
    let routing = &text[dash + 1..dash + 4];
    let weak_at = dash + 4;
    let weak_len = uuid_len(&text[weak_at..])
        .unwrap_or_else(|| text[weak_at..].iter().take_while(|b| is_id_char(b)).count());
    let end = weak_at + weak_len;
    if !(NID_WEAK_MIN..=NID_WEAK_MAX).contains(&weak_len)
        || text.get(end).is_some_and(u8::is_ascii_alphanumeric)
    {
        return None;
    }
    let start = nid_type_start(text, dash)?;
    let tail = &text[dash + 1..end];
    let weak = &text[weak_at..end];
    let known = is_known_type(&text[start..dash]);
    let region = matches!(routing[0], b'e' | b'u' | b'i')
        && routing[1] == b'0'
        && routing[2].is_ascii_digit();
    let rule = if known {
        // `registry-<sha1>`: a digest that happens to follow a type-like word.
        if is_lower_hex(tail) && is_digest_length(tail.len()) {
            return None;
        }
        RuleId::NebiusId
    } else if region {
        // Real weak ids are base36; an all-hex tail is a digest (`build-e01f3a…`).
        if is_lower_hex(tail) {
            return None;
        }
        RuleId::NebiusGenericId
    } else {
        return None;
    };
    if is_stand_in(weak) {
        return None;
    }
    Some((start, end, rule))
}

fn is_id_char(b: &u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn is_known_type(kind: &[u8]) -> bool {
    KNOWN_TYPES.iter().any(|t| t.as_bytes() == kind)
}

/// Where the type of an NID whose dash is at `dash` starts, if one ends there.
///
/// The type is the lowercase run before the dash; a run glued to other letters, or starting
/// with a digit, is part of a bigger token. Escapes are the exception: in `\ntenant-…`,
/// `\u0022tenant-…` or `%2Ftenant-…` the escape's letters and digits join the run (or end it
/// with an uppercase hex digit), and the ID still starts after the escape.
fn nid_type_start(text: &[u8], dash: usize) -> Option<usize> {
    let run = text[..dash]
        .iter()
        .rev()
        .take_while(|b| is_id_char(b))
        .count();
    let run_start = dash - run;
    let is_type = |s: usize| {
        let kind = &text[s..dash];
        text[s].is_ascii_lowercase()
            && ((3..=NID_TYPE_MAX).contains(&kind.len()) || is_known_type(kind))
    };
    let whole = run > 0
        && run_start
            .checked_sub(1)
            .is_none_or(|p| !text[p].is_ascii_alphanumeric())
        && is_type(run_start);
    if whole && is_known_type(&text[run_start..dash]) {
        return Some(run_start);
    }
    match after_glued_escape(text, run_start, dash) {
        Some(s) if s < dash && is_type(s) => Some(s),
        _ => whole.then_some(run_start),
    }
}

/// Where a run of id characters continues after the escape sequence it began with, or
/// that ends just before it: `\n`, `\\t`, `\u0022`, `\x22`, `%22` and `%2f` join the run;
/// `%2F`, `\u002F` and `\x2F` end with an uppercase digit, so the run starts just after them.
fn after_glued_escape(text: &[u8], run_start: usize, dash: usize) -> Option<usize> {
    let run = &text[run_start..dash];
    let before = &text[..run_start];
    let hex = |s: &[u8]| s.iter().all(u8::is_ascii_hexdigit);
    if before.ends_with(b"\\") {
        let skip = match run.first()? {
            b'u' if run.len() > 5 && hex(&run[1..5]) => 5,
            b'x' if run.len() > 3 && hex(&run[1..3]) => 3,
            _ => 1,
        };
        return Some(run_start + skip);
    }
    if before.ends_with(b"%") && run.len() > 2 && hex(&run[..2]) {
        return Some(run_start + 2);
    }
    let n = before.len();
    let percent = n >= 3 && before[n - 3] == b'%' && hex(&before[n - 2..]);
    let escape = |lead: u8, digits: usize| {
        n > digits + 1
            && before[n - digits - 2] == b'\\'
            && before[n - digits - 1] == lead
            && hex(&before[n - digits..])
    };
    (percent || escape(b'u', 4) || escape(b'x', 2)).then_some(run_start)
}

/// Length of a lowercase UUID at the start of `s`, if it starts with one.
fn uuid_len(s: &[u8]) -> Option<usize> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut at = 0;
    for (i, n) in GROUPS.iter().enumerate() {
        if i > 0 {
            if s.get(at) != Some(&b'-') {
                return None;
            }
            at += 1;
        }
        let group = s.get(at..at + n)?;
        if !is_lower_hex(group) && !group.iter().all(u8::is_ascii_digit) {
            return None;
        }
        at += n;
    }
    Some(at)
}
