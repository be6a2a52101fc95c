//! GitHub's REST description (`@octokit/openapi`) as a request and response validator.
//!
//! Every request the bot makes is matched to one operation by method and path template; path
//! parameters, query parameters and the JSON body are checked against the operation's
//! parameters and request schema, and the operation must be enabled for GitHub Apps. Every
//! answer the fake gives is checked against the response schema, so the fake stays honest.
//!
//! The validator covers the OpenAPI 3.0 subset the description uses for these operations:
//! `$ref`, `type`, `nullable`, `enum`, `properties`, `required`, `additionalProperties`,
//! `items`, `oneOf`/`anyOf`/`allOf`, `minLength`/`maxLength`, `minItems`/`maxItems`,
//! `minimum`/`maximum`, `pattern` and the `date-time` and `uri` formats.

use std::collections::BTreeMap;

use serde_json::Value;

/// One operation of the description.
pub struct Operation {
    pub method: String,
    pub template: String,
    pub id: String,
    segments: Vec<Segment>,
    op: Value,
}

enum Segment {
    Literal(String),
    Param(String),
}

/// A matched request.
pub struct Matched<'a> {
    pub operation: &'a Operation,
    pub path_params: BTreeMap<String, String>,
}

/// The parsed description.
pub struct OpenApi {
    doc: Value,
    operations: Vec<Operation>,
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl OpenApi {
    pub fn from_value(doc: Value) -> Self {
        let mut operations = Vec::new();
        if let Some(paths) = doc["paths"].as_object() {
            for (template, item) in paths {
                let Some(item) = item.as_object() else {
                    continue;
                };
                for (method, op) in item {
                    if !["get", "post", "patch", "put", "delete"].contains(&method.as_str()) {
                        continue;
                    }
                    let segments = template
                        .trim_start_matches('/')
                        .split('/')
                        .map(
                            |s| match s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                                Some(p) => Segment::Param(p.to_string()),
                                None => Segment::Literal(s.to_string()),
                            },
                        )
                        .collect();
                    operations.push(Operation {
                        method: method.to_uppercase(),
                        template: template.clone(),
                        id: op["operationId"].as_str().unwrap_or_default().to_string(),
                        segments,
                        op: op.clone(),
                    });
                }
            }
        }
        OpenApi { doc, operations }
    }

    pub fn version(&self) -> &str {
        self.doc["info"]["version"].as_str().unwrap_or_default()
    }

    /// Follows `$ref`s to the referenced value.
    pub fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..32 {
            let Some(r) = v.get("$ref").and_then(Value::as_str) else {
                return v;
            };
            let mut target = &self.doc;
            for part in r.trim_start_matches("#/").split('/') {
                target = &target[part.replace("~1", "/").replace("~0", "~")];
            }
            v = target;
        }
        v
    }

    /// The operation for `method` and `path` (no query), preferring literal segments; a final
    /// `{path}` parameter takes the rest of the path, slashes included.
    pub fn find(&self, method: &str, path: &str) -> Option<Matched<'_>> {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let mut best: Option<(usize, Matched<'_>)> = None;
        for op in self.operations.iter().filter(|o| o.method == method) {
            let mut params = BTreeMap::new();
            let mut literals = 0;
            let mut ok = true;
            let mut i = 0;
            for (k, seg) in op.segments.iter().enumerate() {
                let last = k + 1 == op.segments.len();
                match seg {
                    Segment::Literal(l) => {
                        if parts.get(i) != Some(&l.as_str()) {
                            ok = false;
                            break;
                        }
                        literals += 1;
                        i += 1;
                    }
                    Segment::Param(p) if last && p == "path" => {
                        if i >= parts.len() {
                            ok = false;
                            break;
                        }
                        let rest: Vec<String> =
                            parts[i..].iter().map(|s| percent_decode(s)).collect();
                        params.insert(p.clone(), rest.join("/"));
                        i = parts.len();
                    }
                    Segment::Param(p) => {
                        match parts.get(i) {
                            Some(v) if !v.is_empty() => {
                                params.insert(p.clone(), percent_decode(v));
                            }
                            _ => {
                                ok = false;
                                break;
                            }
                        }
                        i += 1;
                    }
                }
            }
            if ok && i == parts.len() && best.as_ref().is_none_or(|(l, _)| literals > *l) {
                best = Some((
                    literals,
                    Matched {
                        operation: op,
                        path_params: params,
                    },
                ));
            }
        }
        best.map(|(_, m)| m)
    }

    /// Checks a request; returns the matched operation's id, or every violation found.
    pub fn check_request(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Option<&Value>,
    ) -> Result<(String, BTreeMap<String, String>), Vec<String>> {
        let Some(m) = self.find(method, path) else {
            return Err(vec![format!(
                "{method} {path}: no such operation in the REST description"
            )]);
        };
        let op = &m.operation.op;
        let mut errors = Vec::new();
        let id = m.operation.id.clone();
        // The manifest code exchange is made without a token (the one-time code is the
        // credential), so the rule for what an App's token may call does not apply to it.
        let unauthenticated = id == "apps/create-from-manifest";
        if !unauthenticated && op["x-github"]["enabledForGitHubApps"] != Value::Bool(true) {
            errors.push(format!("{id}: not enabled for GitHub Apps"));
        }
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| self.resolve(p)).collect())
            .unwrap_or_default();
        for p in &params {
            let name = p["name"].as_str().unwrap_or_default();
            let schema = &p["schema"];
            match p["in"].as_str() {
                Some("path") => match m.path_params.get(name) {
                    Some(v) => {
                        self.check_scalar(schema, v, &format!("{id}: path {name}"), &mut errors)
                    }
                    None => errors.push(format!("{id}: path parameter {name} missing")),
                },
                Some("query")
                    if p["required"] == Value::Bool(true)
                        && !query.iter().any(|(k, _)| k == name) =>
                {
                    errors.push(format!("{id}: query parameter {name} is required"));
                }
                _ => {}
            }
        }
        for (k, v) in query {
            match params
                .iter()
                .find(|p| p["in"] == "query" && p["name"].as_str() == Some(k))
            {
                Some(p) => {
                    self.check_scalar(&p["schema"], v, &format!("{id}: query {k}"), &mut errors)
                }
                None => errors.push(format!("{id}: unknown query parameter {k}")),
            }
        }
        let request_body = self.resolve(&op["requestBody"]);
        let schema = &request_body["content"]["application/json"]["schema"];
        match (body, schema.is_null()) {
            (Some(_), true) => errors.push(format!("{id}: takes no JSON body")),
            (None, false) if request_body["required"] == Value::Bool(true) => {
                errors.push(format!("{id}: a JSON body is required"))
            }
            (Some(b), false) => self.validate(schema, b, &format!("{id}: body"), &mut errors),
            _ => {}
        }
        if errors.is_empty() {
            Ok((id, m.path_params))
        } else {
            Err(errors)
        }
    }

    /// Checks an answer the fake is about to give.
    pub fn check_response(&self, operation_id: &str, status: u16, body: &Value) -> Vec<String> {
        let Some(op) = self.operations.iter().find(|o| o.id == operation_id) else {
            return vec![format!("{operation_id}: unknown operation")];
        };
        let response = self.resolve(&op.op["responses"][status.to_string()]);
        if response.is_null() {
            return vec![format!("{operation_id}: status {status} is not documented")];
        }
        let schema = &response["content"]["application/json"]["schema"];
        let mut errors = Vec::new();
        if !schema.is_null() {
            self.validate(
                schema,
                body,
                &format!("{operation_id} response {status}"),
                &mut errors,
            );
        }
        errors
    }

    /// The operation's reference page (`externalDocs.url`): the `documentation_url` GitHub
    /// puts in its error bodies for that operation.
    pub fn docs_url(&self, operation_id: &str) -> String {
        self.operations
            .iter()
            .find(|o| o.id == operation_id)
            .and_then(|o| o.op["externalDocs"]["url"].as_str())
            .unwrap_or("https://docs.github.com/rest")
            .to_string()
    }

    /// Whether the description has `operation_id`, enabled for GitHub Apps.
    pub fn enabled_for_apps(&self, operation_id: &str) -> Option<bool> {
        self.operations
            .iter()
            .find(|o| o.id == operation_id)
            .map(|o| o.op["x-github"]["enabledForGitHubApps"] == Value::Bool(true))
    }

    /// The documented example answer of an operation (first example of the status).
    pub fn example(&self, operation_id: &str, status: u16) -> Value {
        let op = self
            .operations
            .iter()
            .find(|o| o.id == operation_id)
            .unwrap_or_else(|| panic!("no operation {operation_id}"));
        let response = self.resolve(&op.op["responses"][status.to_string()]);
        let examples = &response["content"]["application/json"]["examples"];
        let first = examples
            .as_object()
            .and_then(|m| m.values().next())
            .unwrap_or_else(|| panic!("{operation_id} {status} has no example"));
        self.resolve(first)["value"].clone()
    }

    fn check_scalar(&self, schema: &Value, raw: &str, at: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        let value = match schema["type"].as_str() {
            Some("integer") => match raw.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => {
                    errors.push(format!("{at}: {raw:?} is not an integer"));
                    return;
                }
            },
            Some("boolean") => match raw {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    errors.push(format!("{at}: {raw:?} is not a boolean"));
                    return;
                }
            },
            _ => Value::String(raw.to_string()),
        };
        self.validate(schema, &value, at, errors);
    }

    /// Validates `value` against `schema`, collecting every violation with its JSON path.
    pub fn validate(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        if value.is_null() && schema["nullable"] == Value::Bool(true) {
            return;
        }
        if let Some(all) = schema["allOf"].as_array() {
            for s in all {
                self.validate(s, value, at, errors);
            }
        }
        for (key, exactly_one) in [("oneOf", true), ("anyOf", false)] {
            if let Some(options) = schema[key].as_array() {
                let passing = options
                    .iter()
                    .filter(|s| {
                        let mut e = Vec::new();
                        self.validate(s, value, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                if passing == 0 || (exactly_one && passing > 1) {
                    errors.push(format!("{at}: matches {passing} of the {key} alternatives"));
                }
            }
        }
        if let Some(allowed) = schema["enum"].as_array()
            && !allowed.contains(value)
        {
            errors.push(format!(
                "{at}: {value} is not one of {}",
                Value::from(allowed.clone())
            ));
        }
        let ty = schema["type"].as_str();
        let type_ok = match (ty, value) {
            (None, _) => true,
            (Some("string"), Value::String(_)) => true,
            (Some("integer"), Value::Number(n)) => n.is_i64() || n.is_u64(),
            (Some("number"), Value::Number(_)) => true,
            (Some("boolean"), Value::Bool(_)) => true,
            (Some("array"), Value::Array(_)) => true,
            (Some("object"), Value::Object(_)) => true,
            _ => false,
        };
        if !type_ok {
            let shown: String = value.to_string().chars().take(60).collect();
            errors.push(format!(
                "{at}: expected {}, found {shown}",
                ty.unwrap_or("?")
            ));
            return;
        }
        match value {
            Value::String(s) => {
                let n = s.chars().count() as u64;
                if let Some(max) = schema["maxLength"].as_u64()
                    && n > max
                {
                    errors.push(format!("{at}: {n} characters, at most {max} allowed"));
                }
                if let Some(min) = schema["minLength"].as_u64()
                    && n < min
                {
                    errors.push(format!("{at}: {n} characters, at least {min} required"));
                }
                if let Some(p) = schema["pattern"].as_str()
                    && let Ok(re) = regex::Regex::new(p)
                    && !re.is_match(s)
                {
                    errors.push(format!("{at}: does not match {p}"));
                }
                match schema["format"].as_str() {
                    Some("date-time") if !is_date_time(s) => {
                        errors.push(format!("{at}: {s:?} is not a date-time"))
                    }
                    Some("uri") if !s.contains(':') => {
                        errors.push(format!("{at}: {s:?} is not a URI"))
                    }
                    _ => {}
                }
            }
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(0.0);
                if let Some(max) = schema["maximum"].as_f64()
                    && x > max
                {
                    errors.push(format!("{at}: {x} is above {max}"));
                }
                if let Some(min) = schema["minimum"].as_f64()
                    && x < min
                {
                    errors.push(format!("{at}: {x} is below {min}"));
                }
            }
            Value::Array(items) => {
                let n = items.len() as u64;
                if let Some(max) = schema["maxItems"].as_u64()
                    && n > max
                {
                    errors.push(format!("{at}: {n} items, at most {max} allowed"));
                }
                if let Some(min) = schema["minItems"].as_u64()
                    && n < min
                {
                    errors.push(format!("{at}: {n} items, at least {min} required"));
                }
                if !schema["items"].is_null() {
                    for (i, item) in items.iter().enumerate() {
                        self.validate(&schema["items"], item, &format!("{at}[{i}]"), errors);
                    }
                }
            }
            Value::Object(map) => {
                if let Some(required) = schema["required"].as_array() {
                    for r in required.iter().filter_map(Value::as_str) {
                        if !map.contains_key(r) {
                            errors.push(format!("{at}: required property {r} is missing"));
                        }
                    }
                }
                let props = schema["properties"].as_object();
                for (k, v) in map {
                    match props.and_then(|p| p.get(k)) {
                        Some(s) => self.validate(s, v, &format!("{at}.{k}"), errors),
                        None => match &schema["additionalProperties"] {
                            Value::Bool(false) => {
                                errors.push(format!("{at}: unexpected property {k}"))
                            }
                            Value::Object(_) => self.validate(
                                &schema["additionalProperties"],
                                v,
                                &format!("{at}.{k}"),
                                errors,
                            ),
                            _ => {}
                        },
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b't')
        && b[13] == b':'
        && b[16] == b':'
        && (s.ends_with('Z') || s.ends_with('z') || s[19..].contains('+') || s[19..].contains('-'))
}
