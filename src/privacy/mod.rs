//! The privacy guard: find private Nebius IDs, keys and tokens in text without revealing them.
//!
//! A [`Scanner`] runs the shape rules of [`patterns`] over any text and the spec-aware
//! rules of [`spec`] over fleet specs, drops placeholders and allowlisted values, and
//! reports each hit as a [`Finding`]: path, line, column, rule and a keyed alias. The
//! matched value itself never leaves [`Scanner::scan_text`]; it is not in any field, error,
//! `Debug` output or log line. `fleetbot scan` and the GitHub App both sit on this API.

mod alias;
pub(crate) mod allowlist;
pub mod diff;
mod noise;
mod patterns;
pub mod report;
mod rules;
mod spec;
#[doc(hidden)]
pub mod testdata;

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

pub use alias::DEFAULT_LOCAL_KEY;
pub use allowlist::{AllowEntries, AllowlistError, PrivacyAllowlist};
pub(crate) use noise::is_placeholder;
pub use report::{ScanReport, SkippedFile};
pub use rules::RuleId;

use allowlist::CompiledAllowlist;

/// One private value found in a file. It deliberately has no field for the value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    /// Path as given to the scanner (repository-relative in the CLI and the bot).
    pub path: String,
    /// 1-based line of the first character; for a block (a PEM key) its BEGIN line.
    pub line: u32,
    /// 1-based column, counted in Unicode characters.
    pub column: u32,
    /// Which rule matched.
    pub rule: RuleId,
    /// Keyed hash of the value: equal aliases mean equal values under one key.
    pub alias: String,
}

/// Why a file was not scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// The content has NUL bytes.
    Binary,
    /// The content is not UTF-8.
    InvalidUtf8,
    /// The path matches the configured path allowlist.
    AllowlistedPath,
}

impl SkipReason {
    /// The stable kebab-case id (`binary`, `invalid-utf8`, `allowlisted-path`).
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipReason::Binary => "binary",
            SkipReason::InvalidUtf8 => "invalid-utf8",
            SkipReason::AllowlistedPath => "allowlisted-path",
        }
    }

    /// The note for several files skipped for this reason ("3 binary files (…)").
    pub fn note_plural(&self) -> &'static str {
        match self {
            SkipReason::Binary => "binary file(s) (NUL bytes) not scanned",
            SkipReason::InvalidUtf8 => "file(s) not valid UTF-8, treated as binary and not scanned",
            SkipReason::AllowlistedPath => "file(s) allowlisted in the privacy config",
        }
    }

    /// A short human note.
    pub fn note(&self) -> &'static str {
        match self {
            SkipReason::Binary => "binary file (NUL bytes), not scanned",
            SkipReason::InvalidUtf8 => "not valid UTF-8, treated as binary and not scanned",
            SkipReason::AllowlistedPath => "path is allowlisted in the privacy config",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.note())
    }
}

/// The result of scanning one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileScan {
    /// The file was scanned; empty means clean.
    Findings(Vec<Finding>),
    /// The file was not scanned.
    Skipped {
        /// Why.
        reason: SkipReason,
    },
}

impl FileScan {
    /// The findings, empty when the file was skipped.
    pub fn findings(&self) -> &[Finding] {
        match self {
            FileScan::Findings(f) => f,
            FileScan::Skipped { .. } => &[],
        }
    }
}

/// How to build a [`Scanner`].
#[derive(Clone, Default)]
pub struct ScannerConfig {
    /// HMAC key for aliases: the per-installation key in the bot, [`DEFAULT_LOCAL_KEY`] or
    /// a user key locally. Must not be empty.
    pub key: Vec<u8>,
    /// The repository's exceptions.
    pub allowlist: PrivacyAllowlist,
}

impl fmt::Debug for ScannerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScannerConfig")
            .field("key", &"<redacted>")
            .field("allowlist", &self.allowlist)
            .finish()
    }
}

/// Why a [`Scanner`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ScannerError {
    /// The alias key is empty.
    #[error("the privacy alias key is empty")]
    EmptyKey,
    /// The allowlist is invalid.
    #[error(transparent)]
    Allowlist(#[from] AllowlistError),
}

/// The privacy scanner. Cheap to share: `Send + Sync`, no interior state.
pub struct Scanner {
    key: Vec<u8>,
    allow: CompiledAllowlist,
}

impl fmt::Debug for Scanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scanner").finish_non_exhaustive()
    }
}

/// A rule hit inside the scanner. Holds the value, so it has no `Debug` and never escapes.
pub(crate) struct Candidate {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) rule: RuleId,
    pub(crate) value: Vec<u8>,
}

impl Candidate {
    pub(crate) fn new(start: usize, end: usize, rule: RuleId, value: Vec<u8>) -> Self {
        Candidate {
            start,
            end: end.max(start),
            rule,
            value,
        }
    }
}

impl Scanner {
    /// Builds a scanner; fails on an empty key or an invalid allowlist.
    pub fn new(config: ScannerConfig) -> Result<Self, ScannerError> {
        if config.key.is_empty() {
            return Err(ScannerError::EmptyKey);
        }
        Ok(Scanner {
            allow: CompiledAllowlist::new(&config.allowlist)?,
            key: config.key,
        })
    }

    /// The alias this scanner gives `value`; lets callers (and tests) correlate a known
    /// value with findings without the findings ever carrying it.
    pub fn alias(&self, value: &[u8]) -> String {
        alias::alias(&self.key, value)
    }

    /// Whether the path allowlist exempts `path`.
    pub fn is_path_allowlisted(&self, path: &str) -> bool {
        self.allow.allows_path(path)
    }

    /// Scans one file. `changed_lines`, when given, keeps only findings that touch those
    /// (1-based, inclusive) lines — the added lines of a diff; the whole content is still
    /// read so multi-line structure (YAML, key blocks) is understood.
    pub fn scan_text(
        &self,
        path: &str,
        content: &[u8],
        changed_lines: Option<&[RangeInclusive<u32>]>,
    ) -> FileScan {
        if self.allow.allows_path(path) {
            return FileScan::Skipped {
                reason: SkipReason::AllowlistedPath,
            };
        }
        if content.contains(&0) {
            return FileScan::Skipped {
                reason: SkipReason::Binary,
            };
        }
        let Ok(text) = std::str::from_utf8(content) else {
            return FileScan::Skipped {
                reason: SkipReason::InvalidUtf8,
            };
        };
        let candidates = self.candidates(path, text);
        let mut findings = Vec::new();
        let mut cursor = Cursor::new(text.as_bytes());
        for c in candidates {
            let (line, column) = cursor.position(c.start);
            if let Some(ranges) = changed_lines {
                let extra = text.as_bytes()[c.start..c.end]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                let last = line.saturating_add(u32::try_from(extra).unwrap_or(u32::MAX));
                if !ranges
                    .iter()
                    .any(|r| *r.start() <= last && line <= *r.end())
                {
                    continue;
                }
            }
            if self.allow.allows_value(&c.value) {
                continue;
            }
            findings.push(Finding {
                path: path.to_string(),
                line,
                column,
                rule: c.rule,
                alias: self.alias(&c.value),
            });
        }
        tracing::debug!(path, findings = findings.len(), "privacy scan");
        FileScan::Findings(findings)
    }

    /// All rule hits in `text`, ordered by position, one per span: a hit inside another
    /// (an ID inside a credentials file, a JWT inside a GitHub token) is dropped, and a
    /// spec field whose value a shape rule already explains is not reported again.
    fn candidates(&self, path: &str, text: &str) -> Vec<Candidate> {
        let mut found = Vec::new();
        patterns::detect(text.as_bytes(), &mut found);
        let mut kept = outermost(found);
        if spec::applies(path, text) {
            let mut fields = Vec::new();
            spec::detect(text, &mut fields);
            // `kept` is sorted by start with no span inside another, so ends rise too: the
            // last hit starting before a field's end is the only one that can overlap it.
            fields.retain(|f| {
                let before = kept.partition_point(|k| k.start < f.end);
                before == 0 || kept[before - 1].end <= f.start
            });
            kept.extend(fields);
            kept.sort_by_key(|c| (c.start, c.rule.index()));
        }
        kept
    }
}

/// Keeps candidates not contained in an earlier, longer one; sorted by start.
fn outermost(mut found: Vec<Candidate>) -> Vec<Candidate> {
    found.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end), c.rule.index()));
    let mut kept: Vec<Candidate> = Vec::with_capacity(found.len());
    let mut cover_end = 0usize;
    for c in found {
        if !kept.is_empty() && c.end <= cover_end {
            continue;
        }
        cover_end = cover_end.max(c.end);
        kept.push(c);
    }
    kept
}

/// Maps ascending byte offsets to (line, column) in one forward pass.
struct Cursor<'a> {
    text: &'a [u8],
    offset: usize,
    line: u32,
    line_start: usize,
    column: u32,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a [u8]) -> Self {
        Cursor {
            text,
            offset: 0,
            line: 1,
            line_start: 0,
            column: 1,
        }
    }

    fn position(&mut self, target: usize) -> (u32, u32) {
        if target < self.offset {
            // Offsets come sorted; restart defensively rather than report nonsense.
            *self = Cursor::new(self.text);
        }
        let span = &self.text[self.offset..target];
        match span.iter().rposition(|&b| b == b'\n') {
            Some(last_nl) => {
                let newlines = span.iter().filter(|&&b| b == b'\n').count();
                self.line = self
                    .line
                    .saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
                self.line_start = self.offset + last_nl + 1;
                self.column = 1 + chars(&self.text[self.line_start..target]);
            }
            None => self.column += chars(span),
        }
        self.offset = target;
        (self.line, self.column)
    }
}

/// Number of UTF-8 characters: bytes that are not continuation bytes.
fn chars(bytes: &[u8]) -> u32 {
    let n = bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner() -> Scanner {
        Scanner::new(ScannerConfig {
            key: b"unit-test-key".to_vec(),
            allowlist: PrivacyAllowlist::default(),
        })
        .unwrap()
    }

    fn summary(scan: &FileScan) -> Vec<(u32, u32, RuleId)> {
        scan.findings()
            .iter()
            .map(|f| (f.line, f.column, f.rule))
            .collect()
    }

    #[test]
    fn columns_count_characters_and_lines_survive_crlf() {
        let id = testdata::nid("tenant", "e00", 15);
        let text = format!("é: ü\r\nname: «{id}»\r\n");
        let scan = scanner().scan_text("notes.txt", text.as_bytes(), None);
        assert_eq!(summary(&scan), vec![(2, 8, RuleId::NebiusId)]);
    }

    #[test]
    fn binary_and_invalid_utf8_are_skipped() {
        let s = scanner();
        assert_eq!(
            s.scan_text("a.bin", b"abc\0def", None),
            FileScan::Skipped {
                reason: SkipReason::Binary
            }
        );
        assert_eq!(
            s.scan_text("a.txt", b"abc\xff", None),
            FileScan::Skipped {
                reason: SkipReason::InvalidUtf8
            }
        );
    }

    #[test]
    fn pem_reported_once_at_begin_line_and_filtered_by_changed_lines() {
        let key = testdata::pem_key("EC ", 6);
        let text = format!("intro\n{key}tail\n");
        let s = scanner();
        assert_eq!(
            summary(&s.scan_text("k.txt", text.as_bytes(), None)),
            vec![(2, 1, RuleId::PrivateKey)]
        );
        // A change to the body alone still reports the key, at its BEGIN line.
        assert_eq!(
            summary(&s.scan_text("k.txt", text.as_bytes(), Some(&[4..=4]))),
            vec![(2, 1, RuleId::PrivateKey)]
        );
        assert!(
            s.scan_text("k.txt", text.as_bytes(), Some(&[1..=1, 20..=30]))
                .findings()
                .is_empty()
        );
    }

    #[test]
    fn spec_field_with_an_id_is_reported_once_by_the_shape_rule() {
        let id = testdata::nid("project", "e00", 19);
        let text = format!(
            "apiVersion: npa.fleet/v0.0.1\nprojects:\n  - project_id: {id}\n    name: a\n  - project_id: team-a\n"
        );
        let s = scanner();
        assert_eq!(
            summary(&s.scan_text("fleet.yaml", text.as_bytes(), None)),
            vec![(3, 17, RuleId::NebiusId), (5, 17, RuleId::SpecProjectId)]
        );
    }

    #[test]
    fn aliases_match_for_equal_values_across_forms() {
        let id = testdata::nid("tenant", "e00", 15);
        let text = format!("tenant_id: \"{id}\"\nnote: {id}\n");
        let scan = scanner().scan_text("fleet.yaml", text.as_bytes(), None);
        let f = scan.findings();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].alias, f[1].alias);
        assert_eq!(f[0].alias, scanner().alias(id.as_bytes()));
    }

    #[test]
    fn allowlist_values_and_paths() {
        let id = testdata::nid("tenant", "e00", 15);
        let s = Scanner::new(ScannerConfig {
            key: b"k".to_vec(),
            allowlist: PrivacyAllowlist {
                allow: AllowEntries {
                    patterns: vec![format!("^{id}$")],
                    paths: vec!["fixtures/**".into()],
                },
            },
        })
        .unwrap();
        let other = testdata::nid_seeded("tenant", "e00", 15, 99);
        let text = format!("{id}\n{other}\n");
        assert_eq!(
            summary(&s.scan_text("a.txt", text.as_bytes(), None)),
            vec![(2, 1, RuleId::NebiusId)]
        );
        assert_eq!(
            s.scan_text("fixtures/a.txt", text.as_bytes(), None),
            FileScan::Skipped {
                reason: SkipReason::AllowlistedPath
            }
        );
    }

    #[test]
    fn empty_key_is_rejected_and_debug_redacts() {
        assert!(matches!(
            Scanner::new(ScannerConfig::default()),
            Err(ScannerError::EmptyKey)
        ));
        let config = ScannerConfig {
            key: b"secret-key-bytes".to_vec(),
            allowlist: PrivacyAllowlist::default(),
        };
        assert!(!format!("{config:?}").contains("secret-key-bytes"));
    }

    #[test]
    fn scanner_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Scanner>();
    }
}
