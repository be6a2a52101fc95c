//! Issues the App keeps: one tracking issue per purpose (the drift of a default branch), found
//! again by its author and a hidden first-line marker, reopened rather than duplicated.

use reqwest::Method;
use serde::Deserialize;

use super::transport::{Repeat, decode};
use super::{ClientError, RepoClient};

/// An issue the App wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedIssue {
    pub number: u64,
    pub open: bool,
    pub title: String,
    pub body: String,
}

#[derive(Deserialize)]
struct WireIssue {
    number: u64,
    state: String,
    title: String,
    #[serde(default)]
    body: Option<String>,
    user: Option<super::comments::WireUser>,
    /// Present on pull requests, which the issues listing includes.
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
}

impl RepoClient {
    /// The App's newest issue, open or closed, whose first line is `marker`.
    pub async fn tracking_issue(&self, marker: &str) -> Result<Option<TrackedIssue>, ClientError> {
        let login = self.client.app_identity().await?.bot_login();
        let (issues, _) = self
            .client
            .get_all::<WireIssue>(
                "issues/list-for-repo",
                self.installation_id,
                &self.repo_path("/issues"),
                vec![
                    ("state", "all".to_string()),
                    ("creator", login.clone()),
                    ("sort", "created".to_string()),
                    ("direction", "desc".to_string()),
                ],
                500,
            )
            .await?;
        Ok(issues
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .filter(|i| {
                i.user
                    .as_ref()
                    .is_some_and(|u| u.kind == "Bot" && u.login.eq_ignore_ascii_case(&login))
            })
            .map(|i| TrackedIssue {
                number: i.number,
                open: i.state == "open",
                title: i.title,
                body: i.body.unwrap_or_default(),
            })
            .find(|i| super::comments::opens_with_marker(&i.body, marker)))
    }

    /// `POST /issues`. Not repeated on an unknown outcome.
    pub async fn create_issue(&self, title: &str, body: &str) -> Result<u64, ClientError> {
        let payload = serde_json::json!({ "title": title, "body": body });
        let answer = self
            .write(
                "issues/create",
                Method::POST,
                "/issues",
                &payload,
                Repeat::CreatesContent,
            )
            .await?;
        let issue: WireIssue = decode("issues/create", &answer.body)?;
        Ok(issue.number)
    }

    /// `PATCH /issues/{n}`: title, body and state (`open`, or `closed` as completed).
    /// Overwriting is safe to repeat.
    pub async fn update_issue(
        &self,
        number: u64,
        title: &str,
        body: &str,
        open: bool,
    ) -> Result<(), ClientError> {
        let payload = if open {
            serde_json::json!({ "title": title, "body": body, "state": "open" })
        } else {
            serde_json::json!({
                "title": title,
                "body": body,
                "state": "closed",
                "state_reason": "completed",
            })
        };
        self.write(
            "issues/update",
            Method::PATCH,
            &format!("/issues/{number}"),
            &payload,
            Repeat::Safe,
        )
        .await?;
        Ok(())
    }
}
