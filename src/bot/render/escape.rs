//! How a string a pull request controls (a path, a fleet, project or cluster name, a spec
//! error, a command's argument) enters the bot's Markdown so that GitHub shows it literally.
//!
//! Each template filter is one of these, chosen by where the string lands: [`md`] in running
//! text, [`cell`] in a table cell, [`code`] as a code span, [`cell_code`] as a code span in a
//! table cell, [`summary`] inside a `<details>` block's `<summary>`, [`fence`] as a fenced block.
//!
//! Backslash escapes only steer GitHub's Markdown parser. Mentions (`@team`), references
//! (`#1`, `owner/repo#2`, `GH-3`) and bare URLs are found afterwards, in the rendered text,
//! where an escape is already gone; an empty HTML comment (`<!-- -->`, invisible) splits the
//! text there instead, so no pattern matches across it.

/// Invisible in the rendered text, and ends a text node: nothing is matched across it.
const BREAK: &str = "<!-- -->";

/// One line: line breaks become spaces (a string cannot start a line of its own), other
/// control characters are dropped.
fn one_line(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().filter_map(|c| match c {
        '\n' | '\r' | '\t' => Some(' '),
        c if c.is_control() => None,
        c => Some(c),
    })
}

fn ends_with_ascii(before: &[char], word: &str) -> bool {
    before.len() >= word.len()
        && before[before.len() - word.len()..]
            .iter()
            .zip(word.chars())
            .all(|(a, b)| a.eq_ignore_ascii_case(&b))
}

/// Inline text made inert: one line, trimmed, Markdown punctuation escaped, entities and
/// HTML taken literally, mentions, references and autolinks split by [`BREAK`], and a line
/// start (`- `, `+ `, `1. `) that could open a block escaped.
pub(crate) fn md(text: &str) -> String {
    inline(text, true)
}

/// Text in a table cell: as [`md`] (which escapes `|`, the end of a cell); a cell opens no
/// block, so its start needs no escape.
pub(super) fn cell(text: &str) -> String {
    inline(text, false)
}

fn inline(text: &str, line_start: bool) -> String {
    let line: String = one_line(text).collect();
    let chars: Vec<char> = line.trim().chars().collect();
    let mut out = String::with_capacity(chars.len() + 8);
    let leading_digits = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        // What would open a list item or a thematic break at the start of a line.
        let opens_block = line_start
            && match c {
                '-' => i == 0 && matches!(next, None | Some(' ' | '-')),
                '+' => i == 0 && matches!(next, None | Some(' ')),
                '.' | ')' => i > 0 && i == leading_digits && matches!(next, None | Some(' ')),
                _ => false,
            };
        match c {
            // `&` too: `&commat;` would otherwise be decoded to a live `@`.
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '!' | '&' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '@' | '#' => {
                out.push(c);
                out.push_str(BREAK);
            }
            ':' if chars[i + 1..].starts_with(&['/', '/']) => {
                out.push(c);
                out.push_str(BREAK);
            }
            '.' if ends_with_ascii(&chars[..i], "www") => {
                out.push_str(BREAK);
                out.push(c);
            }
            '-' if ends_with_ascii(&chars[..i], "gh")
                && next.is_some_and(|n| n.is_ascii_digit()) =>
            {
                out.push_str(BREAK);
                out.push(c);
            }
            c if opens_block => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The longest backtick run GitHub's parser (cmark-gfm's `MAXBACKTICKS`, as comrak) opens a
/// code span with: a longer opener is literal text, and so is everything it meant to hold.
const MAX_CODE_TICKS: usize = 80;

/// A code span that survives backticks inside the text. GitHub links nothing inside one. Text
/// with a backtick run of [`MAX_CODE_TICKS`] or more cannot be held by one, and is [`md`]
/// text instead.
pub(crate) fn code(text: &str) -> String {
    let text: String = text
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' => Some(' '),
            '\t' => Some('\t'),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect();
    if text.is_empty() {
        return "(empty)".into();
    }
    let longest = longest_run(&text, '`');
    if longest >= MAX_CODE_TICKS {
        return md(&text);
    }
    let ticks = "`".repeat(longest + 1);
    if longest > 0 || text.starts_with(' ') || text.ends_with(' ') {
        format!("{ticks} {text} {ticks}")
    } else {
        format!("{ticks}{text}{ticks}")
    }
}

/// A code span in a table cell ([`cell`] text where [`code`] would not be a span). GFM splits a row at every `|` not taken by a backslash, code
/// spans included, and then drops the backslash before each `|`: a `|` behind an even run of
/// backslashes (none included) takes one more. A `|` behind an odd run cannot be shown in a
/// code span, so that text falls back to [`cell`], which shows it exactly.
pub(super) fn cell_code(text: &str) -> String {
    if longest_run(text, '`') >= MAX_CODE_TICKS {
        return cell(text);
    }
    let mut backslashes = 0;
    for c in text.chars() {
        match c {
            '\\' => backslashes += 1,
            '|' if backslashes % 2 == 1 => return cell(text),
            _ => backslashes = 0,
        }
    }
    code(text).replace('|', "\\|")
}

/// The content of a `<summary>`. Markdown is not read inside a raw HTML block, so a code span
/// means nothing there: the text is HTML-escaped inside `<code>`, one line (a blank line would
/// end the block), and `@`, `#` as entities. GitHub links no mention or reference in `<code>`.
pub(super) fn summary(text: &str) -> String {
    let mut out = String::from("<code>");
    let mut empty = true;
    for c in one_line(text) {
        empty = false;
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '@' => out.push_str("&#64;"),
            '#' => out.push_str("&#35;"),
            c => out.push(c),
        }
    }
    if empty {
        out.push_str("(empty)");
    }
    out.push_str("</code>");
    out
}

/// A fenced block whose fence is longer than any backtick run inside, so no line closes it.
pub(super) fn fence(text: &str, lang: &str) -> String {
    let ticks = "`".repeat((longest_run(text, '`') + 1).max(3));
    let body = text.trim_end_matches('\n');
    format!("{ticks}{lang}\n{body}\n{ticks}")
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in text.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_text_is_inert() {
        assert_eq!(
            md("a|b *c* @team <b>"),
            "a\\|b \\*c\\* @<!-- -->team \\<b\\>"
        );
        assert_eq!(md("two\nlines"), "two lines");
        assert_eq!(md("&commat;octo"), "\\&commat;octo");
        assert_eq!(md("octo/other#2"), "octo/other#<!-- -->2");
        assert_eq!(md("GH-1 gh-x"), "GH<!-- -->-1 gh-x");
        assert_eq!(md("https://e.io"), "https:<!-- -->//e.io");
        assert_eq!(md("WWW.e.io"), "WWW<!-- -->.e.io");
        assert_eq!(md("- a"), "\\- a");
        assert_eq!(md(" + a "), "\\+ a");
        assert_eq!(md("12. a 3."), "12\\. a 3.");
        assert_eq!(md("1) a"), "1\\) a");
        assert_eq!(md("a - b"), "a - b");
        assert_eq!(md("---"), "\\---");
        assert_eq!(md("-1 and +2 and 4.25"), "-1 and +2 and 4.25");
        assert_eq!(cell("- 1. x"), "- 1. x");
    }

    #[test]
    fn code_spans_and_fences() {
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code("has ` tick"), "`` has ` tick ``");
        assert_eq!(code(""), "(empty)");
        assert_eq!(fence("a\n```\nb\n", "diff"), "````diff\na\n```\nb\n````");
        // GitHub opens no code span with more than 80 backticks: such text is escaped text.
        let long = format!("{} gh-7 @x", "`".repeat(80));
        assert_eq!(
            code(&long),
            format!("{} gh<!-- -->-7 @<!-- -->x", "\\`".repeat(80))
        );
        assert_eq!(
            cell_code(&format!("a|{long}")),
            format!("a\\|{}", code(&long))
        );
        let short = "`".repeat(79);
        assert_eq!(code(&short), format!("{0} {short} {0}", "`".repeat(80)));
    }

    #[test]
    fn code_in_a_cell_keeps_its_pipes() {
        assert_eq!(cell_code("a|b"), "`a\\|b`");
        assert_eq!(cell_code("a\\\\|b"), "`a\\\\\\|b`");
        // One backslash before the pipe: shown exactly as escaped text instead.
        assert_eq!(cell_code("a\\|b"), "a\\\\\\|b");
        assert_eq!(cell_code("plain"), "`plain`");
    }

    #[test]
    fn summary_is_html_text() {
        assert_eq!(
            summary("fleets/@org/team<b>x</b><img src=x>.yaml"),
            "<code>fleets/&#64;org/team&lt;b&gt;x&lt;/b&gt;&lt;img src=x&gt;.yaml</code>"
        );
        assert_eq!(
            summary("a\"b'#1\n\nc&d"),
            "<code>a&quot;b&#39;&#35;1  c&amp;d</code>"
        );
    }
}
