//! Rendering scan results as text, JSON and SARIF 2.1.0.
//!
//! Every renderer works from [`Finding`]s, which hold no values, so no output format can
//! leak one. SARIF follows the subset GitHub code scanning reads (`tool.driver.rules`,
//! `results[].locations`, `partialFingerprints`), with the alias as the fingerprint so the
//! same value keeps its alert across pushes.

use serde::Serialize;
use serde_json::{Value, json};

use super::{FileScan, Finding, RuleId, SkipReason};

/// Where SARIF consumers send people for rule documentation.
const INFORMATION_URI: &str = match option_env!("CARGO_PKG_REPOSITORY") {
    Some(repo) if !repo.is_empty() => repo,
    _ => "https://github.com/fleetbot/fleetbot",
};
const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const FINGERPRINT_KEY: &str = "fleetbotAlias/v1";

/// A file that was not scanned, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    /// The path as reported.
    pub path: String,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// Results of scanning many files, in the order they were added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Every finding.
    pub findings: Vec<Finding>,
    /// Every skipped file.
    pub skipped: Vec<SkippedFile>,
    /// How many files were scanned (skipped ones not counted).
    pub scanned: usize,
}

impl ScanReport {
    /// Adds one file's result.
    pub fn add(&mut self, path: &str, scan: FileScan) {
        match scan {
            FileScan::Findings(findings) => {
                self.scanned += 1;
                self.findings.extend(findings)
            }
            FileScan::Skipped { reason } => self.skipped.push(SkippedFile {
                path: path.to_string(),
                reason,
            }),
        }
    }

    /// No findings (skipped files do not make a scan dirty).
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Sorts findings by path, line, column and rule for stable output.
    pub fn sort(&mut self) {
        self.findings.sort_by(|a, b| {
            (&a.path, a.line, a.column, a.rule).cmp(&(&b.path, b.line, b.column, b.rule))
        });
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// One `path:line:col rule alias` line per finding.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&format!(
                "{}:{}:{} {} {}\n",
                f.path, f.line, f.column, f.rule, f.alias
            ));
        }
        out
    }

    /// `{"clean": bool, "findings": [...], "skipped": [...]}`.
    pub fn to_json(&self) -> Value {
        let skipped: Vec<Value> = self
            .skipped
            .iter()
            .map(|s| json!({"path": s.path, "reason": s.reason.as_str(), "note": s.reason.note()}))
            .collect();
        json!({
            "clean": self.clean(),
            "findings": self.findings,
            "skipped": skipped,
        })
    }

    /// A SARIF 2.1.0 log with one run.
    pub fn to_sarif(&self) -> Value {
        let mut log = sarif_log(
            RuleId::ALL.iter().map(sarif_rule).collect(),
            self.findings.iter().map(sarif_result).collect(),
        );
        let run = &mut log["runs"][0];
        run["columnKind"] = json!("unicodeCodePoints");
        run["invocations"] = json!([{
            "executionSuccessful": true,
            "toolExecutionNotifications": self.notes(),
        }]);
        log
    }

    fn notes(&self) -> Vec<Value> {
        self.skipped
            .iter()
            .map(|s| {
                json!({
                    "level": "note",
                    "message": {"text": s.reason.note()},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(&s.path)}}}],
                })
            })
            .collect()
    }
}

/// A SARIF 2.1.0 log of one fleetbot run: `rules` and the `results` they name. The privacy
/// scan and the policy check both write theirs through it.
pub(crate) fn sarif_log(rules: Vec<Value>, results: Vec<Value>) -> Value {
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "fleetbot",
                "informationUri": INFORMATION_URI,
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

fn sarif_rule(rule: &RuleId) -> Value {
    let severity = if rule.is_credential() { "9.0" } else { "7.0" };
    json!({
        "id": rule.as_str(),
        "name": rule.sarif_name(),
        "shortDescription": {"text": rule.explanation()},
        "fullDescription": {"text": rule.explanation()},
        "help": {"text": format!("{}. The value is never shown; equal aliases mean equal values.", rule.explanation())},
        "defaultConfiguration": {"level": "error"},
        "properties": {
            "tags": ["security", "privacy"],
            "precision": "high",
            "security-severity": severity,
        },
    })
}

fn sarif_result(f: &Finding) -> Value {
    json!({
        "ruleId": f.rule.as_str(),
        "ruleIndex": f.rule.index(),
        "level": "error",
        "message": {"text": format!("{} (alias {})", f.rule.explanation(), f.alias)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri(&f.path)},
                "region": {"startLine": f.line, "startColumn": f.column},
            },
        }],
        "partialFingerprints": {FINGERPRINT_KEY: f.alias},
    })
}

/// A relative URI reference for a path: `/` separators, everything outside the RFC 3986
/// unreserved set (and `/`) percent-encoded.
pub(crate) fn uri(path: &str) -> String {
    let path = super::allowlist::normalize_path(path);
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ScanReport {
        let mut r = ScanReport::default();
        r.add(
            "specs/b c.yaml",
            FileScan::Findings(vec![Finding {
                path: "specs/b c.yaml".into(),
                line: 3,
                column: 14,
                rule: RuleId::SpecTenantId,
                alias: "0123456789abcdef".into(),
            }]),
        );
        r.add(
            "img.png",
            FileScan::Skipped {
                reason: SkipReason::Binary,
            },
        );
        r
    }

    #[test]
    fn text_format() {
        assert_eq!(
            sample().to_text(),
            "specs/b c.yaml:3:14 spec-tenant-id 0123456789abcdef\n"
        );
    }

    #[test]
    fn json_shape() {
        let j = sample().to_json();
        assert_eq!(j["clean"], false);
        assert_eq!(j["findings"][0]["rule"], "spec-tenant-id");
        assert_eq!(j["findings"][0]["line"], 3);
        assert_eq!(j["skipped"][0]["reason"], "binary");
        assert_eq!(ScanReport::default().to_json()["clean"], true);
    }

    #[test]
    fn sarif_shape() {
        let s = sample().to_sarif();
        assert_eq!(s["version"], "2.1.0");
        assert!(s["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
        let run = &s["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "fleetbot");
        assert!(
            run["tool"]["driver"]["informationUri"]
                .as_str()
                .unwrap()
                .starts_with("https://")
        );
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().unwrap().len(),
            RuleId::ALL.len()
        );
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "spec-tenant-id");
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            run["tool"]["driver"]["rules"][index]["id"],
            "spec-tenant-id"
        );
        let loc = &result["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "specs/b%20c.yaml");
        assert_eq!(loc["region"]["startLine"], 3);
        assert_eq!(loc["region"]["startColumn"], 14);
        assert_eq!(
            result["partialFingerprints"][FINGERPRINT_KEY],
            "0123456789abcdef"
        );
        assert_eq!(
            run["invocations"][0]["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"]
                ["artifactLocation"]["uri"],
            "img.png"
        );
    }
}
