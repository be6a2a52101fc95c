//! A position-keeping YAML reader for untrusted spec text, with size, depth and alias limits.
//!
//! serde_yaml loses node positions, and errors must name the file, line and column of the
//! offending value. So the spec reader builds its own small tree from yaml-rust2's event stream.
//! Plain scalars are resolved the way PyYAML's `safe_load` (YAML 1.1) resolves them, because
//! teams move specs over from the Python tool unchanged: `yes`/`on` are booleans there too.

use std::collections::{HashMap, HashSet};
use std::fmt;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Limits that keep a hostile document from hanging the reader or exhausting memory.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest accepted document, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of sequences and mappings.
    pub max_depth: usize,
    /// Most nodes the tree may hold after every alias is expanded.
    pub max_nodes: usize,
    /// Most bytes of keys and scalar text the tree may hold after every alias is expanded.
    /// Nodes alone do not bound memory: one alias of a 2 MiB string is one node, and 700,000
    /// of them in a 4 MiB file expanded to 1.4 TB.
    pub max_expanded_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 4 * 1024 * 1024,
            max_depth: 64,
            max_nodes: 1_000_000,
            max_expanded_bytes: MAX_EXPANDED_BYTES,
        }
    }
}

/// The default [`Limits::max_expanded_bytes`]: four times the largest document, so aliases
/// may repeat a spec's values a few times over but never multiply them.
pub const MAX_EXPANDED_BYTES: usize = 16 * 1024 * 1024;

/// What a value costs once its aliases are expanded: its nodes (a mapping entry's key is one),
/// the bytes of its keys and scalars' text, and how many levels of collections it nests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Size {
    pub nodes: usize,
    pub bytes: usize,
    pub depth: usize,
}

impl Size {
    /// A scalar (or a key) of `bytes` bytes of text.
    fn scalar(bytes: usize) -> Size {
        Size {
            nodes: 1,
            bytes,
            depth: 0,
        }
    }

    /// Adds a child's size to a collection's running total.
    fn add_child(&mut self, child: Size) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.bytes = self.bytes.saturating_add(child.bytes);
        self.depth = self.depth.max(child.depth);
    }

    /// The size of a collection whose children summed to `self`.
    fn closed(self) -> Size {
        Size {
            nodes: self.nodes.saturating_add(1),
            bytes: self.bytes,
            depth: self.depth + 1,
        }
    }

    /// Measures a tree already built (a merge's result, say).
    pub fn of(node: &Node) -> Size {
        match &node.value {
            Value::Seq(items) => {
                let mut total = Size::default();
                for item in items {
                    total.add_child(Size::of(item));
                }
                total.closed()
            }
            Value::Map(entries) => {
                let mut total = Size::default();
                for e in entries {
                    total.add_child(Size::scalar(e.key.len()));
                    total.add_child(Size::of(&e.value));
                }
                total.closed()
            }
            Value::Str(s) | Value::Float(s) => Size::scalar(s.len()),
            Value::Null | Value::Bool(_) | Value::Int(_) => Size::scalar(0),
        }
    }
}

/// A 1-based line and column in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

impl Pos {
    fn from_marker(m: Marker) -> Pos {
        Pos {
            line: m.line() as u32,
            // yaml-rust2 reports columns from 0 on every line.
            col: m.col() as u32 + 1,
        }
    }
}

/// One YAML value with the position where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub pos: Pos,
}

/// A YAML value. Mapping keys are kept as text, in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// A number that is not an integer (or does not fit one); the source text is kept.
    Float(String),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// One mapping entry: the key text, where the key was written, and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

impl Node {
    pub fn new(value: Value, pos: Pos) -> Node {
        Node { value, pos }
    }

    /// The mapping entries, when this node is a mapping.
    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// Looks a key up in a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// Python truthiness, which the reference uses in a few structural places
    /// (`clusters` items, pool mappings, `defaults or {}`).
    pub fn is_truthy(&self) -> bool {
        match &self.value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(s) => s.parse::<f64>().map(|f| f != 0.0).unwrap_or(true),
            Value::Str(s) => !s.is_empty(),
            Value::Seq(items) => !items.is_empty(),
            Value::Map(entries) => !entries.is_empty(),
        }
    }

    /// A short description of the value for error messages; strings are quoted, long
    /// values shortened, collections only named, so a message never dumps a document.
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(s) => s.clone(),
            Value::Str(s) => {
                let mut shown: String = s.chars().take(40).collect();
                if shown.len() < s.len() {
                    shown.push('…');
                }
                format!("{shown:?}")
            }
            Value::Seq(_) => "a list".to_string(),
            Value::Map(_) => "a mapping".to_string(),
        }
    }
}

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub pos: Pos,
    pub message: String,
    /// The document crossed one of the [`Limits`] (size, depth, nodes, expanded bytes), as
    /// opposed to being malformed: a reader that types the text with another parser still
    /// refuses what this one found too large.
    pub over_limit: bool,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)
    }
}

impl std::error::Error for YamlError {}

fn err(pos: Pos, message: impl Into<String>) -> YamlError {
    YamlError {
        pos,
        message: message.into(),
        over_limit: false,
    }
}

fn over_limit(pos: Pos, message: impl Into<String>) -> YamlError {
    YamlError {
        over_limit: true,
        ..err(pos, message)
    }
}

enum Frame {
    Seq {
        pos: Pos,
        anchor: usize,
        items: Vec<Node>,
        size: Size,
    },
    Map {
        pos: Pos,
        anchor: usize,
        entries: Vec<Entry>,
        pending_key: Option<(String, Pos)>,
        size: Size,
        /// The keys seen so far once the mapping is large, so a duplicate is found in constant
        /// time: a scan of `entries` per key made one 100,000-key mapping take half a minute.
        /// A small mapping (nearly all of them) is scanned instead: hashing and copying every
        /// key of a 40,000-cluster spec cost more than the scan.
        keys: HashSet<String>,
    },
}

/// Parses one YAML document into a [`Node`]. An empty document is `Null`.
/// A stream with more than one document is rejected: a spec is one document.
pub fn parse(text: &str, limits: Limits) -> Result<Node, YamlError> {
    if text.len() > limits.max_bytes {
        return Err(over_limit(
            Pos { line: 1, col: 1 },
            format!(
                "document is {} bytes; the limit is {} bytes",
                text.len(),
                limits.max_bytes
            ),
        ));
    }
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, (Node, Size)> = HashMap::new();
    // What the tree holds so far, aliases expanded: checked against the limits as it grows,
    // so a hostile document is refused at the alias that crosses one, before it is copied.
    let mut total = Size::default();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;

    loop {
        let (event, marker) = parser.next_token().map_err(|e| {
            let m = e.marker();
            err(Pos::from_marker(*m), e.info().to_string())
        })?;
        let pos = Pos::from_marker(marker);
        let completed: Option<(Node, usize, Size)> = match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => None,
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(err(pos, "expected one YAML document, found several"));
                }
                None
            }
            Event::Alias(id) => {
                let Some((target, size)) = anchors.get(&id) else {
                    return Err(err(pos, "alias refers to an unknown anchor"));
                };
                let size = *size;
                if stack.len() + size.depth > limits.max_depth {
                    return Err(over_limit(
                        pos,
                        format!(
                            "nesting deeper than {} levels once aliases are expanded",
                            limits.max_depth
                        ),
                    ));
                }
                total.nodes = total.nodes.saturating_add(size.nodes);
                total.bytes = total.bytes.saturating_add(size.bytes);
                check_expansion(&total, limits, pos)?;
                let mut copy = target.clone();
                copy.pos = pos;
                Some((copy, 0, size))
            }
            Event::Scalar(text, style, anchor, tag) => {
                let size = Size::scalar(text.len());
                total.nodes += 1;
                total.bytes = total.bytes.saturating_add(size.bytes);
                if total.nodes > limits.max_nodes {
                    return Err(over_limit(pos, "document has too many nodes"));
                }
                check_expansion(&total, limits, pos)?;
                let value = if tag.is_some() {
                    // Explicit tags (`!!str 1`, `!custom`) are not part of the spec format; keep
                    // the text so a typed field reports a clear "expected …" error.
                    Value::Str(text)
                } else {
                    resolve_scalar(text, style)
                };
                Some((Node::new(value, pos), anchor, size))
            }
            Event::SequenceStart(anchor, _) => {
                total.nodes += 1;
                check_expansion(&total, limits, pos)?;
                if stack.len() >= limits.max_depth {
                    return Err(over_limit(
                        pos,
                        format!("nesting deeper than {} levels", limits.max_depth),
                    ));
                }
                stack.push(Frame::Seq {
                    pos,
                    anchor,
                    items: Vec::new(),
                    size: Size::default(),
                });
                None
            }
            Event::MappingStart(anchor, _) => {
                total.nodes += 1;
                check_expansion(&total, limits, pos)?;
                if stack.len() >= limits.max_depth {
                    return Err(over_limit(
                        pos,
                        format!("nesting deeper than {} levels", limits.max_depth),
                    ));
                }
                stack.push(Frame::Map {
                    pos,
                    anchor,
                    entries: Vec::new(),
                    pending_key: None,
                    size: Size::default(),
                    keys: HashSet::new(),
                });
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq {
                    pos,
                    anchor,
                    items,
                    size,
                }) => Some((Node::new(Value::Seq(items), pos), anchor, size.closed())),
                _ => return Err(err(pos, "unbalanced sequence end")),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map {
                    pos,
                    anchor,
                    entries,
                    size,
                    ..
                }) => Some((Node::new(Value::Map(entries), pos), anchor, size.closed())),
                _ => return Err(err(pos, "unbalanced mapping end")),
            },
        };

        let Some((node, anchor, size)) = completed else {
            continue;
        };
        if anchor != 0 {
            anchors.insert(anchor, (node.clone(), size));
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq {
                items,
                size: parent,
                ..
            }) => {
                parent.add_child(size);
                items.push(node);
            }
            Some(Frame::Map {
                entries,
                pending_key,
                keys,
                size: parent,
                ..
            }) => {
                parent.add_child(size);
                match pending_key.take() {
                    None => {
                        let key_pos = node.pos;
                        let key = key_text(node)?;
                        if key == "<<" {
                            return Err(err(
                                key_pos,
                                "merge keys (`<<`) are not supported in fleet specs; use `defaults`",
                            ));
                        }
                        let duplicate = if entries.len() < SMALL_MAPPING {
                            entries.iter().any(|e| e.key == key)
                        } else {
                            if keys.is_empty() {
                                keys.extend(entries.iter().map(|e| e.key.clone()));
                            }
                            !keys.insert(key.clone())
                        };
                        if duplicate {
                            return Err(err(key_pos, format!("duplicate key {key:?}")));
                        }
                        *pending_key = Some((key, key_pos));
                    }
                    Some((key, key_pos)) => entries.push(Entry {
                        key,
                        key_pos,
                        value: node,
                    }),
                }
            }
        }
    }
    Ok(root.unwrap_or(Node::new(Value::Null, Pos { line: 1, col: 1 })))
}

/// Refuses a tree that has grown past the node or byte limit, at the position that crossed it.
fn check_expansion(total: &Size, limits: Limits, pos: Pos) -> Result<(), YamlError> {
    if total.nodes > limits.max_nodes {
        return Err(over_limit(
            pos,
            format!(
                "document expands to more than {} nodes (alias expansion limit)",
                limits.max_nodes
            ),
        ));
    }
    if total.bytes > limits.max_expanded_bytes {
        return Err(over_limit(
            pos,
            format!(
                "document expands to more than {} bytes of keys and values (alias expansion limit)",
                limits.max_expanded_bytes
            ),
        ));
    }
    Ok(())
}

/// A key's text (the node is consumed: its string is the key's).
fn key_text(node: Node) -> Result<String, YamlError> {
    match node.value {
        Value::Str(s) | Value::Float(s) => Ok(s),
        Value::Int(i) => Ok(i.to_string()),
        Value::Bool(b) => Ok(if b { "True" } else { "False" }.to_string()),
        Value::Null => Ok("None".to_string()),
        Value::Seq(_) | Value::Map(_) => Err(err(node.pos, "mapping keys must be scalars")),
    }
}

/// Mappings with fewer entries than this find a duplicate key by scanning them.
const SMALL_MAPPING: usize = 16;

/// Resolves a scalar with PyYAML's YAML 1.1 rules for the types a spec can hold.
fn resolve_scalar(text: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::Str(text);
    }
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        _ => {}
    }
    if let Some(i) = parse_int(&text) {
        return Value::Int(i);
    }
    if is_float(&text) {
        return Value::Float(text);
    }
    Value::Str(text)
}

fn parse_int(text: &str) -> Option<i64> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.is_empty() || body.starts_with('_') {
        return None;
    }
    let cleaned: String = body.chars().filter(|c| *c != '_').collect();
    let magnitude: i128 = if let Some(hex) = cleaned.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = cleaned.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()?
    } else if cleaned.len() > 1 && cleaned.starts_with('0') {
        i128::from_str_radix(&cleaned[1..], 8).ok()?
    } else if cleaned.bytes().all(|b| b.is_ascii_digit()) {
        cleaned.parse().ok()?
    } else {
        return None;
    };
    let signed = if negative { -magnitude } else { magnitude };
    i64::try_from(signed).ok()
}

fn is_float(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let body = lower.trim_start_matches(['-', '+']);
    if matches!(body, ".inf" | ".nan") {
        return true;
    }
    let cleaned: String = body.chars().filter(|c| *c != '_').collect();
    let has_digit = cleaned.bytes().any(|b| b.is_ascii_digit());
    has_digit
        && (cleaned.contains('.') || cleaned.contains('e'))
        && cleaned.parse::<f64>().is_ok()
        && cleaned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-' | b'+'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Node {
        parse(text, Limits::default()).expect("parses")
    }

    #[test]
    fn positions_are_one_based() {
        let doc = p("a:\n  b: 2\n");
        let b = doc.get("a").unwrap().get("b").unwrap();
        assert_eq!(b.value, Value::Int(2));
        assert_eq!(b.pos, Pos { line: 2, col: 6 });
    }

    #[test]
    fn yaml11_scalars_resolve_like_pyyaml() {
        let doc = p("a: yes\nb: \"2\"\nc: 2\nd: 1.34\ne: ~\nf: off\ng: 0x10\nh: '1.0'\n");
        assert_eq!(doc.get("a").unwrap().value, Value::Bool(true));
        assert_eq!(doc.get("b").unwrap().value, Value::Str("2".into()));
        assert_eq!(doc.get("c").unwrap().value, Value::Int(2));
        assert_eq!(doc.get("d").unwrap().value, Value::Float("1.34".into()));
        assert_eq!(doc.get("e").unwrap().value, Value::Null);
        assert_eq!(doc.get("f").unwrap().value, Value::Bool(false));
        assert_eq!(doc.get("g").unwrap().value, Value::Int(16));
        assert_eq!(doc.get("h").unwrap().value, Value::Str("1.0".into()));
    }

    #[test]
    fn duplicate_keys_are_rejected_with_position() {
        let e = parse("a: 1\nb: 2\na: 3\n", Limits::default()).unwrap_err();
        assert_eq!(e.pos.line, 3);
        assert!(e.message.contains("duplicate key \"a\""), "{e}");
    }

    #[test]
    fn duplicate_at_the_end_of_a_huge_mapping_is_found_where_it_was_written() {
        let mut doc = String::new();
        for i in 0..100_000 {
            doc.push_str(&format!("k{i}: {i}\n"));
        }
        assert_eq!(p(&doc).as_map().unwrap().len(), 100_000);
        doc.push_str("k99999: again\n");
        let e = parse(&doc, Limits::default()).unwrap_err();
        assert_eq!(
            e.pos,
            Pos {
                line: 100_001,
                col: 1
            }
        );
        assert_eq!(e.message, "duplicate key \"k99999\"");
    }

    #[test]
    fn a_duplicate_is_found_on_either_side_of_the_small_mapping_scan() {
        for size in [2, SMALL_MAPPING - 1, SMALL_MAPPING, SMALL_MAPPING + 1, 40] {
            for repeated in [0, size / 2, size - 1] {
                let mut doc: String = (0..size).map(|i| format!("k{i}: {i}\n")).collect();
                assert_eq!(p(&doc).as_map().unwrap().len(), size);
                doc.push_str(&format!("k{repeated}: again\n"));
                let e = parse(&doc, Limits::default()).unwrap_err();
                assert_eq!(e.pos.line as usize, size + 1, "{size} {repeated}");
                assert_eq!(e.message, format!("duplicate key \"k{repeated}\""));
            }
        }
    }

    #[test]
    fn keys_are_unique_per_mapping_not_per_document() {
        let doc = p("a: {x: 1, y: 2}\nb: {x: 3}\nc: [{x: 4}, {x: 5}]\n");
        assert_eq!(doc.get("b").unwrap().get("x").unwrap().value, Value::Int(3));
        let e = parse(
            "a: {x: 1, y: 2}\nb:\n  x: 3\n  z: 4\n  x: 5\n",
            Limits::default(),
        )
        .unwrap_err();
        assert_eq!(
            (e.pos, e.message.as_str()),
            (Pos { line: 5, col: 3 }, "duplicate key \"x\"")
        );
        // Keys compare by their text as the reference does: `1` and `"1"` are the same key.
        let e = parse("1: a\n\"1\": b\n", Limits::default()).unwrap_err();
        assert_eq!(e.pos.line, 2);
    }

    #[test]
    fn billion_laughs_fails_fast() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let e = parse(&doc, Limits::default()).unwrap_err();
        assert!(e.message.contains("alias expansion limit"), "{e}");
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let mut doc = String::new();
        for depth in 0..100 {
            doc.push_str(&"  ".repeat(depth));
            doc.push_str("a:\n");
        }
        let e = parse(&doc, Limits::default()).unwrap_err();
        assert!(e.message.contains("nesting deeper than 64"), "{e}");
        // Flow-style nesting is stopped by the scanner's own recursion guard.
        let flow = "[".repeat(5000) + &"]".repeat(5000);
        assert!(parse(&flow, Limits::default()).is_err());
    }

    #[test]
    fn oversized_documents_are_rejected_before_parsing() {
        let limits = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        let e = parse("name: a-long-fleet-name\n", limits).unwrap_err();
        assert!(e.message.contains("limit is 10 bytes"), "{e}");
    }

    #[test]
    fn aliases_copy_values() {
        let doc = p("base: &b {count: 2}\nother: *b\n");
        assert_eq!(
            doc.get("other").unwrap().get("count").unwrap().value,
            Value::Int(2)
        );
    }

    /// The document: one 2 MiB anchored string and as many aliases of it as fit in
    /// 4 MiB, which expanded to ~1.4 TB and took the App down.
    fn alias_bomb() -> String {
        let mut doc = String::with_capacity(4 * 1024 * 1024);
        doc.push_str("a: &a \"");
        doc.push_str(&"x".repeat(2 * 1024 * 1024));
        doc.push_str("\"\nb: [*a");
        while doc.len() < 4 * 1024 * 1024 - 8 {
            doc.push_str(",*a");
        }
        doc.push_str("]\n");
        doc
    }

    #[test]
    fn aliases_of_a_long_string_are_refused_by_bytes_at_the_alias_that_crosses_the_limit() {
        let doc = alias_bomb();
        assert!(doc.len() <= Limits::default().max_bytes, "{}", doc.len());
        let e = parse(&doc, Limits::default()).unwrap_err();
        assert!(e.over_limit);
        assert_eq!(
            e.message,
            format!(
                "document expands to more than {MAX_EXPANDED_BYTES} bytes of keys and values (alias expansion limit)"
            )
        );
        // Keys `a` and `b`, the string, then seven copies: the seventh alias is the eighth
        // copy of 2 MiB and crosses 16 MiB. `b: [` is four columns, each `*a,` three.
        assert_eq!(
            e.pos,
            Pos {
                line: 2,
                col: 5 + 6 * 3
            }
        );
    }

    #[test]
    fn a_few_aliases_of_a_long_string_are_read() {
        let long = "y".repeat(1024 * 1024);
        let doc = p(&format!("a: &a \"{long}\"\nb: [*a, *a, *a]\n"));
        let b = doc.get("b").unwrap();
        let Value::Seq(items) = &b.value else {
            panic!("{b:?}")
        };
        assert_eq!(items.len(), 3);
        assert!(items.iter().all(|i| i.value == Value::Str(long.clone())));
        assert_eq!(Size::of(&doc).bytes, 4 * long.len() + 2);
    }

    #[test]
    fn an_alias_may_not_nest_deeper_than_the_document_may() {
        let mut deep = String::from("d: &d ");
        deep.push_str(&"[".repeat(60));
        deep.push_str(&"]".repeat(60));
        // The root and `d`'s 60 levels; an alias five levels down would nest 65 deep.
        let doc = format!("{deep}\ne: [[[[[*d]]]]]\n");
        let e = parse(&doc, Limits::default()).unwrap_err();
        assert!(e.over_limit);
        assert_eq!(
            e.message,
            "nesting deeper than 64 levels once aliases are expanded"
        );
        assert_eq!(e.pos, Pos { line: 2, col: 9 });
        // Three levels down it fits exactly; four is one too many.
        assert!(parse(&format!("{deep}\ne: [[[*d]]]\n"), Limits::default()).is_ok());
        assert!(parse(&format!("{deep}\ne: [[[[*d]]]]\n"), Limits::default()).is_err());
    }

    /// A document of anchored sequences, each item a quoted string of some length or an
    /// alias of an earlier sequence: `l0: &l0 ["xx", …]`, `l1: &l1 [*l0, "x", …]`, ….
    #[derive(Debug, Clone)]
    enum Item {
        Text(usize),
        Alias(usize),
    }

    fn levels() -> impl proptest::strategy::Strategy<Value = Vec<Vec<Item>>> {
        use proptest::prelude::*;
        (1usize..7).prop_flat_map(|n| {
            (0..n)
                .map(|level| {
                    let item = if level == 0 {
                        (0usize..40).prop_map(Item::Text).boxed()
                    } else {
                        prop_oneof![
                            (0usize..40).prop_map(Item::Text),
                            (0..level).prop_map(Item::Alias),
                        ]
                        .boxed()
                    };
                    proptest::collection::vec(item, 0..6)
                })
                .collect::<Vec<_>>()
        })
    }

    /// The document and what it expands to, counted from the model rather than the tree.
    fn render_and_measure(levels: &[Vec<Item>]) -> (String, Size) {
        let mut doc = String::new();
        let mut sizes: Vec<Size> = Vec::new();
        // The root mapping.
        let mut total = Size::default();
        for (i, items) in levels.iter().enumerate() {
            let mut level = Size::default();
            let rendered: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Item::Text(len) => {
                        level.add_child(Size::scalar(*len));
                        format!("\"{}\"", "t".repeat(*len))
                    }
                    Item::Alias(j) => {
                        level.add_child(sizes[*j]);
                        format!("*l{j}")
                    }
                })
                .collect();
            let level = level.closed();
            sizes.push(level);
            doc.push_str(&format!("l{i}: &l{i} [{}]\n", rendered.join(", ")));
            total.add_child(Size::scalar(format!("l{i}").len()));
            total.add_child(level);
        }
        (doc, total.closed())
    }

    proptest::proptest! {
        /// However aliases nest, the reader builds a tree within every limit or refuses the
        /// document as over a limit, and it refuses exactly the documents whose expansion,
        /// counted from the model, is over one.
        #[test]
        fn expansion_is_bounded_exactly_by_nodes_bytes_and_depth(
            levels in levels(),
            max_nodes in 1usize..400,
            max_expanded_bytes in 0usize..3000,
            max_depth in 1usize..8,
        ) {
            let (doc, expected) = render_and_measure(&levels);
            let limits = Limits { max_bytes: 1 << 20, max_depth, max_nodes, max_expanded_bytes };
            let within = expected.nodes <= max_nodes
                && expected.bytes <= max_expanded_bytes
                && expected.depth <= max_depth;
            match parse(&doc, limits) {
                Ok(tree) => {
                    proptest::prop_assert!(within, "{doc} read, but expands to {expected:?}");
                    proptest::prop_assert_eq!(Size::of(&tree), expected);
                }
                Err(e) => {
                    proptest::prop_assert!(e.over_limit, "{doc}: {e}");
                    proptest::prop_assert!(!within, "{doc} refused ({e}) within {expected:?}");
                }
            }
        }
    }

    #[test]
    fn several_documents_are_rejected() {
        assert!(parse("a: 1\n---\nb: 2\n", Limits::default()).is_err());
    }

    #[test]
    fn empty_document_is_null() {
        assert!(p("").is_null());
        assert!(p("# only a comment\n").is_null());
    }
}
