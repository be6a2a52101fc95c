//! Reads with an installation token: one JSON answer, or every page of a list by following
//! `Link: rel="next"`.

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;

use super::headers::header_str;
use super::transport::Auth;
use super::transport::{Call, JSON_ACCEPT, Repeat, decode};
use super::{ClientError, GitHubClient};

/// The page size used for every list call (GitHub's maximum).
const PER_PAGE: u32 = 100;
/// A paginated listing stops after this many pages, whatever `Link` says.
const MAX_PAGES: usize = 100;

impl GitHubClient {
    pub(super) fn read_call(
        &self,
        op: &'static str,
        installation_id: u64,
        url: String,
        query: Vec<(&'static str, String)>,
    ) -> Call<'static> {
        Call {
            op,
            method: Method::GET,
            url,
            query,
            body: None,
            accept: JSON_ACCEPT,
            auth: Auth::Installation(installation_id),
            repeat: Repeat::Safe,
        }
    }

    pub(super) async fn get_json<T: DeserializeOwned>(
        &self,
        op: &'static str,
        installation_id: u64,
        path: &str,
        query: Vec<(&'static str, String)>,
    ) -> Result<T, ClientError> {
        let call = self.read_call(op, installation_id, self.url(path), query);
        let answer = self.send(call).await?;
        decode(op, &answer.body)
    }

    /// Every item of a paginated list, following `Link: rel="next"` on the same host. The
    /// flag is true when the listing was cut at `max_items` or at the page ceiling.
    pub(super) async fn get_all<T: DeserializeOwned>(
        &self,
        op: &'static str,
        installation_id: u64,
        path: &str,
        query: Vec<(&'static str, String)>,
        max_items: usize,
    ) -> Result<(Vec<T>, bool), ClientError> {
        let mut items = Vec::new();
        let mut url = self.url(path);
        let mut query = query;
        query.push(("per_page", PER_PAGE.to_string()));
        for _ in 0..MAX_PAGES {
            let call = self.read_call(op, installation_id, url.clone(), std::mem::take(&mut query));
            let answer = self.send(call).await?;
            let page: Vec<T> = decode(op, &answer.body)?;
            items.extend(page);
            if items.len() >= max_items {
                items.truncate(max_items);
                return Ok((items, true));
            }
            match next_link(&answer.headers) {
                // The next URL carries its own query; only follow it on our own API host, so
                // a token is never sent elsewhere.
                Some(next) if next.starts_with(&format!("{}/", self.inner.base)) => url = next,
                _ => return Ok((items, false)),
            }
        }
        Ok((items, true))
    }
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    let link = header_str(headers, "link")?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::super::headers::test_headers as headers;
    use super::*;

    #[test]
    fn link_header_next() {
        let h = headers(&[(
            "link",
            r#"<https://api.github.com/repositories/1/pulls/2/files?page=2>; rel="next", <https://api.github.com/repositories/1/pulls/2/files?page=5>; rel="last""#,
        )]);
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://api.github.com/repositories/1/pulls/2/files?page=2")
        );
        let last_only = headers(&[("link", r#"<https://x/?page=1>; rel="prev""#)]);
        assert_eq!(next_link(&last_only), None);
    }
}
