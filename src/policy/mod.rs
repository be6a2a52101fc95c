//! Organisation policy as code: `*.rego` files a platform team writes — package `fleetbot`,
//! `deny` and `warn` as conftest writes them — evaluated by regorus (OPA's Rego, not a rule
//! language of fleetbot's own) against the documented input ([`input`], `fleetbot.policy/v1`).
//!
//! It fails closed: a policy that does not parse, errs, answers in a shape no rule may have, or
//! runs past its time bound is an error naming the file, never a pass. regorus is built without
//! the builtins that read files, the environment or the network.

pub mod input;
mod tests_run;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use tests_run::{TestOutcome, TestReport, run as run_tests};

/// The package every policy's rules live in.
pub const PACKAGE: &str = "fleetbot";

/// Policy files read from one directory, at most.
pub const MAX_FILES: usize = 256;

/// One policy file's size, at most.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// How long one evaluation may run: a hostile recursion or comprehension ends as an error.
pub const TIME_LIMIT: Duration = Duration::from_secs(5);

/// Why policies could not judge: each is a failed check, never a pass.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The directory or a file in it cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// What.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// More files, or a larger one, than a policy directory may hold.
    #[error("{}: {what}", path.display())]
    TooLarge {
        /// The directory or file.
        path: PathBuf,
        /// Which bound.
        what: String,
    },
    /// A file does not parse as Rego (the message names its line and column).
    #[error("{file}: {message}")]
    Parse {
        /// The policy file.
        file: String,
        /// regorus's words, with the line.
        message: String,
    },
    /// Evaluating a rule failed (a builtin's error, a conflict, the time bound).
    #[error("evaluating data.{PACKAGE}.{rule}: {message}")]
    Eval {
        /// `deny` or `warn`.
        rule: &'static str,
        /// regorus's words.
        message: String,
    },
    /// No file declares package `fleetbot` (none at all, a typo in the path, conftest's
    /// `package main`): policies that judge nothing must not pass.
    #[error("no policy file declares `package {PACKAGE}`{}", if files.is_empty() { " (there is no .rego file)".to_string() } else { format!(" (read: {})", files.join(", ")) })]
    NoPolicy {
        /// The files read.
        files: Vec<String>,
    },
    /// A rule answered with something that is neither a message nor a set of them.
    #[error("data.{PACKAGE}.{rule}: {what}")]
    Shape {
        /// `deny` or `warn`.
        rule: &'static str,
        /// What was wrong.
        what: String,
    },
}

/// Whether a finding blocks (a denial) or only tells (a warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// `deny`: the check fails.
    Deny,
    /// `warn`: the check is neutral.
    Warn,
}

/// One denial or warning, with where the policy pointed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// Deny or warn.
    pub level: Level,
    /// The rule's message.
    pub msg: String,
    /// The spec file it names, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The spec line it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The target (`project/cluster`) it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What the policies said of one input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The policy files that judged, by name.
    pub policies: Vec<String>,
    /// Denials and warnings, denials first, each sorted.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Whether a rule denied.
    pub fn denied(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Deny)
    }

    /// The findings of `level`.
    pub fn of(&self, level: Level) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.level == level)
    }

    /// The verdict as SARIF 2.1.0 (code scanning): rules `policy/deny` (error) and
    /// `policy/warn` (warning), each finding at its spec file and line when it names them.
    pub fn to_sarif(&self) -> serde_json::Value {
        use crate::privacy::report::{sarif_log, uri};
        let results: Vec<serde_json::Value> = self
            .findings
            .iter()
            .map(|f| {
                let (rule, level) = match f.level {
                    Level::Deny => ("policy/deny", "error"),
                    Level::Warn => ("policy/warn", "warning"),
                };
                let mut result = serde_json::json!({
                    "ruleId": rule,
                    "ruleIndex": if f.level == Level::Deny { 0 } else { 1 },
                    "level": level,
                    "message": {"text": f.msg},
                });
                if let Some(file) = &f.file {
                    let mut location = serde_json::json!({"artifactLocation": {"uri": uri(file)}});
                    if let Some(line) = f.line.filter(|l| *l > 0) {
                        location["region"] = serde_json::json!({"startLine": line});
                    }
                    result["locations"] = serde_json::json!([{"physicalLocation": location}]);
                }
                result
            })
            .collect();
        let rules = vec![
            serde_json::json!({"id": "policy/deny", "name": "PolicyDenied", "shortDescription": {"text": "An organisation policy denies the fleet"}, "defaultConfiguration": {"level": "error"}}),
            serde_json::json!({"id": "policy/warn", "name": "PolicyWarning", "shortDescription": {"text": "An organisation policy warns about the fleet"}, "defaultConfiguration": {"level": "warning"}}),
        ];
        sarif_log(rules, results)
    }

    /// The report for a terminal: each finding on its line, then the verdict.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            let word = match f.level {
                Level::Deny => "deny",
                Level::Warn => "warn",
            };
            let at = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!("{file}:{line}: "),
                (Some(file), None) => format!("{file}: "),
                _ => String::new(),
            };
            let target = f
                .target
                .as_deref()
                .map_or(String::new(), |t| format!(" [{t}]"));
            out.push_str(&format!("{word}: {at}{}{target}\n", f.msg));
        }
        let denials = self.of(Level::Deny).count();
        let warnings = self.of(Level::Warn).count();
        out.push_str(&format!(
            "policy: {} ({denials} denial(s), {warnings} warning(s) from {} file(s))\n",
            if self.denied() { "denied" } else { "passed" },
            self.policies.len()
        ));
        out
    }
}

/// The policy files of one directory, read and parsed once.
#[derive(Debug, Clone)]
pub struct Policies {
    /// (name, text), sorted by name.
    sources: Vec<(String, String)>,
    /// How long one evaluation may run.
    time_limit: Duration,
}

impl Policies {
    /// The `*.rego` files of `dir` (not its `*_test.rego`), bounded in number and size.
    pub fn load(dir: &Path) -> Result<Policies, PolicyError> {
        Policies::from_sources(read_dir(dir, |name| !is_test(name))?)
    }

    /// Policies held in memory (a directory the App read from the default branch), each
    /// parsed now, so a broken file fails before any input is judged.
    pub fn from_sources(mut sources: Vec<(String, String)>) -> Result<Policies, PolicyError> {
        sources.sort();
        let package =
            regex::Regex::new(&format!(r"(?m)^\s*package\s+{PACKAGE}\s*$")).expect("regex");
        if !sources.iter().any(|(_, text)| package.is_match(text)) {
            return Err(PolicyError::NoPolicy {
                files: sources.iter().map(|(n, _)| n.clone()).collect(),
            });
        }
        let policies = Policies {
            sources,
            time_limit: TIME_LIMIT,
        };
        policies.engine()?;
        Ok(policies)
    }

    /// Another bound on one evaluation than [`TIME_LIMIT`].
    pub fn with_time_limit(mut self, limit: Duration) -> Policies {
        self.time_limit = limit;
        self
    }

    /// The files' names.
    pub fn names(&self) -> Vec<String> {
        self.sources.iter().map(|(n, _)| n.clone()).collect()
    }

    fn engine(&self) -> Result<regorus::Engine, PolicyError> {
        let mut engine = regorus::Engine::new();
        engine.set_execution_timer_config(regorus::utils::limits::ExecutionTimerConfig {
            limit: self.time_limit,
            check_interval: NonZeroU32::new(64).expect("non-zero"),
        });
        // A builtin's error is an error, never a silently undefined rule.
        engine.set_strict_builtin_errors(true);
        for (name, text) in &self.sources {
            engine
                .add_policy(name.clone(), text.clone())
                .map_err(|e| PolicyError::Parse {
                    file: name.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(engine)
    }

    /// Judges `input` (a `fleetbot.policy/v1` document).
    pub fn check(&self, input: &serde_json::Value) -> Result<Verdict, PolicyError> {
        let mut engine = self.engine()?;
        let input =
            regorus::Value::from_json_str(&input.to_string()).map_err(|e| PolicyError::Eval {
                rule: "deny",
                message: format!("the input does not convert: {e}"),
            })?;
        engine.set_input(input);
        let mut findings = Vec::new();
        for (rule, level) in [("deny", Level::Deny), ("warn", Level::Warn)] {
            // A query, not `eval_rule`: a package without the rule is undefined (no
            // finding), as OPA has it, not an error.
            let results = engine
                .eval_query(format!("data.{PACKAGE}.{rule}"), false)
                .map_err(|e| PolicyError::Eval {
                    rule,
                    message: e.to_string(),
                })?;
            let value = results
                .result
                .into_iter()
                .next()
                .and_then(|r| r.expressions.into_iter().next())
                .map_or(regorus::Value::Undefined, |e| e.value);
            findings.extend(findings_of(rule, level, &value)?);
        }
        findings.sort();
        Ok(Verdict {
            policies: self.names(),
            findings,
        })
    }
}

fn is_test(name: &str) -> bool {
    name.ends_with("_test.rego")
}

/// The `*.rego` files of `dir` whose names `keep`, as (name, text), bounded.
fn read_dir(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<(String, String)>, PolicyError> {
    let read = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PolicyError::Read { path, source }
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read(dir))? {
        let entry = entry.map_err(read(dir))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.ends_with(".rego") || !keep(&name) {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(read(&path))?;
        if !meta.is_file() {
            continue;
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(PolicyError::TooLarge {
                path,
                what: format!(
                    "{} bytes; a policy file may hold {MAX_FILE_BYTES}",
                    meta.len()
                ),
            });
        }
        if out.len() == MAX_FILES {
            return Err(PolicyError::TooLarge {
                path: dir.to_path_buf(),
                what: format!("more than {MAX_FILES} policy files"),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(read(&path))?;
        out.push((name, text));
    }
    Ok(out)
}

/// The findings a rule's value gives: undefined is none; a set (or array) of messages, each a
/// string or an object with `msg` and optional `file`, `line`, `target`.
fn findings_of(
    rule: &'static str,
    level: Level,
    value: &regorus::Value,
) -> Result<Vec<Finding>, PolicyError> {
    if *value == regorus::Value::Undefined {
        return Ok(Vec::new());
    }
    let shape = |what: String| PolicyError::Shape { rule, what };
    let json = serde_json::to_value(value).map_err(|e| shape(e.to_string()))?;
    let items = match json {
        serde_json::Value::Array(items) => items,
        other => {
            return Err(shape(format!(
                "expected a set of messages, got {}",
                kind_of(&other)
            )));
        }
    };
    items
        .into_iter()
        .map(|item| match item {
            serde_json::Value::String(msg) => Ok(Finding {
                level,
                msg,
                file: None,
                line: None,
                target: None,
            }),
            serde_json::Value::Object(map) => {
                let text = |key: &str| map.get(key).and_then(|v| v.as_str()).map(str::to_string);
                let msg = text("msg")
                    .ok_or_else(|| shape("a message object without a string `msg`".into()))?;
                let line =
                    match map.get("line") {
                        None | Some(serde_json::Value::Null) => None,
                        Some(v) => {
                            Some(v.as_u64().and_then(|l| u32::try_from(l).ok()).ok_or_else(
                                || shape(format!("`line` of {msg:?} is not a line number")),
                            )?)
                        }
                    };
                Ok(Finding {
                    level,
                    msg,
                    file: text("file"),
                    line,
                    target: text("target"),
                })
            }
            other => Err(shape(format!("a message is {}", kind_of(&other)))),
        })
        .collect()
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
