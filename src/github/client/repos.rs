//! What the reconcile loop reads of an installation: its repositories, a branch's head, a
//! commit's file tree, and the open pull requests.

use serde::Deserialize;

use super::paths::seg;
use super::transport::{Auth, Call, JSON_ACCEPT, Repeat, decode};
use super::{ClientError, GitHubClient, RepoClient};
use crate::github::RepoName;

/// At most this many installations or repositories are read per listing.
pub const MAX_LISTED: usize = 10_000;

/// One entry of a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub path: String,
    /// The blob's SHA: its content's name, the same wherever and whenever it is listed.
    pub sha: String,
    /// The size GitHub states, for the fetch limits.
    pub size: u64,
}

/// An open pull request as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenPullRequest {
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub base_ref: String,
}

impl GitHubClient {
    /// `GET /app/installations` with the App JWT, every page: the installations' IDs.
    pub async fn installations(&self) -> Result<Vec<u64>, ClientError> {
        #[derive(Deserialize)]
        struct Installation {
            id: u64,
        }
        let op = "apps/list-installations";
        let mut out = Vec::new();
        for page in 1..=(MAX_LISTED / 100) {
            let answer = self
                .send(Call {
                    op,
                    method: reqwest::Method::GET,
                    url: self.url("/app/installations"),
                    query: vec![("per_page", "100".into()), ("page", page.to_string())],
                    body: None,
                    accept: JSON_ACCEPT,
                    auth: Auth::App,
                    repeat: Repeat::Safe,
                })
                .await?;
            let items: Vec<Installation> = decode(op, &answer.body)?;
            let last = items.len() < 100;
            out.extend(items.into_iter().map(|i| i.id));
            if last {
                break;
            }
        }
        Ok(out)
    }

    /// `GET /installation/repositories` with the installation's token, every page.
    pub async fn installation_repositories(
        &self,
        installation_id: u64,
    ) -> Result<Vec<RepoName>, ClientError> {
        #[derive(Deserialize)]
        struct Repo {
            full_name: String,
            #[serde(default)]
            archived: bool,
        }
        #[derive(Deserialize)]
        struct Page {
            repositories: Vec<Repo>,
        }
        let op = "apps/list-repos-accessible-to-installation";
        let mut out = Vec::new();
        for page in 1..=(MAX_LISTED / 100) {
            let answer: Page = self
                .get_json(
                    op,
                    installation_id,
                    "/installation/repositories",
                    vec![("per_page", "100".into()), ("page", page.to_string())],
                )
                .await?;
            let last = answer.repositories.len() < 100;
            out.extend(
                answer
                    .repositories
                    .into_iter()
                    .filter(|r| !r.archived)
                    .filter_map(|r| RepoName::parse(&r.full_name)),
            );
            if last {
                break;
            }
        }
        Ok(out)
    }
}

impl RepoClient {
    /// `GET /repos/{o}/{r}/branches/{branch}`: the commit at the branch's head.
    pub async fn branch_head(&self, branch: &str) -> Result<String, ClientError> {
        #[derive(Deserialize)]
        struct Commit {
            sha: String,
        }
        #[derive(Deserialize)]
        struct Branch {
            commit: Commit,
        }
        let b: Branch = self
            .client
            .get_json(
                "repos/get-branch",
                self.installation_id,
                &self.repo_path(&format!("/branches/{}", seg(branch))),
                vec![],
            )
            .await?;
        Ok(b.commit.sha)
    }

    /// `GET /repos/{o}/{r}/git/trees/{sha}?recursive=1`: every file of the commit, and
    /// whether GitHub cut the listing short (then some files are not in it).
    pub async fn tree(&self, sha: &str) -> Result<(Vec<TreeFile>, bool), ClientError> {
        #[derive(Deserialize)]
        struct Entry {
            path: String,
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            sha: String,
            #[serde(default)]
            size: Option<u64>,
        }
        #[derive(Deserialize)]
        struct Tree {
            tree: Vec<Entry>,
            #[serde(default)]
            truncated: bool,
        }
        let t: Tree = self
            .client
            .get_json(
                "git/get-tree",
                self.installation_id,
                &self.repo_path(&format!("/git/trees/{}", seg(sha))),
                vec![("recursive", "1".into())],
            )
            .await?;
        let files = t
            .tree
            .into_iter()
            .filter(|e| e.kind == "blob")
            .map(|e| TreeFile {
                path: e.path,
                sha: e.sha,
                size: e.size.unwrap_or(0),
            })
            .collect();
        Ok((files, t.truncated))
    }

    /// `GET /repos/{o}/{r}/pulls?state=open`, every page (at most [`MAX_LISTED`]).
    pub async fn open_pull_requests(&self) -> Result<Vec<OpenPullRequest>, ClientError> {
        #[derive(Deserialize)]
        struct Ref {
            sha: String,
            #[serde(rename = "ref")]
            name: String,
        }
        #[derive(Deserialize)]
        struct Pr {
            number: u64,
            head: Ref,
            base: Ref,
        }
        let (prs, _cut): (Vec<Pr>, bool) = self
            .client
            .get_all(
                "pulls/list",
                self.installation_id,
                &self.repo_path("/pulls"),
                vec![("state", "open".into())],
                MAX_LISTED,
            )
            .await?;
        Ok(prs
            .into_iter()
            .map(|p| OpenPullRequest {
                number: p.number,
                head_sha: p.head.sha,
                base_sha: p.base.sha,
                base_ref: p.base.name,
            })
            .collect())
    }
}
