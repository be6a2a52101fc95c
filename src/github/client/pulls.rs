//! Pull requests: the head and base the preflight binds to, and the changed files.

use serde::{Deserialize, Serialize};

use super::{ClientError, RepoClient};

/// `GET /pulls/{n}/files` lists at most this many files, whatever the paging.
pub const MAX_PR_FILES: usize = 3000;

/// How a file changed, as `GET /pulls/{n}/files` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Removed,
    #[default]
    Modified,
    Renamed,
    Copied,
    Changed,
    Unchanged,
    /// A status GitHub may add later; treated as a modification.
    #[serde(other)]
    Other,
}

/// One changed file of a pull request (`GET /pulls/{n}/files`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct PrFile {
    pub filename: String,
    pub status: FileStatus,
    #[serde(default)]
    pub previous_filename: Option<String>,
    /// The unified diff hunks; absent for binary or very large changes.
    #[serde(default)]
    pub patch: Option<String>,
}

/// Whether a pull request is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PullState {
    Open,
    Closed,
    /// A state GitHub may add later; treated as not open.
    #[serde(other)]
    Other,
}

/// What the bot reads of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestInfo {
    pub number: u64,
    pub state: PullState,
    pub draft: bool,
    pub head_sha: String,
    pub head_ref: String,
    pub head_repo: Option<String>,
    pub base_sha: String,
    pub base_ref: String,
    /// Whether it was merged (then `state` is closed).
    pub merged: bool,
    /// The merge commit, once merged (GitHub also fills it with a test merge while open).
    pub merge_commit_sha: Option<String>,
    /// When it was merged (unix ms), once merged.
    pub merged_at: Option<i64>,
}

impl RepoClient {
    /// `GET /repos/{o}/{r}/pulls/{n}`.
    pub async fn pull_request(&self, number: u64) -> Result<PullRequestInfo, ClientError> {
        #[derive(Deserialize)]
        struct Repo {
            full_name: String,
        }
        #[derive(Deserialize)]
        struct Ref {
            sha: String,
            #[serde(rename = "ref")]
            name: String,
            repo: Option<Repo>,
        }
        #[derive(Deserialize)]
        struct Pr {
            number: u64,
            state: PullState,
            #[serde(default)]
            draft: bool,
            #[serde(default)]
            merged: bool,
            #[serde(default)]
            merge_commit_sha: Option<String>,
            #[serde(default)]
            merged_at: Option<String>,
            head: Ref,
            base: Ref,
        }
        let pr: Pr = self
            .client
            .get_json(
                "pulls/get",
                self.installation_id,
                &self.repo_path(&format!("/pulls/{number}")),
                vec![],
            )
            .await?;
        Ok(PullRequestInfo {
            number: pr.number,
            state: pr.state,
            draft: pr.draft,
            head_sha: pr.head.sha,
            head_ref: pr.head.name,
            head_repo: pr.head.repo.map(|r| r.full_name),
            base_sha: pr.base.sha,
            base_ref: pr.base.name,
            merged: pr.merged,
            merge_commit_sha: pr.merge_commit_sha.filter(|s| !s.is_empty()),
            merged_at: pr.merged_at.as_deref().and_then(super::timestamp_ms),
        })
    }

    /// `GET /repos/{o}/{r}/pulls/{n}/files`, every page. The flag is true when the listing
    /// hit GitHub's 3,000-file ceiling, so some changed files are not in it.
    pub async fn pull_request_files(
        &self,
        number: u64,
    ) -> Result<(Vec<PrFile>, bool), ClientError> {
        self.client
            .get_all(
                "pulls/list-files",
                self.installation_id,
                &self.repo_path(&format!("/pulls/{number}/files")),
                vec![],
                MAX_PR_FILES,
            )
            .await
    }

    /// `GET /repos/{o}/{r}/commits/{sha}/pulls`: the pull requests a commit belongs to (for a
    /// merge commit, the pull request it merged), the first page: a commit is in few.
    pub async fn commit_pull_requests(
        &self,
        sha: &str,
    ) -> Result<Vec<CommitPullRequest>, ClientError> {
        #[derive(Deserialize)]
        struct Base {
            #[serde(rename = "ref")]
            name: String,
        }
        #[derive(Deserialize)]
        struct Pr {
            number: u64,
            #[serde(default)]
            merged_at: Option<String>,
            #[serde(default)]
            merge_commit_sha: Option<String>,
            base: Base,
        }
        let prs: Vec<Pr> = self
            .client
            .get_json(
                "repos/list-pull-requests-associated-with-commit",
                self.installation_id,
                &self.repo_path(&format!("/commits/{}/pulls", super::paths::seg(sha))),
                vec![],
            )
            .await?;
        Ok(prs
            .into_iter()
            .map(|p| CommitPullRequest {
                number: p.number,
                merged: p.merged_at.is_some(),
                merge_commit_sha: p.merge_commit_sha.filter(|s| !s.is_empty()),
                base_ref: p.base.name,
            })
            .collect())
    }
}

/// A pull request a commit belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPullRequest {
    pub number: u64,
    pub merged: bool,
    pub merge_commit_sha: Option<String>,
    pub base_ref: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_github_names_them() {
        let file: PrFile =
            serde_json::from_str(r#"{"filename":"a","status":"renamed","previous_filename":"b"}"#)
                .unwrap();
        assert_eq!(file.status, FileStatus::Renamed);
        let later: FileStatus = serde_json::from_str(r#""moved""#).unwrap();
        assert_eq!(later, FileStatus::Other);
        assert_eq!(
            serde_json::to_string(&FileStatus::Copied).unwrap(),
            r#""copied""#
        );
        let state: PullState = serde_json::from_str(r#""open""#).unwrap();
        assert_eq!(state, PullState::Open);
    }
}
