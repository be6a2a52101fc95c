//! Spec-aware rules: fleet YAML fields that must be empty or a placeholder when committed.
//!
//! A full YAML parser would lose positions and choke on the half-edited files people
//! commit, so this is a line-oriented reader that knows just enough YAML to find mapping
//! keys and read their scalar values: comments, block and flow context, sequences, quoted
//! (also multi-line), plain multi-line and block (`|`, `>`) scalars, anchors and tags. Text
//! inside block scalars and comments is never mistaken for a key.

use std::sync::LazyLock;

use regex::Regex;

use super::Candidate;
use super::noise;
use super::rules::RuleId;

/// The fields of fleet-engine.md §5.1 that carry private identifiers.
const FIELDS: [(&str, RuleId); 8] = [
    ("tenant_id", RuleId::SpecTenantId),
    ("project_id", RuleId::SpecProjectId),
    ("capacity_block_group", RuleId::SpecCapacityBlockGroup),
    ("bucket_name", RuleId::SpecBucketName),
    (
        "filesystem_csi_chart_repository",
        RuleId::SpecFilesystemCsiChartRepository,
    ),
    ("existing_filestore", RuleId::SpecExistingFilestore),
    ("subnet_id", RuleId::SpecSubnetId),
    ("ssh_public_key", RuleId::SpecSshPublicKey),
];

/// Lines a quoted scalar or a flow collection may span. YAML allows more, but a quote or
/// bracket left open in a half-edited file must not make every later line rescan the rest.
const MAX_SPAN_LINES: usize = 64;

/// A fleet spec says so (`apiVersion: npa.fleet/…`) or has a fleet-only top-level key.
static SPEC_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)(?:apiVersion["']?[ \t]*:[ \t]*["']?npa\.fleet/|^["']?(?:projects|tenant_id|project_prefix|ssh_public_key)["']?[ \t]*:)"#,
    )
    .expect("spec marker regex")
});

/// Whether `path`/`text` is a fleet spec: YAML or JSON (or no extension, e.g. stdin) with
/// a fleet marker. Other YAML (CI workflows, Helm values) legitimately uses `project_id`.
pub(crate) fn applies(path: &str, text: &str) -> bool {
    let file_name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let eligible = match file_name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            matches!(ext.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json")
        }
        _ => true,
    };
    eligible && SPEC_MARKER.is_match(text)
}

/// Appends a candidate for every listed field whose value is neither empty nor a placeholder.
pub(crate) fn detect(text: &str, out: &mut Vec<Candidate>) {
    let doc = Doc::new(text);
    let mut i = 0;
    while i < doc.lines.len() {
        i = doc.block_line(i, out).max(i + 1);
    }
}

fn field_rule(name: &str) -> Option<RuleId> {
    FIELDS.iter().find(|(f, _)| *f == name).map(|(_, r)| *r)
}

struct Doc<'a> {
    text: &'a str,
    /// Byte ranges of each line without its `\n` or a trailing `\r`.
    lines: Vec<(usize, usize)>,
}

struct Key<'a> {
    name: &'a str,
    /// Byte index in the line just after the `:`.
    after_colon: usize,
}

/// A scalar value: byte range in the document and its text (unquoted, folded).
struct Scalar {
    start: usize,
    end: usize,
    text: String,
}

impl<'a> Doc<'a> {
    fn new(text: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                lines.push((start, trim_cr(text, start, i)));
                start = i + 1;
            }
        }
        if start < text.len() {
            lines.push((start, trim_cr(text, start, text.len())));
        }
        Doc { text, lines }
    }

    fn line(&self, i: usize) -> &'a str {
        let (s, e) = self.lines[i];
        &self.text[s..e]
    }

    fn abs(&self, i: usize, col: usize) -> usize {
        self.lines[i].0 + col
    }

    fn is_blank(&self, i: usize) -> bool {
        self.line(i).trim().is_empty()
    }

    fn is_comment_or_blank(&self, i: usize) -> bool {
        let t = self.line(i).trim_start();
        t.is_empty() || t.starts_with('#')
    }

    /// Reads the node that starts line `i` in block context; returns the next line to read.
    fn block_line(&self, i: usize, out: &mut Vec<Candidate>) -> usize {
        let line = self.line(i);
        let b = line.as_bytes();
        let mut p = indent(line);
        if p >= b.len() || b[p] == b'#' {
            return i + 1;
        }
        // A document marker (`---`, `...`) may carry a node after it.
        if p == 0
            && (line.starts_with("---") || line.starts_with("..."))
            && (b.len() == 3 || b[3] == b' ' || b[3] == b'\t')
        {
            p = skip_spaces(line, 3);
            if p >= b.len() || b[p] == b'#' {
                return i + 1;
            }
        }
        // `- - key: value`: every dash opens a sequence entry; the node follows the last.
        while b[p] == b'-' && (p + 1 == b.len() || b[p + 1] == b' ' || b[p + 1] == b'\t') {
            let dash = p;
            p = skip_spaces(line, p + 1);
            if p >= b.len() || b[p] == b'#' {
                return i + 1;
            }
            if matches!(b[p], b'|' | b'>') {
                return self.skip_block_scalar(i, dash);
            }
        }
        let col = p;
        match block_key(line, p) {
            Some(key) => {
                let v = skip_spaces(line, key.after_colon);
                match field_rule(key.name) {
                    Some(rule) => self.field_value(i, v, col, rule, out),
                    None => self.other_value(i, v, col, out),
                }
            }
            None => self.other_value(i, p, col, out),
        }
    }

    /// A value we do not check; it still matters where it ends (block scalars, multi-line
    /// quotes) and flow mappings inside it may hold checked fields.
    fn other_value(&self, i: usize, v: usize, parent: usize, out: &mut Vec<Candidate>) -> usize {
        let line = self.line(i);
        let b = line.as_bytes();
        if v >= b.len() {
            return i + 1;
        }
        match b[v] {
            b'|' | b'>' => self.skip_block_scalar(i, parent),
            b'"' | b'\'' => self.quoted(i, v).map_or(i + 1, |(_, next)| next),
            b'{' | b'[' => self.flow(i, v, out),
            b'&' | b'!' => {
                let after = skip_spaces(line, skip_token(line, v));
                if after >= b.len() {
                    i + 1
                } else {
                    self.other_value(i, after, parent, out)
                }
            }
            _ => i + 1,
        }
    }

    fn skip_block_scalar(&self, i: usize, parent: usize) -> usize {
        let mut j = i + 1;
        while j < self.lines.len() && (self.is_blank(j) || indent(self.line(j)) > parent) {
            j += 1;
        }
        j
    }

    /// The value of a checked field whose key ends at `v` on line `i` (block context).
    fn field_value(
        &self,
        i: usize,
        v: usize,
        key_col: usize,
        rule: RuleId,
        out: &mut Vec<Candidate>,
    ) -> usize {
        let line = self.line(i);
        let b = line.as_bytes();
        if v >= b.len() || b[v] == b'#' {
            return self.value_below(i, key_col, rule, out);
        }
        match b[v] {
            b'|' | b'>' => {
                let next = self.skip_block_scalar(i, key_col);
                if let Some(scalar) = self.block_scalar(i + 1, next) {
                    emit(rule, scalar, out);
                }
                next
            }
            b'"' | b'\'' => self.field_quoted(i, v, rule, out),
            b'&' | b'!' => {
                let after = skip_spaces(line, skip_token(line, v));
                self.field_value(i, after, key_col, rule, out)
            }
            // An alias refers to a value written elsewhere, where it is checked if it is a field.
            b'*' => i + 1,
            b'{' | b'[' => self.flow(i, v, out),
            _ => {
                let (scalar, next) = self.plain(i, v, key_col);
                emit(rule, scalar, out);
                next
            }
        }
    }

    /// A checked field's quoted value; an unclosed quote (a half-edited file) still counts,
    /// up to the end of its line.
    fn field_quoted(&self, i: usize, v: usize, rule: RuleId, out: &mut Vec<Candidate>) -> usize {
        match self.quoted(i, v) {
            Some((scalar, next)) => {
                emit(rule, scalar, out);
                next
            }
            None => {
                let rest = self.line(i)[v + 1..].trim_end();
                let scalar = Scalar {
                    start: self.abs(i, v + 1),
                    end: self.abs(i, v + 1 + rest.len()),
                    text: rest.to_string(),
                };
                emit(rule, scalar, out);
                i + 1
            }
        }
    }

    /// `key:` with nothing after it: the value, if a scalar, is on the following lines.
    fn value_below(
        &self,
        i: usize,
        key_col: usize,
        rule: RuleId,
        out: &mut Vec<Candidate>,
    ) -> usize {
        let mut j = i + 1;
        while j < self.lines.len() && self.is_comment_or_blank(j) {
            j += 1;
        }
        if j >= self.lines.len() {
            return i + 1;
        }
        let line = self.line(j);
        let b = line.as_bytes();
        let p = indent(line);
        // Not more indented: the value is empty (null). A sequence or mapping is not a scalar;
        // the main loop reads those lines itself.
        if p <= key_col
            || (b[p] == b'-' && (p + 1 == b.len() || b[p + 1] == b' '))
            || block_key(line, p).is_some()
            || matches!(b[p], b'{' | b'[' | b'|' | b'>' | b'*' | b'&' | b'!')
        {
            return i + 1;
        }
        match b[p] {
            b'"' | b'\'' => self.field_quoted(j, p, rule, out),
            _ => {
                let (scalar, next) = self.plain(j, p, key_col);
                emit(rule, scalar, out);
                next
            }
        }
    }

    /// Plain scalar starting at `v` on line `i`, continued on more-indented lines.
    fn plain(&self, i: usize, v: usize, key_col: usize) -> (Scalar, usize) {
        let line = self.line(i);
        let end = comment_start(line, v).unwrap_or(line.len());
        let first = line[v..end].trim_end();
        let mut text = first.to_string();
        let mut last_end = self.abs(i, v + first.len());
        let mut j = i + 1;
        while j < self.lines.len() {
            let next = self.line(j);
            let p = indent(next);
            if self.is_blank(j) || p <= key_col || next.as_bytes()[p] == b'#' {
                break;
            }
            if block_key(next, p).is_some() || next[p..].starts_with("- ") {
                break;
            }
            let e = comment_start(next, p).unwrap_or(next.len());
            let part = next[p..e].trim_end();
            text.push(' ');
            text.push_str(part);
            last_end = self.abs(j, p + part.len());
            j += 1;
        }
        let scalar = Scalar {
            start: self.abs(i, v),
            end: last_end,
            text,
        };
        (scalar, j)
    }

    /// Quoted scalar opening at `v` on line `i`, possibly closing on a later line.
    /// Returns the scalar and the next line to read; `None` if it does not close within
    /// [`MAX_SPAN_LINES`].
    fn quoted(&self, i: usize, v: usize) -> Option<(Scalar, usize)> {
        let quote = self.line(i).as_bytes()[v];
        let mut text = String::new();
        let last = (i + MAX_SPAN_LINES).min(self.lines.len());
        for j in i..last {
            let line = self.line(j);
            let segment = if j == i {
                &line[v + 1..]
            } else {
                line.trim_start()
            };
            let seg_start = line.len() - segment.len();
            if j > i {
                text.push(' ');
            }
            if let Some(close) = find_close(segment, quote) {
                text.push_str(&unescape(&segment[..close], quote));
                let scalar = Scalar {
                    start: self.abs(i, v + 1),
                    end: self.abs(j, seg_start + close),
                    text,
                };
                return Some((scalar, j + 1));
            }
            text.push_str(&unescape(segment.trim_end(), quote));
        }
        None
    }

    /// Literal or folded block scalar content on lines `from..to`.
    fn block_scalar(&self, from: usize, to: usize) -> Option<Scalar> {
        let content: Vec<usize> = (from..to).filter(|&j| !self.is_blank(j)).collect();
        let (&first, &last) = (content.first()?, content.last()?);
        let strip = content
            .iter()
            .map(|&j| indent(self.line(j)))
            .min()
            .unwrap_or(0);
        let text = (first..=last)
            .map(|j| self.line(j).get(strip..).unwrap_or("").trim_end())
            .collect::<Vec<_>>()
            .join("\n");
        let first_line = self.line(first);
        Some(Scalar {
            start: self.abs(first, indent(first_line)),
            end: self.abs(last, self.line(last).trim_end().len()),
            text,
        })
    }

    /// A flow collection (`{…}` / `[…]`) opening at `v` on line `i`, possibly spanning
    /// lines. Checked fields inside flow mappings are read; returns the next line.
    fn flow(&self, i: usize, v: usize, out: &mut Vec<Candidate>) -> usize {
        let mut stack: Vec<u8> = Vec::new();
        let mut j = i;
        let mut p = v;
        // At the start of a flow mapping entry (after `{` or `,`), where a key may begin.
        let mut entry = false;
        let last = (i + MAX_SPAN_LINES).min(self.lines.len());
        while j < last {
            let line = self.line(j);
            let b = line.as_bytes();
            while p < b.len() {
                let c = b[p];
                if c == b' ' || c == b'\t' {
                    p += 1;
                    continue;
                }
                if c == b'#' && (p == 0 || b[p - 1] == b' ' || b[p - 1] == b'\t') {
                    break;
                }
                if entry && stack.last() == Some(&b'{') {
                    entry = false;
                    if let Some((key, after)) = flow_key(line, p) {
                        let vpos = skip_spaces(line, after);
                        if let Some(rule) = field_rule(key) {
                            p = self.flow_field_value(j, vpos, rule, out);
                        } else {
                            p = vpos;
                        }
                        continue;
                    }
                }
                match c {
                    b'{' | b'[' => {
                        stack.push(c);
                        entry = true;
                    }
                    b'}' | b']' => {
                        stack.pop();
                        if stack.is_empty() {
                            return j + 1;
                        }
                    }
                    b',' => entry = true,
                    b'"' | b'\'' => match find_close(&line[p + 1..], c) {
                        Some(close) => p += close + 1,
                        None => return j + 1,
                    },
                    _ => {}
                }
                p += 1;
            }
            j += 1;
            p = 0;
        }
        j
    }

    /// Reads a checked field's value inside a flow mapping; returns where scanning resumes.
    fn flow_field_value(
        &self,
        i: usize,
        v: usize,
        rule: RuleId,
        out: &mut Vec<Candidate>,
    ) -> usize {
        let line = self.line(i);
        let b = line.as_bytes();
        if v >= b.len() {
            return v;
        }
        match b[v] {
            b'"' | b'\'' => match find_close(&line[v + 1..], b[v]) {
                Some(close) => {
                    let inner = &line[v + 1..v + 1 + close];
                    let scalar = Scalar {
                        start: self.abs(i, v + 1),
                        end: self.abs(i, v + 1 + close),
                        text: unescape(inner, b[v]),
                    };
                    emit(rule, scalar, out);
                    v + close + 2
                }
                None => line.len(),
            },
            b'{' | b'[' | b',' | b'}' | b']' | b'*' => v,
            _ => {
                let mut e = v;
                while e < b.len() && !matches!(b[e], b',' | b'}' | b']') {
                    if b[e] == b'#' && (b[e - 1] == b' ' || b[e - 1] == b'\t') {
                        break;
                    }
                    e += 1;
                }
                let value = line[v..e].trim_end();
                let scalar = Scalar {
                    start: self.abs(i, v),
                    end: self.abs(i, v + value.len()),
                    text: value.to_string(),
                };
                emit(rule, scalar, out);
                e
            }
        }
    }
}

fn emit(rule: RuleId, scalar: Scalar, out: &mut Vec<Candidate>) {
    let value = scalar.text.trim();
    if noise::is_placeholder(value) {
        return;
    }
    if rule == RuleId::SpecSshPublicKey && noise::is_path_like(value) {
        return;
    }
    out.push(Candidate::new(
        scalar.start,
        scalar.end.max(scalar.start + 1),
        rule,
        value.as_bytes().to_vec(),
    ));
}

fn trim_cr(text: &str, start: usize, end: usize) -> usize {
    if end > start && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

fn indent(line: &str) -> usize {
    line.bytes()
        .take_while(|b| *b == b' ' || *b == b'\t')
        .count()
}

fn skip_spaces(line: &str, from: usize) -> usize {
    from + line.get(from..).map_or(0, |rest| {
        rest.bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count()
    })
}

fn skip_token(line: &str, from: usize) -> usize {
    from + line[from..]
        .bytes()
        .take_while(|b| *b != b' ' && *b != b'\t')
        .count()
}

/// Where a ` #` comment starts at or after `from`, outside quotes (plain scalars have none).
fn comment_start(line: &str, from: usize) -> Option<usize> {
    let b = line.as_bytes();
    (from..b.len()).find(|&k| b[k] == b'#' && k > from && (b[k - 1] == b' ' || b[k - 1] == b'\t'))
}

/// A mapping key in block context starting at `p`: `key:`, `"key":` or `'key':`.
fn block_key(line: &str, p: usize) -> Option<Key<'_>> {
    let b = line.as_bytes();
    match *b.get(p)? {
        b'"' | b'\'' => {
            let close = p + 1 + find_close(&line[p + 1..], b[p])?;
            let k = skip_spaces(line, close + 1);
            // JSON-style `"key":"value"` needs no space after the colon.
            (b.get(k) == Some(&b':')).then(|| Key {
                name: &line[p + 1..close],
                after_colon: k + 1,
            })
        }
        b'{' | b'[' | b'#' | b'|' | b'>' | b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b','
        | b'?' => None,
        _ => {
            for k in p..b.len() {
                if b[k] == b':' && (k + 1 == b.len() || b[k + 1] == b' ' || b[k + 1] == b'\t') {
                    return Some(Key {
                        name: line[p..k].trim_end(),
                        after_colon: k + 1,
                    });
                }
                if b[k] == b'#' && k > p && (b[k - 1] == b' ' || b[k - 1] == b'\t') {
                    return None;
                }
            }
            None
        }
    }
}

/// A key inside a flow mapping at `p`; returns the key and the index after its `:`.
fn flow_key(line: &str, p: usize) -> Option<(&str, usize)> {
    let b = line.as_bytes();
    match b[p] {
        b'"' | b'\'' => {
            let close = p + 1 + find_close(&line[p + 1..], b[p])?;
            let k = skip_spaces(line, close + 1);
            (b.get(k) == Some(&b':')).then(|| (&line[p + 1..close], k + 1))
        }
        b'{' | b'[' | b'}' | b']' | b',' | b'#' => None,
        _ => {
            for k in p..b.len() {
                match b[k] {
                    b':' if k + 1 == b.len() || matches!(b[k + 1], b' ' | b'\t' | b',' | b'}') => {
                        return Some((line[p..k].trim_end(), k + 1));
                    }
                    b',' | b'}' | b']' | b'{' | b'[' => return None,
                    _ => {}
                }
            }
            None
        }
    }
}

/// Index of the closing quote in `s` (which starts just after the opening one).
fn find_close(s: &str, quote: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut k = 0;
    while k < b.len() {
        if quote == b'"' && b[k] == b'\\' {
            k += 2;
            continue;
        }
        if b[k] == quote {
            if quote == b'\'' && b.get(k + 1) == Some(&b'\'') {
                k += 2;
                continue;
            }
            return Some(k);
        }
        k += 1;
    }
    None
}

/// Enough unescaping that `"v"`, `'v'` and `v` alias the same.
fn unescape(s: &str, quote: u8) -> String {
    if quote == b'\'' {
        return s.replace("''", "'");
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line, column as byte offset in line, rule, value) for each candidate.
    fn found(text: &str) -> Vec<(usize, usize, RuleId, String)> {
        let mut out = Vec::new();
        detect(text, &mut out);
        out.iter()
            .map(|c| {
                let line = text[..c.start].matches('\n').count() + 1;
                let col = c.start - text[..c.start].rfind('\n').map_or(0, |p| p + 1);
                (
                    line,
                    col,
                    c.rule,
                    String::from_utf8(c.value.clone()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn applies_only_to_fleet_specs() {
        assert!(applies("f.yaml", "apiVersion: npa.fleet/v0.0.1\n"));
        assert!(applies("f.yml", "name: x\nprojects:\n  - name: a\n"));
        assert!(applies("<stdin>", "projects: []\n"));
        assert!(applies(
            "f.json",
            "{\n  \"apiVersion\": \"npa.fleet/v0.0.1\"\n}"
        ));
        assert!(!applies(
            ".github/workflows/ci.yml",
            "jobs:\n  a:\n    project_id: x\n"
        ));
        assert!(!applies("notes.md", "apiVersion: npa.fleet/v0.0.1\n"));
    }

    #[test]
    fn plain_quoted_and_commented_values() {
        let text = "tenant_id: acme-prod # real\nproject_id: \"team-a\"\nsubnet_id: 'net''x'\n# bucket_name: commented-out\nbucket_name: \"\"  # runtime\n";
        assert_eq!(
            found(text),
            vec![
                (1, 11, RuleId::SpecTenantId, "acme-prod".into()),
                (2, 13, RuleId::SpecProjectId, "team-a".into()),
                (3, 12, RuleId::SpecSubnetId, "net'x".into()),
            ]
        );
    }

    #[test]
    fn placeholders_are_fine() {
        let text = "tenant_id: \"\"\nprojects:\n  - project_id: \"<your-project-id>\"\n  - project_id: project-REPLACE_AT_RUNTIME\n    clusters:\n      - gpu_nodes: {count: 1, capacity_block_group: capacityblockgroup-REPLACE_AT_RUNTIME}\n        ssh_public_key: ~/.ssh/id_ed25519.pub\n        subnet_id: ${NEBIUS_SUBNET_ID}\n        existing_filestore:\n";
        assert_eq!(found(text), vec![]);
    }

    #[test]
    fn sequences_flow_mappings_and_json() {
        let text = "projects:\n  - project_id: team-a-prod\n    clusters:\n      - gpu_nodes: { count: 2, capacity_block_group: cbg-main }\n";
        assert_eq!(
            found(text),
            vec![
                (2, 16, RuleId::SpecProjectId, "team-a-prod".into()),
                (4, 53, RuleId::SpecCapacityBlockGroup, "cbg-main".into()),
            ]
        );
        let json = "{\"tenant_id\":\"acme\", \"projects\": [{\"subnet_id\": \"n1\"}]}";
        assert_eq!(
            found(json),
            vec![
                (1, 14, RuleId::SpecTenantId, "acme".into()),
                (1, 49, RuleId::SpecSubnetId, "n1".into()),
            ]
        );
    }

    #[test]
    fn block_scalars_and_multi_line_values() {
        let text = "description: |\n  tenant_id: not-a-key\n  bucket_name: nor-this\nssh_public_key: >-\n  line-one\n  line-two\nbucket_name:\n  # the bucket\n  team-bucket\n  -continued\nproject_id: \"first\n  second\"\n";
        assert_eq!(
            found(text),
            vec![
                (5, 2, RuleId::SpecSshPublicKey, "line-one\nline-two".into()),
                (
                    9,
                    2,
                    RuleId::SpecBucketName,
                    "team-bucket -continued".into()
                ),
                (11, 13, RuleId::SpecProjectId, "first second".into()),
            ]
        );
    }

    #[test]
    fn nested_values_and_anchors() {
        let text = "defaults:\n  subnet_id: &net shared-net\nother:\n  subnet_id: *net\n  project_id:\n    nested: map\n  tenant_id:\n  - a\n";
        assert_eq!(
            found(text),
            vec![(2, 18, RuleId::SpecSubnetId, "shared-net".into())]
        );
    }

    #[test]
    fn unclosed_quotes_and_brackets_stay_local() {
        let mut text = String::from("tenant_id: \"acme-half-edited\nitems: [a, b\n");
        for _ in 0..100 {
            text.push_str("x: y\n");
        }
        text.push_str("subnet_id: real-subnet\n");
        assert_eq!(
            found(&text),
            vec![
                (1, 12, RuleId::SpecTenantId, "acme-half-edited".into()),
                (103, 11, RuleId::SpecSubnetId, "real-subnet".into()),
            ]
        );
    }

    #[test]
    fn crlf_lines() {
        let text = "tenant_id: acme\r\nproject_id: \"\"\r\n";
        assert_eq!(
            found(text),
            vec![(1, 11, RuleId::SpecTenantId, "acme".into())]
        );
    }
}
