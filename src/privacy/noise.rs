//! Placeholders and look-alikes that are not findings.
//!
//! Committed examples are expected to carry placeholders (`<your-project-id>`,
//! `…-REPLACE_AT_RUNTIME`, `${NEBIUS_*}`, all-`x` IDs), and ordinary text is full of hex
//! digests and UUIDs that share the alphabet of real IDs. Everything that decides "this is
//! not a real value" lives here so the rules stay about shapes.

/// Words that mark a value as a stand-in to be replaced outside Git.
const PLACEHOLDER_MARKERS: [&str; 6] = [
    "REPLACE",
    "CHANGEME",
    "CHANGE_ME",
    "PLACEHOLDER",
    "REDACTED",
    "EXAMPLE",
];

/// Host suffixes reserved for documentation (RFC 2606, RFC 6761).
const EXAMPLE_HOSTS: [&str; 3] = ["example.com", "example.org", "example.net"];
const RESERVED_TLDS: [&str; 4] = [".example", ".invalid", ".test", ".localhost"];

/// IPv4 documentation ranges (RFC 5737) as text prefixes; IPv6 `2001:db8::/32` (RFC 3849).
const DOC_IPV4_PREFIXES: [&str; 3] = ["192.0.2.", "198.51.100.", "203.0.113."];
const DOC_IPV6_PREFIX: &str = "2001:db8:";

/// True when a whole value (a spec scalar or a detected token) is a placeholder or a
/// reference resolved elsewhere, so committing it leaks nothing.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || matches!(v, "~" | "null" | "Null" | "NULL" | "\"\"" | "''") {
        return true;
    }
    // `<your-project-id>`, `project-<id>`: angle brackets never occur in real IDs.
    if v.contains('<') && v.contains('>') {
        return true;
    }
    // Environment and template references (`${NEBIUS_TENANT_ID}`, `${{ secrets.X }}`,
    // `{{ .Values.x }}`, `$TENANT`) are resolved at runtime.
    if v.contains("${") || v.contains("{{") || is_env_reference(v) {
        return true;
    }
    // Elided examples (`tenant-e00…`).
    if v.contains("...") || v.contains('…') {
        return true;
    }
    if PLACEHOLDER_MARKERS.iter().any(|m| v.contains(m)) {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    if lower.starts_with("your-") || lower.starts_with("your_") || lower.contains("-your-") {
        return true;
    }
    // `example-bucket`, `my_example_subnet`: the word "example" as one dash-separated part.
    if lower
        .split(['-', '_', '.', '/'])
        .any(|part| part == "example")
    {
        return true;
    }
    if mentions_documentation_host(&lower) || mentions_documentation_ip(&lower) {
        return true;
    }
    is_filler(v) || nid_weak_id_is_filler(v)
}

/// `$NAME` where NAME is an environment-variable-like word.
fn is_env_reference(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('$') else {
        return false;
    };
    !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Mentions a documentation-only host name.
pub(crate) fn mentions_documentation_host(lower: &str) -> bool {
    if EXAMPLE_HOSTS.iter().any(|h| lower.contains(h)) {
        return true;
    }
    // Only the host part can end with a reserved TLD, so look at each host-like token.
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .any(|token| {
            RESERVED_TLDS
                .iter()
                .any(|tld| token.ends_with(tld) && token.len() > tld.len())
        })
}

/// Mentions an RFC 5737 / RFC 3849 documentation address.
pub(crate) fn mentions_documentation_ip(lower: &str) -> bool {
    DOC_IPV4_PREFIXES.iter().any(|p| {
        lower.match_indices(p).any(|(i, _)| {
            // Reject `10.192.0.2.` style false starts: the prefix must begin an address.
            i == 0 || (!lower.as_bytes()[i - 1].is_ascii_digit() && lower.as_bytes()[i - 1] != b'.')
        })
    }) || lower.contains(DOC_IPV6_PREFIX)
}

/// All `x`, all `0`, or one character repeated, ignoring separators: the usual way to
/// write "some ID goes here".
pub(crate) fn is_filler(s: &str) -> bool {
    let mut chars = s
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ':' | '/' | ' '));
    let Some(first) = chars.next() else {
        return false;
    };
    let mut only_x_or_zero = matches!(first, 'x' | 'X' | '0' | '*');
    let mut single = true;
    for c in chars {
        if c != first {
            single = false;
        }
        if !matches!(c, 'x' | 'X' | '0' | '*') {
            only_x_or_zero = false;
        }
        if !single && !only_x_or_zero {
            return false;
        }
    }
    true
}

/// `tenant-e00xxxxxxxxxxxxxxx` and friends: the part after the routing code is filler.
fn nid_weak_id_is_filler(v: &str) -> bool {
    let Some((_, tail)) = v.rsplit_once('-') else {
        return false;
    };
    let t = tail.as_bytes();
    // Only an NID-shaped tail: routing code (`e00`) and at least a few filler characters.
    t.len() >= 3 + 4
        && t[0].is_ascii_lowercase()
        && t[1].is_ascii_digit()
        && t[2].is_ascii_alphanumeric()
        && is_filler(&tail[3..])
}

/// Contains the word "example" in any case: documentation keys and tokens are marked this
/// way (AWS's `…EXAMPLE` keys), and seven given letters essentially never occur by chance
/// in a random key, token or ID.
pub(crate) fn mentions_example(bytes: &[u8]) -> bool {
    bytes.windows(7).any(|w| w.eq_ignore_ascii_case(b"example"))
}

/// Only `[0-9a-f]`.
pub(crate) fn is_lower_hex(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The lengths of MD5, SHA-1 (git) and SHA-256 digests in hex.
pub(crate) fn is_digest_length(len: usize) -> bool {
    matches!(len, 32 | 40 | 64)
}

/// Treat a path-looking `ssh_public_key` value as a pointer to a key file, not a key.
pub(crate) fn is_path_like(v: &str) -> bool {
    let v = v.trim();
    (v.starts_with("~/") || v.starts_with('/') || v.starts_with("./") || v.starts_with("$HOME/"))
        && !v.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_from_the_issue_are_recognised() {
        for v in [
            "",
            "  ",
            "~",
            "null",
            "<your-project-id>",
            "project-<id>",
            "capacityblockgroup-REPLACE_AT_RUNTIME",
            "${NEBIUS_TENANT_ID}",
            "${{ secrets.PROJECT }}",
            "$NEBIUS_PROJECT_ID",
            "{{ .Values.tenant }}",
            "tenant-e00xxxxxxxxxxxxxxx",
            "project-u00000000000000000",
            "xxxxxxxx",
            "tenant-e00…",
            "oci://charts.example.com/csi",
            "oci://registry.internal.test/csi",
            "oci://192.0.2.10/charts",
            "oci://[2001:db8::1]/charts",
            "your-bucket",
        ] {
            assert!(is_placeholder(v), "{v:?} should be a placeholder");
        }
    }

    #[test]
    fn real_looking_values_are_not_placeholders() {
        for v in [
            "team-a-bucket",
            "oci://10.1.2.3/charts",
            "oci://charts.internal.corp/csi",
            "my-subnet",
            "project-existing123",
            "10.192.0.2.5",
        ] {
            assert!(!is_placeholder(v), "{v:?} should not be a placeholder");
        }
    }

    #[test]
    fn example_marker() {
        assert!(mentions_example(b"AAAAC3NzaExampleKeyForTests"));
        assert!(mentions_example(b"AKIAIOSFODNN7EXAMPLE"));
        assert!(!mentions_example(b"AAAAC3NzaC1lZDI1NTE5"));
    }

    #[test]
    fn filler_detection() {
        assert!(is_filler("xxxx-xxxx"));
        assert!(is_filler("0000"));
        assert!(is_filler("aaaaaaa"));
        assert!(is_filler("x0x0x0"));
        assert!(!is_filler("abc"));
        assert!(!is_filler("---"));
    }

    #[test]
    fn paths_are_path_like() {
        assert!(is_path_like("~/.ssh/id_ed25519.pub"));
        assert!(is_path_like("/home/me/.ssh/id_rsa.pub"));
        assert!(!is_path_like("ssh-ed25519 AAAA"));
    }
}
