//! The events fleetbot handles, as its own types: GitHub's JSON stops here.
//!
//! Each payload is decoded through small local serde structs that name only the fields the bot
//! reads, so newer fields GitHub adds never break decoding; the result carries plain owned
//! values and [`super::RepoName`]. Events and actions the bot does not act on are kept as
//! [`Event::Unknown`] or an `Other` action so callers can acknowledge and ignore them.

use super::RepoName;

/// One decoded webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Sent once when the hook is set up.
    Ping {
        /// GitHub's zen line.
        zen: Option<String>,
        /// The hook that was set up.
        hook_id: Option<u64>,
    },
    /// `pull_request` with any action.
    PullRequest(PullRequestEvent),
    /// `issue_comment` with any action, on an issue or a pull request.
    IssueComment(IssueCommentEvent),
    /// `check_run` with action `requested_action` (a button on one of our runs was pressed).
    CheckRunRequestedAction(CheckRunActionEvent),
    /// `check_run` with action `rerequested` ("Re-run" on one of our runs); the event's
    /// `identifier` is empty.
    CheckRunRerequested(CheckRunActionEvent),
    /// `installation` with any action.
    Installation(InstallationEvent),
    /// `push`: commits pushed to a branch or tag.
    Push(PushEvent),
    /// Any other event, or a `check_run` action other than `requested_action` and
    /// `rerequested`.
    Unknown {
        /// The `X-GitHub-Event` name.
        event: String,
        /// The payload's `action`, when it has one.
        action: Option<String>,
    },
}

impl Event {
    /// The installation the delivery belongs to, when the payload names one.
    pub fn installation_id(&self) -> Option<u64> {
        match self {
            Event::PullRequest(e) => e.installation_id,
            Event::IssueComment(e) => e.installation_id,
            Event::CheckRunRequestedAction(e) | Event::CheckRunRerequested(e) => e.installation_id,
            Event::Installation(e) => Some(e.installation_id),
            Event::Push(e) => e.installation_id,
            Event::Ping { .. } | Event::Unknown { .. } => None,
        }
    }
}

/// What happened to a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrAction {
    Opened,
    /// New commits were pushed to the head branch.
    Synchronize,
    Reopened,
    ReadyForReview,
    /// Closed; [`PullRequestEvent::merged`] tells whether it was merged.
    Closed,
    /// Any other action (`labeled`, `edited`, …).
    Other(String),
}

impl PrAction {
    fn from_str(action: &str) -> Self {
        match action {
            "opened" => PrAction::Opened,
            "synchronize" => PrAction::Synchronize,
            "reopened" => PrAction::Reopened,
            "ready_for_review" => PrAction::ReadyForReview,
            "closed" => PrAction::Closed,
            other => PrAction::Other(other.to_string()),
        }
    }

    /// Whether the action asks for a fresh preflight of the head commit.
    pub fn wants_preflight(&self) -> bool {
        matches!(
            self,
            PrAction::Opened
                | PrAction::Synchronize
                | PrAction::Reopened
                | PrAction::ReadyForReview
        )
    }
}

/// A `pull_request` delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestEvent {
    pub action: PrAction,
    pub installation_id: Option<u64>,
    pub repo: RepoName,
    pub number: u64,
    pub head_sha: String,
    pub head_ref: String,
    /// `owner/name` of the head repository; `None` when the fork was deleted.
    pub head_repo: Option<String>,
    pub base_sha: String,
    pub base_ref: String,
    pub draft: bool,
    /// True only for `closed` with the pull request merged.
    pub merged: bool,
    pub merge_commit_sha: Option<String>,
    /// Login of the user who triggered the delivery.
    pub sender: String,
}

impl PullRequestEvent {
    /// A pull request from another repository: treated as untrusted (preflight only).
    pub fn is_fork(&self) -> bool {
        self.head_repo.as_deref() != Some(&self.repo.to_string())
    }
}

/// What happened to a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentAction {
    Created,
    Edited,
    Deleted,
    Other(String),
}

/// An `issue_comment` delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueCommentEvent {
    pub action: CommentAction,
    pub installation_id: Option<u64>,
    pub repo: RepoName,
    pub issue_number: u64,
    /// The issue is a pull request (`issue.pull_request` is set).
    pub is_pull_request: bool,
    pub comment_id: u64,
    pub body: String,
    pub author: String,
    /// The author is a bot account (`user.type == "Bot"`), ours or another.
    pub author_is_bot: bool,
}

/// A `check_run` delivery with action `requested_action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunActionEvent {
    pub installation_id: Option<u64>,
    pub repo: RepoName,
    pub check_run_id: u64,
    pub name: String,
    pub head_sha: String,
    pub external_id: Option<String>,
    /// The pressed button's identifier (at most 20 characters, set by us).
    pub identifier: String,
    /// Pull requests the run belongs to (empty for forks).
    pub pull_requests: Vec<u64>,
    pub sender: String,
}

/// A `push` delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushEvent {
    pub installation_id: Option<u64>,
    pub repo: RepoName,
    /// The full ref (`refs/heads/main`).
    pub git_ref: String,
    /// The commit the ref points at now (all zeros when the ref was deleted).
    pub after: String,
    /// The ref was deleted.
    pub deleted: bool,
    pub sender: String,
}

/// An `installation` delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationEvent {
    /// `created`, `deleted`, `suspend`, `unsuspend`, `new_permissions_accepted`, …
    pub action: String,
    pub installation_id: u64,
    /// The account the App is installed on.
    pub account: String,
    /// `owner/name` of the repositories listed in the payload (may be empty).
    pub repositories: Vec<String>,
}

/// Why a payload of a handled event could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("cannot decode the {event} payload: {source}")]
pub struct EventError {
    /// The `X-GitHub-Event` name.
    pub event: String,
    /// The serde error (a path and a reason; never the payload).
    #[source]
    pub source: serde_json::Error,
}

/// Decodes one delivery. `event` is the `X-GitHub-Event` header; `body` the verified bytes.
pub fn parse_event(event: &str, body: &[u8]) -> Result<Event, EventError> {
    read(event, body, false).map(|(event, _)| event)
}

/// [`parse_event`], and the part of `body` it read: the same JSON shape holding only the
/// fields fleetbot reads, from which [`parse_event`] decodes the same [`Event`]. A queued job
/// keeps this instead of the whole delivery: a `pull_request` payload is ~24 KB of URLs,
/// avatars and counters, and every byte kept is written to the store and synced to disk
/// before the delivery is answered. `None` beside the event when it could not be written back
/// (keep the delivery as it came).
///
/// What a job keeps is what the release that queued it reads: a field added to `wire` later
/// must be optional or defaulted, or a job queued before the upgrade no longer decodes.
pub fn parse_event_kept(event: &str, body: &[u8]) -> Result<(Event, Option<Vec<u8>>), EventError> {
    read(event, body, true)
}

fn read(event: &str, body: &[u8], keep: bool) -> Result<(Event, Option<Vec<u8>>), EventError> {
    fn decode<T: serde::de::DeserializeOwned + serde::Serialize>(
        event: &str,
        body: &[u8],
        keep: bool,
    ) -> Result<(T, Option<Vec<u8>>), EventError> {
        let payload: T = serde_json::from_slice(body).map_err(|source| EventError {
            event: event.to_string(),
            source,
        })?;
        let kept = if keep {
            serde_json::to_vec(&payload).ok()
        } else {
            None
        };
        Ok((payload, kept))
    }
    match event {
        "ping" => {
            let (p, kept) = decode::<wire::Ping>(event, body, keep)?;
            let event = Event::Ping {
                zen: p.zen,
                hook_id: p.hook_id,
            };
            Ok((event, kept))
        }
        "pull_request" => {
            let (p, kept) = decode::<wire::PullRequestPayload>(event, body, keep)?;
            Ok((Event::PullRequest(p.into_event()), kept))
        }
        "issue_comment" => {
            let (p, kept) = decode::<wire::IssueCommentPayload>(event, body, keep)?;
            Ok((Event::IssueComment(p.into_event()), kept))
        }
        "check_run" => {
            let (p, kept) = decode::<wire::CheckRunPayload>(event, body, keep)?;
            Ok((p.into_event(), kept))
        }
        "installation" => {
            let (p, kept) = decode::<wire::InstallationPayload>(event, body, keep)?;
            Ok((Event::Installation(p.into_event()), kept))
        }
        "push" => {
            let (p, kept) = decode::<wire::PushPayload>(event, body, keep)?;
            let event = Event::Push(PushEvent {
                installation_id: p.installation.map(|i| i.id),
                repo: p.repository.name(),
                git_ref: p.git_ref,
                after: p.after,
                deleted: p.deleted,
                sender: p.sender.map(|s| s.login).unwrap_or_default(),
            });
            Ok((event, kept))
        }
        other => {
            // Only the action is read, and a body that is not JSON is fine: it is ignored.
            let action = serde_json::from_slice::<wire::ActionOnly>(body)
                .ok()
                .and_then(|a| a.action);
            let kept = keep
                .then(|| {
                    serde_json::to_vec(&wire::ActionOnly {
                        action: action.clone(),
                    })
                    .ok()
                })
                .flatten();
            let event = Event::Unknown {
                event: other.to_string(),
                action,
            };
            Ok((event, kept))
        }
    }
}

/// GitHub's JSON, reduced to the fields fleetbot reads.
mod wire {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Deserialize, Serialize)]
    pub struct ActionOnly {
        pub action: Option<String>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct Ping {
        pub zen: Option<String>,
        pub hook_id: Option<u64>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct Installation {
        pub id: u64,
    }

    #[derive(Deserialize, Serialize)]
    pub struct PushPayload {
        #[serde(rename = "ref")]
        pub git_ref: String,
        pub after: String,
        #[serde(default)]
        pub deleted: bool,
        pub repository: Repository,
        pub installation: Option<Installation>,
        pub sender: Option<User>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct User {
        pub login: String,
        #[serde(rename = "type", default)]
        pub kind: String,
    }

    #[derive(Deserialize, Serialize)]
    pub struct Repository {
        pub full_name: String,
    }

    impl Repository {
        pub fn name(&self) -> RepoName {
            RepoName::parse(&self.full_name)
                .unwrap_or_else(|| RepoName::new(self.full_name.clone(), ""))
        }
    }

    #[derive(Deserialize, Serialize)]
    pub struct GitRef {
        pub sha: String,
        #[serde(rename = "ref")]
        pub name: String,
        pub repo: Option<Repository>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct PullRequest {
        pub number: u64,
        pub head: GitRef,
        pub base: GitRef,
        #[serde(default)]
        pub draft: bool,
        #[serde(default)]
        pub merged: Option<bool>,
        pub merge_commit_sha: Option<String>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct PullRequestPayload {
        pub action: String,
        pub number: u64,
        pub pull_request: PullRequest,
        pub repository: Repository,
        pub installation: Option<Installation>,
        pub sender: User,
    }

    impl PullRequestPayload {
        pub fn into_event(self) -> PullRequestEvent {
            let action = PrAction::from_str(&self.action);
            let pr = self.pull_request;
            PullRequestEvent {
                merged: action == PrAction::Closed && pr.merged == Some(true),
                action,
                installation_id: self.installation.map(|i| i.id),
                repo: self.repository.name(),
                number: if self.number != 0 {
                    self.number
                } else {
                    pr.number
                },
                head_sha: pr.head.sha,
                head_ref: pr.head.name,
                head_repo: pr.head.repo.map(|r| r.full_name),
                base_sha: pr.base.sha,
                base_ref: pr.base.name,
                draft: pr.draft,
                merge_commit_sha: pr.merge_commit_sha,
                sender: self.sender.login,
            }
        }
    }

    /// A field whose value is not read, only whether it is there and not `null` (`Option`
    /// reads `null` as absent); written back as `{}`.
    pub struct Present;

    impl<'de> Deserialize<'de> for Present {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Present)
        }
    }

    impl Serialize for Present {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            s.serialize_map(Some(0))?.end()
        }
    }

    #[derive(Deserialize, Serialize)]
    pub struct Issue {
        pub number: u64,
        /// Present (an object) exactly when the issue is a pull request.
        pub pull_request: Option<Present>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct Comment {
        pub id: u64,
        #[serde(default)]
        pub body: Option<String>,
        pub user: User,
    }

    #[derive(Deserialize, Serialize)]
    pub struct IssueCommentPayload {
        pub action: String,
        pub issue: Issue,
        pub comment: Comment,
        pub repository: Repository,
        pub installation: Option<Installation>,
    }

    impl IssueCommentPayload {
        pub fn into_event(self) -> IssueCommentEvent {
            IssueCommentEvent {
                action: match self.action.as_str() {
                    "created" => CommentAction::Created,
                    "edited" => CommentAction::Edited,
                    "deleted" => CommentAction::Deleted,
                    other => CommentAction::Other(other.to_string()),
                },
                installation_id: self.installation.map(|i| i.id),
                repo: self.repository.name(),
                issue_number: self.issue.number,
                is_pull_request: self.issue.pull_request.is_some(),
                comment_id: self.comment.id,
                body: self.comment.body.unwrap_or_default(),
                author_is_bot: self.comment.user.kind == "Bot",
                author: self.comment.user.login,
            }
        }
    }

    #[derive(Deserialize, Serialize)]
    pub struct CheckRunPr {
        pub number: u64,
    }

    #[derive(Deserialize, Serialize)]
    pub struct CheckRun {
        pub id: u64,
        pub name: String,
        pub head_sha: String,
        pub external_id: Option<String>,
        #[serde(default)]
        pub pull_requests: Vec<CheckRunPr>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct RequestedAction {
        pub identifier: String,
    }

    #[derive(Deserialize, Serialize)]
    pub struct CheckRunPayload {
        pub action: String,
        pub check_run: CheckRun,
        pub requested_action: Option<RequestedAction>,
        pub repository: Repository,
        pub installation: Option<Installation>,
        pub sender: User,
    }

    impl CheckRunPayload {
        pub fn into_event(self) -> Event {
            let rerequested = self.action == "rerequested";
            let identifier = match (self.action.as_str(), self.requested_action) {
                ("requested_action", Some(requested)) => requested.identifier,
                ("rerequested", _) => String::new(),
                _ => {
                    return Event::Unknown {
                        event: "check_run".into(),
                        action: Some(self.action),
                    };
                }
            };
            let e = CheckRunActionEvent {
                installation_id: self.installation.map(|i| i.id),
                repo: self.repository.name(),
                check_run_id: self.check_run.id,
                name: self.check_run.name,
                head_sha: self.check_run.head_sha,
                external_id: self.check_run.external_id.filter(|s| !s.is_empty()),
                identifier,
                pull_requests: self
                    .check_run
                    .pull_requests
                    .iter()
                    .map(|p| p.number)
                    .collect(),
                sender: self.sender.login,
            };
            if rerequested {
                Event::CheckRunRerequested(e)
            } else {
                Event::CheckRunRequestedAction(e)
            }
        }
    }

    #[derive(Deserialize, Serialize)]
    pub struct InstallationDetail {
        pub id: u64,
        pub account: Option<User>,
    }

    #[derive(Deserialize, Serialize)]
    pub struct InstallationPayload {
        pub action: String,
        pub installation: InstallationDetail,
        #[serde(default)]
        pub repositories: Option<Vec<Repository>>,
    }

    impl InstallationPayload {
        pub fn into_event(self) -> InstallationEvent {
            InstallationEvent {
                action: self.action,
                installation_id: self.installation.id,
                account: self
                    .installation
                    .account
                    .map(|a| a.login)
                    .unwrap_or_default(),
                repositories: self
                    .repositories
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| r.full_name)
                    .collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pr_payload(action: &str, merged: bool) -> Vec<u8> {
        json!({
            "action": action,
            "number": 7,
            "pull_request": {
                "number": 7,
                "draft": false,
                "merged": merged,
                "merge_commit_sha": if merged { json!("m".repeat(40)) } else { json!(null) },
                "head": {"sha": "h".repeat(40), "ref": "feature", "repo": {"full_name": "octo/fleet"}},
                "base": {"sha": "b".repeat(40), "ref": "main", "repo": {"full_name": "octo/fleet"}},
                "extra_field_from_the_future": {"x": 1}
            },
            "repository": {"full_name": "octo/fleet"},
            "installation": {"id": 42},
            "sender": {"login": "alice", "type": "User"}
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn pull_request_actions() {
        let Event::PullRequest(e) =
            parse_event("pull_request", &pr_payload("opened", false)).unwrap()
        else {
            panic!("not a pull request event");
        };
        assert_eq!(e.action, PrAction::Opened);
        assert!(e.action.wants_preflight());
        assert_eq!(e.installation_id, Some(42));
        assert_eq!(e.repo, RepoName::new("octo", "fleet"));
        assert_eq!((e.number, e.head_ref.as_str()), (7, "feature"));
        assert!(!e.is_fork());
        assert!(!e.merged);

        let Event::PullRequest(e) =
            parse_event("pull_request", &pr_payload("closed", true)).unwrap()
        else {
            panic!("not a pull request event");
        };
        assert_eq!(e.action, PrAction::Closed);
        assert!(e.merged);
        assert_eq!(e.merge_commit_sha.as_deref(), Some("m".repeat(40).as_str()));

        let Event::PullRequest(e) =
            parse_event("pull_request", &pr_payload("labeled", false)).unwrap()
        else {
            panic!("not a pull request event");
        };
        assert_eq!(e.action, PrAction::Other("labeled".into()));
        assert!(!e.action.wants_preflight());
    }

    #[test]
    fn issue_comment_on_a_pull_request() {
        let body = json!({
            "action": "created",
            "issue": {"number": 7, "pull_request": {"url": "u"}},
            "comment": {"id": 99, "body": "/plan", "user": {"login": "fleetbot[bot]", "type": "Bot"}},
            "repository": {"full_name": "octo/fleet"},
            "installation": {"id": 42},
            "sender": {"login": "fleetbot[bot]", "type": "Bot"}
        });
        let Event::IssueComment(e) =
            parse_event("issue_comment", body.to_string().as_bytes()).unwrap()
        else {
            panic!("not a comment event");
        };
        assert!(e.is_pull_request && e.author_is_bot);
        assert_eq!((e.comment_id, e.body.as_str()), (99, "/plan"));
        assert_eq!(e.action, CommentAction::Created);
    }

    #[test]
    fn check_run_requested_action_and_other_actions() {
        let mut body = json!({
            "action": "requested_action",
            "check_run": {"id": 5, "name": "fleet/apply", "head_sha": "abc", "external_id": "",
                          "pull_requests": [{"number": 3}]},
            "requested_action": {"identifier": "apply"},
            "repository": {"full_name": "octo/fleet"},
            "sender": {"login": "alice", "type": "User"}
        });
        let Event::CheckRunRequestedAction(e) =
            parse_event("check_run", body.to_string().as_bytes()).unwrap()
        else {
            panic!("not a check run action");
        };
        assert_eq!(e.identifier, "apply");
        assert_eq!(e.external_id, None);
        assert_eq!(e.pull_requests, vec![3]);
        body["action"] = json!("rerequested");
        let Event::CheckRunRerequested(e) =
            parse_event("check_run", body.to_string().as_bytes()).unwrap()
        else {
            panic!("not a re-run");
        };
        assert_eq!((e.identifier.as_str(), e.check_run_id), ("", 5));
        body["action"] = json!("completed");
        assert_eq!(
            parse_event("check_run", body.to_string().as_bytes()).unwrap(),
            Event::Unknown {
                event: "check_run".into(),
                action: Some("completed".into())
            }
        );
    }

    #[test]
    fn ping_unknown_and_broken_payloads() {
        assert_eq!(
            parse_event("ping", br#"{"zen":"Keep it simple.","hook_id":1}"#).unwrap(),
            Event::Ping {
                zen: Some("Keep it simple.".into()),
                hook_id: Some(1)
            }
        );
        assert_eq!(
            parse_event("star", b"not json").unwrap(),
            Event::Unknown {
                event: "star".into(),
                action: None
            }
        );
        let err = parse_event("pull_request", br#"{"action":"opened"}"#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot decode the pull_request payload")
        );
    }

    #[test]
    fn installation_events() {
        let body = json!({
            "action": "created",
            "installation": {"id": 9, "account": {"login": "octo", "type": "Organization"}},
            "repositories": [{"full_name": "octo/fleet"}],
            "sender": {"login": "alice", "type": "User"}
        });
        let e = parse_event("installation", body.to_string().as_bytes()).unwrap();
        assert_eq!(e.installation_id(), Some(9));
        let Event::Installation(e) = e else {
            panic!("not an installation event");
        };
        assert_eq!(e.account, "octo");
        assert_eq!(e.repositories, vec!["octo/fleet".to_string()]);
    }
}
