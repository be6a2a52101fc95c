//! The `fleet/policy` check run: the organisation's Rego policies, read from the default
//! branch (never from the pull request), judging each changed spec. A denial or a policy that
//! cannot judge fails the check; warnings alone leave it neutral. The same verdict gives the
//! check run, its annotations on the spec lines, and the sticky comment's section.

use std::collections::BTreeMap;

use crate::fleet::live::LiveSpec;
use crate::github::{Annotation, AnnotationLevel, CheckConclusion, CheckOutput, CheckRunPayload};
use crate::policy::{Finding, Level, Policies, PolicyError, input};
use crate::spec::FleetSpec;

pub use crate::policy::{MAX_FILE_BYTES, MAX_FILES};

/// Whether `path` is a policy file directly under `prefix` (`policy/`): `*.rego`, not a test.
pub fn is_policy_file(prefix: &str, path: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| {
        !rest.contains('/') && rest.ends_with(".rego") && !rest.ends_with("_test.rego")
    })
}

/// The check run's name.
pub const POLICY_CHECK: &str = "fleet/policy";

/// Findings listed in the comment and the check's summary; the rest are counted.
const SHOWN: usize = 30;

/// A message's characters shown; a rule's longer words are cut.
const MESSAGE_CHARS: usize = 300;

/// `text` cut to [`MESSAGE_CHARS`].
fn bounded(text: &str) -> String {
    if text.chars().count() <= MESSAGE_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MESSAGE_CHARS).collect();
    format!("{cut}…")
}

/// The policy files of the default branch, as read for one pull request.
#[derive(Debug, Clone)]
pub enum PolicySources {
    /// (path, text) of each `*.rego` file (not `*_test.rego`) under the configured directory.
    Read(Vec<(String, String)>),
    /// They could not be read: the check fails, naming why.
    Unreadable(String),
}

impl PolicySources {
    /// Refuses a directory of more than [`MAX_FILES`] policy files, before any is read.
    pub fn too_many(dir: &str, count: usize) -> Option<PolicySources> {
        (count > MAX_FILES).then(|| {
            PolicySources::Unreadable(format!("{dir} holds more than {MAX_FILES} policy files"))
        })
    }

    /// The sources from each file's bytes as read within [`MAX_FILE_BYTES`] (`None`: missing
    /// or larger); a file that is not UTF-8 text, or was not read, makes them unreadable.
    pub fn from_read(files: Vec<(String, Option<Vec<u8>>)>) -> PolicySources {
        let mut read = Vec::new();
        for (path, bytes) in files {
            match bytes.and_then(|b| String::from_utf8(b).ok()) {
                Some(text) => read.push((path, text)),
                None => {
                    return PolicySources::Unreadable(format!(
                        "{path} could not be read as UTF-8 of at most {MAX_FILE_BYTES} bytes"
                    ));
                }
            }
        }
        PolicySources::Read(read)
    }
}

/// What the policies said of a change, for the check run and the comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOutcome {
    /// `fleet/policy` on the head.
    pub check: CheckRunPayload,
    /// The sticky comment's section.
    pub section: String,
}

/// GitHub's limit on a comment's body, in characters.
const COMMENT_LIMIT: usize = 65_536;

impl PolicyOutcome {
    /// Appends the policy section to `comment`, within GitHub's limit: when the comment
    /// (already fitted to its own budget) leaves too little room, the section keeps its
    /// heading and points at the check run, which lists every finding.
    pub fn append_to(&self, comment: &mut String) {
        let section = if comment.chars().count() + self.section.chars().count() < COMMENT_LIMIT {
            self.section.clone()
        } else {
            format!(
                "\n### {}\n\nThe `{POLICY_CHECK}` check run lists the findings.\n",
                self.check.output.title
            )
        };
        comment.push_str(&section);
    }
}

/// What judging gave: findings of every changed spec, or why the policies could not judge.
type Judged = Result<Vec<Finding>, String>;

/// Judges every changed spec that loads by `sources`, each with its live plan when the cloud
/// gave one and the pull request `pr`; the outcome on the head.
pub fn judge(
    sources: &PolicySources,
    specs: &[(String, FleetSpec)],
    live: &BTreeMap<String, LiveSpec>,
    pr: &input::PullRequest,
) -> PolicyOutcome {
    let head_sha = pr.head_sha.as_str();
    let judged: Judged = match sources {
        PolicySources::Unreadable(why) => Err(why.clone()),
        PolicySources::Read(files) => Policies::from_sources(files.clone())
            .and_then(|policies| {
                let mut findings = Vec::new();
                for (path, spec) in specs {
                    let mut doc = input::of_spec(spec);
                    if let Some(Ok(Some(planned))) = live.get(path).map(|l| &l.plan) {
                        input::with_plan(&mut doc, spec, &planned.plan);
                    }
                    input::with_pull_request(&mut doc, pr);
                    let verdict = policies.check(&doc)?;
                    findings.extend(verdict.findings.into_iter().map(|mut f| {
                        // A finding that names no file is about the spec it judged.
                        f.file.get_or_insert_with(|| path.clone());
                        f
                    }));
                }
                findings.sort();
                Ok::<_, PolicyError>(findings)
            })
            .map_err(|e| e.to_string()),
    };
    let count = |level| {
        judged
            .as_ref()
            .map_or(0, |f| f.iter().filter(|x| x.level == level).count())
    };
    let (denials, warnings) = (count(Level::Deny), count(Level::Warn));
    let (conclusion, title) = match &judged {
        Err(_) => (
            CheckConclusion::Failure,
            "Policy: the organisation's policies could not judge this change".to_string(),
        ),
        Ok(_) if denials > 0 => (
            CheckConclusion::Failure,
            format!("Policy: {denials} denial(s), {warnings} warning(s)"),
        ),
        Ok(_) if warnings > 0 => (
            CheckConclusion::Neutral,
            format!("Policy: {warnings} warning(s), nothing denied"),
        ),
        Ok(_) => (
            CheckConclusion::Success,
            "Policy: every changed fleet passes the organisation's policies".to_string(),
        ),
    };
    let lines = render_lines(&judged);
    let annotations = judged
        .as_ref()
        .map(|f| f.iter().filter_map(|f| annotation(f, specs)).collect())
        .unwrap_or_default();
    PolicyOutcome {
        check: CheckRunPayload {
            name: POLICY_CHECK.into(),
            head_sha: head_sha.to_string(),
            external_id: None,
            conclusion,
            output: CheckOutput {
                title: title.clone(),
                summary: lines.clone(),
                text: None,
                annotations,
            },
            actions: Vec::new(),
        },
        section: format!("\n### {title}\n\n{lines}"),
    }
}

/// The findings as Markdown list items (denials first), or why nothing was judged.
fn render_lines(judged: &Judged) -> String {
    use crate::bot::render::escape::{code, md};
    match judged {
        Err(why) => format!(
            "The policies of the default branch could not judge it, so nothing is allowed by them: {}\n",
            md(&bounded(why))
        ),
        Ok(findings) if findings.is_empty() => {
            "Nothing denied or warned by the policies of the default branch.\n".to_string()
        }
        Ok(findings) => {
            let mut out = String::new();
            for f in findings.iter().take(SHOWN) {
                let word = match f.level {
                    Level::Deny => "**deny**",
                    Level::Warn => "warn",
                };
                let at = match (&f.file, f.line) {
                    (Some(file), Some(line)) => format!(" {}", code(&format!("{file}:{line}"))),
                    (Some(file), None) => format!(" {}", code(&bounded(file))),
                    _ => String::new(),
                };
                out.push_str(&format!("- {word}{at}: {}\n", md(&bounded(&f.msg))));
            }
            if findings.len() > SHOWN {
                out.push_str(&format!("- and {} more\n", findings.len() - SHOWN));
            }
            out
        }
    }
}

/// A finding on its spec line, when it names a changed spec and a line in it.
fn annotation(f: &Finding, specs: &[(String, FleetSpec)]) -> Option<Annotation> {
    let file = f.file.as_ref()?;
    let line = f.line.filter(|l| *l > 0)?;
    specs
        .iter()
        .any(|(path, _)| path == file)
        .then(|| Annotation {
            path: file.clone(),
            start_line: line,
            end_line: line,
            start_column: None,
            end_column: None,
            annotation_level: match f.level {
                Level::Deny => AnnotationLevel::Failure,
                Level::Warn => AnnotationLevel::Warning,
            },
            message: bounded(&f.msg),
            title: Some(format!(
                "Policy: {}",
                if f.level == Level::Deny {
                    "denied"
                } else {
                    "warning"
                }
            )),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Vec<(String, FleetSpec)> {
        let text = include_str!("../../fixtures/specs/fleet1-test.yaml");
        vec![(
            "fleets/prod.yaml".into(),
            crate::spec::load_str(text, "fleets/prod.yaml").unwrap(),
        )]
    }

    fn pr() -> input::PullRequest {
        input::PullRequest {
            head_sha: "abc".into(),
            ..Default::default()
        }
    }

    fn judged(rules: &str) -> PolicyOutcome {
        let sources = PolicySources::Read(vec![("policy/p.rego".into(), rules.into())]);
        judge(&sources, &spec(), &BTreeMap::new(), &pr())
    }

    #[test]
    fn the_conclusion_is_computed_from_the_same_findings_the_text_lists() {
        let clean = judged("package fleetbot\n");
        assert_eq!(clean.check.conclusion, CheckConclusion::Success);
        let warned = judged("package fleetbot\nwarn contains \"look\" if { true }\n");
        assert_eq!(warned.check.conclusion, CheckConclusion::Neutral);
        assert!(
            warned.section.contains("- warn `fleets/prod.yaml`: look"),
            "{}",
            warned.section
        );
        assert!(warned.check.output.annotations.is_empty());
        let denied = judged(
            "package fleetbot\ndeny contains {\"msg\": \"no\", \"file\": \"fleets/prod.yaml\", \"line\": 3} if { true }\n",
        );
        assert_eq!(denied.check.conclusion, CheckConclusion::Failure);
        assert_eq!(denied.check.output.annotations.len(), 1);
        assert_eq!(denied.check.output.annotations[0].start_line, 3);
    }

    #[test]
    fn policies_that_cannot_judge_fail_the_check() {
        let unreadable = judge(
            &PolicySources::Unreadable("gone".into()),
            &spec(),
            &BTreeMap::new(),
            &pr(),
        );
        assert_eq!(unreadable.check.conclusion, CheckConclusion::Failure);
        assert!(
            unreadable.section.contains("could not judge"),
            "{}",
            unreadable.section
        );
        let broken = judged("package fleetbot\ndeny contains if {");
        assert_eq!(broken.check.conclusion, CheckConclusion::Failure);
        assert!(
            broken.section.contains("policy/p.rego"),
            "{}",
            broken.section
        );
        // A finding about a file the change does not touch is listed, never annotated.
        let elsewhere = judged(
            "package fleetbot\ndeny contains {\"msg\": \"x\", \"file\": \"other.yaml\", \"line\": 1} if { true }\n",
        );
        assert!(elsewhere.check.output.annotations.is_empty());
    }

    #[test]
    fn the_section_never_takes_the_comment_past_github_s_limit() {
        let denied = judged(
            "package fleetbot\ndeny contains sprintf(\"%d %s\", [i, concat(\"\", array.concat([\"x\"], [x | numbers.range(1, 400)[_]; x := \"y\"]))]) if { some i in numbers.range(1, 40) }\n",
        );
        assert_eq!(denied.check.conclusion, CheckConclusion::Failure);
        assert!(
            denied.section.contains("- and 10 more"),
            "{}",
            denied.section
        );
        let mut short = "comment\n".to_string();
        denied.append_to(&mut short);
        assert!(short.contains("- **deny**"), "{short}");
        let mut full = "x".repeat(60_000);
        denied.append_to(&mut full);
        assert!(
            full.chars().count() < COMMENT_LIMIT,
            "{}",
            full.chars().count()
        );
        assert!(full.ends_with("The `fleet/policy` check run lists the findings.\n"));
    }

    #[test]
    fn too_many_or_unreadable_policy_files_fail_closed() {
        assert!(PolicySources::too_many("policy/", MAX_FILES).is_none());
        assert!(matches!(
            PolicySources::too_many("policy/", MAX_FILES + 1),
            Some(PolicySources::Unreadable(_))
        ));
        let read = PolicySources::from_read(vec![
            ("policy/a.rego".into(), Some(b"package fleetbot\n".to_vec())),
            ("policy/b.rego".into(), None),
        ]);
        assert!(matches!(&read, PolicySources::Unreadable(why) if why.contains("policy/b.rego")));
        let binary =
            PolicySources::from_read(vec![("policy/a.rego".into(), Some(vec![0xff, 0xfe]))]);
        assert!(matches!(binary, PolicySources::Unreadable(_)));
    }

    #[test]
    fn only_the_directory_s_own_policy_files_are_read() {
        assert!(is_policy_file("policy/", "policy/a.rego"));
        assert!(!is_policy_file("policy/", "policy/a_test.rego"));
        assert!(!is_policy_file("policy/", "policy/sub/a.rego"));
        assert!(!is_policy_file("policy/", "policyx/a.rego"));
        assert!(!is_policy_file("policy/", "policy/a.yaml"));
    }
}
