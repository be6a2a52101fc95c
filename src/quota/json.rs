//! Reads the JSON the Nebius CLI prints (`nebius quotas quota-allowance list --format json`,
//! `nebius capacity capacity-block-group list --format json`) into the quota domain.
//!
//! Shape checks happen here, in the reference's order. Field values are typed strictly:
//! `uint64` fields accept a JSON integer or a digit string (proto3 JSON renders `uint64` as a
//! string) and nothing else, so a bool or float is kept as [`Wire::Invalid`], never rounded.
//! Both the CLI's `snake_case` and proto3's `lowerCamelCase` spellings are read; when a record
//! carries both and they disagree, the document is refused.

use serde_json::{Map, Value};

use super::allowances::{
    AllowanceDocument, AllowanceRecord, AllowanceStatus, INCOMPLETE, StatusField,
};
use super::error::EvidenceError;
use super::reservations::{CapacityBlockDocument, CapacityBlockGroup};
use super::wire::Wire;

/// Reads a quota allowance list. Empty text is unreadable evidence, like an empty CLI output.
pub fn allowance_document(text: &str) -> Result<AllowanceDocument, EvidenceError> {
    if text.trim().is_empty() {
        return Err(EvidenceError::Unreadable("the document is empty".into()));
    }
    let malformed = |m: &str| EvidenceError::Malformed(m.to_string());
    let document: Value = serde_json::from_str(text)
        .map_err(|_| malformed("could not parse quota allowance JSON"))?;
    let Some(items) = document
        .as_object()
        .and_then(|d| d.get("items"))
        .and_then(Value::as_array)
    else {
        return Err(malformed(
            "quota allowance JSON has a non-list 'items' field",
        ));
    };
    let root = document.as_object().expect("checked above");
    if truthy(pick(root, "next_page_token", "nextPageToken").map_err(EvidenceError::Malformed)?) {
        return Err(malformed(INCOMPLETE));
    }
    let mut out = AllowanceDocument::default();
    for item in items {
        let Some(item) = item.as_object() else {
            return Err(malformed(
                "quota allowance JSON contains a non-mapping item",
            ));
        };
        let (Some(Value::Object(meta)), Some(Value::Object(spec))) =
            (item.get("metadata"), item.get("spec"))
        else {
            return Err(malformed(
                "quota allowance has non-mapping metadata or spec",
            ));
        };
        out.items
            .push(allowance_record(meta, spec, item).map_err(EvidenceError::Malformed)?);
    }
    Ok(out)
}

fn allowance_record(
    meta: &Map<String, Value>,
    spec: &Map<String, Value>,
    item: &Map<String, Value>,
) -> Result<AllowanceRecord, String> {
    let status = match item.get("status") {
        None | Some(Value::Null) => StatusField::Absent,
        Some(Value::Object(status)) => StatusField::Present(AllowanceStatus {
            state: text(status.get("state")),
            unit: text(status.get("unit")).trim().to_lowercase(),
            usage: uint(pick(status, "usage", "usage")?),
            usage_percentage: decimal_text(pick(status, "usage_percentage", "usagePercentage")?),
            usage_state: text(pick(status, "usage_state", "usageState")?),
        }),
        Some(_) => StatusField::NotAMapping,
    };
    Ok(AllowanceRecord {
        name: string_only(meta.get("name")),
        parent_id: text(pick(meta, "parent_id", "parentId")?),
        container_id: text(pick(meta, "container_id", "containerId")?),
        region: string_only(spec.get("region")),
        limit: uint(spec.get("limit")),
        status,
    })
}

/// Reads a capacity block group list.
pub fn capacity_document(text: &str) -> Result<CapacityBlockDocument, EvidenceError> {
    if text.trim().is_empty() {
        return Err(EvidenceError::Unreadable("the document is empty".into()));
    }
    let malformed = |m: &str| EvidenceError::Malformed(m.to_string());
    let document: Value = serde_json::from_str(text)
        .map_err(|_| malformed("could not parse capacity block group JSON"))?;
    let Some(root) = document.as_object() else {
        return Err(malformed("capacity block group JSON is not a mapping"));
    };
    let items = match root.get("items") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(malformed(
                "capacity block group JSON has a non-list 'items' field",
            ));
        }
    };
    if truthy(pick(root, "next_page_token", "nextPageToken").map_err(EvidenceError::Malformed)?) {
        return Err(malformed(
            "capacity block group JSON is incomplete after paginated read",
        ));
    }
    let mut out = CapacityBlockDocument::default();
    for item in items {
        let Some(item) = item.as_object() else {
            return Err(malformed(
                "capacity block group JSON contains a non-mapping item",
            ));
        };
        let block = capacity_block(item).map_err(|cause| {
            EvidenceError::Malformed(format!(
                "capacity block group has malformed fields: {cause}"
            ))
        })?;
        out.items.push(block);
    }
    Ok(out)
}

fn capacity_block(item: &Map<String, Value>) -> Result<CapacityBlockGroup, String> {
    let empty = Map::new();
    let section = |key: &str| -> Result<&Map<String, Value>, String> {
        match item.get(key) {
            None | Some(Value::Null) => Ok(&empty),
            Some(Value::Object(m)) => Ok(m),
            Some(_) => Err(format!("{key} is not a mapping")),
        }
    };
    let meta = section("metadata")?;
    let status = section("status")?;
    let affinity = match pick(status, "resource_affinity", "resourceAffinity")? {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => match pick(m, "compute_v1", "computeV1")? {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(c)) => c,
            Some(_) => return Err("compute_v1 is not a mapping".into()),
        },
        Some(_) => return Err("resource_affinity is not a mapping".into()),
    };
    Ok(CapacityBlockGroup {
        id: text(meta.get("id")),
        parent_id: text(pick(meta, "parent_id", "parentId")?),
        region: text(status.get("region")),
        state: text(status.get("state")),
        platform: text(affinity.get("platform")),
        fabric: text(affinity.get("fabric")),
        current_limit: uint(pick(status, "current_limit", "currentLimit")?),
        usage: uint(status.get("usage")),
        usage_percentage: decimal_text(pick(status, "usage_percentage", "usagePercentage")?),
        usage_state: text(pick(status, "usage_state", "usageState")?),
    })
}

/// The value under either spelling; both present and different is an error.
fn pick<'a>(
    map: &'a Map<String, Value>,
    snake: &str,
    camel: &str,
) -> Result<Option<&'a Value>, String> {
    match (map.get(snake), map.get(camel)) {
        (Some(a), Some(b)) if snake != camel && a != b => {
            Err(format!("'{snake}' and '{camel}' disagree in one record"))
        }
        (Some(a), _) => Ok(Some(a)),
        (None, b) => Ok(b),
    }
}

/// Python truthiness of an optional JSON value.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_none_or(|f| f != 0.0),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// `str(value or "")`: falsy values are empty, strings are themselves, anything else is its
/// JSON text (so a numeric enum can never equal `STATE_ACTIVE`).
fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "True".to_string(),
        v if !truthy(v) => String::new(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Names and regions only ever match as strings.
fn string_only(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// A protobuf `uint64`: a JSON integer or a (trimmed) ASCII digit string. Absent, `null` and
/// `""` are unset; negative numbers, floats, bools, other strings and out-of-range values are
/// invalid.
fn uint(value: Option<&Value>) -> Wire<u64> {
    match value {
        None | Some(Value::Null) => Wire::Absent,
        Some(Value::String(s)) if s.is_empty() => Wire::Absent,
        Some(Value::Number(n)) => n.as_u64().map_or(Wire::Invalid, Wire::Value),
        Some(Value::String(s)) => {
            let s = s.trim();
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse().map_or(Wire::Invalid, Wire::Value)
            } else {
                Wire::Invalid
            }
        }
        Some(_) => Wire::Invalid,
    }
}

/// A decimal sent as a string or a JSON number; parsing the text is the domain's job.
fn decimal_text(value: Option<&Value>) -> Wire<String> {
    match value {
        None | Some(Value::Null) => Wire::Absent,
        Some(Value::String(s)) if s.is_empty() => Wire::Absent,
        Some(Value::String(s)) => Wire::Value(s.clone()),
        Some(Value::Number(n)) => Wire::Value(n.to_string()),
        Some(_) => Wire::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uint64_accepts_integers_and_digit_strings_only() {
        assert_eq!(uint(Some(&json!(16))), Wire::Value(16));
        assert_eq!(uint(Some(&json!("16"))), Wire::Value(16));
        assert_eq!(uint(Some(&json!(" 16 "))), Wire::Value(16));
        assert_eq!(
            uint(Some(&json!("18446744073709551615"))),
            Wire::Value(u64::MAX)
        );
        assert_eq!(uint(Some(&json!("18446744073709551616"))), Wire::Invalid);
        assert_eq!(uint(Some(&json!(true))), Wire::Invalid);
        assert_eq!(uint(Some(&json!(1.5))), Wire::Invalid);
        assert_eq!(uint(Some(&json!(10.0))), Wire::Invalid);
        assert_eq!(uint(Some(&json!(-1))), Wire::Invalid);
        assert_eq!(uint(Some(&json!("-1"))), Wire::Invalid);
        assert_eq!(uint(Some(&json!("1e3"))), Wire::Invalid);
        assert_eq!(uint(Some(&json!([]))), Wire::Invalid);
        assert_eq!(uint(Some(&json!(null))), Wire::Absent);
        assert_eq!(uint(Some(&json!(""))), Wire::Absent);
        assert_eq!(uint(None), Wire::Absent);
    }

    #[test]
    fn both_spellings_are_read_and_must_agree() {
        let doc = allowance_document(r#"{"items": [], "nextPageToken": "more"}"#);
        assert_eq!(doc, Err(EvidenceError::Malformed(INCOMPLETE.into())));
        let doc = allowance_document(
            r#"{"items": [{"metadata": {"name": "x", "parent_id": "a", "parentId": "b"}, "spec": {}}]}"#,
        );
        assert!(matches!(doc, Err(EvidenceError::Malformed(m)) if m.contains("disagree")));
        let doc = allowance_document(
            r#"{"items": [{"metadata": {"name": "x", "parentId": "tenant-example"}, "spec": {"region": "r", "limit": "3"}, "status": {"usagePercentage": 0.5}}]}"#,
        )
        .unwrap();
        let record = &doc.items[0];
        assert_eq!(record.parent_id, "tenant-example");
        assert_eq!(record.limit, Wire::Value(3));
        let StatusField::Present(status) = &record.status else {
            panic!("status")
        };
        assert_eq!(status.usage_percentage, Wire::Value("0.5".into()));
    }

    #[test]
    fn capacity_documents_are_shape_checked() {
        let malformed = |text: &str| match capacity_document(text) {
            Err(EvidenceError::Malformed(m)) => m,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            malformed("nope"),
            "could not parse capacity block group JSON"
        );
        assert_eq!(
            malformed("[]"),
            "capacity block group JSON is not a mapping"
        );
        assert_eq!(
            malformed(r#"{"items": 3}"#),
            "capacity block group JSON has a non-list 'items' field"
        );
        assert_eq!(
            malformed(r#"{"items": [], "nextPageToken": "x"}"#),
            "capacity block group JSON is incomplete after paginated read"
        );
        assert_eq!(
            malformed(r#"{"items": ["x"]}"#),
            "capacity block group JSON contains a non-mapping item"
        );
        assert_eq!(
            malformed(r#"{"items": [{"status": []}]}"#),
            "capacity block group has malformed fields: status is not a mapping"
        );
        assert_eq!(
            capacity_document(" "),
            Err(EvidenceError::Unreadable("the document is empty".into()))
        );
        assert!(capacity_document("{}").unwrap().items.is_empty());
        let doc = capacity_document(
            r#"{"items": [{"metadata": {"id": "capacityblockgroup-example", "parentId": "tenant-example"},
                "status": {"region": "eu-north1", "state": "STATE_ACTIVE", "currentLimit": "8",
                           "resourceAffinity": {"computeV1": {"platform": "gpu-h200-sxm", "fabric": "fabric-3"}},
                           "usageState": "USAGE_STATE_NOT_USED"}}]}"#,
        )
        .unwrap();
        let block = &doc.items[0];
        assert_eq!(block.parent_id, "tenant-example");
        assert_eq!(block.platform, "gpu-h200-sxm");
        assert_eq!(block.fabric, "fabric-3");
        assert_eq!(block.available_gpus(), Some(8));
    }

    #[test]
    fn page_token_truthiness() {
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!(0))));
        assert!(!truthy(Some(&json!(null))));
        assert!(truthy(Some(&json!("x"))));
        assert!(truthy(Some(&json!(1))));
        assert!(truthy(Some(&json!(["x"]))));
    }
}
