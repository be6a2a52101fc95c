//! Shape rules: IDs, tokens, keys and private locations found anywhere in a text.
//!
//! Each rule runs once over the whole file (not line by line), so a 100 MB file costs a few
//! linear passes whose literal prefixes the regex engine skips to with vectorised search.
//! Matches become [`Candidate`]s holding the normalised value only long enough to alias it.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::Candidate;
use super::noise::{is_digest_length, is_filler, is_lower_hex, is_placeholder, mentions_example};
use super::rules::RuleId;

/// Type prefixes named by the API's `nid` annotations and seen in real IDs
/// (docs/nebius-api.md §7, fleet-engine.md §5.2).
const KNOWN_TYPES: [&str; 61] = [
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
];

/// Fewest base64 characters a private key body must have. Real keys have hundreds; this
/// lets code and docs mention the BEGIN line (or a truncated `MIIE...`) without a finding.
const MIN_KEY_BODY: usize = 64;

/// How far past a BEGIN line a key body is followed, so one marker cannot make a scan quadratic.
const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// Most header lines followed before a key body.
const MAX_HEADERS: usize = 8;

/// Longest RFC 1421 header line (`DEK-Info: …`, `Comment: …`) followed inside a key block.
const MAX_HEADER_BYTES: usize = 512;

/// How far a credentials object or a PuTTY key is followed (real ones are a few kB).
const MAX_DOCUMENT_BYTES: usize = 16 * 1024;

/// Bytes after a marker that stand in for its value when there is no document to follow.
const MAX_VALUE_BYTES: usize = 256;

/// Markers per file whose document is followed at all; past this a file is hostile or
/// generated, each marker is still reported, and the scan stays linear.
const MAX_DOCUMENTS: usize = 64;

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

/// Nebius IAM access tokens (gosdk token sanitizer shapes).
static IAM_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b(?:ne1|nd1|v1\.)[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")
        .expect("IAM token regex")
});

static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")
        .expect("JWT regex")
});

/// Classic 40-character tokens, the longer stateless `ghs_<app id>_<JWT>` form (dots and
/// underscores, about 520 characters) and fine-grained personal access tokens.
static GITHUB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b(?:gh[pousr]_[A-Za-z0-9_.-]{36,}|github_pat_[A-Za-z0-9_]{22,})")
        .expect("GitHub token regex")
});

/// The top-level key of a Nebius service-account credentials file. Led by the literal so
/// the engine can skip to it; whether it is a JSON key (`"…"`, or `\"…\"` inside a JSON
/// string) or a YAML key at the start of a line is checked around the match.
static SA_CREDENTIALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)subject-credentials(\\?")?[ \t]*:"#)
        .expect("service-account credentials regex")
});

static PEM_BEGIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----")
        .expect("PEM regex")
});

static PUTTY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)PuTTY-User-Key-File-[0-9]+:").expect("PuTTY regex"));

static SSH_PUBLIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)\b(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519|sk-ecdsa-sha2-nistp256)(?:@openssh\.com)?(?:-cert-v01@openssh\.com)?[ \t]+(AAAA[A-Za-z0-9+/]{40,}={0,3})",
    )
    .expect("SSH public key regex")
});

/// `cr.<region>.nebius.cloud/<name>` (fleet-engine.md §5.3).
static REGISTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\bcr\.[a-z0-9-]+\.nebius\.cloud/([A-Za-z0-9][A-Za-z0-9._-]*)")
        .expect("registry regex")
});

static BUCKET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\bs3://([a-z0-9][a-z0-9.-]*[a-z0-9])").expect("bucket regex")
});

/// Runs every shape rule over `text` (valid UTF-8) and appends what it finds.
pub(crate) fn detect(text: &[u8], out: &mut Vec<Candidate>) {
    private_keys(text, out);
    putty_keys(text, out);
    service_account_credentials(text, out);
    github_tokens(text, out);
    simple(text, &IAM_TOKEN, RuleId::NebiusIamToken, 3, out);
    simple(text, &JWT, RuleId::Jwt, 3, out);
    ssh_public_keys(text, out);
    registry_locations(text, out);
    bucket_locations(text, out);
    nebius_ids(text, out);
}

fn simple(text: &[u8], re: &Regex, rule: RuleId, prefix: usize, out: &mut Vec<Candidate>) {
    for m in re.find_iter(text) {
        let value = m.as_bytes();
        if is_stand_in(&value[prefix..]) {
            continue;
        }
        out.push(Candidate::new(m.start(), m.end(), rule, value.to_vec()));
    }
}

fn body_is_filler(body: &[u8]) -> bool {
    std::str::from_utf8(body).is_ok_and(is_filler)
}

/// A body that only stands in for a secret: filler, or marked as an example.
fn is_stand_in(body: &[u8]) -> bool {
    body_is_filler(body) || mentions_example(body)
}

fn nebius_ids(text: &[u8], out: &mut Vec<Candidate>) {
    for anchor in NID_ANCHOR.find_iter(text) {
        if let Some((start, end, rule)) = nid_at(text, anchor.start()) {
            out.push(Candidate::new(start, end, rule, text[start..end].to_vec()));
        }
    }
}

/// Reads the NID whose type/routing-code dash is at `dash`, if there is one there.
fn nid_at(text: &[u8], dash: usize) -> Option<(usize, usize, RuleId)> {
    let is_id_char = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    // The type is the whole lowercase run before the dash; anything longer, starting with
    // a digit, or glued to other letters is part of a bigger token, not an ID.
    let type_len = text[..dash]
        .iter()
        .rev()
        .take_while(|b| is_id_char(b))
        .count();
    let start = dash - type_len;
    if !(3..=NID_TYPE_MAX).contains(&type_len)
        || !text[start].is_ascii_lowercase()
        || start
            .checked_sub(1)
            .is_some_and(|p| text[p].is_ascii_alphanumeric())
    {
        return None;
    }
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
    let kind = &text[start..dash];
    let tail = &text[dash + 1..end];
    let weak = &text[weak_at..end];
    let known = KNOWN_TYPES.iter().any(|t| t.as_bytes() == kind);
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

fn github_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    for m in GITHUB.find_iter(text) {
        let mut value = m.as_bytes();
        // Sentence punctuation after a token is not part of it.
        while let Some((last, rest)) = value.split_last() {
            if matches!(last, b'.' | b'-') {
                value = rest;
            } else {
                break;
            }
        }
        let body_at = if value.starts_with(b"github_pat_") {
            11
        } else {
            4
        };
        let min_body = if body_at == 11 { 22 } else { 36 };
        if value.len() < body_at + min_body || is_stand_in(&value[body_at..]) {
            continue;
        }
        let end = m.start() + value.len();
        out.push(Candidate::new(
            m.start(),
            end,
            RuleId::GithubToken,
            value.to_vec(),
        ));
    }
}

fn ssh_public_keys(text: &[u8], out: &mut Vec<Candidate>) {
    for caps in SSH_PUBLIC.captures_iter(text) {
        let all = caps.get(0).expect("match");
        let blob = caps.get(1).expect("blob group");
        if mentions_example(blob.as_bytes()) {
            continue;
        }
        // The blob identifies the key; the comment after it does not.
        out.push(Candidate::new(
            all.start(),
            blob.end(),
            RuleId::SshPublicKey,
            blob.as_bytes().to_vec(),
        ));
    }
}

fn service_account_credentials(text: &[u8], out: &mut Vec<Candidate>) {
    for (n, caps) in SA_CREDENTIALS.captures_iter(text).enumerate() {
        let m = caps.get(0).expect("match");
        let before = &text[..m.start()];
        let key_start = match caps.get(1).map(|q| q.as_bytes()) {
            // JSON: the key must open with the same quoting it closes with.
            Some(b"\"") if before.ends_with(b"\"") => m.start() - 1,
            Some(b"\\\"") if before.ends_with(b"\\\"") => m.start() - 2,
            Some(_) => continue,
            // YAML: nothing but indentation before the key on its line.
            None => {
                let indent = before
                    .iter()
                    .rev()
                    .take_while(|b| matches!(b, b' ' | b'\t'))
                    .count();
                let line_start = m.start() - indent;
                if line_start > 0 && text[line_start - 1] != b'\n' {
                    continue;
                }
                m.start()
            }
        };
        // The whole credentials object is the secret: alias it, and let the one finding
        // cover the key and IDs inside so the file is reported once.
        let object = if n < MAX_DOCUMENTS {
            balanced_object(text, m.end())
        } else {
            None
        };
        let (end, value) = match object {
            // A credentials object without a private key in it is a stub (a parser's
            // test input, a schema example), not a credential.
            Some(end) if !holds_private_key(&text[m.end()..end]) => continue,
            Some(end) => (end, squeeze(&text[m.end()..end])),
            None => {
                // Not a followed object: the rest of the line (bounded, so a line of
                // markers stays linear) stands in for the value.
                let limit = (m.end() + MAX_VALUE_BYTES).min(text.len());
                let eol = memchr_newline(&text[..limit], m.end());
                (m.end(), squeeze(&text[m.end()..eol]))
            }
        };
        let value = if value.is_empty() {
            b"subject-credentials".to_vec()
        } else {
            value
        };
        out.push(Candidate::new(
            key_start,
            end,
            RuleId::ServiceAccountCredentials,
            value,
        ));
    }
}

fn holds_private_key(document: &[u8]) -> bool {
    PEM_BEGIN
        .find_iter(document)
        .any(|m| key_body(document, m.end()).is_some_and(|(_, body)| !mentions_example(&body)))
}

fn private_keys(text: &[u8], out: &mut Vec<Candidate>) {
    for m in PEM_BEGIN.find_iter(text) {
        if let Some((end, body)) = key_body(text, m.end())
            && !mentions_example(&body)
        {
            out.push(Candidate::new(m.start(), end, RuleId::PrivateKey, body));
        }
    }
}

fn putty_keys(text: &[u8], out: &mut Vec<Candidate>) {
    const MARKER: &[u8] = b"Private-Lines:";
    for m in PUTTY.find_iter(text).take(MAX_DOCUMENTS) {
        let window_end = (m.end() + MAX_DOCUMENT_BYTES).min(text.len());
        let Some(at) = find(&text[m.end()..window_end], MARKER) else {
            continue;
        };
        let after_marker = m.end() + at + MARKER.len();
        let body_start = memchr_newline(text, after_marker);
        if let Some((end, body)) = key_body(text, body_start)
            && !mentions_example(&body)
        {
            out.push(Candidate::new(m.start(), end, RuleId::PrivateKey, body));
        }
    }
}

/// Follows a key body from `from`: base64 characters across lines, YAML indentation,
/// JSON `\n` escapes, quotes and RFC 1421 headers (`Proc-Type:`, `DEK-Info:`), up to the
/// END line. Returns the end of the block and the bare base64 (the key's identity).
fn key_body(text: &[u8], from: usize) -> Option<(usize, Vec<u8>)> {
    // Wrapped base64 lines are long; prose after a BEGIN line is short words. A run after a
    // space on the same line only continues the body when the run before it was long, which
    // accepts keys flattened onto one line and stops at "-----BEGIN … KEY----- is a header".
    const MIN_WRAPPED_RUN: usize = 40;
    let limit = (from + MAX_BLOCK_BYTES).min(text.len());
    let mut body = Vec::new();
    let mut i = from;
    let mut line_start = true;
    let mut run = 0usize;
    let mut last_run = usize::MAX;
    let mut headers = 0usize;
    let mut end = from;
    while i < limit {
        let b = text[i];
        match b {
            b' ' | b'\t' | b'"' | b'\'' => {
                if run > 0 {
                    last_run = run;
                    run = 0;
                }
                i += 1;
            }
            b'\n' | b'\r' => {
                i += 1;
                line_start = true;
                run = 0;
                last_run = usize::MAX;
            }
            b'\\' => match text.get(i + 1) {
                Some(b'n') | Some(b'r') | Some(b'\n') => {
                    i += 2;
                    line_start = true;
                    run = 0;
                    last_run = usize::MAX;
                }
                Some(b't') => i += 2,
                // `\\n`: a key inside JSON that is itself inside a JSON string.
                Some(b'\\') if matches!(text.get(i + 2), Some(b'n' | b'r')) => {
                    i += 3;
                    line_start = true;
                    run = 0;
                    last_run = usize::MAX;
                }
                _ => break,
            },
            b'-' if text[i..].starts_with(b"-----END") || text[i..].starts_with(b"---- END") => {
                end = end_marker_end(text, i);
                return (body.len() >= MIN_KEY_BODY).then_some((end, body));
            }
            // Headers (`Proc-Type:`, `DEK-Info:`, PGP `Version:`) come before the body, and
            // only a few of them; past that a `Name:` line ends the block (PuTTY's
            // `Private-MAC:` after its body).
            _ if line_start
                && body.is_empty()
                && headers < MAX_HEADERS
                && is_header_line(&text[i..limit]) =>
            {
                headers += 1;
                // Headers are short; a "header" without a line end soon is not one, and
                // stopping here keeps a run of BEGIN lines from rescanning the file.
                let window = &text[i..(i + MAX_HEADER_BYTES).min(limit)];
                match window.iter().position(|b| matches!(b, b'\n' | b'\\')) {
                    Some(p) => i += p,
                    None => break,
                }
            }
            _ if is_base64(b) => {
                if run == 0 && last_run < MIN_WRAPPED_RUN {
                    break;
                }
                body.push(b);
                run += 1;
                i += 1;
                end = i;
                line_start = false;
            }
            _ => break,
        }
    }
    (body.len() >= MIN_KEY_BODY).then_some((end, body))
}

fn end_marker_end(text: &[u8], at: usize) -> usize {
    // `-----END RSA PRIVATE KEY-----`: skip past the label to the closing dashes.
    let window = &text[at + 8..(at + 8 + 80).min(text.len())];
    match find(window, b"----") {
        Some(p) => {
            let mut e = at + 8 + p;
            while e < text.len() && text[e] == b'-' {
                e += 1;
            }
            e
        }
        None => at + 8,
    }
}

/// `Proc-Type: 4,ENCRYPTED`, `DEK-Info: …`, `Comment: …`, `Version: …`.
fn is_header_line(rest: &[u8]) -> bool {
    let name_len = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
        .count();
    name_len > 0 && rest[0].is_ascii_alphabetic() && rest.get(name_len) == Some(&b':')
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

fn registry_locations(text: &[u8], out: &mut Vec<Candidate>) {
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

fn bucket_locations(text: &[u8], out: &mut Vec<Candidate>) {
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

/// End (exclusive) of the `{…}` object starting at the first non-blank byte after `from`,
/// honouring JSON strings; `None` when there is no object or it does not close in time.
fn balanced_object(text: &[u8], from: usize) -> Option<usize> {
    let limit = (from + MAX_DOCUMENT_BYTES).min(text.len());
    let mut i = from;
    while i < limit && text[i].is_ascii_whitespace() {
        i += 1;
    }
    if text.get(i) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    while i < limit {
        let b = text[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

fn squeeze(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

fn memchr_newline(text: &[u8], from: usize) -> usize {
    text[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |p| from + p)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::testdata;

    fn rules(text: &str) -> Vec<(usize, RuleId)> {
        let mut out = Vec::new();
        detect(text.as_bytes(), &mut out);
        out.sort_by_key(|c| (c.start, c.rule));
        out.iter().map(|c| (c.start, c.rule)).collect()
    }

    #[test]
    fn known_type_and_generic_ids() {
        let tenant = testdata::nid("tenant", "e00", 15);
        let odd = testdata::nid("widget", "u00", 15);
        let legacy = testdata::nid("project", "e0t", 19);
        let text = format!("a: {tenant}\nb: {odd}\nc: {legacy}\n");
        assert_eq!(
            rules(&text),
            vec![
                (3, RuleId::NebiusId),
                (4 + tenant.len() + 3, RuleId::NebiusGenericId),
                (4 + tenant.len() + 4 + odd.len() + 3, RuleId::NebiusId),
            ]
        );
    }

    #[test]
    fn id_look_alikes_are_ignored() {
        let sha1 = "e0".to_string() + &"ab12".repeat(9) + "cd";
        let text = format!(
            "project-management-tools\nbuild-{sha1}\nregistry-{sha1}\n\
             trace-e0123456-89ab-cdef-0123-456789abcdef\nwidget-a1b{}\n\
             tenant-e00xxxxxxxxxxxxxxx\nproject-u00000000000000000\nproject-e0286\n",
            "q".repeat(14)
        );
        assert_eq!(rules(&text), vec![]);
    }

    #[test]
    fn ids_inside_longer_tokens_are_ignored() {
        let tenant = testdata::nid("tenant", "e00", 15);
        assert_eq!(rules(&format!("X{tenant}")), vec![]);
        assert_eq!(rules(&format!("{tenant}Z")), vec![]);
        assert_eq!(rules(&format!("_{tenant}_")).len(), 1);
    }

    #[test]
    fn pem_needs_a_body() {
        let header = testdata::pem_begin("RSA ");
        assert_eq!(rules(&format!("{header}\n...\n")), vec![]);
        let key = testdata::pem_key("OPENSSH ", 5);
        assert_eq!(rules(&key), vec![(0, RuleId::PrivateKey)]);
    }

    #[test]
    fn pem_in_json_string_is_one_key() {
        let key = testdata::pem_key("", 4).replace('\n', "\\n");
        let text = format!("{{\"k\": \"{key}\"}}");
        assert_eq!(rules(&text), vec![(7, RuleId::PrivateKey)]);
    }

    #[test]
    fn encrypted_pem_with_headers() {
        let begin = testdata::pem_begin("RSA ");
        let body = testdata::base64(64 * 4, 7);
        let text = format!(
            "{begin}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011\n\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
            &body[..128],
            &body[128..]
        );
        assert_eq!(rules(&text), vec![(0, RuleId::PrivateKey)]);
    }

    #[test]
    fn github_tokens_old_and_new_forms() {
        let classic = testdata::github("ghp_", 36);
        let stateless = format!("ghs_12345_{}", testdata::jwt(9));
        let pat = testdata::github("github_pat_", 82);
        let text = format!("{classic}.\n{stateless}\n{pat}\n");
        let found = rules(&text);
        // `_eyJ` has no word boundary, so the JWT inside the ghs_ token is not found twice.
        assert_eq!(found.len(), 3);
        assert!(found.contains(&(0, RuleId::GithubToken)));
        assert!(found.contains(&(classic.len() + 2, RuleId::GithubToken)));
        assert!(rules("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx").is_empty());
    }

    #[test]
    fn locations() {
        let reg = format!(
            "cr.eu-north1.nebius.cloud/{}",
            testdata::nid_tail("e00", 15)
        );
        let dated = &format!("s3://training-runs-{}{}/ckpt", "2026", "0115");
        let random = &format!("s3://datasets-{}{}/x", "9f3a6", "c2e1b");
        let fine = "s3://public-datasets/x cr.eu-north1.nebius.cloud/team-images/x";
        assert_eq!(rules(&reg), vec![(0, RuleId::PrivateRegistryLocation)]);
        assert_eq!(rules(dated), vec![(0, RuleId::PrivateBucketLocation)]);
        assert_eq!(rules(random), vec![(0, RuleId::PrivateBucketLocation)]);
        assert_eq!(rules(fine), vec![]);
        assert_eq!(rules("s3://bucket-00000000"), vec![]);
    }

    #[test]
    fn ssh_public_key_value_is_the_blob() {
        let key = testdata::ssh_public("ssh-ed25519", 1);
        let mut out = Vec::new();
        detect(format!("{key} me@host").as_bytes(), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule, RuleId::SshPublicKey);
        assert!(out[0].value.starts_with(b"AAAA"));
    }

    #[test]
    fn example_marked_and_stub_values_are_ignored() {
        let ssh = format!(
            "ssh-ed25519 AAAAC3{}ExampleKeyForTests",
            testdata::base64(40, 3)
        );
        let token = format!(
            "ghp_{}EXAMPLE",
            testdata::base64(30, 4).replace(['+', '/'], "x")
        );
        let name = ["subject", "credentials"].join("-");
        let stub = format!("{{\"{name}\": {{\"private-key\": \"PEMDATA\", \"kid\": \"k\"}}}}");
        for text in [ssh, token, stub] {
            assert_eq!(rules(&text), vec![]);
        }
    }

    #[test]
    fn credentials_nested_in_a_json_string() {
        let name = ["subject", "credentials"].join("-");
        let key = testdata::pem_key("", 4).replace('\n', "\\\\n");
        let text = format!(
            "{{\"config\": \"{{\\\"{name}\\\": {{\\\"private-key\\\": \\\"{key}\\\"}}}}\"}}"
        );
        let found = rules(&text);
        assert_eq!(
            found.len(),
            2,
            "credentials and the key inside (not deduplicated here)"
        );
        assert_eq!(found[0].1, RuleId::ServiceAccountCredentials);
    }

    #[test]
    fn service_account_credentials_cover_the_object() {
        let text = testdata::sa_credentials();
        let found = rules(&text);
        assert!(found.contains(&(
            text.find("\"subject").unwrap(),
            RuleId::ServiceAccountCredentials
        )));
    }
}
