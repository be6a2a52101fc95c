//! The unified diff of a changed spec for the comment, withheld when the file holds a private
//! value and cut to the comment's size budget.

use similar::TextDiff;

use super::ChangedFile;
use crate::bot::report::{FileChange, SpecDiff};
use crate::github::FileStatus;

/// Unified diffs longer than this are cut (the comment has a size budget).
const MAX_DIFF_CHARS: usize = 20_000;

pub(super) fn spec_diff(file: &ChangedFile, change: &FileChange, holds_private: bool) -> SpecDiff {
    let mut diff = SpecDiff {
        path: file.path.clone(),
        change: change.clone(),
        unified: None,
        withheld: None,
    };
    if holds_private {
        diff.withheld = Some(
            "this file holds a private value (see fleet/privacy), so its diff is not shown".into(),
        );
        return diff;
    }
    let (Some(old), Some(new)) = (text(&file.base), head_text(file)) else {
        diff.withheld = Some("the file is not text, or could not be read".into());
        return diff;
    };
    let unified = TextDiff::from_lines(&old, &new)
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
