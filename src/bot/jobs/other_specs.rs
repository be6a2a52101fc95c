//! The repository's spec files at a commit that a change did not touch, read so the changed
//! specs can be held to one fleet, one file (`bot::pr`'s rule, and the apply's): one tree
//! listing, then each file's content, kept by its blob SHA so an unchanged spec is fetched
//! once per bot however many pushes are checked against it.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::bot::config::SpecMatcher;
use crate::bot::pr::{ChangedFile, OtherSpec};
use crate::bot::settings::BotSettings;
use crate::github::{ClientError, RepoClient};

/// Every spec file at `sha` that `changed` does not list, and why the list is incomplete when
/// it is (a listing GitHub cut short, more files or larger ones than the fetch limits allow):
/// the caller then cannot prove the rule and fails.
pub async fn read(
    repo: &RepoClient,
    settings: &BotSettings,
    matcher: &SpecMatcher,
    sha: &str,
    changed: &[ChangedFile],
) -> Result<(Vec<OtherSpec>, Option<String>), ClientError> {
    let skip: BTreeSet<&str> = changed.iter().map(|f| f.path.as_str()).collect();
    let (tree, truncated) = repo.tree(sha).await?;
    if truncated {
        return Ok((
            Vec::new(),
            Some("GitHub cut the listing of the commit's files short".into()),
        ));
    }
    let limit = settings
        .max_spec_bytes
        .min(crate::github::client::MAX_CONTENT_BYTES);
    let mut others = Vec::new();
    for file in tree
        .iter()
        .filter(|f| matcher.matches(&f.path) && !skip.contains(f.path.as_str()))
    {
        if others.len() >= settings.max_spec_files {
            return Ok((
                others,
                Some(format!(
                    "more than {} other spec files",
                    settings.max_spec_files
                )),
            ));
        }
        if file.size > limit as u64 {
            return Ok((
                others,
                Some(format!(
                    "{} is {} bytes, more than the {limit} bytes read",
                    file.path, file.size
                )),
            ));
        }
        let content = match settings.spec_blobs.get(&file.sha) {
            Some(content) => content,
            None => match repo.file_content_within(&file.path, sha, limit).await {
                Ok(Some(bytes)) => {
                    let bytes = Arc::new(bytes);
                    settings.spec_blobs.put(&file.sha, bytes.clone());
                    bytes
                }
                Ok(None) | Err(ClientError::TooLarge { .. }) => {
                    return Ok((others, Some(format!("{} could not be read", file.path))));
                }
                Err(e) => return Err(e),
            },
        };
        others.push(OtherSpec {
            path: file.path.clone(),
            content: content.to_vec(),
        });
    }
    Ok((others, None))
}
