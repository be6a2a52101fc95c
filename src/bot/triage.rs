//! What a delivery needs, decided at intake from its event name and one parse of its payload:
//! nothing (it is recorded, so a redelivery is known, and no job is queued), or a job, which
//! for a pull request's new head is a preflight that a newer head makes pointless.

use crate::github::events::{CommentAction, Event, IssueCommentEvent, PrAction, parse_event};

use super::commands::parse_comment;

/// The outcome of [`triage`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triage {
    /// No work: why, for the logs.
    Nothing(&'static str),
    /// A job. `preflight`: the job plans a pull request's head, so a newer delivery for the
    /// same pull request supersedes it while it has not started.
    Work { preflight: bool },
}

/// Why a comment cannot carry commands, or `None` when it can.
pub(crate) fn not_for_commands(e: &IssueCommentEvent) -> Option<&'static str> {
    if e.action != CommentAction::Created {
        // An edit must never re-run a command (TOCTOU).
        return Some("only created comments run commands");
    }
    if !e.is_pull_request {
        return Some("comment on an issue, not a pull request");
    }
    // Ours or another bot's: never answer a bot, so two bots cannot loop.
    e.author_is_bot.then_some("comment by a bot")
}

/// Decides what `payload` of event `event` needs. A payload that does not parse is work: the
/// worker records why it could not be read, rather than intake dropping it unseen.
pub fn triage(event: &str, payload: &[u8]) -> Triage {
    match parse_event(event, payload) {
        Ok(parsed) => triage_event(&parsed),
        Err(_) => Triage::Work { preflight: false },
    }
}

/// [`triage`] of a payload already parsed.
pub fn triage_event(parsed: &Event) -> Triage {
    match parsed {
        Event::Ping { .. } => Triage::Nothing("ping"),
        Event::Unknown { .. } => Triage::Nothing("an event fleetbot does not act on"),
        Event::IssueComment(e) => match not_for_commands(e) {
            Some(why) => Triage::Nothing(why),
            None if parse_comment(&e.body).is_empty() => {
                Triage::Nothing("no command in the comment")
            }
            None => Triage::Work { preflight: false },
        },
        Event::PullRequest(e) if e.action == PrAction::Closed && e.merged => {
            Triage::Work { preflight: false }
        }
        Event::PullRequest(e) if e.action.wants_preflight() => Triage::Work { preflight: true },
        Event::PullRequest(_) => Triage::Nothing("a pull_request action that needs no preflight"),
        _ => Triage::Work { preflight: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn comment(body: &str, action: &str, bot: bool) -> Vec<u8> {
        json!({
            "action": action,
            "issue": {"number": 7, "pull_request": {"url": "u"}},
            "comment": {"id": 1, "body": body, "user": {"login": if bot { "x[bot]" } else { "dev" }, "type": if bot { "Bot" } else { "User" }}},
            "repository": {"full_name": "o/r", "name": "r", "owner": {"login": "o"}},
            "installation": {"id": 1},
            "sender": {"login": "dev"},
        })
        .to_string()
        .into_bytes()
    }

    fn pull_request(action: &str, merged: bool) -> Vec<u8> {
        json!({
            "action": action, "number": 7,
            "pull_request": {"number": 7, "merged": merged, "draft": false,
                "head": {"sha": "a".repeat(40), "ref": "f", "repo": {"full_name": "o/r"}},
                "base": {"sha": "b".repeat(40), "ref": "main", "repo": {"full_name": "o/r"}}},
            "repository": {"full_name": "o/r", "name": "r", "owner": {"login": "o"}, "default_branch": "main"},
            "installation": {"id": 1},
            "sender": {"login": "dev"},
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn comments_without_commands_and_idle_events_need_no_job() {
        assert_eq!(
            triage(
                "issue_comment",
                &comment("looks good to me", "created", false)
            ),
            Triage::Nothing("no command in the comment")
        );
        assert_eq!(
            triage("issue_comment", &comment("/plan", "created", false)),
            Triage::Work { preflight: false }
        );
        assert_eq!(
            triage("issue_comment", &comment("/plan", "edited", false)),
            Triage::Nothing("only created comments run commands")
        );
        assert_eq!(
            triage("issue_comment", &comment("/plan", "created", true)),
            Triage::Nothing("comment by a bot")
        );
        assert_eq!(
            triage("watch", b"{}"),
            Triage::Nothing("an event fleetbot does not act on")
        );
        assert_eq!(
            triage("ping", br#"{"zen": "z", "hook_id": 1}"#),
            Triage::Nothing("ping")
        );
    }

    #[test]
    fn new_heads_are_preflights_and_merges_are_never_coalesced() {
        assert_eq!(
            triage("pull_request", &pull_request("synchronize", false)),
            Triage::Work { preflight: true }
        );
        assert_eq!(
            triage("pull_request", &pull_request("opened", false)),
            Triage::Work { preflight: true }
        );
        assert_eq!(
            triage("pull_request", &pull_request("closed", true)),
            Triage::Work { preflight: false }
        );
        assert_eq!(
            triage("pull_request", &pull_request("labeled", false)),
            Triage::Nothing("a pull_request action that needs no preflight")
        );
        // Unreadable payloads reach the worker, which says why.
        assert_eq!(
            triage("pull_request", b"not json"),
            Triage::Work { preflight: false }
        );
    }
}
