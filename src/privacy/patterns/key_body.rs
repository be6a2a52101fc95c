//! Following a key body past its BEGIN line: base64 across lines and through every quoting
//! and escaping a key is pasted with (JSON, YAML, shell, URL, XML), headers, up to END.

use super::MAX_BLOCK_BYTES;
use super::text::find;

/// Fewest base64 characters a private key body must have. Real keys have hundreds; this
/// lets code and docs mention the BEGIN line (or a truncated `MIIE...`) without a finding.
const MIN_KEY_BODY: usize = 64;

/// Most header lines followed before a key body.
const MAX_HEADERS: usize = 8;

/// Longest RFC 1421 header line (`DEK-Info: …`, `Comment: …`) followed inside a key block.
const MAX_HEADER_BYTES: usize = 512;

/// Follows a key body from `from`: base64 characters across lines, YAML indentation and
/// quoting, comment and list markers, escaped line breaks of any depth (`\n`, `\\n`,
/// `\r\n`, `\u000a`, `%0A`, `&#10;`) and escaped base64 characters (`\/`, `\u002b`, `%2B`),
/// and RFC 1421 headers (`Proc-Type:`, `DEK-Info:`), up to the END line. Returns the end of
/// the block and the bare base64, the key's identity whatever the quoting.
pub(super) fn key_body(text: &[u8], from: usize) -> Option<(usize, Vec<u8>)> {
    let limit = (from + MAX_BLOCK_BYTES).min(text.len());
    let mut body = Body::new(from);
    let mut i = from;
    let mut headers = 0usize;
    while i < limit {
        if text[i] == b'-'
            && (text[i..].starts_with(b"-----END") || text[i..].starts_with(b"---- END"))
        {
            body.end = end_marker_end(text, i);
            return body.finish();
        }
        // Headers (`Proc-Type:`, `DEK-Info:`, PGP `Version:`) come before the body, and
        // only a few of them; past that a `Name:` line ends the block (PuTTY's
        // `Private-MAC:` after its body).
        if body.line_start
            && body.bytes.is_empty()
            && headers < MAX_HEADERS
            && is_header_line(&text[i..limit])
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
        let (step, len) = key_step(&text[i..limit], body.line_start, body.run);
        if !body.take(step, i + len) {
            break;
        }
        i += len;
    }
    body.finish()
}

/// A key body as it is followed: the base64 so far and the shape of the current line.
struct Body {
    bytes: Vec<u8>,
    /// Where the last body character ends.
    end: usize,
    line_start: bool,
    /// The base64 run being read, and the one before it on this line.
    run: usize,
    last_run: usize,
}

impl Body {
    fn new(from: usize) -> Body {
        Body {
            bytes: Vec::new(),
            end: from,
            line_start: true,
            run: 0,
            last_run: usize::MAX,
        }
    }

    /// Takes one token ending at `end`; false when it ends the block instead.
    fn take(&mut self, step: KeyStep, end: usize) -> bool {
        // Wrapped base64 lines are long; prose after a BEGIN line is short words. A run after
        // a space on the same line only continues the body when the run before it was long,
        // which accepts keys flattened onto one line and stops at "-----BEGIN … KEY----- is
        // a header".
        const MIN_WRAPPED_RUN: usize = 40;
        match step {
            KeyStep::Blank => {
                if self.run > 0 {
                    self.last_run = self.run;
                    self.run = 0;
                }
            }
            KeyStep::Break => {
                self.line_start = true;
                self.run = 0;
                self.last_run = usize::MAX;
            }
            KeyStep::Char(c) => {
                if self.run == 0 && self.last_run < MIN_WRAPPED_RUN {
                    return false;
                }
                self.bytes.push(c);
                self.run += 1;
                self.end = end;
                self.line_start = false;
            }
            KeyStep::Stop => return false,
        }
        true
    }

    /// The block's end and its base64, if there is enough of it to be a key.
    fn finish(self) -> Option<(usize, Vec<u8>)> {
        (self.bytes.len() >= MIN_KEY_BODY).then_some((self.end, self.bytes))
    }
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

pub(super) fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}
