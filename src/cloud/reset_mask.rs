//! The `X-ResetMask` header of a Nebius Update: its syntax (parse and the canonical
//! serialisation), and the mask the official SDK computes from a whole request. Nebius keeps
//! every field an Update leaves unset or at its default unless the mask names it, so the
//! client sends, with every Update, the mask of everything the request leaves empty — exactly
//! as the Python SDK's `get_full_update_reset_mask` does (pysdk 0.6.29,
//! `nebius/base/protos/direct.py`; the syntax is `nebius/base/fieldmask.py`). The simulator
//! parses the same header to apply an Update as Nebius does.

use std::collections::BTreeMap;

use prost::{Message, Name};
use prost_reflect::{DynamicMessage, Kind, ReflectMessage, Value};

use super::schema::{self, Behavior};

/// The header, lower-cased as gRPC sends it (the SDKs name it `X-ResetMask`).
pub const HEADER: &str = "x-resetmask";

/// A reset mask: a tree of field names (list indices and map keys are names too), where `*`
/// stands for every name at its level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mask {
    pub any: Option<Box<Mask>>,
    pub fields: BTreeMap<String, Mask>,
}

impl Mask {
    pub fn is_empty(&self) -> bool {
        self.any.is_none() && self.fields.is_empty()
    }

    /// The mask below `key`: what names it, merged with what `*` names; `None` when nothing at
    /// this level names it (gosdk `GetSubMask`).
    pub fn sub(&self, key: &str) -> Option<Mask> {
        match (self.fields.get(key), &self.any) {
            (None, None) => None,
            (Some(m), None) => Some(m.clone()),
            (None, Some(any)) => Some((**any).clone()),
            (Some(m), Some(any)) => {
                let mut merged = m.clone();
                merged.merge(any);
                Some(merged)
            }
        }
    }

    /// Adds every path of `other`.
    pub fn merge(&mut self, other: &Mask) {
        if let Some(any) = &other.any {
            self.any.get_or_insert_with(Default::default).merge(any);
        }
        for (key, sub) in &other.fields {
            self.fields.entry(key.clone()).or_default().merge(sub);
        }
    }

    fn insert(&mut self, path: &[Key]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let node = match first {
            Key::Any => self.any.get_or_insert_with(Default::default).as_mut(),
            Key::Name(name) => self.fields.entry(name.clone()).or_default(),
        };
        node.insert(rest);
    }

    /// Parses a header value. An empty value is the empty mask.
    pub fn parse(text: &str) -> Result<Mask, String> {
        let tokens = tokenize(text)?;
        let mut parser = Parser { tokens, at: 0 };
        let mut mask = Mask::default();
        if parser.tokens.is_empty() {
            return Ok(mask);
        }
        for path in parser.paths()? {
            mask.insert(&path);
        }
        match parser.peek() {
            None => Ok(mask),
            Some(Token::Close) => Err("unmatched right brace".into()),
            Some(t) => Err(format!("unexpected token {t:?}")),
        }
    }

    /// The canonical serialisation, as the SDKs write it: siblings sorted, one child written
    /// `key.sub`, several `key.(a,b)`.
    pub fn marshal(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let children = self
            .any
            .iter()
            .map(|m| ("*".to_string(), m.as_ref()))
            .chain(self.fields.iter().map(|(k, m)| (quote(k), m)));
        for (key, sub) in children {
            let segments = usize::from(sub.any.is_some()) + sub.fields.len();
            parts.push(match segments {
                0 => key,
                1 => format!("{key}.{}", sub.marshal()),
                _ => format!("{key}.({})", sub.marshal()),
            });
        }
        parts.sort();
        parts.join(",")
    }

    /// The mask the SDK sends with an Update of `message`: every field the message leaves
    /// empty (an unset message, an empty list or map, a scalar at its zero value, the unset
    /// members of a oneof), and below every set message, list or map of messages, what they
    /// leave empty. IMMUTABLE fields (and the unset members of an IMMUTABLE oneof) are never
    /// named, as pysdk does, so an Update never resets what cannot change.
    pub fn of_message(message: &DynamicMessage) -> Mask {
        let mut mask = Mask::default();
        for field in message.descriptor().fields() {
            if schema::has_behavior(&field, Behavior::Immutable) {
                continue;
            }
            let has = schema::has_value(message, &field);
            let immutable_oneof = field
                .containing_oneof()
                .is_some_and(|o| schema::oneof_has_behavior(&o, Behavior::Immutable));
            if immutable_oneof && !has {
                continue;
            }
            let name = field.name().to_string();
            if !has {
                mask.fields.insert(name, Mask::default());
                continue;
            }
            let value = message.get_field(&field);
            match value.as_ref() {
                Value::Map(entries) => {
                    if matches!(
                        field
                            .kind()
                            .as_message()
                            .map(|m| m.map_entry_value_field().kind()),
                        Some(Kind::Message(_))
                    ) {
                        let mut union = Mask::default();
                        for v in entries.values() {
                            if let Value::Message(m) = v {
                                union.merge(&Mask::of_message(m));
                            }
                        }
                        mask.fields.entry(name).or_default().any = Some(Box::new(union));
                    }
                }
                Value::List(items) => {
                    if matches!(field.kind(), Kind::Message(_)) {
                        let mut union = Mask::default();
                        for v in items {
                            if let Value::Message(m) = v {
                                union.merge(&Mask::of_message(m));
                            }
                        }
                        mask.fields.entry(name).or_default().any = Some(Box::new(union));
                    }
                }
                Value::Message(m) => {
                    mask.fields.insert(name, Mask::of_message(m));
                }
                // A scalar with explicit presence (a oneof member, `optional`) set to its zero
                // value is still named: the value says "reset".
                scalar => {
                    if *scalar == field.default_value() {
                        mask.fields.insert(name, Mask::default());
                    }
                }
            }
        }
        mask
    }
}

/// The `X-ResetMask` value for an Update request: the SDK's full mask of the whole request
/// (`metadata.…` and `spec.…`). An all-set request gives the empty string, which is sent too.
pub fn for_update<M: Message + Name>(request: &M) -> String {
    Mask::of_message(&schema::to_dynamic(request)).marshal()
}

/// A key as the SDKs write it: bare when `[A-Za-z0-9_]+`, else a JSON string (ASCII only, as
/// Python's `json.dumps`).
fn quote(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return key.to_string();
    }
    let mut out = String::from("\"");
    for c in key.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Any,
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Comma,
    Dot,
    Open,
    Close,
    Star,
    Name(String),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\r' | '\n' | '\t' => {}
            ',' => tokens.push(Token::Comma),
            '.' => tokens.push(Token::Dot),
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '*' => tokens.push(Token::Star),
            '"' => {
                // A JSON string literal: find its end, then let serde_json decode the escapes.
                let mut end = None;
                let mut escaped = false;
                for (i, c) in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        end = Some(i);
                        break;
                    }
                }
                let end = end.ok_or_else(|| format!("unterminated quoted key at {at}"))?;
                let name: String = serde_json::from_str(&text[at..=end])
                    .map_err(|e| format!("bad quoted key at {at}: {e}"))?;
                tokens.push(Token::Name(name));
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut name = c.to_string();
                while let Some((_, c)) = chars.peek() {
                    if c.is_ascii_alphanumeric() || *c == '_' {
                        name.push(*c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Name(name));
            }
            c => return Err(format!("unexpected symbol {c:?} at {at}")),
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    /// `path (',' path)*`, up to a `)` or the end.
    fn paths(&mut self) -> Result<Vec<Vec<Key>>, String> {
        let mut all = self.path()?;
        while self.peek() == Some(&Token::Comma) {
            self.next();
            all.extend(self.path()?);
        }
        Ok(all)
    }

    /// `segment ('.' segment)*`; a group's branches each take what follows the group.
    fn path(&mut self) -> Result<Vec<Vec<Key>>, String> {
        let mut paths: Vec<Vec<Key>> = vec![Vec::new()];
        loop {
            let branches: Vec<Vec<Key>> = match self.next() {
                Some(Token::Name(n)) => vec![vec![Key::Name(n)]],
                Some(Token::Star) => vec![vec![Key::Any]],
                Some(Token::Open) => {
                    let inner = self.paths()?;
                    match self.next() {
                        Some(Token::Close) => inner,
                        _ => return Err("unclosed left brace".into()),
                    }
                }
                None => return Err("unexpected end of mask".into()),
                Some(t) => {
                    return Err(format!(
                        "unexpected token {t:?}, expecting field or submask"
                    ));
                }
            };
            paths = paths
                .iter()
                .flat_map(|p| {
                    branches.iter().map(move |b| {
                        let mut joined = p.clone();
                        joined.extend(b.iter().cloned());
                        joined
                    })
                })
                .collect();
            if self.peek() == Some(&Token::Dot) {
                self.next();
                continue;
            }
            return Ok(paths);
        }
    }
}

#[cfg(test)]
#[path = "reset_mask_tests.rs"]
mod tests;
