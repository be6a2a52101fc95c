//! Private keys: PEM blocks, PEM blocks base64-encoded once more, and PuTTY key files.
//! Each is aliased by its bare base64 body, so one key quoted any way has one alias.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::key_body::{is_base64, key_body};
use super::text::{find, memchr_newline};
use super::{MAX_BLOCK_BYTES, MAX_DOCUMENT_BYTES};
use crate::privacy::Candidate;
use crate::privacy::noise::mentions_example;
use crate::privacy::rules::RuleId;

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

pub(super) fn private_keys(text: &[u8], out: &mut Vec<Candidate>) {
    for m in PEM_BEGIN.find_iter(text) {
        if let Some((end, body)) = key_body(text, m.end())
            && !mentions_example(&body)
        {
            out.push(Candidate::new(m.start(), end, RuleId::PrivateKey, body));
        }
    }
}

pub(super) fn holds_private_key(document: &[u8]) -> bool {
    PEM_BEGIN
        .find_iter(document)
        .any(|m| key_body(document, m.end()).is_some_and(|(_, body)| !mentions_example(&body)))
}

// Every encoded PEM is looked at, however many a file holds (a kubeconfig carries many
// certificates beside one key): the scan stays linear because each one's text is read once
// (`resume`), and only a block whose first line decodes to a private key is decoded whole.
pub(super) fn encoded_private_keys(text: &[u8], out: &mut Vec<Candidate>) {
    let mut resume = 0;
    for m in ENCODED_PEM.find_iter(text) {
        if m.start() < resume || (m.start() > 0 && is_base64(text[m.start() - 1])) {
            continue;
        }
        let (encoded, end) = wrapped_base64(text, m.start());
        resume = end;
        // `-----BEGIN <up to 40 characters> PRIVATE KEY-----` fits in the first 96 bytes.
        let head = decode_base64(&encoded[..encoded.len().min(128)]);
        if find(&head, b"PRIVATE").is_none() {
            continue;
        }
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

/// The base64 text starting at `start`, line wrapped or not, without its line breaks; and
/// where it ends.
fn wrapped_base64(text: &[u8], start: usize) -> (Vec<u8>, usize) {
    // One base64 line wrapped by `base64` is 76 characters; anything much shorter ends it.
    const MIN_WRAPPED_LINE: usize = 60;
    let limit = (start + MAX_BLOCK_BYTES * 2).min(text.len());
    let mut encoded = Vec::new();
    let (mut i, mut line, mut end) = (start, 0usize, start);
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
    (encoded, end)
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

// Every PuTTY header is looked at: the `Private-Lines:` markers are found in one pass, and
// each header takes the first one after it within its document, so many headers cost no more
// than one scan.
pub(super) fn putty_keys(text: &[u8], out: &mut Vec<Candidate>) {
    const MARKER: &[u8] = b"Private-Lines:";
    let mut markers = Vec::new();
    let mut from = 0;
    while let Some(at) = find(&text[from..], MARKER) {
        markers.push(from + at);
        from += at + MARKER.len();
    }
    for m in PUTTY.find_iter(text) {
        let next = markers.partition_point(|&p| p < m.end());
        let Some(&at) = markers
            .get(next)
            .filter(|&&p| p + MARKER.len() <= m.end() + MAX_DOCUMENT_BYTES)
        else {
            continue;
        };
        let after_marker = at + MARKER.len();
        let body_start = memchr_newline(text, after_marker);
        if let Some((end, body)) = key_body(text, body_start)
            && !mentions_example(&body)
        {
            out.push(Candidate::new(m.start(), end, RuleId::PrivateKey, body));
        }
    }
}
