//! Label and field selectors, parsed as the API server parses them (`a=b,c!=d,e in (f,g),!h`).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 316
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn set_values(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut out = Vec::new();
        for term in terms(text) {
            let bad = || format!("unable to parse requirement: invalid label selector {term:?}");
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(key.trim().into(), value.trim().into())
            } else if let Some((key, value)) = term.split_once("==") {
                Requirement::Equals(key.trim().into(), value.trim().into())
            } else if let Some((key, value)) = term.split_once('=') {
                Requirement::Equals(key.trim().into(), value.trim().into())
            } else if let Some((key, rest)) = term.split_once(" notin ") {
                Requirement::NotIn(key.trim().into(), set_values(rest).ok_or_else(bad)?)
            } else if let Some((key, rest)) = term.split_once(" in ") {
                Requirement::In(key.trim().into(), set_values(rest).ok_or_else(bad)?)
            } else {
                Requirement::Exists(term.to_string())
            };
            let key = match &requirement {
                Requirement::Equals(k, _)
                | Requirement::NotEquals(k, _)
                | Requirement::In(k, _)
                | Requirement::NotIn(k, _)
                | Requirement::Exists(k)
                | Requirement::NotExists(k) => k,
            };
            if !valid_key(key) {
                return Err(bad());
            }
            out.push(requirement);
        }
        Ok(LabelSelector(out))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }

    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) as a selector.
    pub fn from_object(selector: &Value) -> Result<LabelSelector, String> {
        let mut out = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                out.push(Requirement::Equals(
                    k.clone(),
                    v.as_str().unwrap_or_default().to_string(),
                ));
            }
        }
        for expr in selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = expr["key"].as_str().unwrap_or_default().to_string();
            let values: Vec<String> = expr["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            out.push(match expr["operator"].as_str() {
                Some("In") => Requirement::In(key, values),
                Some("NotIn") => Requirement::NotIn(key, values),
                Some("Exists") => Requirement::Exists(key),
                Some("DoesNotExist") => Requirement::NotExists(key),
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            });
        }
        Ok(LabelSelector(out))
    }
}

/// A parsed field selector: `path=value` and `path!=value` terms over dotted paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut out = Vec::new();
        for term in terms(text) {
            let (path, equal, value) = if let Some((p, v)) = term.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = term.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = term.split_once('=') {
                (p, true, v)
            } else {
                return Err(format!("invalid selector: {term:?}; can't understand it"));
            };
            out.push((path.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_follow_the_api_grammar() {
        let pod = json!({"metadata": {"labels": {"app": "probe", "tier": "gpu"}}});
        for (text, want) in [
            ("", true),
            ("app=probe", true),
            ("app==probe,tier=gpu", true),
            ("app!=probe", false),
            ("tier in (cpu, gpu)", true),
            ("tier notin (gpu)", false),
            ("app,!missing", true),
            ("!app", false),
        ] {
            assert_eq!(
                LabelSelector::parse(text).unwrap().matches(&pod),
                want,
                "{text}"
            );
        }
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("a b=c").is_err());
    }

    #[test]
    fn object_selectors_and_field_selectors() {
        let pod = json!({"metadata": {"name": "p", "labels": {"job-name": "j"}}, "spec": {"nodeName": "n1"}});
        let s = LabelSelector::from_object(&json!({"matchLabels": {"job-name": "j"}, "matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]})).unwrap();
        assert!(s.matches(&pod));
        let f = FieldSelector::parse("metadata.name=p,spec.nodeName!=n2").unwrap();
        assert!(f.matches(&pod));
        assert!(
            !FieldSelector::parse("spec.nodeName=n2")
                .unwrap()
                .matches(&pod)
        );
        assert!(FieldSelector::parse("nonsense").is_err());
    }

    proptest::proptest! {
        #[test]
        fn selectors_from_any_text_parse_or_refuse_without_panicking(text in "\\PC{0,64}") {
            let _ = LabelSelector::parse(&text);
            let _ = FieldSelector::parse(&text);
        }

        #[test]
        fn an_equality_selector_matches_exactly_the_objects_with_that_label(
            key in "[a-z][a-z0-9.-]{0,8}",
            value in "[a-z0-9]{1,8}",
            other in "[a-z0-9]{1,8}",
        ) {
            let selector = LabelSelector::parse(&format!("{key}={value}")).unwrap();
            let with = json!({"metadata": {"labels": {key.clone(): value.clone()}}});
            // Longer than `value`, so never equal to it (`{other}x` once was: "k" + "x" = "kx").
            let without = json!({"metadata": {"labels": {key.clone(): format!("{value}{other}")}}});
            proptest::prop_assert!(selector.matches(&with));
            proptest::prop_assert!(!selector.matches(&without));
            let negated = LabelSelector::parse(&format!("{key}!={value}")).unwrap();
            proptest::prop_assert!(!negated.matches(&with));
            proptest::prop_assert!(negated.matches(&without));
        }
    }
}
