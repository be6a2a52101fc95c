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

/// Whether a path from a repository (a changed file's name) can go into a contents URL: no
/// `.` or `..` segment, which URL parsers resolve (`%2E%2E` too) and which would reach
/// another repository's endpoint with the installation's token.
pub fn is_safe_repo_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|s| {
            s != "."
                && s != ".."
                && !s.eq_ignore_ascii_case("%2e")
                && !s.eq_ignore_ascii_case("%2e%2e")
        })
}

/// A repository path, each segment encoded, `/` kept. Call only on a path
/// [`is_safe_repo_path`] accepts.
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

    #[test]
    fn dot_segments_never_reach_a_url() {
        for bad in [
            "fleets/../../../../victim/private-repo/contents/x.yaml",
            "../x.yaml",
            "fleets/./x.yaml",
            "fleets/..",
            "",
        ] {
            assert!(!is_safe_repo_path(bad), "{bad:?}");
        }
        for good in [
            "fleets/prod.yaml",
            "fleets/..hidden/x.yaml",
            "a/.fleetbot.yml",
            "x..y",
        ] {
            assert!(is_safe_repo_path(good), "{good:?}");
        }
    }
}
