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
    /// The file's size in bytes, which GitHub states for every file, also those whose
    /// content the JSON form leaves out.
    #[serde(default)]
    size: Option<u64>,
}

/// The most bytes of one file the bot downloads unless a caller asks for fewer: the spec
/// reader's own limit, so nothing it could accept is refused.
pub const MAX_CONTENT_BYTES: usize = 4 * 1024 * 1024;

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
    /// file). A file over [`MAX_CONTENT_BYTES`] is [`ClientError::TooLarge`].
    pub async fn file_content(
        &self,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        self.file_content_within(path, git_ref, MAX_CONTENT_BYTES)
            .await
    }

    /// The bytes of `path` at `git_ref`, at most `limit` of them: a larger file is
    /// [`ClientError::TooLarge`], decided on the size GitHub states before the bytes are
    /// downloaded (and again on the bytes, should the two disagree). Files over 1 MB, which
    /// the JSON form leaves empty, are fetched raw.
    pub async fn file_content_within(
        &self,
        path: &str,
        git_ref: &str,
        limit: usize,
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
        let too_large = |size: u64| ClientError::TooLarge {
            op: GET_CONTENT,
            size,
            limit,
        };
        if let Some(size) = content.size.filter(|&s| s > limit as u64) {
            return Err(too_large(size));
        }
        let bytes = match (content.encoding.as_deref(), content.content) {
            (Some("base64"), Some(text)) => decode_base64(&text)?,
            _ => self.raw_content(url, query).await?,
        };
        if bytes.len() > limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(Some(bytes))
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
