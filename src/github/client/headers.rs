//! Reading GitHub's answer headers, shared by the rate-limit rules, the metrics and paging.

use reqwest::header::HeaderMap;

pub(super) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

pub(super) fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    header_str(headers, name)?.trim().parse().ok()
}

#[cfg(test)]
pub(super) fn test_headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, reqwest::header::HeaderValue::from_str(v).unwrap());
    }
    h
}
