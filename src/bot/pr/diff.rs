//! The unified diff of a changed spec for the comment, withheld when the file holds a private
//! value, not diffed at all past a size cap or a deadline, and cut to the comment's size budget.

use std::time::{Duration, Instant};

use similar::TextDiff;

use super::ChangedFile;
use crate::bot::report::{DiffWithheld, FileChange, SpecDiff};
use crate::github::FileStatus;

/// Unified diffs longer than this are cut (the comment has a size budget).
const MAX_DIFF_CHARS: usize = 20_000;

/// Neither side is diffed past this many lines. Myers costs (lines × differences): two unlike
/// 40,000-line specs pinned a worker for 20 s, where 10,000 lines cost about a second at
/// worst. The comment shows 20,000 characters of diff (a few hundred lines) in any case, and
/// the largest real specs (a 1,000-cluster fleet is about 3,500 lines) fit well inside.
const MAX_DIFF_LINES: usize = 10_000;

/// Neither side is diffed past this many bytes: the same bound for specs of very long lines
/// (a 4 MiB spec, the reader's limit, could be a few hundred lines of 10 KB each).
const MAX_DIFF_BYTES: usize = 512 * 1024;

/// The diff itself stops here and the comment says the change is too large. Under the caps a
/// worst-case diff costs about a second, so this bounds it at half of that; a legitimate diff
/// (few differences) takes milliseconds and is far from it.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

pub(super) fn spec_diff(file: &ChangedFile, change: &FileChange, holds_private: bool) -> SpecDiff {
    let mut diff = SpecDiff {
        path: file.path.clone(),
        change: change.clone(),
        unified: None,
        withheld: None,
    };
    if holds_private {
        diff.withheld = Some(DiffWithheld::HoldsPrivate);
        return diff;
    }
    let (Some(old), Some(new)) = (text(&file.base), head_text(file)) else {
        diff.withheld = Some(DiffWithheld::NotText);
        return diff;
    };
    if too_large(&old) || too_large(&new) {
        diff.withheld = Some(DiffWithheld::TooLarge);
        return diff;
    }
    let deadline = Instant::now() + DIFF_DEADLINE;
    let lines = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old.as_str(), new.as_str());
    // Past the deadline `similar` falls back to a coarse diff that is correct but not minimal;
    // a wall of removed and added lines is no review aid, so it is not shown.
    if Instant::now() >= deadline {
        diff.withheld = Some(DiffWithheld::TooLarge);
        return diff;
    }
    let unified = lines
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("a/{}", file.base_path()),
            &format!("b/{}", file.path),
        )
        .to_string();
    diff.unified = Some(cut_to_budget(unified));
    diff
}

/// Whether one side is past the caps, checked before any diffing.
fn too_large(text: &str) -> bool {
    text.len() > MAX_DIFF_BYTES || text.lines().count() > MAX_DIFF_LINES
}

/// Absent content diffs as empty; content that is not UTF-8 has no text.
fn text(bytes: &Option<Vec<u8>>) -> Option<String> {
    match bytes {
        None => Some(String::new()),
        Some(bytes) => String::from_utf8(bytes.clone()).ok(),
    }
}

/// A removed file diffs against nothing; a head that was not fetched cannot be diffed.
fn head_text(file: &ChangedFile) -> Option<String> {
    if file.status == FileStatus::Removed {
        Some(String::new())
    } else if file.head.is_none() {
        None
    } else {
        text(&file.head)
    }
}

fn cut_to_budget(unified: String) -> String {
    if unified.chars().count() <= MAX_DIFF_CHARS {
        return unified;
    }
    let cut: String = unified.chars().take(MAX_DIFF_CHARS).collect();
    let cut = cut
        .rsplit_once('\n')
        .map_or(cut.clone(), |(a, _)| a.to_string());
    format!("{cut}\n… (diff cut at {MAX_DIFF_CHARS} characters)\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modified(base: &str, head: &str) -> SpecDiff {
        let file = ChangedFile {
            path: "fleets/a.yaml".into(),
            status: FileStatus::Modified,
            head: Some(head.as_bytes().to_vec()),
            base: Some(base.as_bytes().to_vec()),
            ..ChangedFile::default()
        };
        spec_diff(&file, &FileChange::Modified, false)
    }

    fn lines(prefix: &str, n: usize) -> String {
        (0..n).map(|i| format!("{prefix}{i}: x\n")).collect()
    }

    #[test]
    fn a_small_change_is_diffed() {
        let d = modified("a: 1\nb: 2\n", "a: 1\nb: 3\n");
        assert_eq!(d.withheld, None);
        let unified = d.unified.unwrap();
        assert!(unified.contains("-b: 2\n+b: 3\n"), "{unified}");
    }

    #[test]
    fn two_unlike_specs_past_the_line_cap_are_too_large_not_diffed() {
        // The case: two unlike 40,000-line specs.
        let d = modified(&lines("old", 40_000), &lines("new", 40_000));
        assert_eq!(
            (d.withheld, d.unified),
            (Some(DiffWithheld::TooLarge), None)
        );
        // One side past the cap is enough, whichever it is.
        let small = lines("old", 10);
        let big = lines("new", MAX_DIFF_LINES + 1);
        assert_eq!(
            modified(&small, &big).withheld,
            Some(DiffWithheld::TooLarge)
        );
        assert_eq!(
            modified(&big, &small).withheld,
            Some(DiffWithheld::TooLarge)
        );
        // At the cap a near-identical pair is still diffed.
        let at_cap = lines("k", MAX_DIFF_LINES);
        let edited = at_cap.replacen("k5: x", "k5: y", 1);
        let d = modified(&at_cap, &edited);
        assert!(d.unified.unwrap().contains("+k5: y"));
    }

    #[test]
    fn a_side_past_the_byte_cap_is_too_large() {
        let long_lines = format!("a: {}\n", "x".repeat(MAX_DIFF_BYTES));
        assert_eq!(
            modified("a: 1\n", &long_lines).withheld,
            Some(DiffWithheld::TooLarge)
        );
    }
}
