//! The pinned npm artefacts (`@octokit/openapi`, `@octokit/webhooks-examples`) and webhook
//! payloads derived from the examples.
//!
//! The files are unpacked by `scripts/fetch-github-fixtures.sh` into `target/github-fixtures/`
//! (or `FLEETBOT_GITHUB_FIXTURES`). A missing file fails the test with a message saying to run
//! the script: these tests are never skipped.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::openapi::OpenApi;

pub const OPENAPI_VERSION: &str = "23.0.2";
pub const WEBHOOKS_EXAMPLES_VERSION: &str = "7.6.1";

fn dir() -> PathBuf {
    match std::env::var_os("FLEETBOT_GITHUB_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/github-fixtures"),
    }
}

pub fn read(relative: &str) -> Vec<u8> {
    let path = dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "GitHub test fixture {} is missing ({e}).\nRun `scripts/fetch-github-fixtures.sh` first (it npm-packs the pinned @octokit/openapi@{OPENAPI_VERSION} and @octokit/webhooks-examples@{WEBHOOKS_EXAMPLES_VERSION} and checks their integrity).",
            path.display()
        )
    })
}

/// GitHub's REST description, parsed once per test binary.
pub fn openapi() -> &'static OpenApi {
    static API: OnceLock<OpenApi> = OnceLock::new();
    API.get_or_init(|| {
        let bytes = read(&format!(
            "openapi-{OPENAPI_VERSION}/package/generated/api.github.com.json"
        ));
        let doc: Value = serde_json::from_slice(&bytes).expect("the REST description is JSON");
        let api = OpenApi::from_value(doc);
        assert_eq!(
            api.version(),
            OPENAPI_VERSION,
            "unexpected description version"
        );
        api
    })
}

/// `api.github.com/index.json` of the webhook examples: `[{name, actions, examples}]`.
pub fn webhook_events() -> &'static Vec<Value> {
    static EVENTS: OnceLock<Vec<Value>> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let bytes = read(&format!(
            "webhooks-examples-{WEBHOOKS_EXAMPLES_VERSION}/package/api.github.com/index.json"
        ));
        serde_json::from_slice(&bytes).expect("the webhook examples are JSON")
    })
}

/// Every `(event name, example payload)`.
pub fn all_examples() -> Vec<(String, Value)> {
    webhook_events()
        .iter()
        .flat_map(|e| {
            let name = e["name"].as_str().unwrap_or_default().to_string();
            e["examples"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |x| (name.clone(), x))
        })
        .collect()
}

/// The first example of `event` with `action` (preferring one with an installation).
pub fn example(event: &str, action: Option<&str>) -> Value {
    let mut candidates: Vec<Value> = all_examples()
        .into_iter()
        .filter(|(n, x)| n == event && x["action"].as_str() == action)
        .map(|(_, x)| x)
        .collect();
    candidates.sort_by_key(|x| x.get("installation").is_none());
    candidates
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no {event}/{action:?} example"))
}

/// Where a scenario's pull request lives.
#[derive(Debug, Clone)]
pub struct PrRef {
    pub owner: String,
    pub repo: String,
    pub number: u64,
    pub head_sha: String,
    pub base_sha: String,
    pub head_ref: String,
    pub base_ref: String,
    pub installation_id: u64,
}

fn retarget_repository(payload: &mut Value, pr: &PrRef) {
    let full = format!("{}/{}", pr.owner, pr.repo);
    payload["repository"]["full_name"] = json!(full);
    payload["repository"]["name"] = json!(pr.repo);
    payload["repository"]["owner"]["login"] = json!(pr.owner);
    // The examples predate some installs; PR cases need the installation (docs §10).
    payload["installation"] =
        json!({"id": pr.installation_id, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="});
}

/// A `pull_request` delivery derived from the `opened` (or other `action`) example.
pub fn pull_request(action: &str, pr: &PrRef) -> Vec<u8> {
    let mut p = example("pull_request", Some(action));
    retarget_repository(&mut p, pr);
    let full = format!("{}/{}", pr.owner, pr.repo);
    p["number"] = json!(pr.number);
    let x = &mut p["pull_request"];
    x["number"] = json!(pr.number);
    x["state"] = json!(if action == "closed" { "closed" } else { "open" });
    x["head"]["sha"] = json!(pr.head_sha);
    x["head"]["ref"] = json!(pr.head_ref);
    x["head"]["repo"]["full_name"] = json!(full);
    x["base"]["sha"] = json!(pr.base_sha);
    x["base"]["ref"] = json!(pr.base_ref);
    x["base"]["repo"]["full_name"] = json!(full);
    if action == "synchronize" {
        p["after"] = json!(pr.head_sha);
    }
    serde_json::to_vec(&p).unwrap()
}

/// An `issue_comment` `created` delivery on the pull request: the examples are all on plain
/// issues, so `issue.pull_request` is added (docs §10).
pub fn pr_comment(
    pr: &PrRef,
    comment_id: u64,
    author: &str,
    author_type: &str,
    body: &str,
) -> Vec<u8> {
    let mut p = example("issue_comment", Some("created"));
    retarget_repository(&mut p, pr);
    p["issue"]["number"] = json!(pr.number);
    p["issue"]["pull_request"] = json!({
        "url": format!("https://api.github.com/repos/{}/{}/pulls/{}", pr.owner, pr.repo, pr.number),
        "html_url": format!("https://github.com/{}/{}/pull/{}", pr.owner, pr.repo, pr.number),
        "diff_url": format!("https://github.com/{}/{}/pull/{}.diff", pr.owner, pr.repo, pr.number),
        "patch_url": format!("https://github.com/{}/{}/pull/{}.patch", pr.owner, pr.repo, pr.number),
        "merged_at": null
    });
    p["comment"]["id"] = json!(comment_id);
    p["comment"]["body"] = json!(body);
    p["comment"]["user"]["login"] = json!(author);
    p["comment"]["user"]["type"] = json!(author_type);
    p["sender"]["login"] = json!(author);
    p["sender"]["type"] = json!(author_type);
    serde_json::to_vec(&p).unwrap()
}

/// The `issue_comment` `created` delivery of a comment the fake holds: its id, author, body
/// and times as GitHub states them.
pub fn comment_delivery(pr: &PrRef, c: &super::Comment) -> Vec<u8> {
    let mut p: Value =
        serde_json::from_slice(&pr_comment(pr, c.id, &c.user, &c.user_type, &c.body)).unwrap();
    p["comment"]["created_at"] = json!(c.created_at);
    p["comment"]["updated_at"] = json!(c.updated_at);
    serde_json::to_vec(&p).unwrap()
}

/// A `pull_request` `closed` delivery of a merged pull request (merged by `merger` as
/// `merge_sha`).
pub fn merged(pr: &PrRef, merge_sha: &str, merger: &str) -> Vec<u8> {
    let mut p: Value = serde_json::from_slice(&pull_request("closed", pr)).unwrap();
    let x = &mut p["pull_request"];
    x["merged"] = json!(true);
    x["merge_commit_sha"] = json!(merge_sha);
    x["draft"] = json!(false);
    p["sender"]["login"] = json!(merger);
    serde_json::to_vec(&p).unwrap()
}

/// A `check_run` delivery about one of fleetbot's runs: `requested_action` with the button's
/// `identifier`, or `rerequested` when `identifier` is `None`.
pub fn check_run_event(
    pr: &PrRef,
    run_id: u64,
    name: &str,
    head_sha: &str,
    external_id: &str,
    identifier: Option<&str>,
    sender: &str,
) -> Vec<u8> {
    let action = if identifier.is_some() {
        "requested_action"
    } else {
        "rerequested"
    };
    let mut p = example("check_run", Some(action));
    retarget_repository(&mut p, pr);
    let run = &mut p["check_run"];
    run["id"] = json!(run_id);
    run["name"] = json!(name);
    run["head_sha"] = json!(head_sha);
    run["external_id"] = json!(external_id);
    run["pull_requests"] = json!([]);
    if let Some(id) = identifier {
        p["requested_action"] = json!({ "identifier": id });
    }
    p["sender"]["login"] = json!(sender);
    serde_json::to_vec(&p).unwrap()
}

/// A `push` delivery to `branch` of the repository, now at `after`, pushed by `pusher`.
pub fn push(pr: &PrRef, branch: &str, after: &str, pusher: &str) -> Vec<u8> {
    let mut p = example("push", None);
    retarget_repository(&mut p, pr);
    p["ref"] = json!(format!("refs/heads/{branch}"));
    p["after"] = json!(after);
    p["deleted"] = json!(false);
    p["sender"]["login"] = json!(pusher);
    serde_json::to_vec(&p).unwrap()
}
