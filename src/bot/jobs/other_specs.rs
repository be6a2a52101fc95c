//! The repository's spec files at a commit that a change did not touch, read so the changed
//! specs can be held to one fleet, one file (`bot::pr`'s rule, and the apply's): one tree
//! listing, then each file's content, kept by its blob SHA so an unchanged spec is fetched
//! once per bot however many pushes are checked against it.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::bot::config::SpecMatcher;
use crate::bot::pr::{ChangedFile, OtherSpec};
use crate::bot::settings::BotSettings;
use crate::github::{ClientError, RepoClient};

/// The bytes the cache keeps before it forgets its oldest blobs.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Contents by blob SHA. A blob's SHA names its content, so one entry serves every repository
/// and commit that holds it, and is never stale.
#[derive(Default)]
struct BlobCache {
    bytes: usize,
    blobs: HashMap<String, Arc<Vec<u8>>>,
    order: VecDeque<String>,
}

impl BlobCache {
    fn get(&self, sha: &str) -> Option<Arc<Vec<u8>>> {
        self.blobs.get(sha).cloned()
    }

    fn put(&mut self, sha: &str, content: Arc<Vec<u8>>) {
        if sha.is_empty() || content.len() > CACHE_BYTES || self.blobs.contains_key(sha) {
            return;
        }
        self.bytes += content.len();
        self.blobs.insert(sha.to_string(), content);
        self.order.push_back(sha.to_string());
        while self.bytes > CACHE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.blobs.remove(&old) {
                self.bytes -= gone.len();
            }
        }
    }
}

/// The spec files a bot has read, by blob SHA; clones share it. It belongs to the bot (its
/// [`BotSettings`]), not the process: two bots in one process (the tests' harnesses) must not
/// see each other's fetches.
#[derive(Clone, Default)]
pub struct SpecBlobs(Arc<Mutex<BlobCache>>);

impl SpecBlobs {
    fn get(&self, sha: &str) -> Option<Arc<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(sha)
    }

    fn put(&self, sha: &str, content: Arc<Vec<u8>>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(sha, content);
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_forgets_its_oldest_blobs_past_its_size() {
        let mut c = BlobCache::default();
        let big = Arc::new(vec![0u8; CACHE_BYTES / 2]);
        c.put("a", big.clone());
        c.put("b", big.clone());
        assert!(c.get("a").is_some() && c.get("b").is_some());
        c.put("c", Arc::new(vec![1u8; 10]));
        assert!(c.get("a").is_none(), "the oldest went first");
        assert!(c.get("b").is_some() && c.get("c").is_some());
        assert!(c.bytes <= CACHE_BYTES);
        // A blob larger than the whole cache is not kept, nor one without a name.
        c.put("huge", Arc::new(vec![0u8; CACHE_BYTES + 1]));
        c.put("", Arc::new(vec![0u8; 1]));
        assert!(c.get("huge").is_none() && c.get("").is_none());
    }
}
