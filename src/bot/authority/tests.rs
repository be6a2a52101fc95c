//! The table of cases the apply authority rule decides.

use super::*;

const MIN: i64 = 60_000;
const T: i64 = 1_800_000_000_000;
const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const M: &str = "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm";

fn open_at(head: &'static str) -> PullNow<'static> {
    PullNow {
        open: true,
        merged: false,
        draft: false,
        head_sha: head,
        merge_commit_sha: None,
        merged_at: None,
        into_default_branch: true,
        from_repository: true,
    }
}

fn merged_at(head: &'static str, at: i64) -> PullNow<'static> {
    PullNow {
        open: false,
        merged: true,
        merge_commit_sha: Some(M),
        merged_at: Some(at),
        ..open_at(head)
    }
}

fn seen(pairs: &[(&str, i64)]) -> Vec<PrHead> {
    pairs
        .iter()
        .map(|(sha, at)| PrHead {
            head_sha: sha.to_string(),
            seen_at: *at,
        })
        .collect()
}

fn comment(created_at: i64) -> Ask<'static> {
    Ask::Comment(Some(CommentNow {
        command: "/apply",
        created_at,
        still_asks: true,
    }))
}

fn rerun(run_sha: &str) -> Ask<'_> {
    Ask::Run {
        button: false,
        run_sha,
    }
}

fn button(run_sha: &str) -> Ask<'_> {
    Ask::Run {
        button: true,
        run_sha,
    }
}

/// One case: the request, the pull request, the sender, the heads seen, and "now".
fn decide(
    ask: Ask<'_>,
    pull: PullNow<'_>,
    mode: ApplyMode,
    sender: Option<Permission>,
    heads: &[PrHead],
    now: i64,
) -> Result<String, Denied> {
    authorize(&AuthorityInput {
        ask,
        pull,
        mode,
        sender,
        needed: Permission::Maintain,
        heads,
        now_ms: now,
        max_age_ms: 60 * MIN,
    })
    .map(|g| g.sha)
}

use ApplyMode::{BeforeMerge, Manual, OnMerge};
use Permission::{Admin, Maintain, None as NoAccess, Read, Write};

#[test]
fn a_merge_applies_its_merge_commit_and_asks_nobodys_permission() {
    let heads = seen(&[(A, T)]);
    assert_eq!(
        decide(Ask::Merge, merged_at(A, T), OnMerge, None, &heads, T),
        Ok(M.into())
    );
    let mut pull = merged_at(A, T);
    pull.merge_commit_sha = None;
    assert_eq!(
        decide(Ask::Merge, pull, OnMerge, None, &heads, T),
        Err(Denied::NoMergeCommit)
    );
}

#[test]
fn a_rerun_or_the_button_needs_applys_permission_every_time() {
    let heads = seen(&[(A, T)]);
    for ask in [rerun(M), button(M)] {
        for have in [None, Some(NoAccess), Some(Read), Some(Write)] {
            let got = decide(ask, merged_at(A, T), OnMerge, have, &heads, T);
            assert_eq!(
                got,
                Err(Denied::Permission {
                    needed: Maintain,
                    have: have.unwrap_or(NoAccess)
                }),
                "{ask:?} by {have:?}"
            );
        }
        for have in [Maintain, Admin] {
            assert_eq!(
                decide(ask, merged_at(A, T), OnMerge, Some(have), &heads, T),
                Ok(M.into())
            );
        }
    }
}

#[test]
fn a_rerun_applies_only_the_commit_its_run_was_made_for() {
    // The reproduction: /apply applied head A before the merge; B was pushed; a Re-run of
    // A's run must not apply B.
    let heads = seen(&[(A, T), (B, T + MIN)]);
    let got = decide(
        rerun(A),
        open_at(B),
        BeforeMerge,
        Some(Maintain),
        &heads,
        T + 2 * MIN,
    );
    assert_eq!(
        got,
        Err(Denied::RunMovedOn {
            run_sha: A.into(),
            now_sha: B.into()
        })
    );
    assert!(got.unwrap_err().said_on_the_run());
    // The run of the head that is current applies that head.
    assert_eq!(
        decide(rerun(B), open_at(B), BeforeMerge, Some(Maintain), &heads, T),
        Ok(B.into())
    );
    // Once merged, only the merge commit's run applies (the merge commit).
    assert_eq!(
        decide(button(B), merged_at(B, T), OnMerge, Some(Admin), &heads, T),
        Err(Denied::RunMovedOn {
            run_sha: B.into(),
            now_sha: M.into()
        })
    );
}

#[test]
fn a_stranger_learns_nothing_about_the_pull_request() {
    // The permission is checked before anything about the pull request is told.
    let mut fork = open_at(A);
    fork.from_repository = false;
    assert_eq!(
        decide(rerun(A), fork, BeforeMerge, Some(NoAccess), &[], T),
        Err(Denied::Permission {
            needed: Maintain,
            have: NoAccess
        })
    );
}

#[test]
fn the_pull_request_must_be_one_fleetbot_applies() {
    let heads = seen(&[(A, T)]);
    let c = comment(T + MIN);
    let now = T + 2 * MIN;
    let mut other_base = merged_at(A, T);
    other_base.into_default_branch = false;
    let mut fork = merged_at(A, T);
    fork.from_repository = false;
    let mut closed = open_at(A);
    closed.open = false;
    let mut draft = open_at(A);
    draft.draft = true;
    let cases = [
        (other_base, BeforeMerge, Denied::NotDefaultBranch),
        (fork, BeforeMerge, Denied::FromFork),
        (closed, BeforeMerge, Denied::ClosedUnmerged),
        (draft, BeforeMerge, Denied::Draft),
        (open_at(A), OnMerge, Denied::NotMerged { mode: OnMerge }),
        (open_at(A), Manual, Denied::NotMerged { mode: Manual }),
    ];
    for (pull, mode, want) in cases {
        assert_eq!(
            decide(c, pull, mode, Some(Admin), &heads, now),
            Err(want.clone()),
            "{want:?}"
        );
    }
}

#[test]
fn apply_acts_on_the_head_current_when_the_comment_was_written() {
    let now = T + 10 * MIN;
    // Seen before the comment, still the head: applied.
    let heads = seen(&[(A, T)]);
    assert_eq!(
        decide(
            comment(T + MIN),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Ok(A.into())
    );
    // GitHub's times are whole seconds: a head first seen within the comment's second may
    // have come before it or after it, so fleetbot refuses (issue 52: it used to count such a
    // head as seen before, and applied a head pushed right after the comment) …
    for within in [0, 1, 500, 999] {
        let heads = seen(&[(A, T + within)]);
        assert_eq!(
            decide(
                comment(T),
                open_at(A),
                BeforeMerge,
                Some(Maintain),
                &heads,
                now
            ),
            Err(Denied::HeadPushedWithinCommentSecond { command: "/apply" }),
            "{within}"
        );
    }
    // … also when the head it would act on was seen well before, and only another head came
    // in that second.
    let heads = seen(&[(A, T - MIN), (B, T + 300)]);
    let denied = decide(
        comment(T),
        open_at(A),
        BeforeMerge,
        Some(Maintain),
        &heads,
        now,
    )
    .unwrap_err();
    assert_eq!(
        denied,
        Denied::HeadPushedWithinCommentSecond { command: "/apply" }
    );
    assert_eq!(
        denied.to_string(),
        "a commit was pushed within the same second as your comment, so fleetbot cannot tell which head you saw; comment `/apply` again"
    );
    // A head seen a millisecond before the comment's second is before it.
    let heads = seen(&[(A, T - 1)]);
    assert_eq!(
        decide(
            comment(T),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Ok(A.into())
    );
    let heads = seen(&[(A, T + 1000)]);
    assert_eq!(
        decide(
            comment(T),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Err(Denied::HeadNotSeenBeforeComment { command: "/apply" })
    );
    // B was pushed after the comment: the comment's author never saw it.
    let heads = seen(&[(A, T), (B, T + 2 * MIN)]);
    assert_eq!(
        decide(
            comment(T + MIN),
            open_at(B),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Err(Denied::HeadMovedAfterComment { command: "/apply" })
    );
    // Pushed away to B and back to A after the comment: at the comment the head was B.
    let heads = seen(&[(A, T), (B, T + MIN), (A, T + 3 * MIN)]);
    assert_eq!(
        decide(
            comment(T + 2 * MIN),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Err(Denied::HeadMovedAfterComment { command: "/apply" })
    );
    // No head seen before the comment: fleetbot cannot tell what its author saw.
    let heads = seen(&[(A, T + 2 * MIN)]);
    assert_eq!(
        decide(
            comment(T + MIN),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &heads,
            now
        ),
        Err(Denied::HeadNotSeenBeforeComment { command: "/apply" })
    );
    assert_eq!(
        decide(
            comment(T + MIN),
            open_at(A),
            BeforeMerge,
            Some(Maintain),
            &[],
            now
        ),
        Err(Denied::HeadNotSeenBeforeComment { command: "/apply" })
    );
}

#[test]
fn a_merged_pull_request_binds_a_comment_written_before_the_merge_to_its_last_head() {
    let now = T + 10 * MIN;
    // Written after the merge: the merge commit, whatever fleetbot saw of the heads.
    assert_eq!(
        decide(
            comment(T + 2 * MIN),
            merged_at(A, T + MIN),
            Manual,
            Some(Maintain),
            &[],
            now
        ),
        Ok(M.into())
    );
    // Written before the merge, on the head that was then merged.
    let heads = seen(&[(A, T)]);
    assert_eq!(
        decide(
            comment(T + MIN),
            merged_at(A, T + 2 * MIN),
            Manual,
            Some(Maintain),
            &heads,
            now
        ),
        Ok(M.into())
    );
    // Written before a push that was then merged.
    let heads = seen(&[(A, T), (B, T + 2 * MIN)]);
    assert_eq!(
        decide(
            comment(T + MIN),
            merged_at(B, T + 3 * MIN),
            Manual,
            Some(Maintain),
            &heads,
            now
        ),
        Err(Denied::HeadMovedAfterComment { command: "/apply" })
    );
}

#[test]
fn a_deleted_edited_or_old_comment_applies_nothing() {
    let heads = seen(&[(A, T)]);
    let run = |ask, now| decide(ask, open_at(A), BeforeMerge, Some(Admin), &heads, now);
    assert_eq!(
        run(Ask::Comment(None), T + MIN),
        Err(Denied::CommentDeleted)
    );
    let edited = Ask::Comment(Some(CommentNow {
        command: "/apply",
        created_at: T + MIN,
        still_asks: false,
    }));
    assert_eq!(run(edited, T + 2 * MIN), Err(Denied::CommentEdited));
    // The window is inclusive: exactly an hour old is still acted on, a minute more is not.
    assert_eq!(run(comment(T + MIN), T + 61 * MIN), Ok(A.into()));
    assert_eq!(
        run(comment(T + MIN), T + 62 * MIN),
        Err(Denied::CommentTooOld {
            age_minutes: 61,
            max_minutes: 60
        })
    );
    // Permission is still checked first, for the author of the comment.
    assert_eq!(
        decide(
            comment(T + MIN),
            open_at(A),
            BeforeMerge,
            Some(Write),
            &heads,
            T + 2 * MIN
        ),
        Err(Denied::Permission {
            needed: Maintain,
            have: Write
        })
    );
}

#[test]
fn refusals_say_what_to_do_and_name_commits_by_their_short_sha() {
    let moved = Denied::RunMovedOn {
        run_sha: A.into(),
        now_sha: B.into(),
    };
    let text = moved.to_string();
    assert!(
        text.contains("aaaaaaa") && text.contains("bbbbbbb"),
        "{text}"
    );
    assert!(!text.contains(A), "{text}");
    assert!(text.contains("Comment `/apply`"), "{text}");
    assert_eq!(
        Denied::HeadMovedAfterComment { command: "/apply" }.to_string(),
        "the head moved after your comment; comment `/apply` again"
    );
}

#[test]
fn the_head_at_a_time_is_the_newest_seen_at_or_before_it() {
    let heads = seen(&[(B, T + MIN), (A, T), (A, T + 3 * MIN)]);
    assert_eq!(head_at(&heads, T - 1), None);
    assert_eq!(head_at(&heads, T), Some(A));
    assert_eq!(head_at(&heads, T + 2 * MIN), Some(B));
    assert_eq!(head_at(&heads, T + 3 * MIN), Some(A));
}
