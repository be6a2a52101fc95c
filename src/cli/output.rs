//! Output helpers shared by commands: the `--output` enum and JSON printing.

use std::io::Write;

use clap::ValueEnum;
use serde::Serialize;

/// `--output text|json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

/// Serializes `value` as the reference prints JSON: two-space indent, keys in declaration
/// order, non-ASCII escaped as `\uXXXX` (Python's `ensure_ascii`).
pub fn to_json(value: &impl Serialize) -> String {
    let pretty = serde_json::to_string_pretty(value).expect("report structs always serialize");
    escape_non_ascii(&pretty)
}

/// Non-ASCII characters only occur inside JSON strings, so escaping them in place keeps the
/// document valid.
fn escape_non_ascii(json: &str) -> String {
    if json.is_ascii() {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for ch in json.chars() {
        if ch.is_ascii() {
            out.push(ch);
        } else {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Prints one JSON document to stdout.
pub fn print_json(value: &impl Serialize) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", to_json(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_like_python() {
        let v = serde_json::json!({"name": "café", "n": 1});
        let s = to_json(&v);
        assert_eq!(s, "{\n  \"name\": \"caf\\u00e9\",\n  \"n\": 1\n}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
        assert_eq!(to_json(&serde_json::json!("😀")), "\"\\ud83d\\ude00\"");
    }
}
