//! `fleetbot policy test DIR`: every `test_` rule of the directory's `*_test.rego` files run
//! against its policies, as `opa test` runs them; a test passes when its rule is true.

use std::path::Path;

use serde::Serialize;

use super::{PolicyError, read_dir};

/// One test rule's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestOutcome {
    /// `data.<package>.<rule>`.
    pub name: String,
    /// Whether the rule was true.
    pub passed: bool,
    /// Why not, when it erred (undefined or false says nothing more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Every test of a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestReport {
    /// In file, then declaration order.
    pub tests: Vec<TestOutcome>,
}

impl TestReport {
    /// Whether there were tests and every one passed.
    pub fn passed(&self) -> bool {
        !self.tests.is_empty() && self.tests.iter().all(|t| t.passed)
    }

    /// One line a test, then the count.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for t in &self.tests {
            let word = if t.passed { "PASS" } else { "FAIL" };
            let why = t
                .error
                .as_deref()
                .map_or(String::new(), |e| format!(" ({e})"));
            out.push_str(&format!("{word}: {}{why}\n", t.name));
        }
        let failed = self.tests.iter().filter(|t| !t.passed).count();
        out.push_str(&format!(
            "{}/{} test(s) passed{}\n",
            self.tests.len() - failed,
            self.tests.len(),
            if self.tests.is_empty() {
                "; no test_ rule found"
            } else {
                ""
            }
        ));
        out
    }
}

/// Runs the `test_` rules of `dir`'s `*_test.rego` files against all of its `*.rego` files.
pub fn run(dir: &Path) -> Result<TestReport, PolicyError> {
    let sources = read_dir(dir, |_| true)?;
    let policies = super::Policies::from_sources(sources)?;
    let package = regex::Regex::new(r"(?m)^package\s+([A-Za-z0-9_.]+)").expect("regex");
    let test = regex::Regex::new(r"(?m)^(test_[A-Za-z0-9_]*)\b").expect("regex");
    let mut report = TestReport::default();
    for (name, text) in &policies.sources {
        if !super::is_test(name) {
            continue;
        }
        let Some(pkg) = package.captures(text).map(|c| c[1].to_string()) else {
            continue;
        };
        let mut seen = Vec::new();
        for rule in test.captures_iter(text).map(|c| c[1].to_string()) {
            if seen.contains(&rule) {
                continue;
            }
            seen.push(rule.clone());
            let path = format!("data.{pkg}.{rule}");
            let mut engine = policies.engine()?;
            let outcome = match engine.eval_rule(path.clone()) {
                Ok(v) => TestOutcome {
                    name: path,
                    passed: v == regorus::Value::from(true),
                    error: None,
                },
                Err(e) => TestOutcome {
                    name: path,
                    passed: false,
                    error: Some(e.to_string()),
                },
            };
            report.tests.push(outcome);
        }
    }
    Ok(report)
}
