//! What a queued job keeps of a delivery (`parse_event_kept`) decodes to the same event as the
//! delivery itself: for every example payload GitHub publishes, and for generated payloads
//! with absent, `null`, escaped and unexpected fields.

use fleetbot::github::events::{parse_event, parse_event_kept};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fake_github::fixtures;

/// Asserts the kept part decodes as the whole does; returns the kept bytes.
fn kept_decodes_the_same(event: &str, body: &[u8]) -> Vec<u8> {
    let whole = parse_event(event, body).expect("the whole payload decodes");
    decodes_the_same(event, body, whole)
}

/// For a payload that decodes, [`kept_decodes_the_same`]; one that does not, does not when
/// kept either.
fn the_same_either_way(event: &str, body: &[u8]) {
    match parse_event(event, body) {
        Ok(whole) => {
            decodes_the_same(event, body, whole);
        }
        Err(_) => assert!(parse_event_kept(event, body).is_err()),
    }
}

fn decodes_the_same(event: &str, body: &[u8], whole: fleetbot::github::Event) -> Vec<u8> {
    let (read, kept) = parse_event_kept(event, body).expect("decodes when kept too");
    assert_eq!(read, whole, "{event}: the event read while keeping");
    let kept = kept.expect("a decoded payload is written back");
    let again = parse_event(event, &kept)
        .unwrap_or_else(|e| panic!("{event}: the kept part does not decode: {e}"));
    assert_eq!(
        again,
        whole,
        "{event}: kept {}",
        String::from_utf8_lossy(&kept)
    );
    kept
}

#[test]
fn every_github_example_keeps_what_decodes_to_the_same_event() {
    let handled = [
        "pull_request",
        "issue_comment",
        "check_run",
        "installation",
        "ping",
        "push",
    ];
    let (mut checked, mut whole_bytes, mut kept_bytes) = (0, 0, 0);
    for (event, payload) in fixtures::all_examples() {
        let body = serde_json::to_vec(&payload).unwrap();
        if handled.contains(&event.as_str()) {
            let kept = kept_decodes_the_same(&event, &body);
            whole_bytes += body.len();
            kept_bytes += kept.len();
            checked += 1;
        } else {
            // Any other event is read for its action alone, and keeps only that.
            let kept = kept_decodes_the_same(&event, &body);
            let kept: Value = serde_json::from_slice(&kept).unwrap();
            assert_eq!(kept, json!({"action": payload.get("action")}), "{event}");
        }
    }
    assert!(checked > 50, "{checked} examples of handled events");
    // GitHub's payloads are mostly what fleetbot does not read.
    assert!(
        kept_bytes * 10 < whole_bytes,
        "kept {kept_bytes} of {whole_bytes} bytes"
    );
}

#[test]
fn a_payload_that_does_not_decode_has_nothing_kept_for_it() {
    assert!(parse_event_kept("pull_request", b"{\"action\": 1}").is_err());
    assert!(parse_event_kept("issue_comment", b"not json").is_err());
    // An event fleetbot does not handle may carry anything: it reads no action from it.
    let (_, kept) = parse_event_kept("star", b"not json").unwrap();
    assert_eq!(kept.as_deref(), Some(&b"{\"action\":null}"[..]));
}

/// A string as GitHub might send it: escapes, quotes, non-ASCII.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9/._-]{0,20}",
        any::<String>(),
        Just("\"quoted\" \\ back\nslash \u{1F680}".to_string()),
    ]
}

/// A field's value or its absence (`None`: left out); `null` is a value here.
fn maybe(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), Just(Some(Value::Null)), value.prop_map(Some)]
}

fn user() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![Just(json!("Bot")), Just(json!("User"))];
    (text(), prop::option::of(kind))
        .prop_map(|(login, kind)| with(json!({"login": login}), "type", kind))
}

fn git_ref() -> impl Strategy<Value = Value> {
    (
        text(),
        text(),
        maybe(text().prop_map(|n| json!({"full_name": n}))),
    )
        .prop_map(|(sha, name, repo)| with(json!({"sha": sha, "ref": name}), "repo", repo))
}

/// `object` with `key` set to `value`, or without it.
fn with(mut object: Value, key: &str, value: Option<Value>) -> Value {
    if let Some(v) = value {
        object[key] = v;
    }
    object
}

/// Fields fleetbot does not read, where GitHub puts plenty.
fn noise() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z_]{1,12}", any::<i64>().prop_map(Value::from), 0..4)
        .prop_map(|m| json!(m))
}

fn pull_request() -> impl Strategy<Value = Value> {
    (
        (text(), any::<u64>(), any::<u64>(), git_ref(), git_ref()),
        (
            maybe(any::<bool>().prop_map(Value::from)),
            maybe(any::<bool>().prop_map(Value::from)),
            maybe(text().prop_map(Value::from)),
        ),
        (
            text(),
            maybe(any::<u64>().prop_map(|id| json!({"id": id}))),
            user(),
            noise(),
        ),
    )
        .prop_map(
            |(
                (action, number, inner, head, base),
                (draft, merged, sha),
                (repo, inst, sender, noise),
            )| {
                let mut pr = json!({"number": inner, "head": head, "base": base, "extra": noise});
                pr = with(pr, "draft", draft.filter(|d| !d.is_null()));
                pr = with(pr, "merged", merged);
                pr = with(pr, "merge_commit_sha", sha);
                let p = json!({
                    "action": action, "number": number, "pull_request": pr,
                    "repository": {"full_name": repo, "private": true}, "sender": sender,
                });
                with(p, "installation", inst)
            },
        )
}

fn issue_comment() -> impl Strategy<Value = Value> {
    (
        (text(), any::<u64>(), maybe(noise()), any::<u64>()),
        (maybe(text().prop_map(Value::from)), user(), text()),
        maybe(any::<u64>().prop_map(|id| json!({"id": id}))),
    )
        .prop_map(|((action, number, pr, id), (body, author, repo), inst)| {
            let issue = with(json!({"number": number, "title": "t"}), "pull_request", pr);
            let comment = with(json!({"id": id, "user": author}), "body", body);
            let p = json!({
                "action": action, "issue": issue, "comment": comment,
                "repository": {"full_name": repo},
            });
            with(p, "installation", inst)
        })
}

fn check_run() -> impl Strategy<Value = Value> {
    (
        (
            prop_oneof![
                Just("requested_action".to_string()),
                Just("rerequested".to_string()),
                text()
            ],
            any::<u64>(),
            text(),
            text(),
        ),
        (
            maybe(text().prop_map(Value::from)),
            prop::collection::vec(any::<u64>(), 0..3),
            maybe(text().prop_map(|i| json!({"identifier": i}))),
        ),
        (text(), user()),
    )
        .prop_map(
            |((action, id, name, sha), (external, prs, requested), (repo, sender))| {
                let prs: Vec<Value> = prs.into_iter().map(|n| json!({"number": n})).collect();
                let run = json!({"id": id, "name": name, "head_sha": sha, "pull_requests": prs});
                let run = with(run, "external_id", external);
                let p = json!({
                    "action": action, "check_run": run, "repository": {"full_name": repo},
                    "sender": sender,
                });
                with(p, "requested_action", requested)
            },
        )
}

proptest! {
    #[test]
    fn generated_pull_requests_keep_what_decodes_the_same(p in pull_request()) {
        the_same_either_way("pull_request", p.to_string().as_bytes());
    }

    #[test]
    fn generated_comments_keep_what_decodes_the_same(p in issue_comment()) {
        the_same_either_way("issue_comment", p.to_string().as_bytes());
    }

    #[test]
    fn generated_check_runs_keep_what_decodes_the_same(p in check_run()) {
        the_same_either_way("check_run", p.to_string().as_bytes());
    }
}
