//! Who may ask for an apply, and of which commit: the rule every request to apply passes
//! before it is acknowledged, as a pure function of what GitHub says now, the heads fleetbot
//! saw the pull request move to, and who asked.
//!
//! Every apply names one commit and one person (design decision 15). A merge applies its merge
//! commit: GitHub let its merger merge. A Re-run or the Apply button applies the commit its
//! `fleet/apply` run was made for, and nothing once the pull request has moved on. `/apply`
//! (and `/approve-destroy`) acts on the head that was current when its comment was written,
//! as the comment reads now, and only while the comment is recent. Everything but a merge needs
//! `/apply`'s permission, looked up for the sender every time.

use std::fmt;

use super::config::ApplyMode;
use crate::fleet::guard::Trigger;
use crate::github::Permission;
use crate::store::PrHead;

/// What asks for the apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask<'a> {
    /// The pull request was merged.
    Merge,
    /// A Re-run (`rerequested`) or the Apply button (`requested_action`) on a `fleet/apply`
    /// run made for `run_sha`.
    Run { button: bool, run_sha: &'a str },
    /// A command in a comment, as GitHub has the comment now (`None`: it was deleted).
    Comment(Option<CommentNow>),
}

impl Ask<'_> {
    pub fn trigger(&self) -> Trigger {
        match self {
            Ask::Merge => Trigger::Merge,
            Ask::Run { button: true, .. } => Trigger::Button,
            Ask::Run { button: false, .. } => Trigger::Rerun,
            Ask::Comment(_) => Trigger::Command,
        }
    }
}

/// A comment as re-read from GitHub before it is acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommentNow {
    /// The command acted on, as written (`/apply`), for what a refusal asks to comment again.
    pub command: &'static str,
    /// When it was written (GitHub's `created_at`, unix ms).
    pub created_at: i64,
    /// Whether its body, as it reads now, still asks for the command being run (with the same
    /// arguments): an edit to "never mind" takes the request back.
    pub still_asks: bool,
}

/// The pull request as GitHub reports it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullNow<'a> {
    pub open: bool,
    pub merged: bool,
    pub draft: bool,
    pub head_sha: &'a str,
    pub merge_commit_sha: Option<&'a str>,
    /// When it was merged (unix ms), once merged.
    pub merged_at: Option<i64>,
    /// Its base is the repository's default branch.
    pub into_default_branch: bool,
    /// Its head is a branch of the repository itself, not of a fork.
    pub from_repository: bool,
}

/// Everything the rule looks at.
#[derive(Debug, Clone, Copy)]
pub struct AuthorityInput<'a> {
    pub ask: Ask<'a>,
    pub pull: PullNow<'a>,
    pub mode: ApplyMode,
    /// The sender's permission on the repository (`None` for a merge, which asks nobody's).
    pub sender: Option<Permission>,
    /// What `/apply` needs (`.fleetbot.yml`).
    pub needed: Permission,
    /// The heads fleetbot saw the pull request move to, in any order.
    pub heads: &'a [PrHead],
    pub now_ms: i64,
    /// How old a command may be when it is acted on.
    pub max_age_ms: i64,
}

/// The commit the request may apply: the merge commit once merged, else the open head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub sha: String,
}

/// Why nothing is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    Permission {
        needed: Permission,
        have: Permission,
    },
    NotDefaultBranch,
    FromFork,
    ClosedUnmerged,
    Draft,
    /// Open, but the repository applies only merged pull requests.
    NotMerged {
        mode: ApplyMode,
    },
    NoMergeCommit,
    /// The run was made for `run_sha`; the pull request is at `now_sha` now.
    RunMovedOn {
        run_sha: String,
        now_sha: String,
    },
    CommentDeleted,
    CommentEdited,
    CommentTooOld {
        age_minutes: i64,
        max_minutes: i64,
    },
    /// The head is not the one that was current when the comment was written.
    HeadMovedAfterComment {
        command: &'static str,
    },
    /// fleetbot learned of the pull request's head only after the comment was written (or
    /// never did): it cannot tell that the comment's author saw it.
    HeadNotSeenBeforeComment {
        command: &'static str,
    },
    /// A head was pushed within the second the comment was written: GitHub's whole-second
    /// clock cannot tell which came first.
    HeadPushedWithinCommentSecond {
        command: &'static str,
    },
}

impl Denied {
    /// The reason as a metric and audit label.
    pub fn kind(&self) -> &'static str {
        match self {
            Denied::Permission { .. } => "permission",
            Denied::NotDefaultBranch => "not-default-branch",
            Denied::FromFork => "fork",
            Denied::ClosedUnmerged => "closed",
            Denied::Draft => "draft",
            Denied::NotMerged { .. } => "not-merged",
            Denied::NoMergeCommit => "no-merge-commit",
            Denied::RunMovedOn { .. } => "moved-on",
            Denied::CommentDeleted => "comment-deleted",
            Denied::CommentEdited => "comment-edited",
            Denied::CommentTooOld { .. } => "comment-too-old",
            Denied::HeadMovedAfterComment { .. } => "head-moved",
            Denied::HeadNotSeenBeforeComment { .. } => "head-not-seen",
            Denied::HeadPushedWithinCommentSecond { .. } => "head-same-second",
        }
    }

    /// Whether the refusal is said on the run that was pressed or re-run (`action_required`):
    /// the person asked on a run that no longer speaks for the pull request.
    pub fn said_on_the_run(&self) -> bool {
        matches!(self, Denied::RunMovedOn { .. })
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::Permission { needed, have } => write!(
                f,
                "applying needs {} permission on this repository; the sender has {}",
                needed.as_str(),
                have.as_str()
            ),
            Denied::NotDefaultBranch => f.write_str(
                "the pull request does not target the default branch; only merges into the default branch are applied",
            ),
            Denied::FromFork => f.write_str(
                "the pull request comes from a fork; fleetbot applies only pull requests from the repository itself",
            ),
            Denied::ClosedUnmerged => {
                f.write_str("the pull request was closed without merging; nothing is applied")
            }
            Denied::Draft => f.write_str("the pull request is a draft; nothing is applied"),
            Denied::NotMerged { mode } => write!(
                f,
                "the pull request is not merged; applying before merge needs apply: before-merge in .fleetbot.yml (it is {})",
                mode.as_str()
            ),
            Denied::NoMergeCommit => f.write_str("GitHub reports no merge commit yet"),
            Denied::RunMovedOn { run_sha, now_sha } => write!(
                f,
                "this run was for {}, and the pull request has moved on to {}; nothing was applied. Comment `/apply` to apply what the pull request is now",
                short(run_sha),
                short(now_sha)
            ),
            Denied::CommentDeleted => {
                f.write_str("the comment was deleted before it was acted on; nothing was applied")
            }
            Denied::CommentEdited => f.write_str(
                "the comment no longer asks for this (it was edited); nothing was applied",
            ),
            Denied::CommentTooOld {
                age_minutes,
                max_minutes,
            } => write!(
                f,
                "the comment is {age_minutes} minutes old, older than the {max_minutes} minutes a command is acted on; comment again"
            ),
            Denied::HeadMovedAfterComment { command } => write!(
                f,
                "the head moved after your comment; comment `{command}` again"
            ),
            Denied::HeadNotSeenBeforeComment { command } => write!(
                f,
                "fleetbot had not seen the pull request's head before your comment, so it cannot tell which head you saw; comment `{command}` again"
            ),
            Denied::HeadPushedWithinCommentSecond { command } => write!(
                f,
                "a commit was pushed within the same second as your comment, so fleetbot cannot tell which head you saw; comment `{command}` again"
            ),
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Decides one request. Order: who asks (nothing else is told to someone without the
/// permission), then what the pull request is, then what the request is bound to.
pub fn authorize(input: &AuthorityInput<'_>) -> Result<Granted, Denied> {
    if !matches!(input.ask, Ask::Merge) {
        let have = input.sender.unwrap_or(Permission::None);
        if have < input.needed {
            return Err(Denied::Permission {
                needed: input.needed,
                have,
            });
        }
    }
    let pull = &input.pull;
    if !pull.into_default_branch {
        return Err(Denied::NotDefaultBranch);
    }
    if !pull.from_repository {
        return Err(Denied::FromFork);
    }
    let sha = if pull.merged {
        pull.merge_commit_sha.ok_or(Denied::NoMergeCommit)?
    } else if !pull.open {
        return Err(Denied::ClosedUnmerged);
    } else if pull.draft {
        return Err(Denied::Draft);
    } else if input.mode != ApplyMode::BeforeMerge {
        return Err(Denied::NotMerged { mode: input.mode });
    } else {
        pull.head_sha
    };
    match input.ask {
        Ask::Merge => {}
        Ask::Run { run_sha, .. } => {
            if run_sha != sha {
                return Err(Denied::RunMovedOn {
                    run_sha: run_sha.to_string(),
                    now_sha: sha.to_string(),
                });
            }
        }
        Ask::Comment(comment) => bound_to_comment(
            comment.as_ref(),
            pull,
            input.heads,
            input.now_ms,
            input.max_age_ms,
        )?,
    }
    Ok(Granted {
        sha: sha.to_string(),
    })
}

/// Whether a command may act on the pull request as it is now: the comment still asks for it,
/// is recent, and was written while the pull request's head was the head it has now (or after
/// the merge, which nothing moves). `/approve-destroy` is bound by this too.
pub fn bound_to_comment(
    comment: Option<&CommentNow>,
    pull: &PullNow<'_>,
    heads: &[PrHead],
    now_ms: i64,
    max_age_ms: i64,
) -> Result<(), Denied> {
    let Some(comment) = comment else {
        return Err(Denied::CommentDeleted);
    };
    if !comment.still_asks {
        return Err(Denied::CommentEdited);
    }
    let age = now_ms.saturating_sub(comment.created_at);
    if age > max_age_ms {
        return Err(Denied::CommentTooOld {
            age_minutes: age / 60_000,
            max_minutes: max_age_ms / 60_000,
        });
    }
    let after_merge = pull.merged && pull.merged_at.is_some_and(|m| comment.created_at >= m);
    if after_merge {
        return Ok(());
    }
    // GitHub's times are whole seconds, fleetbot's record of a head is in milliseconds: a
    // head first seen within the second the comment was written may have come before the
    // comment or after it. Fail closed: the person comments again.
    let second = comment.created_at..=comment.created_at.saturating_add(999);
    if heads.iter().any(|h| second.contains(&h.seen_at)) {
        return Err(Denied::HeadPushedWithinCommentSecond {
            command: comment.command,
        });
    }
    match head_at(heads, comment.created_at) {
        Some(head) if head == pull.head_sha => Ok(()),
        Some(_) => Err(Denied::HeadMovedAfterComment {
            command: comment.command,
        }),
        None => Err(Denied::HeadNotSeenBeforeComment {
            command: comment.command,
        }),
    }
}

/// The head the pull request had at `at`: the newest one fleetbot saw at or before then.
pub fn head_at(heads: &[PrHead], at: i64) -> Option<&str> {
    heads
        .iter()
        .filter(|h| h.seen_at <= at)
        .max_by(|a, b| {
            a.seen_at
                .cmp(&b.seen_at)
                .then_with(|| a.head_sha.cmp(&b.head_sha))
        })
        .map(|h| h.head_sha.as_str())
}

#[cfg(test)]
mod tests;
