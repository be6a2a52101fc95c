//! A repository's own exceptions: value patterns and path globs that are not findings.
//!
//! This is the `privacy:` section of the repository config (`.fleetbot.yml`), so the bot
//! and `fleetbot scan --config` read the same structure:
//!
//! ```yaml
//! privacy:
//!   allow:
//!     patterns: ['^shared-demo-bucket$']  # regexes tested against the found value
//!     paths: ['fixtures/privacy/**', 'docs/*.md']  # globs on the repository-relative path
//! ```

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// The `privacy:` section of the repository config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyAllowlist {
    /// What is allowed.
    #[serde(default)]
    pub allow: AllowEntries,
}

/// Allowed values and paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowEntries {
    /// Regular expressions (Rust `regex` syntax) tested against each found value; a value
    /// that matches anywhere is not a finding. Anchor with `^…$` to allow exactly one value.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Globs on the repository-relative path (`/` separated): `*` and `?` stay inside one
    /// path segment, `**` spans segments, a trailing `/` means everything below. Files that
    /// match are not scanned.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// Why an allowlist could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AllowlistError {
    /// The file could not be read.
    #[error("cannot read privacy config {path}: {source}")]
    Read {
        /// The config path.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// The YAML is malformed or has unknown keys.
    #[error("invalid privacy config: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// An `allow.patterns` entry is not a valid regular expression.
    #[error("privacy allow.patterns[{index}] is not a valid regular expression: {source}")]
    Pattern {
        /// Position in the list.
        index: usize,
        /// The regex error.
        source: Box<regex::Error>,
    },
    /// An `allow.patterns` entry is empty or blank: as a regex it would match every value.
    #[error(
        "privacy allow.patterns[{index}] is empty; an empty pattern would allow every value (write '^…$' for one value)"
    )]
    EmptyPattern {
        /// Position in the list.
        index: usize,
    },
    /// An `allow.paths` entry is not a usable glob.
    #[error("privacy allow.paths[{index}] is not a valid glob: {reason}")]
    Glob {
        /// Position in the list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

impl PrivacyAllowlist {
    /// Parses either a bare section (`allow: …`) or a whole repository config that has a
    /// `privacy:` key; a document without either (e.g. an empty file) allows nothing.
    pub fn from_yaml_str(text: &str) -> Result<Self, AllowlistError> {
        let doc: serde_yaml::Value = serde_yaml::from_str(text)?;
        match doc {
            serde_yaml::Value::Null => Ok(Self::default()),
            serde_yaml::Value::Mapping(ref map) if map.contains_key("privacy") => {
                let section = map.get("privacy").cloned().unwrap_or_default();
                if section.is_null() {
                    return Ok(Self::default());
                }
                Ok(serde_yaml::from_value(section)?)
            }
            other => Ok(serde_yaml::from_value(other)?),
        }
    }

    /// Reads [`PrivacyAllowlist::from_yaml_str`] from a file.
    pub fn load(path: &Path) -> Result<Self, AllowlistError> {
        let text = std::fs::read_to_string(path).map_err(|source| AllowlistError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml_str(&text)
    }
}

/// The allowlist with its patterns and globs compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompiledAllowlist {
    patterns: Vec<Regex>,
    paths: Vec<Regex>,
}

impl CompiledAllowlist {
    pub(crate) fn new(list: &PrivacyAllowlist) -> Result<Self, AllowlistError> {
        let patterns = list
            .allow
            .patterns
            .iter()
            .enumerate()
            .map(|(index, p)| {
                if p.trim().is_empty() {
                    return Err(AllowlistError::EmptyPattern { index });
                }
                Regex::new(p).map_err(|e| AllowlistError::Pattern {
                    index,
                    source: Box::new(e),
                })
            })
            .collect::<Result<_, _>>()?;
        let paths = list
            .allow
            .paths
            .iter()
            .enumerate()
            .map(|(index, g)| {
                glob_to_regex(g).map_err(|reason| AllowlistError::Glob { index, reason })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns, paths })
    }

    pub(crate) fn allows_path(&self, path: &str) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        let normalized = normalize_path(path);
        self.paths.iter().any(|re| re.is_match(&normalized))
    }

    pub(crate) fn allows_value(&self, value: &[u8]) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        let value = String::from_utf8_lossy(value);
        self.patterns.iter().any(|re| re.is_match(&value))
    }
}

/// `./a\b` → `a/b`, so globs see one spelling of a path.
pub(crate) fn normalize_path(path: &str) -> String {
    let mut p = path.replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    p
}

/// Compiles a path glob: `*` and `?` stay within a segment, `**` spans segments,
/// `[abc]`/`[!abc]` are classes, a trailing `/` means everything below. Shared by every
/// path setting of the repo config.
pub(crate) fn glob_to_regex(glob: &str) -> Result<Regex, String> {
    let glob = glob.trim();
    if glob.is_empty() {
        return Err("empty glob".into());
    }
    let mut g = normalize_path(glob);
    if let Some(rest) = g.strip_prefix('/') {
        g = rest.to_string();
    }
    if g.is_empty() {
        // `/` or `./`: no path at all, which a reader could take for "everything".
        return Err(format!("{glob:?} names no path"));
    }
    let dir_only = g.ends_with('/');
    let chars: Vec<char> = g.chars().collect();
    let mut re = String::from("^");
    let mut k = 0;
    while k < chars.len() {
        match chars[k] {
            '*' if chars.get(k + 1) == Some(&'*') => {
                k += 2;
                if chars.get(k) == Some(&'/') {
                    k += 1;
                    re.push_str("(?:.*/)?");
                } else {
                    re.push_str(".*");
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let close = chars[k + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or_else(|| format!("unclosed '[' in {glob:?}"))?;
                let class: String = chars[k + 1..k + 1 + close].iter().collect();
                let class = class
                    .strip_prefix('!')
                    .map_or(class.clone(), |c| format!("^{c}"));
                re.push('[');
                re.push_str(&class.replace('\\', "\\\\"));
                re.push(']');
                k += close + 2;
                continue;
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        k += 1;
    }
    if dir_only {
        re.push_str(".*");
    }
    re.push('$');
    Regex::new(&re).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(globs: &[&str]) -> CompiledAllowlist {
        CompiledAllowlist::new(&PrivacyAllowlist {
            allow: AllowEntries {
                patterns: vec![],
                paths: globs.iter().map(|s| s.to_string()).collect(),
            },
        })
        .unwrap()
    }

    #[test]
    fn globs() {
        let a = paths(&[
            "fixtures/privacy/**",
            "docs/*.md",
            "/SECURITY.md",
            "tmp/",
            "**/*.pem",
        ]);
        assert!(a.allows_path("fixtures/privacy/positive/x.yaml"));
        assert!(a.allows_path("./docs/privacy.md"));
        assert!(!a.allows_path("docs/sub/privacy.md"));
        assert!(a.allows_path("SECURITY.md"));
        assert!(!a.allows_path("sub/SECURITY.md"));
        assert!(a.allows_path("tmp/a/b"));
        assert!(a.allows_path("k.pem"));
        assert!(a.allows_path("a/b/k.pem"));
        assert!(!a.allows_path("src/main.rs"));
        let b = paths(&["fixtures/[ab]?.yaml", "x/[!c].txt"]);
        assert!(b.allows_path("fixtures/a1.yaml"));
        assert!(!b.allows_path("fixtures/c1.yaml"));
        assert!(b.allows_path("x/d.txt"));
        assert!(!b.allows_path("x/c.txt"));
    }

    #[test]
    fn parses_bare_section_and_repo_config() {
        let bare = PrivacyAllowlist::from_yaml_str("allow:\n  patterns: ['^a$']\n").unwrap();
        assert_eq!(bare.allow.patterns, vec!["^a$".to_string()]);
        let repo = PrivacyAllowlist::from_yaml_str(
            "plan: {}\nprivacy:\n  allow:\n    paths: ['docs/**']\n",
        )
        .unwrap();
        assert_eq!(repo.allow.paths, vec!["docs/**".to_string()]);
        assert_eq!(
            PrivacyAllowlist::from_yaml_str("").unwrap(),
            PrivacyAllowlist::default()
        );
        assert!(PrivacyAllowlist::from_yaml_str("alow: {}\n").is_err());
    }

    #[test]
    fn bad_entries_are_errors() {
        let bad = PrivacyAllowlist {
            allow: AllowEntries {
                patterns: vec!["(".into()],
                paths: vec![],
            },
        };
        assert!(matches!(
            CompiledAllowlist::new(&bad),
            Err(AllowlistError::Pattern { index: 0, .. })
        ));
        let bad = PrivacyAllowlist {
            allow: AllowEntries {
                patterns: vec![],
                paths: vec!["a/[b".into()],
            },
        };
        assert!(matches!(
            CompiledAllowlist::new(&bad),
            Err(AllowlistError::Glob { index: 0, .. })
        ));
        // Issue #32: an empty entry is an error, never "allow everything".
        for blank in ["", " "] {
            let bad = PrivacyAllowlist {
                allow: AllowEntries {
                    patterns: vec!["^a$".into(), blank.into()],
                    paths: vec![],
                },
            };
            let e = CompiledAllowlist::new(&bad).unwrap_err();
            assert!(
                matches!(e, AllowlistError::EmptyPattern { index: 1 }),
                "{e}"
            );
            assert!(e.to_string().contains("allow.patterns[1] is empty"), "{e}");
        }
        for blank in ["", " ", "/", "./"] {
            let bad = PrivacyAllowlist {
                allow: AllowEntries {
                    patterns: vec![],
                    paths: vec![blank.into()],
                },
            };
            assert!(
                matches!(
                    CompiledAllowlist::new(&bad),
                    Err(AllowlistError::Glob { index: 0, .. })
                ),
                "{blank:?}"
            );
        }
    }

    #[test]
    fn value_patterns() {
        let a = CompiledAllowlist::new(&PrivacyAllowlist {
            allow: AllowEntries {
                patterns: vec!["^public-".into()],
                paths: vec![],
            },
        })
        .unwrap();
        assert!(a.allows_value(b"public-demo"));
        assert!(!a.allows_value(b"private-demo"));
    }
}
