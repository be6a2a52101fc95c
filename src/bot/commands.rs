//! Slash commands in pull-request comments: `/plan`, `/apply`, `/approve-destroy`, `/unlock`,
//! `/verify-storage`, `/verify-graphics`, `/verify-mig`, `/status`, `/help`.
//!
//! Grammar (bors and triagebot, not Atlantis):
//! * a command is a line whose first non-blank character is `/`, followed by a lower-case name
//!   and then blanks or the end of the line; `/tmp/x` or `/plan.` are prose, not commands;
//! * several commands per comment, one per line, at most [`MAX_COMMANDS`];
//! * arguments are `key=value`, a value may be double-quoted; a bare word, an unknown or
//!   duplicate key, an empty or over-long value is an error; an `@mention` ends the line (the
//!   rest is addressed to someone else);
//! * lines inside fenced or indented code, inline code, block quotes (`>` lines, lazy
//!   continuations included), HTML blocks, inline HTML, HTML comments, headings, links and
//!   images are never commands: people quote and discuss commands without running them, and
//!   Prow's obeying of commands hidden in HTML comments is a known hole.
//!
//! The parser is pure and never panics (a property test checks it); what may run and who may
//! run it is decided elsewhere.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

/// More commands than this in one comment is an error, and none of them runs.
pub const MAX_COMMANDS: usize = 5;
/// The longest argument value.
pub const MAX_VALUE_CHARS: usize = 100;
/// User text echoed back in an error is cut to this many characters.
const MAX_ECHO_CHARS: usize = 40;

/// The commands fleetbot knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandKind {
    /// Recompute the preflight of the head commit and refresh the comment and checks.
    Plan,
    /// Apply the merged fleets now, under the guards (overrides a plan that drifted).
    Apply,
    /// Approve the deletions and shrinks the current plan shows.
    ApproveDestroy,
    /// Free a fleet's apply lock.
    Unlock,
    /// Verify storage on the fleet's clusters.
    VerifyStorage,
    /// Verify graphics on the fleet's clusters.
    VerifyGraphics,
    /// Verify the MIG layout of the fleet's MIG clusters.
    VerifyMig,
    /// Show the fleet's current state.
    Status,
    /// Compare the default branch's fleets with the cloud now (`fleet/drift`).
    Reconcile,
    /// List the commands.
    Help,
}

impl CommandKind {
    /// Every command, in help order.
    pub const ALL: [CommandKind; 10] = [
        CommandKind::Plan,
        CommandKind::Apply,
        CommandKind::ApproveDestroy,
        CommandKind::Unlock,
        CommandKind::VerifyStorage,
        CommandKind::VerifyGraphics,
        CommandKind::VerifyMig,
        CommandKind::Status,
        CommandKind::Reconcile,
        CommandKind::Help,
    ];

    /// The name after the slash.
    pub fn name(&self) -> &'static str {
        match self {
            CommandKind::Plan => "plan",
            CommandKind::Apply => "apply",
            CommandKind::ApproveDestroy => "approve-destroy",
            CommandKind::Unlock => "unlock",
            CommandKind::VerifyStorage => "verify-storage",
            CommandKind::VerifyGraphics => "verify-graphics",
            CommandKind::VerifyMig => "verify-mig",
            CommandKind::Status => "status",
            CommandKind::Reconcile => "reconcile",
            CommandKind::Help => "help",
        }
    }

    /// The argument keys it takes.
    pub fn allowed_args(&self) -> &'static [&'static str] {
        match self {
            CommandKind::Plan
            | CommandKind::Status
            | CommandKind::Apply
            | CommandKind::ApproveDestroy
            | CommandKind::Unlock => &["fleet"],
            CommandKind::VerifyStorage | CommandKind::VerifyGraphics | CommandKind::VerifyMig => {
                &["fleet", "cluster", "clusters"]
            }
            CommandKind::Reconcile | CommandKind::Help => &[],
        }
    }

    /// One line for the help text.
    pub fn summary(&self) -> &'static str {
        match self {
            CommandKind::Plan => {
                "recompute the preflight for the head commit (`fleet=NAME` to limit it)"
            }
            CommandKind::Apply => {
                "apply the merged fleets now, under the guards (`fleet=PATH` to limit it)"
            }
            CommandKind::ApproveDestroy => {
                "approve the deletions and shrinks the current plan lists (`fleet=PATH`)"
            }
            CommandKind::Unlock => "free a fleet's apply lock held by another apply (`fleet=PATH`)",
            CommandKind::VerifyStorage => {
                "verify storage on every worker of the fleet's clusters (`fleet=NAME`, `clusters=render-*`)"
            }
            CommandKind::VerifyGraphics => {
                "verify graphics on every GPU worker of the fleet's clusters (`fleet=NAME`, `clusters=render-*`)"
            }
            CommandKind::VerifyMig => {
                "verify the MIG layout, Operator and every slice of the fleet's MIG clusters (`fleet=NAME`, `clusters=mig-*`)"
            }
            CommandKind::Status => "show the fleet's current state (`fleet=NAME`)",
            CommandKind::Reconcile => {
                "compare the default branch's fleets with the cloud now (updates `fleet/drift`)"
            }
            CommandKind::Help => "list these commands",
        }
    }

    /// The command with this name.
    pub fn from_name(name: &str) -> Option<CommandKind> {
        CommandKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl CommandKind {
    /// The command as it is written in a comment (`/apply`).
    pub fn slash(&self) -> &'static str {
        match self {
            CommandKind::Plan => "/plan",
            CommandKind::Apply => "/apply",
            CommandKind::ApproveDestroy => "/approve-destroy",
            CommandKind::Unlock => "/unlock",
            CommandKind::VerifyStorage => "/verify-storage",
            CommandKind::VerifyGraphics => "/verify-graphics",
            CommandKind::VerifyMig => "/verify-mig",
            CommandKind::Status => "/status",
            CommandKind::Reconcile => "/reconcile",
            CommandKind::Help => "/help",
        }
    }
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.name())
    }
}

/// One parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub kind: CommandKind,
    /// `key=value` arguments.
    pub args: BTreeMap<String, String>,
    /// 1-based line in the comment.
    pub line: u32,
}

/// Why a command line was not accepted. Echoed user text is cut to a few characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    UnknownCommand {
        line: u32,
        name: String,
        did_you_mean: Option<CommandKind>,
    },
    UnknownArgument {
        line: u32,
        command: CommandKind,
        key: String,
    },
    DuplicateArgument {
        line: u32,
        command: CommandKind,
        key: String,
    },
    /// A word that is not `key=value`.
    BareArgument {
        line: u32,
        command: CommandKind,
        word: String,
    },
    EmptyValue {
        line: u32,
        command: CommandKind,
        key: String,
    },
    /// Too long, or characters outside `A-Z a-z 0-9 . _ / -`.
    InvalidValue {
        line: u32,
        command: CommandKind,
        key: String,
    },
    UnclosedQuote {
        line: u32,
        command: CommandKind,
    },
    TooManyCommands {
        found: usize,
    },
}

impl CommandError {
    /// The comment line the error is on (0 for the whole comment).
    pub fn line(&self) -> u32 {
        match self {
            CommandError::UnknownCommand { line, .. }
            | CommandError::UnknownArgument { line, .. }
            | CommandError::DuplicateArgument { line, .. }
            | CommandError::BareArgument { line, .. }
            | CommandError::EmptyValue { line, .. }
            | CommandError::InvalidValue { line, .. }
            | CommandError::UnclosedQuote { line, .. } => *line,
            CommandError::TooManyCommands { .. } => 0,
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::UnknownCommand {
                line,
                name,
                did_you_mean,
            } => {
                write!(f, "line {line}: unknown command /{name}")?;
                if let Some(k) = did_you_mean {
                    write!(f, " (did you mean {k}?)")?;
                }
                Ok(())
            }
            CommandError::UnknownArgument { line, command, key } => {
                let allowed = command.allowed_args();
                write!(f, "line {line}: {command} does not take `{key}`")?;
                if allowed.is_empty() {
                    write!(f, " (it takes no arguments)")
                } else {
                    write!(f, " (it takes {})", allowed.join(", "))
                }
            }
            CommandError::DuplicateArgument { line, command, key } => {
                write!(f, "line {line}: {command} was given `{key}` twice")
            }
            CommandError::BareArgument {
                line,
                command,
                word,
            } => write!(
                f,
                "line {line}: {command}: `{word}` is not a `key=value` argument"
            ),
            CommandError::EmptyValue { line, command, key } => {
                write!(f, "line {line}: {command}: `{key}` has an empty value")
            }
            CommandError::InvalidValue { line, command, key } => write!(
                f,
                "line {line}: {command}: the value of `{key}` must be at most {MAX_VALUE_CHARS} characters of A-Z a-z 0-9 . _ / -{}",
                if is_pattern(key) { " * ? ," } else { "" }
            ),
            CommandError::UnclosedQuote { line, command } => {
                write!(f, "line {line}: {command}: a quoted value is not closed")
            }
            CommandError::TooManyCommands { found } => write!(
                f,
                "{found} commands in one comment; at most {MAX_COMMANDS} are run, so none was"
            ),
        }
    }
}

/// What a comment asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedComment {
    /// Valid commands, in order. Empty when [`CommandError::TooManyCommands`] is reported.
    pub commands: Vec<Command>,
    /// Lines that looked like commands but are not valid.
    pub errors: Vec<CommandError>,
}

impl ParsedComment {
    /// Whether the comment addressed the bot at all.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.errors.is_empty()
    }
}

/// Parses every command in a comment body.
pub fn parse_comment(body: &str) -> ParsedComment {
    let ignored = ignored_ranges(body);
    let mut out = ParsedComment::default();
    let mut offset = 0usize;
    for (index, raw_line) in body.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim_start();
        let Some(rest) = trimmed.strip_prefix('/') else {
            continue;
        };
        let at = start + (line.len() - trimmed.len());
        if ignored.iter().any(|r| r.contains(&at)) {
            continue;
        }
        let line_no = u32::try_from(index + 1).unwrap_or(u32::MAX);
        if let Some(result) = parse_line(rest, line_no) {
            match result {
                Ok(command) => out.commands.push(command),
                Err(error) => out.errors.push(error),
            }
        }
    }
    if out.commands.len() > MAX_COMMANDS {
        out.errors.insert(
            0,
            CommandError::TooManyCommands {
                found: out.commands.len(),
            },
        );
        out.commands.clear();
    }
    out
}

/// Byte ranges of the body where commands are not read.
fn ignored_ranges(body: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut code = Vec::new();
    for (event, range) in Parser::new_ext(body, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) | Event::Code(_) => {
                code.push(range.clone());
                ranges.push(range);
            }
            Event::Start(
                Tag::BlockQuote(_)
                | Tag::HtmlBlock
                | Tag::Heading { .. }
                | Tag::Link { .. }
                | Tag::Image { .. },
            )
            | Event::Html(_)
            | Event::InlineHtml(_) => ranges.push(range),
            _ => {}
        }
    }
    // HTML comments once more by plain text, whatever Markdown makes of them (an inline comment
    // spanning lines, an unclosed one), unless the `<!--` itself is inside code.
    let mut from = 0;
    while let Some(found) = body[from..].find("<!--") {
        let open = from + found;
        let close = body[open + 4..]
            .find("-->")
            .map_or(body.len(), |c| open + 4 + c + 3);
        if !code.iter().any(|r| r.contains(&open)) {
            ranges.push(open..close);
        }
        from = close.max(open + 4).min(body.len());
        if from >= body.len() {
            break;
        }
    }
    ranges
}

/// Parses the text after the slash; `None` when it is prose rather than a command.
fn parse_line(rest: &str, line: u32) -> Option<Result<Command, CommandError>> {
    let name_len = rest
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    let name = &rest[..name_len];
    let after = &rest[name_len..];
    let starts_well = name.starts_with(|c: char| c.is_ascii_lowercase());
    if !starts_well || !(after.is_empty() || after.starts_with(char::is_whitespace)) {
        return None;
    }
    let Some(kind) = CommandKind::from_name(name) else {
        return Some(Err(CommandError::UnknownCommand {
            line,
            name: echo(name),
            did_you_mean: suggestion(name),
        }));
    };
    Some(parse_args(after, kind, line))
}

/// The `key=value` arguments after a command's name, up to the end of the line or an
/// `@mention`; the first malformed one is the error.
fn parse_args(text: &str, kind: CommandKind, line: u32) -> Result<Command, CommandError> {
    let mut args = BTreeMap::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, first)) = chars.peek() else {
            break;
        };
        if first == '@' {
            // Addressed to someone else from here on.
            break;
        }
        let (key_end, has_eq) = read_key(&mut chars, start);
        if !has_eq {
            return Err(CommandError::BareArgument {
                line,
                command: kind,
                word: echo(&text[start..key_end]),
            });
        }
        let key = &text[start..key_end];
        let Some(value) = read_value(&mut chars) else {
            return Err(CommandError::UnclosedQuote {
                line,
                command: kind,
            });
        };
        check_arg(kind, line, key, &value)?;
        if args.insert(key.to_string(), value).is_some() {
            return Err(CommandError::DuplicateArgument {
                line,
                command: kind,
                key: key.to_string(),
            });
        }
    }
    Ok(Command { kind, args, line })
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// Reads a key through its `=`: where the key ends, and whether an `=` ended it (a bare word
/// ends at white space instead).
fn read_key(chars: &mut Chars<'_>, start: usize) -> (usize, bool) {
    let mut key_end = start;
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            break;
        }
        chars.next();
        if c == '=' {
            return (i, true);
        }
        key_end = i + c.len_utf8();
    }
    (key_end, false)
}

/// A quoted value through its closing quote (`None` when it is not closed), or a bare one up
/// to white space.
fn read_value(chars: &mut Chars<'_>) -> Option<String> {
    let mut value = String::new();
    if chars.next_if(|(_, c)| *c == '"').is_some() {
        for (_, c) in chars.by_ref() {
            if c == '"' {
                return Some(value);
            }
            value.push(c);
        }
        return None;
    }
    while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
        value.push(c);
    }
    Some(value)
}

/// Values are names, so anything else (spaces, quotes, markup) is refused rather than echoed.
fn check_arg(kind: CommandKind, line: u32, key: &str, value: &str) -> Result<(), CommandError> {
    if !kind.allowed_args().contains(&key) {
        return Err(CommandError::UnknownArgument {
            line,
            command: kind,
            key: echo(key),
        });
    }
    // A list of patterns that is only commas names nothing; dropping its empty items would
    // leave no pattern at all, which reads as "every cluster".
    if value.is_empty() || (is_pattern(key) && value.split(',').all(str::is_empty)) {
        return Err(CommandError::EmptyValue {
            line,
            command: kind,
            key: key.to_string(),
        });
    }
    let valid = value.chars().count() <= MAX_VALUE_CHARS
        && value.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | '_' | '/' | '-')
                || (is_pattern(key) && matches!(c, '*' | '?' | ','))
        });
    if !valid {
        return Err(CommandError::InvalidValue {
            line,
            command: kind,
            key: key.to_string(),
        });
    }
    Ok(())
}

/// Arguments that take name patterns (`clusters=render-*,train-?`).
fn is_pattern(key: &str) -> bool {
    key == "clusters"
}

/// User text as it may be shown back: at most a few characters, no backticks.
fn echo(text: &str) -> String {
    let mut s: String = text
        .chars()
        .filter(|c| *c != '`' && !c.is_control())
        .take(MAX_ECHO_CHARS)
        .collect();
    if text.chars().count() > MAX_ECHO_CHARS {
        s.push('…');
    }
    s
}

/// The known command within two edits of `name`, if any.
fn suggestion(name: &str) -> Option<CommandKind> {
    CommandKind::ALL
        .into_iter()
        .map(|k| (edit_distance(name, k.name()), k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kinds(body: &str) -> Vec<&'static str> {
        parse_comment(body)
            .commands
            .iter()
            .map(|c| c.kind.name())
            .collect()
    }

    #[test]
    fn several_commands_one_per_line() {
        let p = parse_comment(
            "Thanks!\n/plan\n  /verify-graphics cluster=gpu-a fleet=\"prod\"\n/help\n",
        );
        assert_eq!(p.errors, vec![]);
        assert_eq!(
            p.commands
                .iter()
                .map(|c| (c.kind, c.line))
                .collect::<Vec<_>>(),
            vec![
                (CommandKind::Plan, 2),
                (CommandKind::VerifyGraphics, 3),
                (CommandKind::Help, 4)
            ]
        );
        assert_eq!(p.commands[1].args["cluster"], "gpu-a");
        assert_eq!(p.commands[1].args["fleet"], "prod");
    }

    #[test]
    fn code_quotes_html_headings_and_links_are_ignored() {
        assert!(kinds("```\n/plan\n```\n").is_empty());
        assert!(kinds("~~~yaml\n/plan\n~~~\n").is_empty());
        assert!(kinds("    /plan\n").is_empty());
        assert!(kinds("run `/plan` please\n").is_empty());
        assert!(kinds("`/plan`\n").is_empty());
        assert!(kinds("> /plan\n").is_empty());
        assert!(
            kinds("> quoted\n/plan\n").is_empty(),
            "lazy continuation is quoted"
        );
        assert!(kinds("> > /plan\n").is_empty());
        assert!(kinds("<!-- /plan -->\n").is_empty());
        assert!(kinds("<!--\n/plan\n-->\n").is_empty());
        assert!(kinds("text <!--\n/plan\n--> more\n").is_empty());
        assert!(kinds("<!-- never closed\n/plan\n").is_empty());
        assert!(kinds("<div>\n/plan\n</div>\n").is_empty());
        assert!(kinds("# /plan\n").is_empty());
        assert!(kinds("[/plan](https://example.com)\n").is_empty());
        // Resumes after the ignored part.
        assert_eq!(kinds("```\n/plan\n```\n/help\n"), vec!["help"]);
        assert_eq!(kinds("> /plan\n\n/status\n"), vec!["status"]);
        assert_eq!(kinds("`<!--`\n/plan\n"), vec!["plan"]);
    }

    #[test]
    fn prose_with_slashes_is_not_a_command() {
        assert!(parse_comment("/tmp/x is full\n/plan.\n/ plan\n/Plan\nsee a/plan\n").is_empty());
    }

    #[test]
    fn cluster_patterns_may_use_wildcards_and_lists_but_other_values_may_not() {
        let p = parse_comment("/verify-graphics clusters=render-*,gpu-?\n/status fleet=a*\n");
        assert_eq!(p.commands[0].args["clusters"], "render-*,gpu-?");
        assert!(matches!(p.errors[0], CommandError::InvalidValue { .. }));
    }

    /// Issue #32: an empty, blank or comma-only selector is an error, never "all".
    #[test]
    fn a_selector_that_names_nothing_is_an_error() {
        for line in [
            "/status fleet=",
            "/status fleet=\"\"",
            "/status fleet=\" \"",
            "/verify-graphics clusters=,",
            "/verify-storage clusters=\",,\"",
            "/verify-mig fleet=a clusters=",
        ] {
            let p = parse_comment(&format!("{line}\n"));
            assert!(p.commands.is_empty(), "{line}: {:?}", p.commands);
            assert!(
                matches!(
                    p.errors[..],
                    [CommandError::EmptyValue { .. } | CommandError::InvalidValue { .. }]
                ),
                "{line}: {:?}",
                p.errors
            );
        }
        let p = parse_comment("/verify-graphics clusters=,render-*\n");
        assert_eq!(p.commands[0].args["clusters"], ",render-*");
    }

    #[test]
    fn errors_are_reported_per_line() {
        let p = parse_comment(
            "/pln\n/deploy now\n/plan cluster=a\n/plan fleet=a fleet=b\n/plan now\n/status fleet=\n/status fleet=\"a b\n/status fleet=a;b\n",
        );
        assert!(p.commands.is_empty());
        let shown: Vec<String> = p.errors.iter().map(|e| e.to_string()).collect();
        insta::assert_debug_snapshot!(shown, @r#"
        [
            "line 1: unknown command /pln (did you mean /plan?)",
            "line 2: unknown command /deploy",
            "line 3: /plan does not take `cluster` (it takes fleet)",
            "line 4: /plan was given `fleet` twice",
            "line 5: /plan: `now` is not a `key=value` argument",
            "line 6: /status: `fleet` has an empty value",
            "line 7: /status: a quoted value is not closed",
            "line 8: /status: the value of `fleet` must be at most 100 characters of A-Z a-z 0-9 . _ / -",
        ]
        "#);
    }

    #[test]
    fn mention_ends_the_line_and_too_many_commands_run_none() {
        let p = parse_comment("/plan fleet=a @other-bot do=things\n");
        assert_eq!(p.errors, vec![]);
        assert_eq!(p.commands[0].args.len(), 1);
        let p = parse_comment(&"/help\n".repeat(MAX_COMMANDS + 1));
        assert!(p.commands.is_empty());
        assert_eq!(
            p.errors,
            vec![CommandError::TooManyCommands {
                found: MAX_COMMANDS + 1
            }]
        );
        assert_eq!(
            parse_comment(&"/help\n".repeat(MAX_COMMANDS))
                .commands
                .len(),
            MAX_COMMANDS
        );
    }

    #[test]
    fn crlf_and_unicode() {
        assert_eq!(kinds("/plan\r\n/help\r\n"), vec!["plan", "help"]);
        let p = parse_comment("/plan fleet=prød\n/ünknown\n");
        assert!(matches!(p.errors[0], CommandError::InvalidValue { .. }));
        assert_eq!(p.errors.len(), 1);
        let long = format!("/{}\n", "x".repeat(200));
        let p = parse_comment(&long);
        let CommandError::UnknownCommand { name, .. } = &p.errors[0] else {
            panic!("expected an unknown command");
        };
        assert!(name.chars().count() <= MAX_ECHO_CHARS + 1);
    }

    proptest! {
        #[test]
        fn never_panics_and_is_deterministic(body in "\\PC{0,200}") {
            let a = parse_comment(&body);
            let b = parse_comment(&body);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn never_panics_on_markdown_like_input(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("/plan".to_string()), Just("/help".to_string()), Just("```".to_string()),
                    Just("> ".to_string()), Just("<!--".to_string()), Just("-->".to_string()),
                    Just("`".to_string()), Just("\n".to_string()), Just("\r\n".to_string()),
                    Just(" fleet=\"".to_string()), Just("=".to_string()), Just("@x".to_string()),
                    Just("    ".to_string()), Just("[".to_string()), Just("](u)".to_string()),
                    "\\PC{0,8}",
                ],
                0..40,
            )
        ) {
            let body: String = parts.concat();
            let parsed = parse_comment(&body);
            prop_assert!(parsed.commands.len() <= MAX_COMMANDS);
            for c in &parsed.commands {
                prop_assert!(c.line >= 1);
            }
        }
    }
}
