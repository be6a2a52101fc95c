//! The App's registration (`deploy/github-app-manifest.json`) held against what the code does,
//! and the fake GitHub held to GitHub's rules for installation tokens (issue 37, item 1).
//!
//! * every event the server handles is one GitHub delivers to the App, every subscribed event
//!   is handled, and each is one the manifest's permissions let it subscribe to (machine-read
//!   from GitHub's webhook description, `@octokit/openapi-webhooks`, pinned by
//!   `scripts/fetch-github-fixtures.sh`);
//! * every REST operation the client names has a row in the fake's permission table, and the
//!   manifest grants each, save the drift issue's writes, which are refused by design;
//! * tokens: scoped to the installation's repositories (404 elsewhere), to its permissions (403
//!   with GitHub's body and `X-Accepted-GitHub-Permissions`), refused once expired (401), and
//!   the client renews them before they expire.

use crate::fake_github;

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use fake_github::manifest::{assert_subscribed, manifest};
use fake_github::permissions::{self, Level, Needs, RULES};
use fake_github::{APP_ID, FakeGitHub, INSTALLATION, NAME, OWNER, REPO, github_client, sha};
use fleetbot::github::{AppCredentials, ClientError, RepoName};
use serde_json::Value;

/// Every operation id the client's source names: the `"group/operation"` literals of
/// `src/github/client/*.rs` that are operations of GitHub's REST description.
fn client_operations() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/github/client");
    let literal = regex::Regex::new(r#""([a-z]+/[a-z-]+)""#).unwrap();
    let mut ops = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for c in literal.captures_iter(&text) {
                if fake_github::fixtures::openapi()
                    .enabled_for_apps(&c[1])
                    .is_some()
                {
                    ops.insert(c[1].to_string());
                }
            }
        }
    }
    ops
}

/// The drift tracking issue's writes: the manifest does not ask for Issues write, so GitHub
/// refuses them and the pass warns (docs/github-app.md, "Registering the App").
const REFUSED_BY_DESIGN: [&str; 2] = ["issues/create", "issues/update"];

#[test]
fn every_operation_the_client_calls_has_a_permission_row_from_the_description() {
    let ops = client_operations();
    assert!(
        ops.len() >= 20,
        "the scan found the client's calls: {ops:?}"
    );
    let rows: BTreeSet<String> = RULES.iter().map(|r| r.operation.to_string()).collect();
    let missing: Vec<&String> = ops.difference(&rows).collect();
    assert!(
        missing.is_empty(),
        "client calls without a row in tests/support/fake_github/permissions.rs: {missing:?}"
    );
    let unused: Vec<&String> = rows.difference(&ops).collect();
    assert!(unused.is_empty(), "rows the client never calls: {unused:?}");
    for r in RULES {
        let enabled = fake_github::fixtures::openapi().enabled_for_apps(r.operation);
        match r.needs {
            Needs::Code => assert_eq!(enabled, Some(false), "{}", r.operation),
            _ => assert_eq!(enabled, Some(true), "{} for GitHub Apps", r.operation),
        }
        assert!(!r.source.is_empty());
    }
}

#[test]
fn the_manifest_grants_every_call_the_code_makes_save_the_drift_issues_writes() {
    let granted = &manifest().default_permissions;
    for r in RULES {
        // The bot's comments, reactions and edits are on pull requests; the drift issue's
        // update is on an issue.
        let on_pr = r.operation != "issues/update";
        let allowed = permissions::allowed(granted, &permissions::sets(r.needs, Some(on_pr)));
        if REFUSED_BY_DESIGN.contains(&r.operation) {
            assert!(
                !allowed,
                "{} is allowed now: the drift issue no longer degrades; update docs/github-app.md and REFUSED_BY_DESIGN",
                r.operation
            );
        } else {
            assert!(
                allowed,
                "{} needs {:?} ({}); the manifest grants {granted:?}",
                r.operation,
                permissions::sets(r.needs, Some(on_pr)),
                r.source
            );
        }
    }
}

/// The manifest key of a permission as GitHub's docs title it.
fn permission_key(title: &str) -> String {
    match title {
        "Commit statuses" => "statuses".into(),
        "Code scanning alerts" => "security_events".into(),
        "Dependabot alerts" => "vulnerability_alerts".into(),
        "Members" => "members".into(),
        other => other.to_lowercase().replace(' ', "_"),
    }
}

/// Per event, the permissions (any one of them) that let an App subscribe to it, read from
/// each webhook's summary and description: "To subscribe to this event, a GitHub App must have
/// at least read-level access for the "Issues" repository permission." `None`: every App
/// receives it, or the description names no permission.
fn event_permissions() -> BTreeMap<String, Option<Vec<String>>> {
    let doc: Value = serde_json::from_slice(&fake_github::fixtures::read(
        "openapi-webhooks-12.1.0/package/generated/api.github.com.json",
    ))
    .unwrap();
    let sentence = regex::Regex::new(
        r#"must have at least read-level access for the "([^"]+)"(?: or "([^"]+)")?"#,
    )
    .unwrap();
    let mut events = BTreeMap::new();
    for (_, hook) in doc["webhooks"].as_object().unwrap() {
        let post = &hook["post"];
        let xg = &post["x-github"];
        let Some(event) = xg["subcategory"].as_str() else {
            continue;
        };
        if !xg["supported-webhook-types"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "app"))
        {
            continue;
        }
        let text = format!(
            "{} {}",
            post["summary"].as_str().unwrap_or_default(),
            post["description"].as_str().unwrap_or_default()
        );
        let needs = sentence.captures(&text).map(|c| {
            [c.get(1), c.get(2)]
                .into_iter()
                .flatten()
                .map(|m| permission_key(m.as_str()))
                .collect::<Vec<_>>()
        });
        events.entry(event.to_string()).or_insert(needs);
    }
    events
}

#[test]
fn each_subscribed_event_is_one_the_manifests_permissions_let_it_subscribe_to() {
    let rules = event_permissions();
    assert_eq!(
        rules["issue_comment"],
        Some(vec!["issues".to_string()]),
        "GitHub's rule for issue_comment was read"
    );
    let granted = &manifest().default_permissions;
    for event in &manifest().default_events {
        let needs = rules
            .get(event)
            .unwrap_or_else(|| panic!("{event}: no such App event in GitHub's description"))
            .clone()
            .unwrap_or_else(|| panic!("{event}: GitHub names no permission to subscribe"));
        assert!(
            needs
                .iter()
                .any(|n| permissions::grants(granted, n, Level::Read)),
            "GitHub refuses to register the manifest: `{event}` needs {needs:?} read, the manifest grants {granted:?}"
        );
    }
}

#[test]
fn the_events_the_server_handles_are_the_events_github_delivers() {
    let delivered = manifest().delivered_events();
    for event in fleetbot::server::HANDLED_EVENTS {
        assert!(
            delivered.contains(event),
            "the server handles `{event}`, which GitHub never delivers to the App"
        );
    }
    for event in &manifest().default_events {
        assert!(
            fleetbot::server::HANDLED_EVENTS.contains(&event.as_str()),
            "the App subscribes to `{event}` and drops every delivery of it"
        );
    }
}

#[test]
#[should_panic(expected = "GitHub never delivers `issues` to this App")]
fn the_harness_refuses_to_deliver_an_event_the_app_is_not_subscribed_to() {
    assert_subscribed("issues");
}

/// A request as the client sends it (the fake checks the headers), with `token`.
fn request(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
) -> reqwest::RequestBuilder {
    http.request(method, url)
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28")
        .header("user-agent", "fleetbot-test")
        .bearer_auth(token)
}

/// Mints an installation token with the App's JWT; `(status, body)`.
async fn mint(gh: &FakeGitHub, body: Value) -> (u16, Value) {
    let creds = AppCredentials::from_pem_file(APP_ID, fake_github::app_private_key_path()).unwrap();
    let jwt = creds.jwt(SystemTime::now()).unwrap();
    let resp = request(
        &reqwest::Client::new(),
        reqwest::Method::POST,
        format!("{}/app/installations/{INSTALLATION}/access_tokens", gh.url),
        jwt.expose(),
    )
    .json(&body)
    .send()
    .await
    .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

#[tokio::test]
async fn tokens_reach_the_installations_repositories_and_permissions_as_on_github() {
    let gh = fake_github::with_fleet("name: x\n").await;
    gh.world()
        .add_repo("octo-org/elsewhere", "main", &sha(7), &[("a", "b")]);
    gh.world()
        .installations
        .get_mut(&INSTALLATION)
        .unwrap()
        .repos = Some(BTreeSet::from([REPO.to_string()]));
    gh.world().open_pr(REPO, 5, "change", &sha(1));
    let (status, token) = mint(&gh, serde_json::json!({})).await;
    assert_eq!(status, 201, "{token}");
    assert_eq!(token["repository_selection"], "all");
    assert_eq!(token["permissions"]["issues"], "read");
    assert_eq!(token["permissions"]["checks"], "write");
    let token = token["token"].as_str().unwrap().to_string();
    let http = reqwest::Client::new();
    let get = |path: &str| {
        request(
            &http,
            reqwest::Method::GET,
            format!("{}{path}", gh.url),
            &token,
        )
    };

    // Another repository of the account, outside the installation: as if it did not exist.
    gh.world().expect_refusal("repos/get", 404);
    let resp = get("/repos/octo-org/elsewhere").send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Not Found");
    assert_eq!(body["status"], "404");
    assert_eq!(
        body["documentation_url"],
        "https://docs.github.com/rest/repos/repos#get-a-repository"
    );
    assert_eq!(
        get(&format!("/repos/{REPO}"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    // An issue needs Issues write, which the manifest does not grant.
    gh.world().expect_refusal("issues/create", 403);
    let resp = request(
        &http,
        reqwest::Method::POST,
        format!("{}/repos/{REPO}/issues", gh.url),
        &token,
    )
    .json(&serde_json::json!({"title": "t", "body": "b"}))
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        resp.headers()["x-accepted-github-permissions"],
        "issues=write"
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Resource not accessible by integration");
    assert_eq!(body["status"], "403");
    assert_eq!(
        body["documentation_url"],
        "https://docs.github.com/rest/issues/issues#create-an-issue"
    );

    // A comment on a pull request is the pull request's: Pull requests write, not Issues.
    gh.world().grant(INSTALLATION, "pull_requests", "read");
    gh.world().grant(INSTALLATION, "issues", "write");
    gh.world().expect_refusal("issues/create-comment", 403);
    let resp = request(
        &http,
        reqwest::Method::POST,
        format!("{}/repos/{REPO}/issues/5/comments", gh.url),
        &token,
    )
    .json(&serde_json::json!({"body": "hello"}))
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        resp.headers()["x-accepted-github-permissions"],
        "issues=write; pull_requests=write"
    );

    // A token cannot be widened beyond the installation, nor to another repository.
    let (status, body) = mint(
        &gh,
        serde_json::json!({"permissions": {"administration": "write"}}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["message"],
        "The permissions requested are not granted to this installation."
    );
    let (status, body) = mint(&gh, serde_json::json!({"repositories": ["elsewhere"]})).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["message"],
        "There is at least one repository that does not exist or is not accessible to the parent installation."
    );
    // Narrowed to contents: read, it cannot read the pull requests.
    let (status, narrow) = mint(
        &gh,
        serde_json::json!({"repositories": [NAME], "permissions": {"contents": "read"}}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(narrow["repository_selection"], "selected");
    gh.world().expect_refusal("pulls/list", 403);
    let resp = request(
        &http,
        reqwest::Method::GET,
        format!("{}/repos/{REPO}/pulls", gh.url),
        narrow["token"].as_str().unwrap(),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 403);

    // A token GitHub never issued.
    gh.world().expect_refusal("repos/get", 401);
    let resp = request(
        &http,
        reqwest::Method::GET,
        format!("{}/repos/{REPO}", gh.url),
        "ghs_forged",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Bad credentials");
    let statuses: Vec<u16> = gh.world().refusals.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [404, 403, 403, 403, 401]);
    gh.assert_clean();
}

/// A refusal the test did not declare is a violation: a missing permission cannot pass.
#[tokio::test]
async fn an_undeclared_refusal_fails_assert_clean() {
    let gh = fake_github::with_fleet("name: x\n").await;
    let repo = github_client(&gh.url).repo(INSTALLATION, RepoName::new(OWNER, NAME));
    let refused = repo.create_issue("Fleet drift", "body").await;
    assert!(
        matches!(refused, Err(ClientError::Status { status: 403, .. })),
        "{refused:?}"
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gh.assert_clean()));
    let message = outcome.expect_err("assert_clean fails");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("issues/create: GitHub answers 403"),
        "{message}"
    );
    gh.world().violations.clear();
    gh.assert_clean();
}

/// Installation tokens last an hour and the client renews them before they run out: a token
/// minted with less than the client's refresh margin left is never reused; one with an hour
/// left is.
#[tokio::test]
async fn the_client_renews_a_token_before_it_expires() {
    let gh = fake_github::with_fleet("name: x\n").await;
    let client = github_client(&gh.url);
    let repo = client.repo(INSTALLATION, RepoName::new(OWNER, NAME));
    let mints = || gh.world().calls("apps/create-installation-access-token");
    gh.world().token_lifetime = fleetbot::github::app::TOKEN_REFRESH_MARGIN.as_secs() - 1;
    repo.default_branch().await.unwrap();
    repo.default_branch().await.unwrap();
    assert_eq!(mints(), 2, "a token about to expire was reused");
    gh.world().token_lifetime = fake_github::TOKEN_LIFETIME_SECS;
    repo.default_branch().await.unwrap();
    repo.default_branch().await.unwrap();
    repo.default_branch().await.unwrap();
    assert_eq!(mints(), 3, "a fresh token is reused");
    gh.assert_clean();
}

/// A token that expired early (revoked, or a clock that disagrees) is refused with 401 once;
/// the client drops it, mints another and the call succeeds.
#[tokio::test]
async fn an_expired_token_is_refused_and_the_client_mints_another() {
    let gh = fake_github::with_fleet("name: x\n").await;
    let client = github_client(&gh.url);
    let repo = client.repo(INSTALLATION, RepoName::new(OWNER, NAME));
    assert_eq!(repo.default_branch().await.unwrap(), "main");
    gh.world().expire_tokens();
    gh.world().expect_refusal("repos/get", 401);
    assert_eq!(repo.default_branch().await.unwrap(), "main");
    let w = gh.world();
    let refusals: Vec<(&str, u16)> = w
        .refusals
        .iter()
        .map(|r| (r.operation.as_str(), r.status))
        .collect();
    assert_eq!(refusals, [("repos/get", 401)]);
    assert_eq!(w.calls("apps/create-installation-access-token"), 2);
    drop(w);
    gh.assert_clean();
}
