//! The fuzz targets' bodies: one function per target, shared by `fuzz/fuzz_targets/*.rs`
//! (libFuzzer, nightly) and `tests/fuzz_corpus.rs` (the committed corpora replayed on stable),
//! so the corpus CI replays goes through exactly the code the fuzzer exercised.
//!
//! Each function takes the raw input, must never panic, and asserts the property that makes
//! the target worth more than "does not crash": a signature fleetbot made always verifies,
//! a command list is capped, a narrower scan finds a subset, escaped text stays inert.

// Every target uses a different subset of this file.
#![allow(dead_code)]

use std::ops::RangeInclusive;
use std::sync::OnceLock;

use comrak::nodes::{AstNode, NodeValue};
use comrak::{Arena, Options, parse_document};
use regex::Regex;

use fleetbot::bot::commands::{MAX_COMMANDS, parse_comment};
use fleetbot::bot::config::{LoadedConfig, RepoConfig};
use fleetbot::github::webhook::{SignatureError, WebhookSecrets, parse_signature, sign};
use fleetbot::privacy::{FileScan, Scanner, ScannerConfig};

/// The input up to its first `\n`, and the rest: how multi-part inputs are framed, so a
/// corpus file stays readable and editable by hand.
fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// `spec`: the whole reader (YAML with positions and limits, defaults merged into every
/// cluster, names resolved, strict types) and validation, as `fleetbot plan` runs them; and
/// the round trip: a spec that loads, written back out as canonical YAML, loads again as the
/// same fleet.
pub fn spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match fleetbot::spec::load_str(text, "fleets/fuzz.yaml") {
        // Every error names its file: `file:line:col: field.path` is the contract.
        Err(e) => assert!(e.to_string().starts_with("fleets/fuzz.yaml"), "{e}"),
        Ok(spec) => {
            // What every command does next with a valid spec.
            let described = format!("{spec:?}");
            spec_round_trip(text, &described);
        }
    }
}

/// The reader's round trip: the document's tree (aliases expanded) written back as block YAML
/// in one canonical form (every string double-quoted with ASCII escapes, numbers, booleans and
/// nulls plain) reads back to the same tree and the same fleet, positions aside. What this
/// holds: the reader's meaning depends on the values alone, never on how they were written
/// (quoting style, flow or block, anchors, comments), and it reads its own canonical output.
pub fn spec_round_trip(text: &str, described: &str) {
    use fleetbot::spec::yaml::{Limits, parse};
    let tree = parse(text, Limits::default()).expect("a spec that loaded parses");
    let mut canonical = String::new();
    emit_map_or_value(&tree, 0, &mut canonical);
    if canonical.len() > Limits::default().max_bytes {
        // Aliases expanded past the reader's size limit: not a document it would take.
        return;
    }
    let again = fleetbot::spec::load_str(&canonical, "fleets/fuzz.yaml")
        .unwrap_or_else(|e| panic!("the canonical form does not load: {e}\n{canonical}"));
    let reparsed = parse(&canonical, Limits::default()).expect("it loaded");
    assert_eq!(
        without_positions(&tree),
        without_positions(&reparsed),
        "{canonical}"
    );
    assert_eq!(
        scrub_positions(described),
        scrub_positions(&format!("{again:?}")),
        "the fleet differs once written canonically:\n{canonical}"
    );
}

/// The root: a mapping is written at the left margin, anything else as one scalar line.
fn emit_map_or_value(node: &fleetbot::spec::yaml::Node, indent: usize, out: &mut String) {
    use fleetbot::spec::yaml::Value;
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => emit_map(entries, indent, out),
        Value::Seq(items) if !items.is_empty() => emit_seq(items, indent, out),
        _ => {
            out.push_str(&scalar(node));
            out.push('\n');
        }
    }
}

fn emit_map(entries: &[fleetbot::spec::yaml::Entry], indent: usize, out: &mut String) {
    for e in entries {
        let key = quoted(&e.key);
        out.push_str(&" ".repeat(indent));
        // YAML caps an implicit key at 1,024 characters, and escaping lengthens a key the
        // source wrote raw: a longer one is written as an explicit key (`? key` then `: value`).
        if key.chars().count() > 1000 {
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            out.push_str(&" ".repeat(indent));
        } else {
            out.push_str(&key);
        }
        out.push(':');
        emit_after_indicator(&e.value, indent, out);
    }
}

fn emit_seq(items: &[fleetbot::spec::yaml::Node], indent: usize, out: &mut String) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        emit_after_indicator(item, indent, out);
    }
}

/// A value after `key:` or `-`: a non-empty collection on the next lines, indented two more.
fn emit_after_indicator(node: &fleetbot::spec::yaml::Node, indent: usize, out: &mut String) {
    use fleetbot::spec::yaml::Value;
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            emit_map(entries, indent + 2, out);
        }
        Value::Seq(items) if !items.is_empty() => {
            out.push('\n');
            emit_seq(items, indent + 2, out);
        }
        _ => {
            out.push(' ');
            out.push_str(&scalar(node));
            out.push('\n');
        }
    }
}

fn scalar(node: &fleetbot::spec::yaml::Node) -> String {
    use fleetbot::spec::yaml::Value;
    match &node.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        // The source text, which the resolver read as this number and reads so again.
        Value::Float(f) => f.clone(),
        Value::Str(s) => quoted(s),
        Value::Map(_) => "{}".into(),
        Value::Seq(_) => "[]".into(),
    }
}

/// A YAML double-quoted scalar holding `s`, in printable ASCII only.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// The tree with every position zeroed.
fn without_positions(node: &fleetbot::spec::yaml::Node) -> fleetbot::spec::yaml::Node {
    use fleetbot::spec::yaml::{Entry, Node, Pos, Value};
    let value = match &node.value {
        Value::Seq(items) => Value::Seq(items.iter().map(without_positions).collect()),
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|e| Entry {
                    key: e.key.clone(),
                    key_pos: Pos::default(),
                    value: without_positions(&e.value),
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Node::new(value, Pos::default())
}

/// A model's `Debug` text with its positions (`Pos { line, col }`, `file:line:col`) blanked.
fn scrub_positions(text: &str) -> String {
    static POS: OnceLock<Regex> = OnceLock::new();
    let pos = POS.get_or_init(|| {
        Regex::new(r"Pos \{ line: \d+, col: \d+ \}|fuzz\.yaml:\d+:\d+").expect("a regex")
    });
    pos.replace_all(text, "<pos>").into_owned()
}

/// `webhook`: line 1 is the `X-GitHub-Event` name, line 2 the `X-Hub-Signature-256` value,
/// the rest the body. The signature path runs first, as in the server; then the decoder.
pub fn webhook(data: &[u8]) {
    let (event, rest) = split_line(data);
    let (header, body) = split_line(rest);
    let secrets = WebhookSecrets::new(["fuzz-secret", "fuzz-previous"]).expect("two secrets");
    let verdict = secrets.verify(body, Some(header));
    match parse_signature(Some(header)) {
        Err(e) => assert_eq!(verdict, Err(e), "form is checked before the MAC"),
        Ok(_) => assert_ne!(verdict, Err(SignatureError::Malformed)),
    }
    // Whatever the body, a signature made with a secret in force verifies, and only then.
    for secret in [&b"fuzz-secret"[..], b"fuzz-previous"] {
        let good = sign(secret, body);
        assert_eq!(secrets.verify(body, Some(good.as_bytes())), Ok(()));
    }
    let other = sign(b"not-a-secret-in-force", body);
    assert_eq!(
        secrets.verify(body, Some(other.as_bytes())),
        Err(SignatureError::Mismatch)
    );
    let Ok(event) = std::str::from_utf8(event) else {
        return;
    };
    if let Ok(event) = fleetbot::github::events::parse_event(event, body) {
        let _ = event.installation_id();
        if let fleetbot::github::events::Event::PullRequest(pr) = &event {
            let _ = (pr.action.wants_preflight(), pr.is_fork());
        }
    }
}

/// `commands`: the slash-command parser over a comment body.
pub fn commands(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    let parsed = parse_comment(&body);
    assert!(parsed.commands.len() <= MAX_COMMANDS);
    let lines = u32::try_from(body.split_inclusive('\n').count().max(1)).unwrap_or(u32::MAX);
    for c in &parsed.commands {
        assert!((1..=lines).contains(&c.line), "line {} of {lines}", c.line);
        for key in c.args.keys() {
            assert!(c.kind.allowed_args().contains(&key.as_str()), "{key}");
        }
    }
    assert_eq!(
        parse_comment(&body),
        parsed,
        "the parser is a pure function"
    );
}

/// The paths a privacy input is scanned under, chosen by its first byte: a spec (the
/// spec-aware rules run), YAML, plain text, an env file, JSON.
const SCAN_PATHS: [&str; 5] = [
    "fleets/fuzz.yaml",
    "deploy/values.yml",
    "notes.txt",
    ".env",
    "config.json",
];

/// `privacy`: `Scanner::scan_text` over any bytes, whole and restricted to changed lines,
/// and the unified-diff reader the CLI's `--diff` mode feeds it.
pub fn privacy(data: &[u8]) {
    let Some((&selector, content)) = data.split_first() else {
        return;
    };
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    let scanner = SCANNER.get_or_init(|| {
        Scanner::new(ScannerConfig {
            key: b"fuzz".to_vec(),
            allowlist: Default::default(),
        })
        .expect("a key and no allowlist")
    });
    let path = SCAN_PATHS[usize::from(selector) % SCAN_PATHS.len()];
    let whole = scanner.scan_text(path, content, None);
    let changed: [RangeInclusive<u32>; 1] = [2..=3];
    let part = scanner.scan_text(path, content, Some(&changed));
    match (&whole, &part) {
        (FileScan::Findings(all), FileScan::Findings(some)) => {
            for f in all {
                assert!(f.line >= 1 && f.column >= 1, "{f:?}");
            }
            for f in some {
                assert!(all.contains(f), "a narrower scan finds a subset: {f:?}");
            }
        }
        (FileScan::Skipped { reason: a }, FileScan::Skipped { reason: b }) => assert_eq!(a, b),
        _ => panic!("whole {whole:?} and part {part:?} disagree on skipping"),
    }
    if let Ok(text) = std::str::from_utf8(content) {
        for file in fleetbot::privacy::diff::parse_unified_diff(text) {
            let _ = file;
        }
        for range in fleetbot::privacy::diff::added_line_ranges(text) {
            assert!(range.start() <= range.end(), "{range:?}");
        }
    }
}

/// `repo_config`: `.fleetbot.yml` as the bot reads it from the default branch.
pub fn repo_config(data: &[u8]) {
    let loaded = LoadedConfig::from_default_branch("main", Some(data));
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(
            loaded.error.is_some(),
            "bytes that are not UTF-8 are an error"
        );
        return;
    };
    match RepoConfig::parse(text) {
        Ok(config) => {
            let matcher = config.spec_matcher();
            for path in ["fleets/a.yaml", "fleets/x/y/z.yml", "README.md", "", "/"] {
                let _ = matcher.matches(path);
            }
            for command in ["plan", "apply", "approve-destroy", "unlock", "help", "nope"] {
                let _ = config.required_permission(command);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// `yaml_expansion`: whatever anchors and aliases a document holds, the reader either builds a
/// tree within every limit (nodes, bytes of keys and scalars, depth: measured on the tree it
/// returns) or refuses the document; and for documents built from the input as anchored levels
/// of strings and aliases (the first byte odd), it refuses exactly those whose expansion,
/// counted from that model, is over a limit. Small limits, so the fuzzer reaches them.
pub fn yaml_expansion(data: &[u8]) {
    use fleetbot::spec::yaml::{Limits, Size, parse};
    let limits = Limits {
        max_bytes: 1 << 16,
        max_depth: 12,
        max_nodes: 500,
        max_expanded_bytes: 4096,
    };
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (text, expected) = if mode % 2 == 1 {
        let (text, size) = anchored_levels(rest);
        (text, Some(size))
    } else {
        match std::str::from_utf8(rest) {
            Ok(t) => (t.to_string(), None),
            Err(_) => return,
        }
    };
    match parse(&text, limits) {
        Ok(tree) => {
            let size = Size::of(&tree);
            assert!(size.nodes <= limits.max_nodes, "{size:?}\n{text}");
            assert!(size.bytes <= limits.max_expanded_bytes, "{size:?}\n{text}");
            assert!(size.depth <= limits.max_depth, "{size:?}\n{text}");
            if let Some(expected) = expected {
                assert_eq!(size, expected, "{text}");
            }
        }
        Err(e) => {
            if let Some(expected) = expected {
                assert!(e.over_limit, "{e}\n{text}");
                assert!(
                    expected.nodes > limits.max_nodes
                        || expected.bytes > limits.max_expanded_bytes
                        || expected.depth > limits.max_depth,
                    "{e}: refused within the limits ({expected:?})\n{text}"
                );
            }
        }
    }
}

/// `l0: &l0 [...]`, `l1: &l1 [...]`, …: each input byte adds an item to the current level, a
/// string of `b / 4` characters (`b % 4 == 0`), an alias of an earlier level (`1`), or a
/// nested sequence of one alias (`2`), or closes the level (`3`); with the document's expanded
/// size counted from the model.
fn anchored_levels(data: &[u8]) -> (String, fleetbot::spec::yaml::Size) {
    use fleetbot::spec::yaml::Size;
    let scalar = |bytes: usize| Size {
        nodes: 1,
        bytes,
        depth: 0,
    };
    let add = |total: &mut Size, child: Size| {
        total.nodes += child.nodes;
        total.bytes += child.bytes;
        total.depth = total.depth.max(child.depth);
    };
    let close = |s: Size| Size {
        nodes: s.nodes + 1,
        bytes: s.bytes,
        depth: s.depth + 1,
    };
    let mut text = String::new();
    let mut levels: Vec<Size> = Vec::new();
    let mut root = Size::default();
    let mut current = Size::default();
    let mut items: Vec<String> = Vec::new();
    let finish = |items: &mut Vec<String>,
                  current: &mut Size,
                  levels: &mut Vec<Size>,
                  root: &mut Size,
                  text: &mut String| {
        let i = levels.len();
        let level = close(*current);
        text.push_str(&format!("l{i}: &l{i} [{}]\n", items.join(", ")));
        let key = format!("l{i}");
        add(root, scalar(key.len()));
        add(root, level);
        levels.push(level);
        items.clear();
        *current = Size::default();
    };
    for &b in data {
        match b % 4 {
            0 => {
                let len = usize::from(b / 4);
                items.push(format!("\"{}\"", "s".repeat(len)));
                add(&mut current, scalar(len));
            }
            1 | 2 if levels.is_empty() => {}
            1 => {
                let j = usize::from(b / 4) % levels.len();
                items.push(format!("*l{j}"));
                add(&mut current, levels[j]);
            }
            2 => {
                let j = usize::from(b / 4) % levels.len();
                items.push(format!("[*l{j}]"));
                add(&mut current, close(levels[j]));
            }
            _ => finish(&mut items, &mut current, &mut levels, &mut root, &mut text),
        }
    }
    finish(&mut items, &mut current, &mut levels, &mut root, &mut text);
    (text, close(root))
}

/// GitHub's dialect: GFM and what github.com adds (as `src/bot/render/inert_tests.rs`).
fn gfm() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.extension.alerts = true;
    o.extension.footnotes = true;
    o.extension.tasklist = true;
    o.extension.math_dollars = true;
    o
}

fn walk<'a>(n: &'a AstNode<'a>, depth: usize, f: &mut impl FnMut(&'a AstNode<'a>, usize)) {
    f(n, depth);
    for c in n.children() {
        walk(c, depth + 1, f);
    }
}

/// Blocks and non-text inlines by depth; text and code spans hold anything literally.
fn skeleton(text: &str) -> Vec<String> {
    let arena = Arena::new();
    let root = parse_document(&arena, text, &gfm());
    let mut out = Vec::new();
    walk(root, 0, &mut |n, depth| {
        let kind = match &n.data().value {
            NodeValue::Text(_)
            | NodeValue::Code(_)
            | NodeValue::SoftBreak
            | NodeValue::Paragraph
            | NodeValue::HtmlInline(_) => return,
            NodeValue::Table(t) => format!("table{}", t.alignments.len()),
            NodeValue::TableRow(_) => "row".to_string(),
            other => format!("{other:?}")
                .split(['(', ' ', '{'])
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        out.push(format!("{depth}:{kind}"));
    });
    out
}

/// What GitHub would make live in `text`: links, images, HTML other than the break and the
/// `<details>` frame, and text it turns into a mention, a reference or an autolink.
fn live_markup(text: &str) -> Vec<String> {
    static LINKISH: OnceLock<Regex> = OnceLock::new();
    static SUMMARY: OnceLock<Regex> = OnceLock::new();
    let linkish =
        LINKISH.get_or_init(|| Regex::new(r"(?i)@[a-z0-9_]|#[0-9]|\bgh-[0-9]|://|www\.").unwrap());
    let summary = SUMMARY.get_or_init(|| {
        Regex::new(r#"^<details><summary><code>(?:[^<>"'@#&\r\n]|&(?:amp|lt|gt|quot|#39|#64|#35);)*</code></summary>$"#).unwrap()
    });
    let arena = Arena::new();
    let root = parse_document(&arena, text, &gfm());
    let mut found = Vec::new();
    let check = |run: &str, found: &mut Vec<String>| {
        if let Some(m) = linkish.find(run) {
            found.push(format!("live text {:?} in {run:?}", m.as_str()));
        }
    };
    walk(root, 0, &mut |n, _| {
        match &n.data().value {
            NodeValue::Link(l) | NodeValue::Image(l) => found.push(format!("link to {}", l.url)),
            NodeValue::HtmlInline(h) if h == "<!-- -->" => {}
            NodeValue::HtmlInline(h) => found.push(format!("inline HTML {h:?}")),
            NodeValue::HtmlBlock(b)
                if summary.is_match(b.literal.trim_end())
                    || b.literal.trim_end() == "</details>" => {}
            NodeValue::HtmlBlock(b) => found.push(format!("HTML block {:?}", b.literal)),
            _ => {}
        }
        // Adjacent text nodes are one run in GitHub's HTML, where mentions are found.
        let mut run = String::new();
        for c in n.children() {
            match &c.data().value {
                NodeValue::Text(t) => run.push_str(t),
                NodeValue::SoftBreak => run.push('\n'),
                _ => {
                    check(&run, &mut found);
                    run.clear();
                }
            }
        }
        check(&run, &mut found);
    });
    found
}

/// One string in every place a template puts one: running text (mid-line and at a line
/// start), a table's cells (text and code), a code span, a `<summary>` and a fenced diff.
fn escaped_document(text: &str) -> String {
    let [md, cell, code, cell_code, summary, fence] = fleetbot::bot::render::escape_forms(text);
    format!(
        "{md}\n\nText: {md} end.\n\n| a | b | c |\n|---|---|---|\n| {cell} | {cell_code} | x |\n\n\
         Code: {code}\n\n<details><summary>{summary}</summary>\n\n{fence}\n\n</details>\n"
    )
}

/// `render`: the escape filters, each form parsed as GitHub parses it: nothing from the
/// string is live, and the document has the same structure as with a plain word.
pub fn render(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let doc = escaped_document(&text);
    let live = live_markup(&doc);
    assert!(live.is_empty(), "{live:?} in\n{doc}");
    let want = skeleton(&escaped_document("word"));
    assert_eq!(skeleton(&doc), want, "structure changed in\n{doc}");
}
