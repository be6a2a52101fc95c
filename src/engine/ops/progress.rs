//! Progress as the engine reports it: typed events that each front end renders its own way
//! (the CLI's bar and lines, the App's check-run text), so nobody parses text back.

use std::fmt;
use std::sync::Arc;

/// Progress sink. JSON mode sends the rendered lines to stderr.
pub type Progress = Arc<dyn Fn(&Event) + Send + Sync>;

/// A sink that drops every event (a caller that shows no progress).
pub fn quiet() -> Progress {
    Arc::new(|_: &Event| {})
}

/// One event of a long operation: a step on the way, or how a subject ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What the event is about: a target (`project/cluster`), a project (`project <key>`),
    /// or nothing for a step of the whole run.
    pub subject: Option<String>,
    pub what: What,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A step begun, or a note on the way (`creating cluster`).
    Step(String),
    /// The subject's last event: how it ended.
    Done(Outcome),
}

/// How a subject ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Deployed,
    Destroyed,
    /// A verification's verdict, with its kind (`storage`, `graphics`).
    Verified {
        kind: &'static str,
        passed: bool,
    },
    /// Not looked at, and why (`filesystem off`).
    Skipped(String),
    /// Failed, with the reason.
    Failed(String),
}

impl Event {
    /// A step of `subject`.
    pub fn step(subject: impl fmt::Display, what: impl Into<String>) -> Event {
        Event {
            subject: Some(subject.to_string()),
            what: What::Step(what.into()),
        }
    }

    /// A step of the whole run, about no one target.
    pub fn note(what: impl Into<String>) -> Event {
        Event {
            subject: None,
            what: What::Step(what.into()),
        }
    }

    /// How `subject` ended.
    pub fn done(subject: impl fmt::Display, outcome: Outcome) -> Event {
        Event {
            subject: Some(subject.to_string()),
            what: What::Done(outcome),
        }
    }

    /// The outcome, when this is a subject's last event.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.what {
            What::Done(outcome) => Some(outcome),
            What::Step(_) => None,
        }
    }
}

impl Outcome {
    /// Whether it ended well (a skip is not a failure).
    pub fn ok(&self) -> bool {
        match self {
            Outcome::Deployed | Outcome::Destroyed | Outcome::Skipped(_) => true,
            Outcome::Verified { passed, .. } => *passed,
            Outcome::Failed(_) => false,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Deployed => f.write_str("deployed"),
            Outcome::Destroyed => f.write_str("destroyed"),
            Outcome::Verified { kind, passed } => {
                write!(f, "{kind} {}", if *passed { "passed" } else { "failed" })
            }
            Outcome::Skipped(why) => write!(f, "{why}, skipped"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Step(text) => f.write_str(text),
            What::Done(outcome) => outcome.fmt(f),
        }
    }
}

/// The line the CLI prints and logs carry: `<subject>: <what>`.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subject {
            Some(subject) => write!(f, "{subject}: {}", self.what),
            None => self.what.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_render_as_the_documented_lines() {
        let lines = [
            (
                Event::step("a/c", "creating cluster"),
                "a/c: creating cluster",
            ),
            (Event::note("waiting"), "waiting"),
            (Event::done("a/c", Outcome::Deployed), "a/c: deployed"),
            (Event::done("a/c", Outcome::Destroyed), "a/c: destroyed"),
            (
                Event::done("a/c", Outcome::Failed("quota".into())),
                "a/c: failed: quota",
            ),
            (
                Event::done(
                    "a/c",
                    Outcome::Verified {
                        kind: "storage",
                        passed: false,
                    },
                ),
                "a/c: storage failed",
            ),
            (
                Event::done("a/c", Outcome::Skipped("filesystem off".into())),
                "a/c: filesystem off, skipped",
            ),
        ];
        for (event, line) in lines {
            assert_eq!(event.to_string(), line);
        }
    }

    #[test]
    fn only_a_last_event_has_an_outcome_and_a_skip_is_not_a_failure() {
        assert!(Event::step("a/c", "deployed").outcome().is_none());
        let skipped = Event::done("a/c", Outcome::Skipped("off".into()));
        assert!(skipped.outcome().is_some_and(Outcome::ok));
        let failed = Event::done(
            "a/c",
            Outcome::Verified {
                kind: "graphics",
                passed: false,
            },
        );
        assert!(failed.outcome().is_some_and(|o| !o.ok()));
    }
}
