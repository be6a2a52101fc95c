//! A stateful fake GitHub on loopback (axum) that checks every request against GitHub's REST
//! description and answers with schema-valid responses built from its documented examples.
//!
//! The world holds repositories (branches, file trees per commit, pull requests), comments,
//! check runs, reactions and collaborator roles. Every request is recorded, so a test can
//! assert that a private value never reached GitHub; every violation of the description (an
//! unknown path, a bad parameter, a body the schema refuses, a missing or wrong token) is
//! recorded too and answered with an error, and [`FakeGitHub::assert_clean`] fails the test.
//!
//! It is as strict as GitHub about who may call what: the App is the one registered from
//! `deploy/github-app-manifest.json` ([`manifest`]), its installation holds the manifest's
//! permissions over its repositories, and installation tokens expire an hour after they are
//! minted. A call with an unknown or expired token is answered 401 `Bad credentials`, one on a
//! repository outside the token's installation 404, and one the permissions do not allow
//! ([`permissions`]) 403 `Resource not accessible by integration` with
//! `X-Accepted-GitHub-Permissions`, GitHub's own bodies. Each refusal is a violation unless the
//! test declared it expected ([`World::expect_refusal`]). A fake that is dropped without
//! [`FakeGitHub::assert_clean`] having been called fails its test.
#![allow(dead_code)]

pub mod fixtures;
pub mod manifest;
pub mod openapi;
pub mod permissions;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};

use fixtures::openapi;
use permissions::{Grants, Level, Needs};

/// The test App's key pair: made once per test binary with the `openssl` CLI (PKCS#1, the
/// form GitHub hands out), so no private key lives in the repository.
pub struct AppKey {
    pub public_pem: String,
    pub private_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

pub fn app_key() -> &'static AppKey {
    static KEY: std::sync::OnceLock<AppKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let private_path = dir.path().join("app-test-key.pem");
        let status = std::process::Command::new("openssl")
            .args(["genrsa", "-traditional", "-out"])
            .arg(&private_path)
            .arg("2048")
            .stderr(std::process::Stdio::null())
            .status()
            .expect("the openssl CLI is installed (it makes the test App's key)");
        assert!(status.success(), "openssl genrsa failed");
        let public = std::process::Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&private_path)
            .output()
            .unwrap();
        assert!(public.status.success(), "openssl pkey -pubout failed");
        AppKey {
            public_pem: String::from_utf8(public.stdout).unwrap(),
            private_path,
            _dir: dir,
        }
    })
}

/// Where the test App's private key is.
pub fn app_private_key_path() -> &'static std::path::Path {
    &app_key().private_path
}
pub const APP_ID: &str = "424242";
pub const BOT_LOGIN: &str = "fleetbot-test[bot]";

/// The world the scenarios share: the webhook secret, the repository and the installation.
pub const SECRET: &str = "test-webhook-secret";
pub const OWNER: &str = "octo-org";
pub const NAME: &str = "fleet-config";
pub const REPO: &str = "octo-org/fleet-config";
pub const INSTALLATION: u64 = 77;

/// A commit SHA made from a number.
pub fn sha(n: u64) -> String {
    format!("{n:040x}")
}

/// The real GitHub client, as the test App, pointed at `url`, with short retry waits.
pub fn github_client(url: &str) -> fleetbot::github::GitHubClient {
    use fleetbot::github::{AppCredentials, ClientConfig, GitHubClient, RetryPolicy};
    let credentials = AppCredentials::from_pem_file(APP_ID, app_private_key_path()).unwrap();
    GitHubClient::new(ClientConfig {
        api_url: url.to_string(),
        credentials: Some(Arc::new(credentials)),
        retry: RetryPolicy {
            max_attempts: 3,
            base_backoff: Duration::from_millis(20),
            max_wait: Duration::from_secs(5),
            attempt_timeout: Duration::from_secs(10),
        },
        ..ClientConfig::default()
    })
    .unwrap()
}

/// Posts one webhook delivery to a fleetbot server at `url`, as GitHub does: `(status, body)`.
pub async fn post_webhook(
    http: &reqwest::Client,
    url: &str,
    event: &str,
    id: &str,
    body: &[u8],
    signature: Option<String>,
) -> (u16, String) {
    let mut req = http
        .post(format!("{url}/webhook"))
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(sig) = signature {
        req = req.header("x-hub-signature-256", sig);
    }
    let resp = req.send().await.expect("the server answers");
    (
        resp.status().as_u16(),
        resp.text().await.unwrap_or_default(),
    )
}

/// The fake GitHub with [`REPO`]'s `main` holding `fleets/prod.yaml` = `spec` and a
/// `.fleetbot.yml` that selects `fleets/**/*.yaml`.
pub async fn with_fleet(spec: &str) -> FakeGitHub {
    let gh = FakeGitHub::start().await;
    gh.world().add_repo(
        REPO,
        "main",
        &sha(1),
        &[
            ("README.md", "# fleet config\n"),
            ("fleets/prod.yaml", spec),
            (".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n"),
        ],
    );
    gh
}

/// A `pull_request` delivery for pull request `number` of [`REPO`], from branch `head_ref`
/// at `head` onto `main` at `sha(1)`.
pub fn pr_delivery(action: &str, number: u64, head: &str, head_ref: &str) -> Vec<u8> {
    fixtures::pull_request(
        action,
        &fixtures::PrRef {
            owner: OWNER.into(),
            repo: NAME.into(),
            number,
            head_sha: head.into(),
            base_sha: sha(1),
            head_ref: head_ref.into(),
            base_ref: "main".into(),
            installation_id: INSTALLATION,
        },
    )
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: String,
    pub operation: String,
    pub status: u16,
    /// The answer's body length.
    pub bytes_sent: usize,
}

impl Recorded {
    /// Everything of the request a value could hide in.
    pub fn text(&self) -> String {
        format!(
            "{} {}?{}\n{}",
            self.method, self.path, self.query, self.body
        )
    }
}

#[derive(Debug, Clone, Default)]
pub struct Repo {
    pub default_branch: String,
    pub branches: BTreeMap<String, String>,
    /// Full file trees by commit SHA.
    pub trees: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    pub pulls: BTreeMap<u64, Pull>,
}

#[derive(Debug, Clone)]
pub struct Pull {
    pub number: u64,
    pub state: String,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub base_sha: String,
    pub merged: bool,
    pub merge_commit_sha: Option<String>,
    /// When it was merged (GitHub's whole-second RFC 3339 time).
    pub merged_at: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Comment {
    pub id: u64,
    pub repo: String,
    pub issue: u64,
    pub body: String,
    pub user: String,
    pub user_type: String,
    pub edits: usize,
    /// GitHub's whole-second RFC 3339 times.
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u64,
    pub repo: String,
    pub title: String,
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub user: String,
    pub edits: usize,
}

#[derive(Debug, Clone)]
pub struct CheckRun {
    pub id: u64,
    pub repo: String,
    pub name: String,
    pub head_sha: String,
    pub external_id: Option<String>,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<Value>,
    /// The buttons of the last update that set them.
    pub actions: Vec<Value>,
    pub requests: usize,
    /// The slug of the App that created it (`github-actions` for a workflow token); only
    /// that App may update it, as on GitHub.
    pub app: String,
}

/// An answer to give instead of the real one, `times` times, for one operation.
#[derive(Debug, Clone)]
pub struct Fault {
    pub operation: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub times: usize,
}

/// An installation of the App: what it may do, and where.
#[derive(Debug, Clone)]
pub struct Installation {
    /// The permissions the installation granted: the manifest's, unless a test changes them
    /// (as an owner accepting a permission request would).
    pub permissions: Grants,
    /// `None`: every repository of the world (`repository_selection: all`).
    pub repos: Option<BTreeSet<String>>,
}

/// An installation access token as minted.
#[derive(Debug, Clone)]
pub struct Token {
    pub installation: u64,
    /// Narrowed at minting (`repositories`); `None`: every repository of the installation.
    pub repos: Option<BTreeSet<String>>,
    /// Narrowed at minting (`permissions`); `None`: the installation's, as they are now.
    pub permissions: Option<Grants>,
    /// Unix seconds; the token is refused from then on.
    pub expires_at: u64,
}

/// A call GitHub refused (401, 403, 404 for a repository out of reach, 422 at minting).
#[derive(Debug, Clone)]
pub struct Refusal {
    pub operation: String,
    pub status: u16,
    pub reason: String,
}

/// How long an installation token lives: "The installation access token will expire after 1
/// hour" (GitHub's docs).
pub const TOKEN_LIFETIME_SECS: u64 = 3600;

/// The fake's state.
#[derive(Debug, Default)]
pub struct World {
    pub base_url: String,
    pub repos: BTreeMap<String, Repo>,
    /// `(repo, user)` → role (`admin`, `maintain`, `write`, `triage`, `read`).
    pub roles: BTreeMap<(String, String), String>,
    pub comments: BTreeMap<u64, Comment>,
    /// Issues (not pull requests), by number.
    pub issues: BTreeMap<u64, Issue>,
    pub check_runs: BTreeMap<u64, CheckRun>,
    pub reactions: Vec<(String, u64, String)>,
    pub requests: Vec<Recorded>,
    pub violations: Vec<String>,
    /// Installations by id: [`INSTALLATION`], with the manifest's permissions.
    pub installations: BTreeMap<u64, Installation>,
    /// Installation tokens minted.
    pub tokens: BTreeMap<String, Token>,
    /// How long a token minted from now on lives, in seconds ([`TOKEN_LIFETIME_SECS`]).
    pub token_lifetime: u64,
    /// Every refusal answered, expected or not.
    pub refusals: Vec<Refusal>,
    /// `(operation, status)` refusals the test expects: not violations.
    pub expected_refusals: Vec<(String, u16)>,
    /// The repositories the request's token reaches (`None`: not a token call).
    scope: Option<BTreeSet<String>>,
    /// A GitHub Actions workflow's `GITHUB_TOKEN` → the login its comments are authored by
    /// (`github-actions[bot]`).
    pub workflow_tokens: BTreeMap<String, String>,
    /// Who the request being answered authenticated as (the App's bot, or a workflow's).
    pub caller: String,
    /// One-time codes of the App manifest flow → the slug of the App each creates.
    pub manifest_codes: BTreeMap<String, String>,
    /// The share of repository calls answered `502 Bad Gateway` before they take effect, as
    /// GitHub does on a bad day (the fault campaign); drawn from `flaky_seed`.
    pub flaky_rate: f64,
    pub flaky_seed: u64,
    pub faults: Vec<Fault>,
    /// The `hooks` ranges `GET /meta` lists; empty: the description's example.
    pub hook_ranges: Vec<String>,
    next_id: u64,
}

impl World {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        1_000 + self.next_id
    }

    /// Declares that GitHub refusing `operation` with `status` is part of the test (the
    /// documented degradation of a missing permission): such a refusal is not a violation.
    pub fn expect_refusal(&mut self, operation: &str, status: u16) {
        self.expected_refusals.push((operation.to_string(), status));
    }

    /// Gives installation `id` the permission `name` at `level` (`read`, `write`), as an
    /// owner accepting the App's permission request does; tokens follow at once.
    pub fn grant(&mut self, id: u64, name: &str, level: &str) {
        let level = Level::parse(level).expect("read or write");
        self.installations
            .get_mut(&id)
            .expect("installation exists")
            .permissions
            .insert(name.to_string(), level);
    }

    /// Every token minted so far has expired, as an hour passing would do.
    pub fn expire_tokens(&mut self) {
        let now = now_secs();
        for t in self.tokens.values_mut() {
            t.expires_at = now;
        }
    }

    /// The repositories installation `id` reaches.
    pub fn installation_repos(&self, id: u64) -> BTreeSet<String> {
        match self.installations.get(&id).and_then(|i| i.repos.clone()) {
            Some(repos) => repos,
            None if self.installations.contains_key(&id) => self.repos.keys().cloned().collect(),
            None => BTreeSet::new(),
        }
    }

    /// What `token` may do now, and where; `None` for an unknown token.
    fn token_reach(&self, token: &Token) -> (Grants, BTreeSet<String>) {
        let installed = self
            .installations
            .get(&token.installation)
            .map(|i| i.permissions.clone())
            .unwrap_or_default();
        let grants = match &token.permissions {
            Some(asked) => asked
                .iter()
                .filter(|(n, l)| permissions::grants(&installed, n, **l))
                .map(|(n, l)| (n.clone(), *l))
                .collect(),
            None => installed,
        };
        let mut repos = self.installation_repos(token.installation);
        if let Some(narrowed) = &token.repos {
            repos.retain(|r| narrowed.contains(r));
        }
        (grants, repos)
    }

    /// Whether the issue (or pull request) `number` of `full` is a pull request; `None` when
    /// neither exists.
    fn is_pull(&self, full: &str, number: u64) -> Option<bool> {
        if self
            .repos
            .get(full)
            .is_some_and(|r| r.pulls.contains_key(&number))
        {
            return Some(true);
        }
        self.issues
            .get(&number)
            .filter(|i| i.repo == full)
            .map(|_| false)
    }

    /// Adds a repository whose default branch holds `files`.
    pub fn add_repo(&mut self, full: &str, branch: &str, sha: &str, files: &[(&str, &str)]) {
        let repo = self.repos.entry(full.to_string()).or_default();
        repo.default_branch = branch.to_string();
        repo.branches.insert(branch.to_string(), sha.to_string());
        repo.trees.insert(
            sha.to_string(),
            files
                .iter()
                .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                .collect(),
        );
    }

    /// A commit `sha` whose tree is `parent`'s with `changes` applied (`None` deletes).
    pub fn commit(
        &mut self,
        full: &str,
        parent: &str,
        sha: &str,
        changes: &[(&str, Option<&str>)],
    ) {
        let repo = self.repos.get_mut(full).expect("repo exists");
        let mut tree = repo
            .trees
            .get(parent)
            .cloned()
            .expect("parent commit exists");
        for (path, content) in changes {
            match content {
                Some(c) => {
                    tree.insert(path.to_string(), c.as_bytes().to_vec());
                }
                None => {
                    tree.remove(*path);
                }
            }
        }
        repo.trees.insert(sha.to_string(), tree);
    }

    pub fn open_pr(&mut self, full: &str, number: u64, head_ref: &str, head_sha: &str) {
        let repo = self.repos.get_mut(full).expect("repo exists");
        let base_ref = repo.default_branch.clone();
        let base_sha = repo.branches[&base_ref].clone();
        repo.branches
            .insert(head_ref.to_string(), head_sha.to_string());
        repo.pulls.insert(
            number,
            Pull {
                number,
                state: "open".into(),
                head_ref: head_ref.into(),
                head_sha: head_sha.into(),
                base_ref,
                base_sha,
                merged: false,
                merge_commit_sha: None,
                merged_at: None,
            },
        );
    }

    /// Merges pull request `number` as commit `merge_sha`: the default branch's tip with the
    /// pull request's changes (base to head) applied, then the default branch moves to it.
    pub fn merge(&mut self, full: &str, number: u64, merge_sha: &str) {
        let repo = self.repos.get_mut(full).expect("repo exists");
        let pr = repo
            .pulls
            .get(&number)
            .expect("pull request exists")
            .clone();
        let empty = BTreeMap::new();
        let base = repo.trees.get(&pr.base_sha).unwrap_or(&empty).clone();
        let head = repo.trees.get(&pr.head_sha).unwrap_or(&empty).clone();
        let tip = repo.branches[&repo.default_branch].clone();
        let mut tree = repo.trees.get(&tip).cloned().unwrap_or_default();
        for path in base.keys().chain(head.keys()) {
            match (base.get(path), head.get(path)) {
                (_, Some(new)) if base.get(path) != Some(new) => {
                    tree.insert(path.clone(), new.clone());
                }
                (Some(_), None) => {
                    tree.remove(path);
                }
                _ => {}
            }
        }
        repo.trees.insert(merge_sha.to_string(), tree);
        let branch = repo.default_branch.clone();
        repo.branches.insert(branch, merge_sha.to_string());
        let pr = repo.pulls.get_mut(&number).expect("pull request exists");
        pr.state = "closed".into();
        pr.merged = true;
        pr.merge_commit_sha = Some(merge_sha.to_string());
        pr.merged_at = Some(iso(now_secs()));
    }

    pub fn push(&mut self, full: &str, number: u64, head_sha: &str) {
        let pr = self
            .repos
            .get_mut(full)
            .and_then(|r| r.pulls.get_mut(&number))
            .expect("pull request exists");
        pr.head_sha = head_sha.to_string();
    }

    /// A comment someone other than the bot wrote (`user_type` `User` or `Bot`).
    pub fn add_comment(
        &mut self,
        full: &str,
        issue: u64,
        user: &str,
        user_type: &str,
        body: &str,
    ) -> u64 {
        let id = self.next_id();
        self.put_comment(full, issue, id, user, user_type, body);
        id
    }

    /// A comment someone wrote now, under the id its webhook delivery will name.
    pub fn put_comment(
        &mut self,
        full: &str,
        issue: u64,
        id: u64,
        user: &str,
        user_type: &str,
        body: &str,
    ) -> Comment {
        let now = iso(now_secs());
        let c = Comment {
            id,
            repo: full.into(),
            issue,
            body: body.into(),
            user: user.into(),
            user_type: user_type.into(),
            edits: 0,
            created_at: now.clone(),
            updated_at: now,
        };
        self.comments.insert(id, c.clone());
        c
    }

    /// Edits a person's comment as they would in the web page.
    pub fn edit_comment(&mut self, id: u64, body: &str) {
        let c = self.comments.get_mut(&id).expect("comment exists");
        c.body = body.into();
        c.edits += 1;
        c.updated_at = iso(now_secs());
    }

    pub fn set_role(&mut self, full: &str, user: &str, role: &str) {
        self.roles
            .insert((full.to_string(), user.to_string()), role.to_string());
    }

    /// The comments on one issue or pull request, oldest first.
    pub fn comments_on(&self, full: &str, issue: u64) -> Vec<Comment> {
        self.comments
            .values()
            .filter(|c| c.repo == full && c.issue == issue)
            .cloned()
            .collect()
    }

    /// The check runs on one commit, oldest first.
    pub fn runs_on(&self, full: &str, sha: &str) -> Vec<CheckRun> {
        self.check_runs
            .values()
            .filter(|r| r.repo == full && r.head_sha == sha)
            .cloned()
            .collect()
    }

    /// Requests of one operation.
    pub fn calls(&self, operation: &str) -> usize {
        self.requests
            .iter()
            .filter(|r| r.operation == operation)
            .count()
    }
}

/// The running fake.
pub struct FakeGitHub {
    pub url: String,
    world: Arc<Mutex<World>>,
    task: tokio::task::JoinHandle<()>,
    /// [`FakeGitHub::assert_clean`] was called.
    checked: AtomicBool,
}

impl Drop for FakeGitHub {
    // A test that never asks whether GitHub refused something passes whatever was refused.
    fn drop(&mut self) {
        self.task.abort();
        if !std::thread::panicking() && !self.checked.load(Ordering::SeqCst) {
            panic!("the test never called FakeGitHub::assert_clean()");
        }
    }
}

impl FakeGitHub {
    /// Starts on 127.0.0.1 with an empty world.
    pub async fn start() -> Self {
        // Parse the description before the first request (and fail early when it is missing).
        let _ = openapi();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let installation = Installation {
            permissions: manifest::manifest().default_permissions.clone(),
            repos: None,
        };
        let world = Arc::new(Mutex::new(World {
            base_url: url.clone(),
            installations: BTreeMap::from([(INSTALLATION, installation)]),
            token_lifetime: TOKEN_LIFETIME_SECS,
            ..World::default()
        }));
        let app = Router::new().fallback(handle).with_state(world.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeGitHub {
            url,
            world,
            task,
            checked: AtomicBool::new(false),
        }
    }

    pub fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fails when any request broke the REST description or the fake's rules, or was refused
    /// without the test expecting it.
    pub fn assert_clean(&self) {
        self.checked.store(true, Ordering::SeqCst);
        let w = self.world();
        assert!(
            w.violations.is_empty(),
            "requests that GitHub would refuse:\n{}",
            w.violations.join("\n")
        );
    }

    /// Someone comments `body` on the pull request: the comment exists on GitHub from now on,
    /// and the returned `issue_comment` delivery announces it.
    pub fn pr_comment(
        &self,
        pr: &fixtures::PrRef,
        id: u64,
        author: &str,
        author_type: &str,
        body: &str,
    ) -> Vec<u8> {
        let full = format!("{}/{}", pr.owner, pr.repo);
        let c = self
            .world()
            .put_comment(&full, pr.number, id, author, author_type, body);
        fixtures::comment_delivery(pr, &c)
    }

    /// Fails when `needle` occurs in any request the fake received.
    pub fn assert_never_sent(&self, needle: &str) {
        let w = self.world();
        assert!(!w.requests.is_empty());
        for r in &w.requests {
            assert!(
                !r.text().contains(needle),
                "a private value ({needle}) reached GitHub in {} {}",
                r.method,
                r.path
            );
        }
    }
}

fn parse_query(q: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && i + 2 < bytes.len()
                && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
            {
                out.push(b);
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A blob's name as git makes it: a hash of its content (SHA-256 cut to git's 40 digits here;
/// what matters is that equal contents, and only they, share a name).
fn blob_sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex::encode(h.finalize())[..40].to_string()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn iso(secs: u64) -> String {
    fleetbot::github::app::format_github_time(UNIX_EPOCH + Duration::from_secs(secs))
}

struct Answer {
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
    /// Bytes sent as they are instead of `body` (the raw media type).
    raw: Option<Vec<u8>>,
}

impl Answer {
    /// `200` with the page of `items` the query asks for, and its `Link` header.
    fn page(items: &[Value], query: &[(String, String)], base_url: &str, path: &str) -> Self {
        let (slice, headers) = page(items, query, base_url, path);
        Answer {
            status: 200,
            body: Value::Array(slice),
            headers,
            raw: None,
        }
    }

    fn json(status: u16, body: Value) -> Self {
        Answer {
            status,
            body,
            headers: vec![],
            raw: None,
        }
    }
}

fn not_found() -> Answer {
    Answer::json(
        404,
        json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}),
    )
}

/// Records a refusal; one the test did not declare is a violation too.
fn refuse(
    w: &mut World,
    violations: &mut Vec<String>,
    operation: &str,
    status: u16,
    reason: String,
) {
    if !w
        .expected_refusals
        .iter()
        .any(|(o, s)| o == operation && *s == status)
    {
        violations.push(format!("{operation}: GitHub answers {status}: {reason}"));
    }
    w.refusals.push(Refusal {
        operation: operation.to_string(),
        status,
        reason,
    });
}

fn bad_credentials() -> Answer {
    Answer::json(
        401,
        json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}),
    )
}

/// Who may make the call, as GitHub decides before the call does anything: `Ok` with the
/// caller's login set, or the refusal to answer.
fn authorize(
    w: &mut World,
    violations: &mut Vec<String>,
    operation: &str,
    params: &BTreeMap<String, String>,
    bearer: &str,
) -> Result<(), Box<Answer>> {
    w.scope = None;
    let Some(rule) = permissions::rule(operation) else {
        violations.push(format!(
            "{operation}: no row in the fake's permission table (tests/support/fake_github/permissions.rs)"
        ));
        return Err(Box::new(Answer::json(
            403,
            json!({"message": "Resource not accessible by integration", "documentation_url": openapi().docs_url(operation), "status": "403"}),
        )));
    };
    match rule.needs {
        Needs::Public => {
            if !bearer.is_empty() {
                violations.push(format!(
                    "{operation}: a token was sent to a public endpoint"
                ));
            }
            Ok(())
        }
        Needs::Code => {
            // The one-time code is the credential; a token sent along would be a token leaked.
            if !bearer.is_empty() {
                violations.push(format!(
                    "{operation}: a token was sent to an unauthenticated endpoint"
                ));
                return Err(Box::new(bad_credentials()));
            }
            Ok(())
        }
        Needs::Jwt => verify_jwt(bearer).map_err(|e| {
            violations.push(format!("{operation}: {e}"));
            Box::new(bad_credentials())
        }),
        Needs::AnyToken | Needs::AnyOf(_) | Needs::ByTarget(_) => {
            let (grants, repos) = if let Some(token) = w.tokens.get(bearer).cloned() {
                if now_secs() >= token.expires_at {
                    refuse(
                        w,
                        violations,
                        operation,
                        401,
                        "the installation token expired".into(),
                    );
                    return Err(Box::new(bad_credentials()));
                }
                w.caller = BOT_LOGIN.into();
                w.token_reach(&token)
            } else if let Some(login) = w.workflow_tokens.get(bearer).cloned() {
                // A workflow's GITHUB_TOKEN with the Action's documented permissions.
                w.caller = login;
                let grants = [
                    ("contents", Level::Read),
                    ("pull_requests", Level::Write),
                    ("checks", Level::Write),
                ]
                .into_iter()
                .map(|(n, l)| (n.to_string(), l))
                .collect();
                (grants, w.repos.keys().cloned().collect())
            } else {
                let reason = if bearer.is_empty() {
                    "no token"
                } else {
                    "not a token GitHub issued"
                };
                refuse(w, violations, operation, 401, reason.into());
                return Err(Box::new(bad_credentials()));
            };
            let full = repo_full(params);
            if params.contains_key("owner") && !repos.contains(&full) {
                // GitHub does not confirm a private repository exists to whom cannot see it.
                refuse(
                    w,
                    violations,
                    operation,
                    404,
                    format!("{full} is not a repository of the token's installation"),
                );
                return Err(Box::new(Answer::json(
                    404,
                    json!({"message": "Not Found", "documentation_url": openapi().docs_url(operation), "status": "404"}),
                )));
            }
            let num = |k: &str| params.get(k).and_then(|v| v.parse::<u64>().ok());
            let target_is_pr = if let Some(n) = num("issue_number") {
                w.is_pull(&full, n)
            } else if let Some(id) = num("comment_id") {
                w.comments
                    .get(&id)
                    .filter(|c| c.repo == full)
                    .map(|c| (c.issue, c.repo.clone()))
                    .and_then(|(issue, repo)| w.is_pull(&repo, issue))
            } else {
                None
            };
            let sets = permissions::sets(rule.needs, target_is_pr);
            if !permissions::allowed(&grants, &sets) {
                let accepted = permissions::accepted_header(rule.needs);
                refuse(
                    w,
                    violations,
                    operation,
                    403,
                    format!("the token lacks {sets:?} (granted {grants:?})"),
                );
                let mut a = Answer::json(
                    403,
                    json!({"message": "Resource not accessible by integration", "documentation_url": openapi().docs_url(operation), "status": "403"}),
                );
                a.headers
                    .push(("x-accepted-github-permissions".into(), accepted));
                return Err(Box::new(a));
            }
            w.scope = Some(repos);
            Ok(())
        }
    }
}

fn verify_jwt(token: &str) -> Result<(), String> {
    use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
    #[derive(serde::Deserialize)]
    struct Claims {
        iat: u64,
        exp: u64,
        iss: Value,
    }
    let key = DecodingKey::from_rsa_pem(app_key().public_pem.as_bytes()).unwrap();
    let mut v = Validation::new(Algorithm::RS256);
    v.set_required_spec_claims(&["exp", "iat"]);
    v.leeway = 0;
    let data = decode::<Claims>(token, &key, &v).map_err(|e| format!("JWT refused: {e}"))?;
    let c = data.claims;
    let now = now_secs();
    if c.iat > now {
        return Err("JWT iat is in the future".into());
    }
    if c.exp > now + 600 || c.exp - c.iat > 600 {
        return Err("JWT exp is more than 10 minutes ahead".into());
    }
    if c.iss != json!(APP_ID.parse::<u64>().unwrap()) && c.iss != json!(APP_ID) {
        return Err(format!("JWT iss {} is not the App", c.iss));
    }
    Ok(())
}

async fn handle(
    State(world): State<Arc<Mutex<World>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query_raw = uri.query().unwrap_or_default().to_string();
    let query = parse_query(&query_raw);
    let body_text = String::from_utf8_lossy(&body).into_owned();
    let mut w = world.lock().unwrap_or_else(|e| e.into_inner());
    let mut violations = Vec::new();
    let json_body = if body.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => Some(v),
            Err(e) => {
                violations.push(format!("{method} {path}: body is not JSON: {e}"));
                None
            }
        }
    };
    let checked = openapi().check_request(method.as_str(), &path, &query, json_body.as_ref());
    let (operation, params) = match checked {
        Ok(x) => x,
        Err(errors) => {
            let op = openapi()
                .find(method.as_str(), &path)
                .map(|m| m.operation.id.clone())
                .unwrap_or_else(|| "unknown".into());
            violations.extend(errors);
            (op, BTreeMap::new())
        }
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    if header("x-github-api-version") != "2022-11-28" {
        violations.push(format!(
            "{operation}: X-GitHub-Api-Version is not 2022-11-28"
        ));
    }
    if !header("accept").starts_with("application/vnd.github") {
        violations.push(format!("{operation}: Accept is not a GitHub media type"));
    }
    if header("user-agent").is_empty() {
        violations.push(format!(
            "{operation}: no User-Agent (GitHub refuses such requests)"
        ));
    }
    let bearer = header("authorization")
        .strip_prefix("Bearer ")
        .unwrap_or_default()
        .to_string();
    let answer = if !violations.is_empty() {
        Answer::json(
            422,
            json!({"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest"}),
        )
    } else if let Err(refused) = authorize(&mut w, &mut violations, &operation, &params, &bearer) {
        *refused
    } else if w.flaky_rate > 0.0 && !operation.starts_with("apps/") && {
        // xorshift: the same seed gives the same campaign.
        w.flaky_seed ^= w.flaky_seed << 13;
        w.flaky_seed ^= w.flaky_seed >> 7;
        w.flaky_seed ^= w.flaky_seed << 17;
        (w.flaky_seed % 10_000) as f64 / 10_000.0 < w.flaky_rate
    } {
        Answer::json(
            502,
            json!({"message": "Server Error", "documentation_url": "https://docs.github.com/rest"}),
        )
    } else if let Some(i) = w
        .faults
        .iter()
        .position(|f| f.operation == operation && f.times > 0)
    {
        let f = &mut w.faults[i];
        f.times -= 1;
        Answer {
            status: f.status,
            body: f.body.clone(),
            headers: f.headers.clone(),
            raw: None,
        }
    } else {
        let accept = header("accept").to_string();
        let a = respond(
            &mut w,
            &operation,
            &params,
            &query,
            json_body.as_ref(),
            &path,
            &accept,
        );
        if (200..300).contains(&a.status) && a.raw.is_none() {
            let errors = openapi().check_response(&operation, a.status, &a.body);
            violations.extend(errors.into_iter().map(|e| format!("(fake) {e}")));
        }
        a
    };
    w.requests.push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        query: query_raw,
        body: body_text,
        operation,
        status: answer.status,
        bytes_sent: answer
            .raw
            .as_ref()
            .map_or_else(|| answer.body.to_string().len(), Vec::len),
    });
    w.violations.extend(violations);
    drop(w);
    let mut response = match answer.raw {
        Some(raw) => (
            StatusCode::from_u16(answer.status).unwrap(),
            [(
                "content-type",
                "application/vnd.github.raw+json; charset=utf-8",
            )],
            raw,
        )
            .into_response(),
        None => (
            StatusCode::from_u16(answer.status).unwrap(),
            [("content-type", "application/json; charset=utf-8")],
            answer.body.to_string(),
        )
            .into_response(),
    };
    let h = response.headers_mut();
    h.insert("x-ratelimit-limit", "5000".parse().unwrap());
    h.insert("x-ratelimit-remaining", "4999".parse().unwrap());
    h.insert(
        "x-ratelimit-reset",
        (now_secs() + 3600).to_string().parse().unwrap(),
    );
    h.insert("x-ratelimit-resource", "core".parse().unwrap());
    for (k, v) in &answer.headers {
        h.insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    response
}

fn repo_full(params: &BTreeMap<String, String>) -> String {
    format!(
        "{}/{}",
        params.get("owner").cloned().unwrap_or_default(),
        params.get("repo").cloned().unwrap_or_default()
    )
}

fn page<T: Clone>(
    items: &[T],
    query: &[(String, String)],
    base_url: &str,
    path: &str,
) -> (Vec<T>, Vec<(String, String)>) {
    let get = |k: &str| {
        query
            .iter()
            .find(|(q, _)| q == k)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let per_page = get("per_page").unwrap_or(30).clamp(1, 100);
    let page = get("page").unwrap_or(1).max(1);
    let start = (page - 1) * per_page;
    let slice: Vec<T> = items.iter().skip(start).take(per_page).cloned().collect();
    let mut headers = vec![];
    if start + per_page < items.len() {
        headers.push((
            "link".to_string(),
            format!(
                "<{base_url}{path}?per_page={per_page}&page={}>; rel=\"next\", <{base_url}{path}?per_page={per_page}&page={}>; rel=\"last\"",
                page + 1,
                items.len().div_ceil(per_page)
            ),
        ));
    }
    (slice, headers)
}

fn comment_json(w: &World, c: &Comment) -> Value {
    let mut v = openapi().example("issues/create-comment", 201);
    v["id"] = json!(c.id);
    v["body"] = json!(c.body);
    v["created_at"] = json!(c.created_at);
    v["updated_at"] = json!(c.updated_at);
    v["user"]["login"] = json!(c.user);
    v["user"]["type"] = json!(c.user_type);
    v["html_url"] = json!(format!(
        "https://github.com/{}/pull/{}#issuecomment-{}",
        c.repo, c.issue, c.id
    ));
    v["url"] = json!(format!(
        "{}/repos/{}/issues/comments/{}",
        w.base_url, c.repo, c.id
    ));
    v
}

/// A pull request in the shape of `template` (an example of the operation answering).
fn pull_json(template: &Value, p: &Pull) -> Value {
    let mut v = template.clone();
    v["number"] = json!(p.number);
    v["state"] = json!(p.state);
    v["head"]["sha"] = json!(p.head_sha);
    v["head"]["ref"] = json!(p.head_ref);
    v["base"]["sha"] = json!(p.base_sha);
    v["base"]["ref"] = json!(p.base_ref);
    // GitHub's example has a team without the required `type`.
    v["requested_teams"] = json!([]);
    v
}

fn issue_json(w: &World, i: &Issue) -> Value {
    let mut v = openapi().example("issues/create", 201);
    v["number"] = json!(i.number);
    v["id"] = json!(i.number);
    v["title"] = json!(i.title);
    v["body"] = json!(i.body);
    v["state"] = json!(i.state);
    v["state_reason"] = if i.state == "closed" {
        json!("completed")
    } else {
        Value::Null
    };
    v["closed_at"] = if i.state == "closed" {
        json!(iso(now_secs()))
    } else {
        Value::Null
    };
    v["user"]["login"] = json!(i.user);
    v["user"]["type"] = json!("Bot");
    v["labels"] = json!([]);
    let object = v.as_object_mut().unwrap();
    object.remove("pull_request");
    v["html_url"] = json!(format!("https://github.com/{}/issues/{}", i.repo, i.number));
    v["url"] = json!(format!(
        "{}/repos/{}/issues/{}",
        w.base_url, i.repo, i.number
    ));
    v
}

fn check_run_json(w: &World, r: &CheckRun) -> Value {
    let mut v = openapi().example("checks/create", 201);
    v["id"] = json!(r.id);
    v["name"] = json!(r.name);
    v["head_sha"] = json!(r.head_sha);
    v["external_id"] = json!(r.external_id.clone().unwrap_or_default());
    v["status"] = json!(r.status);
    v["conclusion"] = json!(r.conclusion);
    v["completed_at"] = if r.conclusion.is_some() {
        json!(iso(now_secs()))
    } else {
        Value::Null
    };
    v["output"]["title"] = json!(r.title);
    v["output"]["summary"] = json!(r.summary);
    v["output"]["text"] = json!(r.text);
    v["output"]["annotations_count"] = json!(r.annotations.len());
    v["app"]["slug"] = json!(r.app);
    v["url"] = json!(format!(
        "{}/repos/{}/check-runs/{}",
        w.base_url, r.repo, r.id
    ));
    v["html_url"] = json!(format!("https://github.com/{}/runs/{}", r.repo, r.id));
    v
}

fn apply_check_run_body(r: &mut CheckRun, body: &Value) {
    if let Some(s) = body["status"].as_str() {
        r.status = s.to_string();
    }
    if let Some(c) = body["conclusion"].as_str() {
        r.conclusion = Some(c.to_string());
        r.status = "completed".into();
    }
    if let Some(e) = body["external_id"].as_str() {
        r.external_id = Some(e.to_string());
    }
    let out = &body["output"];
    if let Some(t) = out["title"].as_str() {
        r.title = t.to_string();
    }
    if let Some(s) = out["summary"].as_str() {
        r.summary = s.to_string();
    }
    if let Some(t) = out["text"].as_str() {
        r.text = Some(t.to_string());
    }
    if let Some(a) = out["annotations"].as_array() {
        r.annotations.extend(a.iter().cloned());
    }
    if let Some(a) = body["actions"].as_array() {
        r.actions = a.clone();
    }
    r.requests += 1;
}

/// GitHub's `patch` for one file: the unified diff hunks without file headers.
fn patch(old: &[u8], new: &[u8]) -> Option<String> {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        return None;
    };
    let diff = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .to_string();
    Some(diff.trim_end_matches('\n').to_string())
}

fn respond(
    w: &mut World,
    operation: &str,
    params: &BTreeMap<String, String>,
    query: &[(String, String)],
    body: Option<&Value>,
    path: &str,
    accept: &str,
) -> Answer {
    let full = repo_full(params);
    let num = |k: &str| {
        params
            .get(k)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let base_url = w.base_url.clone();
    match operation {
        "meta/get" => {
            let mut v = openapi().example(operation, 200);
            if !w.hook_ranges.is_empty() {
                v["hooks"] = json!(w.hook_ranges);
            }
            // GitHub's example gives the fingerprints as numbers its own schema refuses; GitHub
            // sends strings (`SHA256:…`).
            if let Some(prints) = v["ssh_key_fingerprints"].as_object_mut() {
                for value in prints.values_mut() {
                    *value = json!(format!("SHA256:{value}"));
                }
            }
            Answer::json(200, v)
        }
        "apps/create-installation-access-token" => {
            let id = num("installation_id");
            let Some(installation) = w.installations.get(&id).cloned() else {
                return not_found();
            };
            let b = body.cloned().unwrap_or_default();
            let reach = w.installation_repos(id);
            // A token may be narrowed to some of the installation's repositories and
            // permissions, never widened (GitHub's 422s, verbatim).
            let repos = b["repositories"].as_array().map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|n| {
                        reach
                            .iter()
                            .find(|full| full.rsplit('/').next() == Some(n))
                            .cloned()
                            .unwrap_or_else(|| format!("?/{n}"))
                    })
                    .collect::<BTreeSet<String>>()
            });
            if b.get("repository_ids").is_some()
                || repos.as_ref().is_some_and(|r| !r.is_subset(&reach))
            {
                return Answer::json(
                    422,
                    json!({"message": "There is at least one repository that does not exist or is not accessible to the parent installation.", "documentation_url": openapi().docs_url(operation), "status": "422"}),
                );
            }
            let asked = b.get("permissions").map(permissions::grants_from_json);
            if asked.as_ref().is_some_and(|a| {
                a.iter()
                    .any(|(n, l)| !permissions::grants(&installation.permissions, n, *l))
            }) {
                return Answer::json(
                    422,
                    json!({"message": "The permissions requested are not granted to this installation.", "documentation_url": openapi().docs_url(operation), "status": "422"}),
                );
            }
            let token = format!("ghs_fake{}x{}", id, w.tokens.len() + 1);
            let minted = Token {
                installation: id,
                repos: repos.clone(),
                permissions: asked,
                expires_at: now_secs() + w.token_lifetime,
            };
            let (grants, _) = w.token_reach(&minted);
            w.tokens.insert(token.clone(), minted.clone());
            let mut v = openapi().example(operation, 201);
            v["token"] = json!(token);
            v["expires_at"] = json!(iso(minted.expires_at));
            v["permissions"] = grants
                .iter()
                .map(|(n, l)| (n.clone(), json!(l.as_str())))
                .collect::<serde_json::Map<String, Value>>()
                .into();
            v["repository_selection"] = json!(if repos.is_some() { "selected" } else { "all" });
            v.as_object_mut().unwrap().remove("repositories");
            Answer::json(201, v)
        }
        "apps/get-authenticated" => {
            // The App whose bot account writes the fake's comments (`BOT_LOGIN`).
            let mut v = openapi().example(operation, 200);
            v["id"] = json!(APP_ID.parse::<u64>().unwrap());
            v["slug"] = json!(BOT_LOGIN.trim_end_matches("[bot]"));
            Answer::json(200, v)
        }
        "apps/list-installations" => {
            let mut item = openapi().example(operation, 200)[0].clone();
            item["id"] = json!(INSTALLATION);
            // `account` is a user or an enterprise; the example's user is given the fields
            // the fake's validator also asks of the enterprise form.
            for (k, v) in [
                ("name", "Octo Org"),
                ("slug", "octo-org"),
                ("created_at", "2020-01-01T00:00:00Z"),
                ("updated_at", "2020-01-01T00:00:00Z"),
            ] {
                item["account"][k] = json!(v);
            }
            Answer::json(200, json!([item]))
        }
        "apps/list-repos-accessible-to-installation" => {
            let example = openapi().example(operation, 200);
            let template = example["repositories"][0].clone();
            let reach = w.scope.clone().unwrap_or_default();
            let repos: Vec<Value> = w
                .repos
                .keys()
                .filter(|full| reach.contains(*full))
                .map(|full| {
                    let mut r = template.clone();
                    r["full_name"] = json!(full);
                    r["archived"] = json!(false);
                    r
                })
                .collect();
            Answer::json(
                200,
                json!({"total_count": repos.len(), "repositories": repos}),
            )
        }
        "repos/get-branch" => {
            let Some(sha) = w
                .repos
                .get(&full)
                .and_then(|r| r.branches.get(&params["branch"]))
            else {
                return not_found();
            };
            let mut v = openapi().example(operation, 200);
            v["name"] = json!(params["branch"]);
            v["commit"]["sha"] = json!(sha);
            Answer::json(200, v)
        }
        "git/get-tree" => {
            let Some(tree) = w
                .repos
                .get(&full)
                .and_then(|r| r.trees.get(&params["tree_sha"]))
            else {
                return not_found();
            };
            let entries: Vec<Value> = tree
                .iter()
                .map(|(path, bytes)| {
                    json!({"path": path, "mode": "100644", "type": "blob", "sha": blob_sha(bytes), "size": bytes.len(), "url": format!("{base_url}/blob")})
                })
                .collect();
            Answer::json(
                200,
                json!({"sha": params["tree_sha"], "url": format!("{base_url}/tree"), "tree": entries, "truncated": false}),
            )
        }
        "pulls/list" => {
            let Some(repo) = w.repos.get(&full) else {
                return not_found();
            };
            let template = openapi().example(operation, 200)[0].clone();
            let open: Vec<Value> = repo
                .pulls
                .values()
                .filter(|p| p.state == "open")
                .map(|p| pull_json(&template, p))
                .collect();
            Answer::json(200, json!(open))
        }
        "repos/get" => {
            let Some(repo) = w.repos.get(&full) else {
                return not_found();
            };
            let mut v = openapi().example(operation, 200);
            v["default_branch"] = json!(repo.default_branch);
            // GitHub's own example lacks the required `language`; this repository is no fork.
            v["language"] = json!("YAML");
            let obj = v.as_object_mut().unwrap();
            obj.remove("source");
            obj.remove("parent");
            v["fork"] = json!(false);
            v["full_name"] = json!(full);
            v["name"] = json!(params["repo"]);
            v["owner"]["login"] = json!(params["owner"]);
            Answer::json(200, v)
        }
        "repos/get-content" => {
            let Some(repo) = w.repos.get(&full) else {
                return not_found();
            };
            let git_ref = query
                .iter()
                .find(|(k, _)| k == "ref")
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| repo.default_branch.clone());
            let sha = repo.branches.get(&git_ref).cloned().unwrap_or(git_ref);
            let file_path = params.get("path").cloned().unwrap_or_default();
            let Some(bytes) = repo.trees.get(&sha).and_then(|t| t.get(&file_path)) else {
                return not_found();
            };
            if accept.contains("raw") {
                let mut a = Answer::json(200, Value::Null);
                a.raw = Some(bytes.clone());
                return a;
            }
            // Files over 1 MB come without content in the JSON form; their size is stated.
            if bytes.len() > 1024 * 1024 {
                let mut v = openapi().example(operation, 200);
                v["type"] = json!("file");
                v["encoding"] = json!("none");
                v["size"] = json!(bytes.len());
                v["name"] = json!(file_path.rsplit('/').next().unwrap_or_default());
                v["path"] = json!(file_path);
                v["content"] = json!("");
                return Answer::json(200, v);
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            // GitHub wraps the base64 at 60 characters.
            let wrapped: Vec<String> = encoded
                .as_bytes()
                .chunks(60)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            let mut v = openapi().example(operation, 200);
            v["type"] = json!("file");
            v["encoding"] = json!("base64");
            v["size"] = json!(bytes.len());
            v["name"] = json!(file_path.rsplit('/').next().unwrap_or_default());
            v["path"] = json!(file_path);
            v["content"] = json!(wrapped.join("\n") + "\n");
            Answer::json(200, v)
        }
        "pulls/get" => {
            let Some(pr) = w
                .repos
                .get(&full)
                .and_then(|r| r.pulls.get(&num("pull_number")))
            else {
                return not_found();
            };
            let mut v = openapi().example(operation, 200);
            v["number"] = json!(pr.number);
            v["state"] = json!(pr.state);
            v["draft"] = json!(false);
            v["merged"] = json!(pr.merged);
            v["merge_commit_sha"] = json!(pr.merge_commit_sha);
            v["merged_at"] = json!(pr.merged_at);
            // GitHub's example has a team without the required `type`.
            v["requested_teams"] = json!([]);
            v["head"]["sha"] = json!(pr.head_sha);
            v["head"]["ref"] = json!(pr.head_ref);
            v["head"]["repo"]["full_name"] = json!(full);
            v["base"]["sha"] = json!(pr.base_sha);
            v["base"]["ref"] = json!(pr.base_ref);
            v["base"]["repo"]["full_name"] = json!(full);
            Answer::json(200, v)
        }
        "repos/list-pull-requests-associated-with-commit" => {
            let Some(repo) = w.repos.get(&full) else {
                return not_found();
            };
            let commit = params.get("commit_sha").cloned().unwrap_or_default();
            let template = openapi().example(operation, 200)[0].clone();
            let prs: Vec<Value> = repo
                .pulls
                .values()
                .filter(|p| p.head_sha == commit || p.merge_commit_sha.as_deref() == Some(&commit))
                .map(|p| {
                    let mut v = pull_json(&template, p);
                    v["merged_at"] = json!(p.merged_at);
                    v["merge_commit_sha"] = json!(p.merge_commit_sha);
                    v
                })
                .collect();
            Answer::json(200, Value::Array(prs))
        }
        "pulls/list-files" => {
            let Some(repo) = w.repos.get(&full) else {
                return not_found();
            };
            let Some(pr) = repo.pulls.get(&num("pull_number")) else {
                return not_found();
            };
            let empty = BTreeMap::new();
            let base = repo.trees.get(&pr.base_sha).unwrap_or(&empty);
            let head = repo.trees.get(&pr.head_sha).unwrap_or(&empty);
            let template = openapi().example(operation, 200)[0].clone();
            let mut files = Vec::new();
            let paths: std::collections::BTreeSet<&String> =
                base.keys().chain(head.keys()).collect();
            for p in paths {
                let (status, old, new) = match (base.get(p), head.get(p)) {
                    (None, Some(n)) => ("added", &b""[..], &n[..]),
                    (Some(o), None) => ("removed", &o[..], &b""[..]),
                    (Some(o), Some(n)) if o != n => ("modified", &o[..], &n[..]),
                    _ => continue,
                };
                let mut f = template.clone();
                f["filename"] = json!(p);
                f["status"] = json!(status);
                f.as_object_mut().unwrap().remove("previous_filename");
                match patch(old, new) {
                    Some(text) => f["patch"] = json!(text),
                    None => {
                        f.as_object_mut().unwrap().remove("patch");
                    }
                }
                files.push(f);
            }
            Answer::page(&files, query, &base_url, path)
        }
        "issues/get-comment" => {
            let Some(c) = w
                .comments
                .get(&num("comment_id"))
                .filter(|c| c.repo == full)
                .cloned()
            else {
                return not_found();
            };
            Answer::json(200, comment_json(w, &c))
        }
        "issues/list-comments" => {
            let issue = num("issue_number");
            let all: Vec<Value> = w
                .comments
                .values()
                .filter(|c| c.repo == full && c.issue == issue)
                .map(|c| comment_json(w, c))
                .collect();
            Answer::page(&all, query, &base_url, path)
        }
        "issues/create-comment" | "issues/update-comment" => {
            let text = body
                .and_then(|b| b["body"].as_str())
                .unwrap_or_default()
                .to_string();
            if text.chars().count() > 65_536 {
                w.violations.push(format!(
                    "{operation}: body is {} characters; GitHub refuses over 65,536",
                    text.chars().count()
                ));
                return Answer::json(
                    422,
                    json!({"message": "Body is too long (maximum is 65536 characters)", "documentation_url": "https://docs.github.com/rest"}),
                );
            }
            if operation == "issues/create-comment" {
                let id = w.next_id();
                let now = iso(now_secs());
                let c = Comment {
                    id,
                    repo: full,
                    issue: num("issue_number"),
                    body: text,
                    user: w.caller.clone(),
                    user_type: "Bot".into(),
                    edits: 0,
                    created_at: now.clone(),
                    updated_at: now,
                };
                let v = comment_json(w, &c);
                w.comments.insert(id, c);
                Answer::json(201, v)
            } else {
                let id = num("comment_id");
                let Some(c) = w.comments.get_mut(&id) else {
                    return not_found();
                };
                if c.user != w.caller {
                    w.violations.push(format!(
                        "{operation}: the bot edited someone else's comment"
                    ));
                    return Answer::json(403, json!({"message": "Forbidden"}));
                }
                c.body = text;
                c.edits += 1;
                c.updated_at = iso(now_secs());
                let c = c.clone();
                Answer::json(200, comment_json(w, &c))
            }
        }
        "issues/list-for-repo" => {
            let get = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.clone());
            let state = get("state").unwrap_or_else(|| "open".into());
            let creator = get("creator");
            let all: Vec<Value> = w
                .issues
                .values()
                .rev()
                .filter(|i| i.repo == full && (state == "all" || i.state == state))
                .filter(|i| {
                    creator
                        .as_ref()
                        .is_none_or(|c| c.eq_ignore_ascii_case(&i.user))
                })
                .map(|i| issue_json(w, i))
                .collect();
            Answer::page(&all, query, &base_url, path)
        }
        "issues/create" => {
            let b = body.cloned().unwrap_or_default();
            let number = w.next_id();
            let issue = Issue {
                number,
                repo: full,
                title: b["title"].as_str().unwrap_or_default().into(),
                body: b["body"].as_str().unwrap_or_default().into(),
                state: "open".into(),
                user: w.caller.clone(),
                edits: 0,
            };
            let v = issue_json(w, &issue);
            w.issues.insert(number, issue);
            Answer::json(201, v)
        }
        "issues/update" => {
            let b = body.cloned().unwrap_or_default();
            let caller = w.caller.clone();
            let Some(issue) = w.issues.get_mut(&num("issue_number")) else {
                return not_found();
            };
            if issue.user != caller {
                w.violations
                    .push(format!("{operation}: the bot edited someone else's issue"));
                return Answer::json(403, json!({"message": "Forbidden"}));
            }
            if let Some(t) = b["title"].as_str() {
                issue.title = t.into();
            }
            if let Some(t) = b["body"].as_str() {
                issue.body = t.into();
            }
            if let Some(t) = b["state"].as_str() {
                issue.state = t.into();
            }
            issue.edits += 1;
            let issue = issue.clone();
            Answer::json(200, issue_json(w, &issue))
        }
        "reactions/create-for-issue-comment" => {
            let content = body
                .and_then(|b| b["content"].as_str())
                .unwrap_or_default()
                .to_string();
            w.reactions.push((full, num("comment_id"), content.clone()));
            let mut v = openapi().example(operation, 201);
            v["content"] = json!(content);
            Answer::json(201, v)
        }
        "repos/get-collaborator-permission-level" => {
            let user = params.get("username").cloned().unwrap_or_default();
            let Some(role) = w.roles.get(&(full, user.clone())).cloned() else {
                return not_found();
            };
            let legacy = match role.as_str() {
                "maintain" => "write",
                "triage" => "read",
                r => r,
            };
            let mut v = openapi().example(operation, 200);
            v["permission"] = json!(legacy);
            v["role_name"] = json!(role);
            v["user"]["login"] = json!(user);
            // Required by the schema, missing from GitHub's example.
            v["user"]["role_name"] = json!(role);
            Answer::json(200, v)
        }
        "apps/create-from-manifest" => {
            let code = params.get("code").cloned().unwrap_or_default();
            let Some(slug) = w.manifest_codes.remove(&code) else {
                return not_found();
            };
            let mut v = openapi().example("apps/create-from-manifest", 201);
            v["id"] = json!(4242);
            v["slug"] = json!(slug);
            v["html_url"] = json!(format!("https://github.com/apps/{slug}"));
            v["pem"] = json!(std::fs::read_to_string(app_private_key_path()).unwrap());
            v["webhook_secret"] = json!("whsec-from-the-fake-1");
            Answer::json(201, v)
        }
        "checks/create" => {
            let b = body.cloned().unwrap_or_default();
            let id = w.next_id();
            let mut run = CheckRun {
                id,
                repo: full,
                name: b["name"].as_str().unwrap_or_default().into(),
                head_sha: b["head_sha"].as_str().unwrap_or_default().into(),
                external_id: None,
                status: "queued".into(),
                conclusion: None,
                title: String::new(),
                summary: String::new(),
                text: None,
                annotations: vec![],
                actions: vec![],
                requests: 0,
                app: w.caller.trim_end_matches("[bot]").to_string(),
            };
            apply_check_run_body(&mut run, &b);
            let v = check_run_json(w, &run);
            w.check_runs.insert(id, run);
            Answer::json(201, v)
        }
        "checks/update" => {
            let id = num("check_run_id");
            let caller = w.caller.trim_end_matches("[bot]").to_string();
            let Some(run) = w.check_runs.get_mut(&id) else {
                return not_found();
            };
            if run.app != caller {
                w.violations.push(format!(
                    "{operation}: {caller} updated a check run of {}",
                    run.app
                ));
                return Answer::json(
                    403,
                    json!({"message": "Invalid app_id `0` - check run can only be modified by the GitHub App that created it."}),
                );
            }
            let Some(run) = w.check_runs.get_mut(&id) else {
                return not_found();
            };
            apply_check_run_body(run, body.unwrap_or(&Value::Null));
            let run = run.clone();
            Answer::json(200, check_run_json(w, &run))
        }
        "checks/list-for-ref" => {
            let name = query
                .iter()
                .find(|(k, _)| k == "check_name")
                .map(|(_, v)| v.clone());
            let git_ref = params.get("ref").cloned().unwrap_or_default();
            // `filter` defaults to `latest`: the newest run of each name only.
            let all = query.iter().any(|(k, v)| k == "filter" && v == "all");
            let matching: Vec<&CheckRun> = w
                .check_runs
                .values()
                .filter(|r| r.repo == full && r.head_sha == git_ref)
                .filter(|r| name.as_ref().is_none_or(|n| &r.name == n))
                .collect();
            let runs: Vec<Value> = matching
                .iter()
                .filter(|r| all || !matching.iter().any(|o| o.name == r.name && o.id > r.id))
                .rev()
                .map(|r| check_run_json(w, r))
                .collect();
            Answer::json(200, json!({"total_count": runs.len(), "check_runs": runs}))
        }
        other => {
            w.violations
                .push(format!("{other}: the fake does not implement it"));
            Answer::json(501, json!({"message": "not implemented by the fake"}))
        }
    }
}
