//! What the API server refuses (422 with causes) and fills in (defaults), per kind, for the
//! fields clients and fleetbot's own probes rely on.

use serde_json::{Value, json};

use super::kinds::{JOB, KINDS, NAMESPACE, POD};
use super::store::{ApiError, Cause, meta};

const SUBDOMAIN_HELP: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_HELP: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_label)
}

fn is_label_value(s: &str) -> bool {
    s.is_empty()
        || (s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.as_bytes()[0].is_ascii_alphanumeric()
            && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric())
}

fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    prefix.is_none_or(is_subdomain) && !name.is_empty() && is_label_value(name)
}

fn check_metadata(kind: usize, object: &Value, causes: &mut Vec<Cause>) {
    let name = meta(object, "name");
    let dns_label = kind == NAMESPACE || KINDS[kind].kind == "Service";
    if !name.is_empty() {
        if dns_label && !is_label(name) {
            causes.push(Cause::invalid("metadata.name", name, LABEL_HELP));
        } else if !dns_label && !is_subdomain(name) {
            causes.push(Cause::invalid("metadata.name", name, SUBDOMAIN_HELP));
        }
    }
    for (key, value) in object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !is_qualified_name(key) {
            causes.push(Cause::invalid(
                "metadata.labels",
                key,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            ));
        }
        match value.as_str() {
            Some(v) if is_label_value(v) => {}
            _ => causes.push(Cause::invalid(
                format!("metadata.labels.{key}"),
                &value.to_string(),
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            )),
        }
    }
}

fn check_pod_spec(spec: Option<&Value>, at: &str, causes: &mut Vec<Cause>, job: bool) {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array);
    match containers {
        None => causes.push(Cause::required(format!("{at}.containers"))),
        Some(list) if list.is_empty() => causes.push(Cause::required(format!("{at}.containers"))),
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                let field = format!("{at}.containers[{i}]");
                match c.get("name").and_then(Value::as_str) {
                    None | Some("") => causes.push(Cause::required(format!("{field}.name"))),
                    Some(n) if !is_label(n) => {
                        causes.push(Cause::invalid(format!("{field}.name"), n, LABEL_HELP))
                    }
                    _ => {}
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    causes.push(Cause::required(format!("{field}.image")));
                }
            }
        }
    }
    let policy = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str);
    let allowed: &[&str] = if job {
        &["OnFailure", "Never"]
    } else {
        &["Always", "OnFailure", "Never"]
    };
    match policy {
        Some(p) if !allowed.contains(&p) => causes.push(Cause::unsupported(
            format!("{at}.restartPolicy"),
            p,
            allowed,
        )),
        None if job => causes.push(Cause {
            reason: "FieldValueRequired",
            field: format!("{at}.restartPolicy"),
            message: "Required value: valid values: \"OnFailure\", \"Never\"".into(),
        }),
        _ => {}
    }
}

/// Refuses an invalid object with 422 and its causes.
pub fn validate(kind: usize, object: &Value) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    check_metadata(kind, object, &mut causes);
    if kind == POD {
        check_pod_spec(object.get("spec"), "spec", &mut causes, false);
    } else if kind == JOB {
        if object
            .pointer("/spec/template/metadata")
            .is_some_and(|m| !m.is_object() && !m.is_null())
        {
            causes.push(Cause::invalid(
                "spec.template.metadata",
                "",
                "must be an object",
            ));
        }
        let template = object.pointer("/spec/template/spec");
        check_pod_spec(template, "spec.template.spec", &mut causes, true);
        for field in ["completions", "parallelism", "backoffLimit"] {
            if let Some(n) = object
                .pointer(&format!("/spec/{field}"))
                .and_then(Value::as_i64)
                && n < 0
            {
                causes.push(Cause::invalid(
                    format!("spec.{field}"),
                    &n.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(kind, meta(object, "name"), causes))
    }
}

/// The defaults the API server writes on create.
pub fn default_on_create(kind: usize, object: &mut Value) {
    if kind == POD {
        let spec = &mut object["spec"];
        if spec.get("restartPolicy").is_none() {
            spec["restartPolicy"] = json!("Always");
        }
        if spec.get("schedulerName").is_none() {
            spec["schedulerName"] = json!("default-scheduler");
        }
        if spec.get("terminationGracePeriodSeconds").is_none() {
            spec["terminationGracePeriodSeconds"] = json!(30);
        }
        if object
            .get("status")
            .is_none_or(|s| s.get("phase").is_none())
        {
            object["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
        }
    } else if kind == JOB {
        let uid = meta(object, "uid").to_string();
        let name = meta(object, "name").to_string();
        let spec = &mut object["spec"];
        for (field, value) in [("completions", 1), ("parallelism", 1), ("backoffLimit", 6)] {
            if spec.get(field).is_none() {
                spec[field] = json!(value);
            }
        }
        if spec.get("completionMode").is_none() {
            spec["completionMode"] = json!("NonIndexed");
        }
        if spec.get("suspend").is_none() {
            spec["suspend"] = json!(false);
        }
        if spec.get("selector").is_none() {
            spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
        }
        let labels = &mut spec["template"]["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        for (key, value) in [
            ("batch.kubernetes.io/controller-uid", uid.as_str()),
            ("controller-uid", uid.as_str()),
            ("batch.kubernetes.io/job-name", name.as_str()),
            ("job-name", name.as_str()),
        ] {
            labels[key] = json!(value);
        }
        if object.get("status").is_none() {
            object["status"] = json!({});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_pods_and_jobs_name_each_bad_field() {
        let pod = json!({"metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "c"}], "restartPolicy": "Sometimes"}});
        let err = validate(POD, &pod).unwrap_err();
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        let fields: Vec<&str> = err.details.as_ref().unwrap()["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.containers[0].image",
                "spec.restartPolicy"
            ]
        );
        let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Always"}}}});
        let err = validate(JOB, &job).unwrap_err();
        assert!(
            err.message
                .contains("spec.template.spec.restartPolicy: Unsupported value: \"Always\""),
            "{}",
            err.message
        );
        assert!(validate(POD, &json!({"metadata": {"name": "ok", "labels": {"app.kubernetes.io/name": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}})).is_ok());
    }

    #[test]
    fn jobs_get_a_selector_and_labelled_pods() {
        let mut job =
            json!({"metadata": {"name": "j", "uid": "u1"}, "spec": {"template": {"spec": {}}}});
        default_on_create(JOB, &mut job);
        assert_eq!(
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u1"
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            "j"
        );
        assert_eq!(job["spec"]["backoffLimit"], 6);
    }
}
