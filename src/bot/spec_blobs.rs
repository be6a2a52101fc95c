//! The spec files a bot has read, kept by blob SHA: a blob's SHA names its content, so an
//! unchanged spec is fetched once per bot however many pushes are checked against it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

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
/// [`super::settings::BotSettings`]), not the process: two bots in one process (the tests' harnesses) must not
/// see each other's fetches.
#[derive(Clone, Default)]
pub struct SpecBlobs(Arc<Mutex<BlobCache>>);

impl SpecBlobs {
    pub(crate) fn get(&self, sha: &str) -> Option<Arc<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(sha)
    }

    pub(crate) fn put(&self, sha: &str, content: Arc<Vec<u8>>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(sha, content);
    }
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
