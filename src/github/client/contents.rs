//! Repository contents: the default branch and the bytes of a file at a commit (the config,
//! the changed specs).

use base64::Engine as _;
use serde::Deserialize;

use super::paths::{is_safe_repo_path, path_segments};
use super::transport::RAW_ACCEPT;
use super::{ClientError, RepoClient};

/// `GET /contents/{path}` in its JSON form; the parts the bot reads.
#[derive(Deserialize)]
struct Content {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

const GET_CONTENT: &str = "repos/get-content";

impl RepoClient {
    /// `GET /repos/{o}/{r}`: the default branch.
    pub async fn default_branch(&self) -> Result<String, ClientError> {
        #[derive(Deserialize)]
        struct Repo {
            default_branch: String,
        }
        let r: Repo = self
            .client
            .get_json(
                "repos/get",
                self.installation_id,
                &self.repo_path(""),
                vec![],
            )
            .await?;
        Ok(r.default_branch)
    }

    /// The bytes of `path` at `git_ref`; `None` when it does not exist there (or is not a
    /// file). Files over 1 MB, which the JSON form leaves empty, are fetched raw.
    pub async fn file_content(
        &self,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        if !is_safe_repo_path(path) {
            return Err(ClientError::UnsafePath {
                op: GET_CONTENT,
                path: path.to_string(),
            });
        }
        let url = self
            .client
            .url(&self.repo_path(&format!("/contents/{}", path_segments(path))));
        let query = vec![("ref", git_ref.to_string())];
        let call = self.client.read_call(
            GET_CONTENT,
            self.installation_id,
            url.clone(),
            query.clone(),
        );
        let answer = match self.client.send(call).await {
            Err(e) if e.status() == Some(404) => return Ok(None),
            other => other?,
        };
        // A directory answers with a JSON array.
        let Ok(content) = serde_json::from_slice::<Content>(&answer.body) else {
            return Ok(None);
        };
        if content.kind != "file" {
            return Ok(None);
        }
        match (content.encoding.as_deref(), content.content) {
            (Some("base64"), Some(text)) => decode_base64(&text).map(Some),
            _ => self.raw_content(url, query).await.map(Some),
        }
    }

    async fn raw_content(
        &self,
        url: String,
        query: Vec<(&'static str, String)>,
    ) -> Result<Vec<u8>, ClientError> {
        let mut call = self
            .client
            .read_call(GET_CONTENT, self.installation_id, url, query);
        call.accept = RAW_ACCEPT;
        let raw = self.client.send(call).await?;
        Ok(raw.body.to_vec())
    }
}

fn decode_base64(text: &str) -> Result<Vec<u8>, ClientError> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| ClientError::Decode {
            op: GET_CONTENT,
            message: format!("content is not base64: {e}"),
        })
}
