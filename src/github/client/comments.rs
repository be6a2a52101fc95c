//! Issue comments: the sticky preflight comment and command replies, found again by a hidden
//! marker so a retried job edits instead of posting twice, and reactions.

use reqwest::Method;
use serde::Deserialize;

use super::transport::{Repeat, decode};
use super::{ClientError, RepoClient};

/// A comment on an issue or pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    pub body: String,
    pub author: String,
    pub author_is_bot: bool,
}

/// A comment as it reads now, re-read before a command in it is acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentNow {
    pub body: String,
    pub author: String,
    /// When it was written (unix ms).
    pub created_at: i64,
}

/// What happened to the sticky comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StickyComment {
    Created(u64),
    Updated(u64),
}

#[derive(Deserialize)]
pub(super) struct WireUser {
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: String,
}

#[derive(Deserialize)]
struct WireComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    user: Option<WireUser>,
}

impl From<WireComment> for IssueComment {
    fn from(c: WireComment) -> Self {
        let (author, kind) = c.user.map(|u| (u.login, u.kind)).unwrap_or_default();
        IssueComment {
            id: c.id,
            body: c.body.unwrap_or_default(),
            author,
            author_is_bot: kind == "Bot",
        }
    }
}

impl RepoClient {
    /// Every comment of an issue or pull request.
    pub async fn issue_comments(&self, number: u64) -> Result<Vec<IssueComment>, ClientError> {
        let (comments, _) = self
            .client
            .get_all::<WireComment>(
                "issues/list-comments",
                self.installation_id,
                &self.repo_path(&format!("/issues/{number}/comments")),
                vec![],
                usize::MAX,
            )
            .await?;
        Ok(comments.into_iter().map(IssueComment::from).collect())
    }

    /// `GET /issues/comments/{id}`: the comment as it reads now; `None` once deleted.
    pub async fn issue_comment(&self, comment_id: u64) -> Result<Option<CommentNow>, ClientError> {
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            body: Option<String>,
            user: Option<WireUser>,
            created_at: String,
        }
        let answer: Result<Wire, _> = self
            .client
            .get_json(
                "issues/get-comment",
                self.installation_id,
                &self.repo_path(&format!("/issues/comments/{comment_id}")),
                vec![],
            )
            .await;
        let wire = match answer {
            Ok(w) => w,
            Err(e) if e.status() == Some(404) => return Ok(None),
            Err(e) => return Err(e),
        };
        // A time GitHub wrote that cannot be read is not "now": the command fails closed.
        let created_at =
            super::timestamp_ms(&wire.created_at).ok_or_else(|| ClientError::Decode {
                op: "issues/get-comment",
                message: "created_at is not an RFC 3339 time".into(),
            })?;
        Ok(Some(CommentNow {
            body: wire.body.unwrap_or_default(),
            author: wire.user.map(|u| u.login).unwrap_or_default(),
            created_at,
        }))
    }

    /// The App's own comment carrying `marker`: the first authored by the App's bot account
    /// (`<slug>[bot]`, of type `Bot`) whose first line is exactly the marker. A marker anywhere
    /// else (inside a quoted spec diff, say) is content, and a comment by anyone else (a
    /// person, another App) is never adopted however perfect its marker: the bot would
    /// otherwise overwrite it, or publish its verdict in a comment someone else can edit.
    pub async fn find_marked_comment(
        &self,
        number: u64,
        marker: &str,
    ) -> Result<Option<IssueComment>, ClientError> {
        let login = self.client.app_identity().await?.bot_login();
        Ok(self
            .issue_comments(number)
            .await?
            .into_iter()
            .find(|c| is_own(c, &login) && opens_with_marker(&c.body, marker)))
    }

    /// `POST /issues/{n}/comments`. Not repeated on an unknown outcome.
    pub async fn create_comment(&self, number: u64, body: &str) -> Result<u64, ClientError> {
        let payload = serde_json::json!({ "body": body });
        let answer = self
            .write(
                "issues/create-comment",
                Method::POST,
                &format!("/issues/{number}/comments"),
                &payload,
                Repeat::CreatesContent,
            )
            .await?;
        let c: WireComment = decode("issues/create-comment", &answer.body)?;
        Ok(c.id)
    }

    /// `PATCH /issues/comments/{id}`: overwriting is safe to repeat.
    pub async fn update_comment(&self, comment_id: u64, body: &str) -> Result<(), ClientError> {
        let payload = serde_json::json!({ "body": body });
        self.write(
            "issues/update-comment",
            Method::PATCH,
            &format!("/issues/comments/{comment_id}"),
            &payload,
            Repeat::Safe,
        )
        .await?;
        Ok(())
    }

    /// Brings an existing marked comment to `body`, editing only when it differs; `None`
    /// when there is no such comment.
    pub async fn update_marked_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<Option<StickyComment>, ClientError> {
        let Some(existing) = self.find_marked_comment(number, marker).await? else {
            return Ok(None);
        };
        if existing.body != body {
            self.update_comment(existing.id, body).await?;
        }
        Ok(Some(StickyComment::Updated(existing.id)))
    }

    /// Edits the comment holding `marker`, or creates it. When a create's outcome is unknown,
    /// looks again before trying once more, so the pull request never gets two.
    pub async fn upsert_marked_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<StickyComment, ClientError> {
        if let Some(updated) = self.update_marked_comment(number, marker, body).await? {
            return Ok(updated);
        }
        match self.create_comment(number, body).await {
            Ok(id) => Ok(StickyComment::Created(id)),
            Err(ClientError::Ambiguous { .. }) => {
                if let Some(existing) = self.find_marked_comment(number, marker).await? {
                    return Ok(StickyComment::Created(existing.id));
                }
                self.create_comment(number, body)
                    .await
                    .map(StickyComment::Created)
            }
            Err(e) => Err(e),
        }
    }

    /// `POST /issues/comments/{id}/reactions`; GitHub answers 200 for a repeat, so it is safe.
    pub async fn add_reaction(&self, comment_id: u64, content: &str) -> Result<(), ClientError> {
        let payload = serde_json::json!({ "content": content });
        self.write(
            "reactions/create-for-issue-comment",
            Method::POST,
            &format!("/issues/comments/{comment_id}/reactions"),
            &payload,
            Repeat::Safe,
        )
        .await?;
        Ok(())
    }
}

/// Whether the App's bot account wrote `c`. GitHub logins are case-insensitive.
fn is_own(c: &IssueComment, bot_login: &str) -> bool {
    c.author_is_bot && c.author.eq_ignore_ascii_case(bot_login)
}

/// Whether `body`'s first line is exactly `marker` (trailing white space aside).
pub(super) fn opens_with_marker(body: &str, marker: &str) -> bool {
    body.lines()
        .next()
        .is_some_and(|first| first.trim_end() == marker)
}

#[cfg(test)]
mod marker_tests {
    use super::{IssueComment, is_own, opens_with_marker};

    #[test]
    fn only_the_apps_bot_account_owns_a_comment() {
        let by = |author: &str, bot: bool| IssueComment {
            id: 1,
            body: String::new(),
            author: author.to_string(),
            author_is_bot: bot,
        };
        assert!(is_own(&by("fleetbot[bot]", true), "fleetbot[bot]"));
        assert!(is_own(&by("FleetBot[bot]", true), "fleetbot[bot]"));
        // Another App's bot, and a person whose login looks like the bot's.
        assert!(!is_own(&by("other-app[bot]", true), "fleetbot[bot]"));
        assert!(!is_own(&by("fleetbot[bot]", false), "fleetbot[bot]"));
        assert!(!is_own(&by("fleetbot", false), "fleetbot[bot]"));
    }

    #[test]
    fn only_a_first_line_marker_marks_a_comment() {
        let marker = "<!-- fleetbot:reply-to 7 -->";
        assert!(opens_with_marker(&format!("{marker}\nbody"), marker));
        assert!(opens_with_marker(&format!("{marker}  \r\nbody"), marker));
        // Quoted in a spec diff, or with more on its line, it is content.
        assert!(!opens_with_marker(
            &format!("## plan\n```diff\n+{marker}\n```"),
            marker
        ));
        assert!(!opens_with_marker(&format!("{marker} and more"), marker));
        assert!(!opens_with_marker(&format!(" {marker}"), marker));
        assert!(!opens_with_marker("", marker));
    }
}
