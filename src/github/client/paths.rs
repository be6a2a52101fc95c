//! Percent-encoding of URL path segments, so a user name or a file path can never change which
//! endpoint a request reaches.

/// Percent-encodes one path segment (RFC 3986 unreserved characters stay).
pub(super) fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A repository path, each segment encoded, `/` kept.
pub(super) fn path_segments(path: &str) -> String {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(seg)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_encoding_keeps_slashes_between_segments() {
        assert_eq!(
            path_segments("fleets/prod a/x.yaml"),
            "fleets/prod%20a/x.yaml"
        );
        assert_eq!(seg("a#b?c"), "a%23b%3Fc");
    }
}
