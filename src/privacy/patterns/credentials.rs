//! Credentials known by the name they are assigned to: Nebius service-account credentials
//! files (the `subject-credentials` key, JSON or YAML, however deeply quoted, aliased by the
//! whole object it opens) and AWS secret access keys.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::keys::holds_private_key;
use super::text::{memchr_newline, squeeze};
use super::{MAX_DOCUMENT_BYTES, MAX_DOCUMENTS, MAX_VALUE_BYTES};
use crate::privacy::Candidate;
use crate::privacy::rules::RuleId;

/// The top-level key of a Nebius service-account credentials file. Led by the literal so
/// the engine can skip to it; whether it is a JSON key (`"…"`, or `\"…\"` inside a JSON
/// string) or a YAML key (plain or quoted) is checked around the match.
static SA_CREDENTIALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)subject-credentials(\\?"|')?[ \t]*:"#)
        .expect("service-account credentials regex")
});

/// An AWS secret access key is 40 characters of base64 with no prefix of its own, so only the
/// name it is assigned to tells it from a hash or any other 40 characters: a credentials file's
/// `aws_secret_access_key = …`, an environment's `AWS_SECRET_ACCESS_KEY=…`, the AWS CLI's
/// `"SecretAccessKey": "…"`; any case, plain or quoted (also `\"` inside a JSON string), with
/// `=`, `:` or `=>`.
static AWS_SECRET_ACCESS_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i-u)\b(?:aws[_.-]?)?secret[_.-]?access[_.-]?key(?:\\?["'])?[ \t]*(?::|=>?)[ \t]*(?:\\?["'])?([A-Za-z0-9/+]{40})"#,
    )
    .expect("AWS secret access key regex")
});

/// The base64 alphabet with padding: a 40-character run followed by one of these is part of
/// something longer, not a secret access key.
fn continues_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'=')
}

pub(super) fn aws_secret_access_keys(text: &[u8], out: &mut Vec<Candidate>) {
    for caps in AWS_SECRET_ACCESS_KEY.captures_iter(text) {
        let value = caps.get(1).expect("value group");
        if text.get(value.end()).copied().is_some_and(continues_base64)
            || super::is_stand_in(value.as_bytes())
        {
            continue;
        }
        out.push(Candidate::new(
            value.start(),
            value.end(),
            RuleId::AwsSecretAccessKey,
            value.as_bytes().to_vec(),
        ));
    }
}

pub(super) fn service_account_credentials(text: &[u8], out: &mut Vec<Candidate>) {
    for (n, caps) in SA_CREDENTIALS.captures_iter(text).enumerate() {
        let m = caps.get(0).expect("match");
        let quote = caps.get(1).map(|q| q.as_bytes());
        let Some(key_start) = key_start(text, m.start(), quote) else {
            continue;
        };
        let Some(value) = credentials_value(text, n, key_start, m.end()) else {
            continue;
        };
        out.push(Candidate::new(
            key_start,
            m.end(),
            RuleId::ServiceAccountCredentials,
            value,
        ));
    }
}

/// Where the key matched at `at` starts, with its opening quote; `None` when the match is
/// not a key (a quote that does not open it, or a plain word inside prose).
fn key_start(text: &[u8], at: usize, quote: Option<&[u8]>) -> Option<usize> {
    let before = &text[..at];
    match quote {
        // Quoted (JSON, or YAML): the key must open with the quoting it closes with.
        Some(b"\"") if before.ends_with(b"\"") => Some(at - 1),
        Some(b"\\\"") if before.ends_with(b"\\\"") => Some(at - 2),
        Some(b"'") if before.ends_with(b"'") => Some(at - 1),
        Some(_) => None,
        // Plain YAML: a key, not prose, so nothing but indentation before it on its
        // line, or it opens a flow mapping entry or a sequence item.
        None => {
            let lead = before
                .iter()
                .rev()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let lead_at = at - lead;
            let opens = lead_at == 0
                || matches!(text[lead_at - 1], b'\n' | b'{' | b',')
                || (text[lead_at - 1] == b'-' && lead > 0);
            opens.then_some(at)
        }
    }
}

/// What the finding is an alias of: the credentials object after the key at `key_start`
/// (the `n`th in the file), squeezed of white space. `None` for a stub that holds no key.
fn credentials_value(text: &[u8], n: usize, key_start: usize, after_key: usize) -> Option<Vec<u8>> {
    // The whole credentials object is the secret, so it is what the alias is of; the
    // finding spans only the key, so the private key and IDs inside are reported too,
    // each on its own line, and a change to any of them shows in a diff scan.
    let object = if n < MAX_DOCUMENTS {
        balanced_object(text, after_key).or_else(|| yaml_block(text, key_start, after_key))
    } else {
        None
    };
    let value = match object {
        // A credentials object (JSON, or a YAML block) without a private key in it is a
        // stub (a parser's test input, a schema example), not a credential.
        Some(end) if is_stub(&text[after_key..end]) => return None,
        Some(end) => squeeze(&text[after_key..end]),
        None => {
            // Not a followed object: the rest of the line (bounded, so a line of
            // markers stays linear) stands in for the value.
            let limit = (after_key + MAX_VALUE_BYTES).min(text.len());
            let eol = memchr_newline(&text[..limit], after_key);
            squeeze(&text[after_key..eol])
        }
    };
    Some(if value.is_empty() {
        b"subject-credentials".to_vec()
    } else {
        value
    })
}

/// A credentials object that holds no private key: neither a key the scanner can read nor a
/// `private-key` field with a real-looking value (one quoted or encoded in a way the key
/// reader does not follow still counts: when in doubt, it is reported).
fn is_stub(object: &[u8]) -> bool {
    if holds_private_key(object) {
        return false;
    }
    static FIELD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?i)private[-_]?key["']?\s*[:=]\s*["']?([^"',}\s]+)"#).expect("static regex")
    });
    // A reference (`${VAR}`, `<key>`, a template) names where a key comes from, not a key.
    let reference = |v: &[u8]| matches!(v.first(), Some(b'$' | b'<' | b'{' | b'%'));
    !FIELD.captures_iter(object).any(|c| {
        let value = &c[1];
        value.len() >= 16 && !reference(value) && !super::is_stand_in(value)
    })
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
