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
/// string) or a YAML key (plain or quoted) is checked around the match.
static SA_CREDENTIALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)subject-credentials(\\?"|')?[ \t]*:"#)
        .expect("service-account credentials regex")
});

/// The BEGIN line of a private key. The words may be split where a quoted or folded YAML
/// scalar wraps (`-----BEGIN RSA PRIVATE⏎    KEY-----`, with or without a `\` continuation)
/// or be URL- or form-encoded (`%20`, `+`), so the separator is any short run of those.
static PEM_BEGIN: LazyLock<Regex> = LazyLock::new(|| {
    let sep = r"(?:[ \t\r\n]|\\\r?\n|%20|\+){1,48}";
    Regex::new(&format!(
        r"(?-u)-----BEGIN(?:{sep}[A-Z0-9]+)*?{sep}PRIVATE{sep}KEY(?:{sep}BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
    ))
    .expect("PEM regex")
});

/// Base64 of `-----BEGIN `: a whole PEM block encoded once more (a Kubernetes secret's
/// `data:`, a CI variable), which hides every marker the other rules look for.
static ENCODED_PEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)LS0tLS1CRUdJTi").expect("encoded PEM regex"));

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
    encoded_private_keys(text, out);
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
            // Quoted (JSON, or YAML): the key must open with the quoting it closes with.
            Some(b"\"") if before.ends_with(b"\"") => m.start() - 1,
            Some(b"\\\"") if before.ends_with(b"\\\"") => m.start() - 2,
            Some(b"'") if before.ends_with(b"'") => m.start() - 1,
            Some(_) => continue,
            // Plain YAML: a key, not prose, so nothing but indentation before it on its
            // line, or it opens a flow mapping entry or a sequence item.
            None => {
                let lead = before
                    .iter()
                    .rev()
                    .take_while(|b| matches!(b, b' ' | b'\t'))
                    .count();
                let lead_at = m.start() - lead;
                let opens = lead_at == 0
                    || matches!(text[lead_at - 1], b'\n' | b'{' | b',')
                    || (text[lead_at - 1] == b'-' && lead > 0);
                if !opens {
                    continue;
                }
                m.start()
            }
        };
        // The whole credentials object is the secret, so it is what the alias is of; the
        // finding spans only the key, so the private key and IDs inside are reported too,
        // each on its own line, and a change to any of them shows in a diff scan.
        let object = if n < MAX_DOCUMENTS {
            balanced_object(text, m.end()).or_else(|| yaml_block(text, key_start, m.end()))
        } else {
            None
        };
        let value = match object {
            // A credentials object (JSON, or a YAML block) without a private key in it is a
            // stub (a parser's test input, a schema example), not a credential.
            Some(end) if !holds_private_key(&text[m.end()..end]) => continue,
            Some(end) => squeeze(&text[m.end()..end]),
            None => {
                // Not a followed object: the rest of the line (bounded, so a line of
                // markers stays linear) stands in for the value.
                let limit = (m.end() + MAX_VALUE_BYTES).min(text.len());
                let eol = memchr_newline(&text[..limit], m.end());
                squeeze(&text[m.end()..eol])
            }
        };
        let value = if value.is_empty() {
            b"subject-credentials".to_vec()
        } else {
            value
        };
        out.push(Candidate::new(
            key_start,
            m.end(),
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

fn encoded_private_keys(text: &[u8], out: &mut Vec<Candidate>) {
    // One base64 line wrapped by `base64` is 76 characters; anything much shorter ends it.
    const MIN_WRAPPED_LINE: usize = 60;
    let mut resume = 0;
    for m in ENCODED_PEM.find_iter(text).take(MAX_DOCUMENTS) {
        if m.start() < resume || (m.start() > 0 && is_base64(text[m.start() - 1])) {
            continue;
        }
        let limit = (m.start() + MAX_BLOCK_BYTES * 2).min(text.len());
        let mut encoded = Vec::new();
        let (mut i, mut line, mut end) = (m.start(), 0usize, m.start());
        // Wrapped lines all have the first line's width; a shorter one, or padding, is
        // the last, and what follows it is other text.
        let mut width = None;
        while i < limit {
            match text[i] {
                b if is_base64(b) => {
                    encoded.push(b);
                    line += 1;
                    i += 1;
                    end = i;
                }
                b'\n' | b'\r' | b' ' | b'\t'
                    if line == 0
                        || (line >= MIN_WRAPPED_LINE
                            && width.is_none_or(|w| w == line)
                            && encoded.last() != Some(&b'=')) =>
                {
                    if text[i] == b'\n' {
                        width.get_or_insert(line);
                        line = 0;
                    }
                    i += 1;
                }
                _ => break,
            }
        }
        resume = end;
        let decoded = decode_base64(&encoded);
        if let Some(begin) = PEM_BEGIN.find(&decoded).filter(|b| b.start() == 0)
            && let Some((_, body)) = key_body(&decoded, begin.end())
            && !mentions_example(&body)
        {
            // The inner body is the key's identity, so an encoded key and the same key in
            // clear have the same alias.
            out.push(Candidate::new(m.start(), end, RuleId::PrivateKey, body));
        }
    }
}

/// Standard base64 up to the first character outside the alphabet (padding included);
/// a trailing partial group is dropped.
fn decode_base64(encoded: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in encoded {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => break,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
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

/// Follows a key body from `from`: base64 characters across lines, YAML indentation and
/// quoting, comment and list markers, escaped line breaks of any depth (`\n`, `\\n`,
/// `\r\n`, `\u000a`, `%0A`, `&#10;`) and escaped base64 characters (`\/`, `\u002b`, `%2B`),
/// and RFC 1421 headers (`Proc-Type:`, `DEK-Info:`), up to the END line. Returns the end of
/// the block and the bare base64, the key's identity whatever the quoting.
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
        if text[i] == b'-'
            && (text[i..].starts_with(b"-----END") || text[i..].starts_with(b"---- END"))
        {
            end = end_marker_end(text, i);
            return (body.len() >= MIN_KEY_BODY).then_some((end, body));
        }
        // Headers (`Proc-Type:`, `DEK-Info:`, PGP `Version:`) come before the body, and
        // only a few of them; past that a `Name:` line ends the block (PuTTY's
        // `Private-MAC:` after its body).
        if line_start && body.is_empty() && headers < MAX_HEADERS && is_header_line(&text[i..limit])
        {
            headers += 1;
            // Headers are short; a "header" without a line end soon is not one, and
            // stopping here keeps a run of BEGIN lines from rescanning the file.
            let window = &text[i..(i + MAX_HEADER_BYTES).min(limit)];
            match window.iter().position(|b| matches!(b, b'\n' | b'\\')) {
                Some(p) => {
                    i += p;
                    continue;
                }
                None => break,
            }
        }
        let (step, len) = key_step(&text[i..limit], line_start, run);
        match step {
            KeyStep::Blank => {
                if run > 0 {
                    last_run = run;
                    run = 0;
                }
            }
            KeyStep::Break => {
                line_start = true;
                run = 0;
                last_run = usize::MAX;
            }
            KeyStep::Char(c) => {
                if run == 0 && last_run < MIN_WRAPPED_RUN {
                    break;
                }
                body.push(c);
                run += 1;
                end = i + len;
                line_start = false;
            }
            KeyStep::Stop => break,
        }
        i += len;
    }
    (body.len() >= MIN_KEY_BODY).then_some((end, body))
}

/// What one token inside a key block means for the body.
enum KeyStep {
    /// Quoting, indentation, a comment or list marker: nothing for the body.
    Blank,
    /// A line break, literal or escaped.
    Break,
    /// A body character, literal or decoded from an escape.
    Char(u8),
    /// Not part of a key block.
    Stop,
}

/// Reads the token at the start of `rest` (non-empty): what it is and how many bytes it has.
/// `run` is the length of the base64 run just before it.
fn key_step(rest: &[u8], line_start: bool, run: usize) -> (KeyStep, usize) {
    let next = rest.get(1).copied();
    let blank_after = |n: Option<u8>| n.is_none_or(|c| c.is_ascii_whitespace());
    match rest[0] {
        b' ' | b'\t' | b'"' | b'\'' | b'`' | b',' => (KeyStep::Blank, 1),
        b'\n' | b'\r' => (KeyStep::Break, 1),
        b'\\' => {
            // Any depth of escaping: `\n`, `\\n` (JSON inside a JSON string), `\\\\n` …
            let slashes = rest.iter().take_while(|&&c| c == b'\\').count();
            let after = &rest[slashes..];
            let step = match after.first() {
                // `\n`, `\r`, or `\` before a real line end (a YAML or shell continuation).
                Some(b'n' | b'r' | b'\n' | b'\r') => (KeyStep::Break, 1),
                Some(b't' | b'"' | b'\'') => (KeyStep::Blank, 1),
                // JSON encoders that escape every slash (`\/`).
                Some(b'/') => (KeyStep::Char(b'/'), 1),
                Some(b'u') => hex_escape(&after[1..], 4).map_or((KeyStep::Stop, 0), |c| (c, 5)),
                Some(b'x') => hex_escape(&after[1..], 2).map_or((KeyStep::Stop, 0), |c| (c, 3)),
                _ => (KeyStep::Stop, 0),
            };
            (step.0, slashes + step.1)
        }
        // URL and form encoding (`%0A`, `%2B`).
        b'%' => hex_escape(&rest[1..], 2).map_or((KeyStep::Stop, 1), |c| (c, 3)),
        // XML and HTML character references (`&#10;`, `&#xA;`, `&quot;`).
        b'&' => char_reference(rest).unwrap_or((KeyStep::Stop, 1)),
        // A commented-out or quoted key: `# `, `; `, `> `, ` * `, `// `, `-- ` and YAML
        // list markers in front of each line.
        b'#' | b';' | b'>' | b'*' if line_start => (KeyStep::Blank, 1),
        b'/' | b'-' if line_start && next == Some(rest[0]) && blank_after(rest.get(2).copied()) => {
            (KeyStep::Blank, 2)
        }
        b'-' if line_start && blank_after(next) => (KeyStep::Blank, 1),
        // String concatenation (`"…\n" +`), never a lone `+` between base64 runs.
        b'+' if run == 0 && blank_after(next) => (KeyStep::Blank, 1),
        // Base64url bodies; a dash run is a marker line, not body.
        b'-' if next != Some(b'-') => (KeyStep::Char(b'-'), 1),
        b'_' => (KeyStep::Char(b'_'), 1),
        b if is_base64(b) => (KeyStep::Char(b), 1),
        _ => (KeyStep::Stop, 1),
    }
}

/// Decodes `digits` hex digits at the start of `rest` as an escaped character.
fn hex_escape(rest: &[u8], digits: usize) -> Option<KeyStep> {
    let hex = rest.get(..digits)?;
    if !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let code = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    escaped_char(code)
}

/// `&#10;`, `&#x0A;`, `&quot;`, `&apos;` at the start of `rest`, with its length.
fn char_reference(rest: &[u8]) -> Option<(KeyStep, usize)> {
    let semi = rest.iter().take(10).position(|&c| c == b';')?;
    let name = &rest[1..semi];
    let step = match name {
        b"quot" | b"apos" => KeyStep::Blank,
        _ => {
            let digits = std::str::from_utf8(name.strip_prefix(b"#")?).ok()?;
            let code = match digits.strip_prefix(['x', 'X']) {
                Some(h) => u32::from_str_radix(h, 16).ok()?,
                None => digits.parse().ok()?,
            };
            escaped_char(code)?
        }
    };
    Some((step, semi + 1))
}

/// What an escaped character means inside a key block.
fn escaped_char(code: u32) -> Option<KeyStep> {
    let b = u8::try_from(code).ok()?;
    match b {
        b'\n' | b'\r' => Some(KeyStep::Break),
        b' ' | b'\t' | b'"' | b'\'' => Some(KeyStep::Blank),
        b'-' | b'_' => Some(KeyStep::Char(b)),
        _ if is_base64(b) => Some(KeyStep::Char(b)),
        _ => None,
    }
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

/// End (exclusive) of the YAML block mapping under the key at `key_start`, whose line ends
/// (but for a comment) at `after_colon`: the lines indented deeper than the key, bounded
/// like an object. `None` when the key has a value on its own line or nothing below it.
fn yaml_block(text: &[u8], key_start: usize, after_colon: usize) -> Option<usize> {
    let line_start = text[..key_start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let indent = key_start - line_start;
    let eol = memchr_newline(
        &text[..(after_colon + MAX_VALUE_BYTES).min(text.len())],
        after_colon,
    );
    let rest = text[after_colon..eol].trim_ascii();
    if eol == text.len() || !(rest.is_empty() || rest.starts_with(b"#")) {
        return None;
    }
    let limit = (eol + MAX_DOCUMENT_BYTES).min(text.len());
    let (mut at, mut end) = (eol, None);
    while at < limit {
        let next = memchr_newline(&text[..limit], at + 1);
        let line = &text[at + 1..next];
        let depth = line
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        if !line[depth..].trim_ascii().is_empty() {
            if depth <= indent {
                break;
            }
            end = Some(next);
        }
        at = next;
    }
    end
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
    fn service_account_credentials_report_the_key_and_each_id() {
        let text = testdata::sa_credentials();
        let found = rules(&text);
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        let lines: Vec<_> = found
            .iter()
            .map(|&(at, rule)| (line_of(at), rule))
            .collect();
        assert_eq!(
            lines,
            vec![
                (2, RuleId::ServiceAccountCredentials),
                (4, RuleId::PrivateKey),
                (5, RuleId::NebiusId),
                (6, RuleId::NebiusId),
                (7, RuleId::NebiusId),
            ]
        );
    }

    #[test]
    fn ids_after_glued_escapes_start_after_the_escape() {
        let id = testdata::nid("tenant", "e00", 15);
        for open in [
            "\"a\\n", "\\\\n", "\\t", "\\u0022", "\\x22", "%22", "%2f", "%2F", "\\u002F",
        ] {
            let text = format!("{open}{id}\"");
            assert_eq!(rules(&text), vec![(open.len(), RuleId::NebiusId)], "{open}");
        }
        let odd = testdata::nid("widgetpool", "u00", 15);
        assert_eq!(
            rules(&format!("\\n{odd}")),
            vec![(2, RuleId::NebiusGenericId)]
        );
        assert_eq!(
            rules("\\nproject-management-tools %2Fproject-e0286"),
            vec![]
        );
    }

    #[test]
    fn guard_prefixes_shorter_than_the_grammar_are_known() {
        let cr = format!("cr-{}", testdata::nid_tail("e00", 15));
        assert_eq!(rules(&cr), vec![(0, RuleId::NebiusId)]);
        assert_eq!(
            rules(&testdata::nid("network", "e0t", 15)),
            vec![(0, RuleId::NebiusId)]
        );
    }

    #[test]
    fn escaped_key_bodies_alias_as_the_plain_key() {
        let key = testdata::pem_key("RSA ", 4);
        let mut plain = Vec::new();
        detect(key.as_bytes(), &mut plain);
        for style in testdata::KEY_QUOTINGS {
            let quoted = testdata::quote_key(style, &key).lines.join("\n");
            let mut out = Vec::new();
            detect(quoted.as_bytes(), &mut out);
            assert_eq!(out.len(), 1, "{style}");
            assert_eq!(out[0].rule, RuleId::PrivateKey, "{style}");
            assert!(out[0].value == plain[0].value, "{style}: another body");
        }
    }

    #[test]
    fn encoded_certificates_and_stub_keys_are_not_keys() {
        let cert = testdata::pem_key("", 4).replace("PRIVATE KEY", "CERTIFICATE");
        let stub = format!("{}\nMIIE...\n", testdata::pem_begin(""));
        for text in [cert, stub] {
            assert_eq!(rules(&testdata::encode_base64(text.as_bytes())), vec![]);
        }
    }
}
