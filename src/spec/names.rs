//! Slugs, DNS-1123 labels and Python-style quoting, exactly as the reference tool computes them.

/// Trims and lower-cases, turns every character that is not alphanumeric or `-` into `-`,
/// collapses runs of `-` and strips them from both ends.
///
/// "Alphanumeric" is Unicode-aware, as Python's `str.isalnum` is, so names resolve to the same
/// keys in both tools.
pub fn slug(value: &str) -> String {
    let lowered = value.trim().to_lowercase();
    let mut out = String::with_capacity(lowered.len());
    for ch in lowered.chars() {
        let ch = if ch.is_alphanumeric() || ch == '-' {
            ch
        } else {
            '-'
        };
        if ch == '-' && out.ends_with('-') {
            continue;
        }
        out.push(ch);
    }
    out.trim_matches('-').to_string()
}

/// A DNS-1123 label as the reference checks it: non-empty, at most 63 characters, unchanged by
/// [`slug`], starting with an alphanumeric character.
pub fn is_dns_name(value: &str) -> bool {
    !value.is_empty()
        && value.chars().count() <= 63
        && slug(value) == value
        && value.chars().next().is_some_and(char::is_alphanumeric)
}

/// Quotes a string the way Python's `repr` does, so messages read the same in both tools.
pub fn py_repr(value: &str) -> String {
    let quote = if value.contains('\'') && !value.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(value.len() + 2);
    out.push(quote);
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isspace` for one character: Rust's `char::is_whitespace` plus the ASCII
/// information separators U+001C–U+001F, which Python counts as whitespace.
pub fn py_isspace(ch: char) -> bool {
    ch.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&ch)
}

/// Python's `str(bool)`.
pub fn py_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_matches_reference() {
        assert_eq!(slug("  My Team_A  "), "my-team-a");
        assert_eq!(slug("a---b"), "a-b");
        assert_eq!(slug("--x--"), "x");
        assert_eq!(slug("fleet1 test"), "fleet1-test");
        assert_eq!(slug(""), "");
        assert_eq!(slug("a.b/c"), "a-b-c");
    }

    #[test]
    fn dns_name_rejects_over_63_chars() {
        assert!(is_dns_name(&"a".repeat(63)));
        assert!(!is_dns_name(&"a".repeat(64)));
        assert!(!is_dns_name(""));
        assert!(!is_dns_name("Upper"));
        assert!(!is_dns_name("-lead"));
        assert!(!is_dns_name("a_b"));
        assert!(is_dns_name("a-b-1"));
    }

    #[test]
    fn repr_quotes_like_python() {
        assert_eq!(py_repr("abc"), "'abc'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py_repr("x\ny"), "'x\\ny'");
        assert_eq!(py_repr(""), "''");
    }
}
