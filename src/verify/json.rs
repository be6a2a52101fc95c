//! JSON as the reference prints it: keys sorted at every level, and either `indent=2` (the
//! report on stdout) or Python's compact default (`", "` and `": "`, the text digests are
//! taken over), so digests and documents match the reference byte for byte.

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::Formatter;

/// A value with every object's keys sorted (the crate keeps insertion order otherwise).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `json.dumps(value, indent=2, sort_keys=True)`.
pub fn pretty_sorted(value: &impl Serialize) -> String {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    serde_json::to_string_pretty(&sorted(&value)).unwrap_or_default()
}

/// Python's default separators: `", "` between items and `": "` after keys.
struct PythonCompact;

impl Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `json.dumps(value, sort_keys=True)`.
pub fn compact_sorted(value: &impl Serialize) -> String {
    let value = sorted(&serde_json::to_value(value).unwrap_or(Value::Null));
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonCompact);
    let _ = value.serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// SHA-256 of [`compact_sorted`].
pub fn digest(value: &impl Serialize) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(compact_sorted(value).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_read_like_pythons() {
        let v = json!({"b": [1, {"z": true, "a": null}], "a": "x"});
        assert_eq!(
            compact_sorted(&v),
            r#"{"a": "x", "b": [1, {"a": null, "z": true}]}"#
        );
        assert_eq!(
            pretty_sorted(&v),
            "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    {\n      \"a\": null,\n      \"z\": true\n    }\n  ]\n}"
        );
        assert_eq!(compact_sorted(&json!([])), "[]");
        // sha256 of `[]`, as Python's hashlib gives it.
        assert_eq!(
            digest(&json!([])),
            "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
        );
    }
}
