//! The GitHub App through the production path: the `fleetbot` binary's own `serve`, configured
//! by environment as a deployment is, over a real SQLite store, with the fake GitHub (checked
//! against GitHub's OpenAPI description) and the simulator as its peers. Nothing in-process:
//! deliveries go in over HTTP, results are read back from GitHub.

use crate::app_harness as app;
use crate::fake_github;
use crate::pg;
use crate::support;

use std::time::Duration;

use app::{App, AppOptions, eventually};
use fake_github::{BOT_LOGIN, FakeGitHub, Fault, REPO, SECRET, fixtures, sha};
use fleetbot::github::sign;
use fleetbot::privacy::testdata;
use serde_json::json;
use support::{base_spec, spec_with_a_grown, staging_spec};

/// The pull request the ported scenarios open, from branch `grow-gpus`.
const PR: u64 = 12;

fn spec_with_gpus(n: u32) -> String {
    let s = base_spec();
    let from = "  gpu_nodes:\n    count: 1\n";
    assert!(s.contains(from));
    s.replacen(from, &format!("  gpu_nodes:\n    count: {n}\n"), 1)
}

async fn fake_github(spec: &str) -> FakeGitHub {
    fake_github::with_fleet(spec).await
}

fn pull_request(action: &str, number: u64, head: &str) -> Vec<u8> {
    fake_github::pr_delivery(action, number, head, &format!("change-{number}"))
}

/// Opens pull request `number` whose head `head` changes `files` on top of `main`.
fn open_pr(gh: &FakeGitHub, number: u64, head: &str, files: &[(&str, Option<&str>)]) {
    let mut w = gh.world();
    w.commit(REPO, &sha(1), head, files);
    w.open_pr(REPO, number, &format!("change-{number}"), head);
}

fn options(gh: &FakeGitHub, dir: &tempfile::TempDir, workers: usize) -> AppOptions {
    AppOptions {
        github_url: gh.url.clone(),
        dir: dir.path().to_path_buf(),
        workers,
        cloud: None,
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: None,
        env: Vec::new(),
    }
}

/// Both checks on `head`, once each has concluded: `(privacy, preflight)`.
async fn concluded(gh: &FakeGitHub, head: &str) -> (fake_github::CheckRun, fake_github::CheckRun) {
    eventually(&format!("both checks conclude on {head}"), || {
        let runs = gh.world().runs_on(REPO, head);
        let done = |name: &str| {
            runs.iter()
                .find(|r| r.name == name && r.conclusion.is_some())
                .cloned()
        };
        Some((done("fleet/privacy")?, done("fleet/preflight")?))
    })
    .await
}

fn bot_comments(gh: &FakeGitHub, number: u64) -> Vec<fake_github::Comment> {
    gh.world()
        .comments_on(REPO, number)
        .into_iter()
        .filter(|c| c.user == BOT_LOGIN)
        .collect()
}

#[tokio::test]
async fn a_pull_request_is_planned_live_and_its_comment_edited_on_push() {
    let sim = support::simulator(include_str!("../fixtures/sim/default.yaml")).await;
    let tenant = sim.tenant_id();
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 2);
    opts.cloud = Some((sim.endpoint(), support::TOKEN.into(), tenant.clone()));
    let app = App::start(opts).await;

    let (first, second) = (sha(11), sha(12));
    {
        let mut w = gh.world();
        w.commit(
            REPO,
            &sha(1),
            &first,
            &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
        );
        w.commit(
            REPO,
            &first,
            &second,
            &[("fleets/prod.yaml", Some(&spec_with_gpus(3)))],
        );
        w.open_pr(REPO, 7, "change-7", &first);
    }
    app.deliver("pull_request", "d-1", &pull_request("opened", 7, &first))
        .await;
    let (privacy, preflight) = concluded(&gh, &first).await;
    assert_eq!(privacy.conclusion.as_deref(), Some("success"));
    assert_eq!(
        preflight.conclusion.as_deref(),
        Some("success"),
        "{}",
        preflight.summary
    );
    // Planned against the cloud: the budget read the tenant's live allowances.
    assert_eq!(preflight.title, "1 fleet spec valid; quota fits");
    for run in [&privacy, &preflight] {
        assert_eq!(run.status, "completed");
    }
    let comments = eventually("the sticky comment", || {
        let c = bot_comments(&gh, 7);
        (c.len() == 1).then_some(c)
    })
    .await;
    assert!(
        comments[0]
            .body
            .starts_with("<!-- fleetbot:pr-comment v1 -->\n## ✅"),
        "{}",
        comments[0].body
    );
    // The App authenticated once: one installation token for the whole job.
    assert_eq!(gh.world().calls("apps/create-installation-access-token"), 1);

    gh.world().push(REPO, 7, &second);
    app.deliver(
        "pull_request",
        "d-2",
        &pull_request("synchronize", 7, &second),
    )
    .await;
    concluded(&gh, &second).await;
    let after = eventually("the comment is edited for the new head", || {
        let c = bot_comments(&gh, 7);
        (c.len() == 1 && c[0].edits > comments[0].edits).then_some(c)
    })
    .await;
    assert_eq!(after[0].id, comments[0].id, "one sticky comment, edited");

    // The tenant never reaches GitHub or the server's logs; nor does the webhook secret.
    gh.assert_never_sent(&tenant);
    gh.assert_clean();
    let logs = app.log_text();
    assert!(!logs.contains(&tenant), "{logs}");
    assert!(!logs.contains(fake_github::SECRET), "{logs}");
    // The server logs at `info` by default, in plain text when not on a terminal.
    assert!(logs.contains("fleetbot serve is listening"), "{logs}");
    assert!(
        !logs.contains('\u{1b}'),
        "colour codes in a piped log: {logs}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_stored_delivery_survives_a_restart_and_runs_once() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    // No workers: deliveries are stored and answered, and nothing handles them yet.
    let app = App::start(options(&gh, &dir, 0)).await;
    let head = sha(21);
    open_pr(
        &gh,
        8,
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    );
    let body = pull_request("opened", 8, &head);
    app.deliver("pull_request", "d-8", &body).await;
    // GitHub redelivers: the same delivery again is acknowledged and not queued twice.
    let sig = fleetbot::github::sign(fake_github::SECRET.as_bytes(), &body);
    assert_eq!(
        app.post("pull_request", "d-8", &body, Some(sig)).await,
        (202, "duplicate\n".to_string())
    );
    // Stored once: one job waits for a worker.
    assert_eq!(app.jobs("queued").await, 1);
    assert!(gh.world().runs_on(REPO, &head).is_empty());

    let app = app.restart(1).await;
    let (_, preflight) = concluded(&gh, &head).await;
    assert_eq!(
        preflight.conclusion.as_deref(),
        Some("neutral"),
        "no cloud: not checked"
    );
    eventually("the sticky comment", || {
        (gh.world().calls("issues/create-comment") == 1).then_some(())
    })
    .await;
    app.settled().await;
    assert_eq!(gh.world().calls("issues/create-comment"), 1, "exactly once");
    assert_eq!(
        gh.world()
            .runs_on(REPO, &head)
            .iter()
            .filter(|r| r.name == "fleet/preflight")
            .count(),
        1
    );
    assert_eq!(gh.world().runs_on(REPO, &head).len(), 2, "processed once");
    assert_eq!(bot_comments(&gh, 8).len(), 1);
    gh.assert_clean();
    app.stop().await;
}

#[tokio::test]
async fn a_badly_signed_delivery_is_refused_and_nothing_runs() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    // During a rotation the new and the old secret are both configured.
    let mut opts = options(&gh, &dir, 1);
    opts.webhook_secrets = Some(format!("{SECRET},old-secret"));
    let app = App::start(opts).await;
    let head = sha(31);
    open_pr(
        &gh,
        9,
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    );
    let body = pull_request("opened", 9, &head);
    let forged = fleetbot::github::sign(b"not-the-secret", &body);
    let (status, _) = app.post("pull_request", "d-9", &body, Some(forged)).await;
    assert_eq!(status, 401);
    let (status, _) = app.post("pull_request", "d-9", &body, None).await;
    assert_eq!(status, 401);
    // A body changed after signing is refused too.
    let mut tampered = body.clone();
    tampered.push(b' ');
    let sig = sign(SECRET.as_bytes(), &body);
    let (status, _) = app.post("pull_request", "d-9", &tampered, Some(sig)).await;
    assert_eq!(status, 401);
    // The rotated-out secret still works during a rotation.
    let old = sign(b"old-secret", &body);
    assert_eq!(
        app.post("ping", "d-9p", &body, Some(old)).await,
        (202, "ignored\n".to_string())
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains(
            "fleetbot_webhook_deliveries_total{event=\"pull_request\",outcome=\"refused\"} 3"
        ),
        "{metrics}"
    );
    assert!(!metrics.contains("outcome=\"accepted\""), "{metrics}");
    // Nothing was accepted: nothing reaches GitHub.
    app.settled().await;
    assert!(gh.world().requests.is_empty());
    // The real one still goes through afterwards: nothing was stored under the forged id.
    app.deliver("pull_request", "d-9", &body).await;
    concluded(&gh, &head).await;
    eventually("the sticky comment", || {
        (gh.world().calls("issues/create-comment") == 1).then_some(())
    })
    .await;
    let (status, metrics) = app.get("/metrics").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("fleetbot_"), "{metrics}");
    gh.assert_clean();
    app.stop().await;
}

#[tokio::test]
async fn two_replicas_on_one_postgres_handle_every_delivery_once() {
    // A password in the URL, as deployments have (the test server trusts local connections
    // and ignores it): it must never be logged.
    let url = pg::fresh_database()
        .await
        .replacen("://postgres@", "://postgres:s3cret-db-pass@", 1);
    assert!(url.contains("s3cret-db-pass"), "{url}");
    let gh = fake_github(&base_spec()).await;
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut replicas = Vec::new();
    for dir in [&dir_a, &dir_b] {
        let mut opts = options(&gh, dir, 2);
        opts.store_url = Some(url.clone());
        replicas.push(App::start(opts).await);
    }
    let prs: Vec<u64> = (61..67).collect();
    for number in &prs {
        let head = sha(number * 100);
        open_pr(
            &gh,
            *number,
            &head,
            &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
        );
        // GitHub may deliver one event to both replicas behind a load balancer.
        let body = pull_request("opened", *number, &head);
        let id = format!("r-{number}");
        let sig = fleetbot::github::sign(fake_github::SECRET.as_bytes(), &body);
        let (a, b) = tokio::join!(
            replicas[0].post("pull_request", &id, &body, Some(sig.clone())),
            replicas[1].post("pull_request", &id, &body, Some(sig)),
        );
        let mut answers = [a.1, b.1];
        answers.sort();
        assert_eq!(answers, ["accepted\n", "duplicate\n"], "{id}");
    }
    for number in &prs {
        concluded(&gh, &sha(number * 100)).await;
        eventually("the sticky comment", || {
            (bot_comments(&gh, *number).len() == 1).then_some(())
        })
        .await;
    }
    for app in &replicas {
        app.settled().await;
    }
    for number in &prs {
        assert_eq!(bot_comments(&gh, *number).len(), 1, "pull request {number}");
        let runs = gh.world().runs_on(REPO, &sha(number * 100));
        assert_eq!(runs.len(), 2, "one run per check: {runs:?}");
    }
    assert_eq!(gh.world().calls("issues/create-comment"), prs.len());
    gh.assert_clean();
    for app in replicas {
        let logs = app.log_text();
        assert!(!logs.contains("s3cret-db-pass"), "{logs}");
        app.stop().await;
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios moved from the in-process harness (tests/github_app.rs): the same worlds and the
// same assertions, through the binary's real configuration only.

/// Hides what changes with every release or run (the digest covers the engine version).
fn stable(text: &str) -> String {
    let re = regex::Regex::new(r"digest `[0-9a-f]{12}`").unwrap();
    let text = re.replace_all(text, "digest `[digest]`");
    text.replace(env!("CARGO_PKG_VERSION"), "[version]")
}

/// A `pull_request` delivery for [`PR`] at `head`.
fn pr12(action: &str, head: &str) -> Vec<u8> {
    fake_github::pr_delivery(action, PR, head, "grow-gpus")
}

fn pr12_ref(head: &str) -> fixtures::PrRef {
    fixtures::PrRef {
        owner: fake_github::OWNER.into(),
        repo: fake_github::NAME.into(),
        number: PR,
        head_sha: head.into(),
        base_sha: sha(1),
        head_ref: "grow-gpus".into(),
        base_ref: "main".into(),
        installation_id: fake_github::INSTALLATION,
    }
}

/// Opens [`PR`] with `changes` on top of `main` at `head` and delivers `opened` as `id`.
async fn open12(
    app: &App,
    gh: &FakeGitHub,
    id: &str,
    head: &str,
    changes: &[(&str, Option<&str>)],
) {
    {
        let mut w = gh.world();
        w.commit(REPO, &sha(1), head, changes);
        w.open_pr(REPO, PR, "grow-gpus", head);
    }
    app.deliver("pull_request", id, &pr12("opened", head)).await;
}

/// Pushes `head` (main plus `changes`, or the current head plus them) to [`PR`] and delivers
/// `synchronize` as `id`.
async fn push12(
    app: &App,
    gh: &FakeGitHub,
    id: &str,
    parent: Option<&str>,
    head: &str,
    changes: &[(&str, Option<&str>)],
) {
    {
        let mut w = gh.world();
        let parent = parent
            .map(str::to_string)
            .unwrap_or_else(|| w.repos[REPO].pulls[&PR].head_sha.clone());
        w.commit(REPO, &parent, head, changes);
        w.push(REPO, PR, head);
    }
    app.deliver("pull_request", id, &pr12("synchronize", head))
        .await;
}

/// The one run named `name` on `head`.
fn the_run(gh: &FakeGitHub, head: &str, name: &str) -> fake_github::CheckRun {
    let runs: Vec<_> = gh
        .world()
        .runs_on(REPO, head)
        .into_iter()
        .filter(|r| r.name == name)
        .collect();
    assert_eq!(runs.len(), 1, "exactly one {name} run on {head}");
    runs.into_iter().next().unwrap()
}

/// The sticky comment on [`PR`] once it has been written `edits + 1` times (each job writes
/// it once).
async fn sticky(gh: &FakeGitHub, edits: usize) -> fake_github::Comment {
    eventually(&format!("the sticky comment, edited {edits} times"), || {
        let c = bot_comments(gh, PR);
        (c.len() == 1 && c[0].edits == edits).then(|| c[0].clone())
    })
    .await
}

/// The server has logged none of `secrets`.
fn assert_not_logged(app: &App, secrets: &[&str]) {
    let logs = app.log_text();
    for s in secrets {
        assert!(!logs.contains(s), "{s} was logged:\n{logs}");
    }
}

async fn plain_app(gh: &FakeGitHub, workers: usize) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(options(gh, &dir, workers)).await;
    (app, dir)
}

/// A live world: a simulator with `fleets/prod.yaml` from `main` deployed by the library
/// engine into the SQLite file the server then uses as its store (and so its inventory), and
/// the server planning against that simulator as Nebius.
struct Live {
    app: App,
    gh: FakeGitHub,
    sim: fleetbot::sim::Simulator,
    tenant: String,
    _dir: tempfile::TempDir,
}

async fn live_world(world_yaml: &str) -> Live {
    let sim = support::simulator(world_yaml).await;
    let tenant = sim.tenant_id();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fleetbot.sqlite");
    support::deployed(&sim, &store, &base_spec(), "fleets/prod.yaml").await;
    let gh = fake_github(&base_spec()).await;
    let mut opts = options(&gh, &dir, 1);
    opts.cloud = Some((sim.endpoint(), support::TOKEN.into(), tenant.clone()));
    let app = App::start(opts).await;
    Live {
        app,
        gh,
        sim,
        tenant,
        _dir: dir,
    }
}

fn fast_world() -> String {
    crate::support::quick_default_world()
}

/// Neither the tenant nor any of its projects' IDs reached GitHub or the server's logs.
async fn assert_cloud_ids_kept(live: &Live) {
    live.gh.assert_never_sent(&live.tenant);
    assert_not_logged(&live.app, &[&live.tenant]);
    let client = support::client(&live.sim);
    for project in fleetbot::cloud::Cloud::list_projects(&client, &live.tenant)
        .await
        .unwrap()
    {
        live.gh.assert_never_sent(&project.id);
        assert_not_logged(&live.app, &[&project.id]);
    }
}

#[tokio::test]
async fn a_second_push_edits_the_same_comment() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let two = spec_with_gpus(2);
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&two))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let first = sticky(&gh, 0).await;
    let three = spec_with_gpus(3);
    push12(
        &app,
        &gh,
        "d-2",
        None,
        &sha(3),
        &[("fleets/prod.yaml", Some(&three))],
    )
    .await;
    concluded(&gh, &sha(3)).await;
    let after = sticky(&gh, 1).await;
    gh.assert_clean();
    assert_eq!(bot_comments(&gh, PR).len(), 1, "no second comment");
    assert_eq!(after.id, first.id);
    assert_ne!(after.body, first.body);
    assert!(after.body.contains("gpu\\_nodes: 1 → 3"), "{}", after.body);
    assert_eq!(gh.world().calls("issues/create-comment"), 1);
    // Both checks on each head; without a cloud the preflight is neutral.
    for head in [sha(2), sha(3)] {
        assert_eq!(
            the_run(&gh, &head, "fleet/privacy").conclusion.as_deref(),
            Some("success")
        );
        assert_eq!(
            the_run(&gh, &head, "fleet/preflight").conclusion.as_deref(),
            Some("neutral")
        );
    }
    insta::assert_snapshot!("pushed_comment", stable(&after.body));
    app.stop().await;
}

#[tokio::test]
async fn a_committed_private_id_fails_privacy_on_its_line_and_never_reaches_github() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let id = testdata::nid("tenant", "e00", 15);
    let leaked = base_spec().replace("tenant_id: \"\"", &format!("tenant_id: \"{id}\""));
    let line = leaked.lines().position(|l| l.contains(&id)).unwrap() as u64 + 1;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&leaked))],
    )
    .await;
    let (run, _) = concluded(&gh, &sha(2)).await;
    let comment = sticky(&gh, 0).await;
    gh.assert_clean();
    let run = {
        assert_eq!(the_run(&gh, &sha(2), "fleet/privacy").id, run.id);
        run
    };
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations.len(), 1);
    let a = &run.annotations[0];
    assert_eq!(a["path"], "fleets/prod.yaml");
    assert_eq!(
        (a["start_line"].as_u64(), a["end_line"].as_u64()),
        (Some(line), Some(line))
    );
    assert_eq!(a["annotation_level"], "failure");
    // The value was read from GitHub, but nothing the bot sent back or logged holds it.
    gh.assert_never_sent(&id);
    assert_not_logged(&app, &[&id]);
    assert!(comment.body.contains("diff is not shown"));
    let alias = a["message"]
        .as_str()
        .unwrap()
        .split("alias is ")
        .nth(1)
        .unwrap()[..16]
        .to_string();
    insta::assert_snapshot!(
        "private_id_privacy_summary",
        stable(&run.summary).replace(&alias, "[alias]")
    );
    insta::assert_snapshot!(
        "private_id_comment",
        stable(&comment.body).replace(&alias, "[alias]")
    );
    app.stop().await;
}

#[tokio::test]
async fn an_invalid_spec_fails_preflight_on_the_spec_line() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let broken = base_spec().replacen(
        "  gpu_nodes:\n    count: 1\n",
        "  gpu_nodes:\n    count: \"2\"\n",
        1,
    );
    let line = broken
        .lines()
        .position(|l| l.contains("count: \"2\""))
        .unwrap() as u64
        + 1;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&broken))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let comment = sticky(&gh, 0).await;
    gh.assert_clean();
    let run = the_run(&gh, &sha(2), "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title, "Blocked: 1 invalid fleet spec");
    assert_eq!(run.annotations.len(), 1);
    assert_eq!(run.annotations[0]["path"], "fleets/prod.yaml");
    assert_eq!(run.annotations[0]["start_line"].as_u64(), Some(line));
    assert_eq!(
        the_run(&gh, &sha(2), "fleet/privacy").conclusion.as_deref(),
        Some("success")
    );
    insta::assert_snapshot!("invalid_spec_preflight_summary", stable(&run.summary));
    insta::assert_snapshot!("invalid_spec_comment", stable(&comment.body));
    app.stop().await;
}

#[tokio::test]
async fn no_spec_change_reports_both_checks_skipped_and_posts_no_comment() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("README.md", Some("# fleet config\n\nTypo fixed.\n"))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    // Nothing more is coming: no comment is written after the checks.
    app.settled().await;
    gh.assert_clean();
    for name in ["fleet/privacy", "fleet/preflight"] {
        let run = the_run(&gh, &sha(2), name);
        assert_eq!(run.conclusion.as_deref(), Some("skipped"));
        assert_eq!(run.status, "completed");
    }
    assert!(bot_comments(&gh, PR).is_empty());
    assert_eq!(
        gh.world().calls("repos/get-content"),
        1,
        "only the config was read"
    );
    insta::assert_snapshot!(
        "skipped_preflight_summary",
        the_run(&gh, &sha(2), "fleet/preflight").summary
    );
    app.stop().await;
}

#[tokio::test]
async fn ping_and_unknown_events_are_acknowledged_and_ignored() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    for (i, (event, body)) in [
        (
            "ping",
            serde_json::to_vec(&fixtures::example("ping", None)).unwrap(),
        ),
        (
            "star",
            serde_json::to_vec(&fixtures::example("star", Some("created"))).unwrap(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let sig = sign(SECRET.as_bytes(), &body);
        assert_eq!(
            app.post(event, &format!("d-{i}"), &body, Some(sig)).await,
            (202, "ignored\n".into())
        );
    }
    for path in ["/healthz", "/readyz"] {
        assert_eq!(app.get(path).await.0, 200, "{path}");
    }
    // Nothing was stored or handled: no call reaches GitHub.
    app.settled().await;
    let (_, metrics) = app.get("/metrics").await;
    assert!(!metrics.contains("outcome=\"accepted\""), "{metrics}");
    assert!(gh.world().requests.is_empty());
    gh.assert_clean();
    app.stop().await;
}

#[tokio::test]
async fn commands_are_acknowledged_checked_per_permission_and_answered_once() {
    let gh = fake_github(&base_spec()).await;
    {
        let mut w = gh.world();
        w.set_role(REPO, "maintainer-mia", "maintain");
        w.set_role(REPO, "reader-rob", "read");
    }
    let (app, _dir) = plain_app(&gh, 1).await;
    let grown = spec_with_gpus(2);
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&grown))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    sticky(&gh, 0).await;
    let pr = pr12_ref(&sha(2));
    // A reader may ask for help but not re-plan; quoted and fenced commands are not commands.
    let body = "/help\n/plan\n> /verify-storage\n```\n/status\n```\n/pln\n";
    app.deliver(
        "issue_comment",
        "d-2",
        &gh.pr_comment(&pr, 501, "reader-rob", "User", body),
    )
    .await;
    let comments = eventually("the reply to the reader", || {
        let c = bot_comments(&gh, PR);
        (c.len() == 2).then_some(c)
    })
    .await;
    eventually("the reader's comment is acknowledged", || {
        (!gh.world().reactions.is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        gh.world().reactions,
        vec![(REPO.to_string(), 501, "eyes".to_string())]
    );
    // One ran (/help), two refused (/plan for a reader, /pln unknown): nothing re-planned.
    insta::assert_snapshot!("reply_to_reader", comments[1].body.clone());
    assert_eq!(gh.world().runs_on(REPO, &sha(2)).len(), 2);
    gh.assert_clean();
    // A maintainer's /plan re-runs the preflight: the plan is unchanged, so its check runs
    // are found again (same digest) and neither duplicated nor re-sent.
    let runs_before = gh.world().runs_on(REPO, &sha(2)).len();
    let looked_up = gh.world().calls("checks/list-for-ref");
    app.deliver(
        "issue_comment",
        "d-3",
        &gh.pr_comment(&pr, 502, "maintainer-mia", "User", "LGTM\n/plan\n"),
    )
    .await;
    eventually("the re-plan found both checks again", || {
        (gh.world().calls("checks/list-for-ref") >= looked_up + 2).then_some(())
    })
    .await;
    assert_eq!(gh.world().runs_on(REPO, &sha(2)).len(), runs_before);
    // Whatever else that job writes, it has written once its job is done.
    app.settled().await;
    assert_eq!(bot_comments(&gh, PR).len(), 2);
    let sticky_edits = bot_comments(&gh, PR)[0].edits;
    let reactions = gh.world().reactions.len();
    // Bots, edits and plain issues are ignored.
    let mut edited: serde_json::Value = serde_json::from_slice(&fixtures::pr_comment(
        &pr,
        504,
        "maintainer-mia",
        "User",
        "/plan\n",
    ))
    .unwrap();
    edited["action"] = json!("edited");
    edited["changes"] = json!({"body": {"from": "hello"}});
    for (id, body) in [
        (
            "d-4",
            fixtures::pr_comment(&pr, 503, "fleetbot-test[bot]", "Bot", "/plan\n"),
        ),
        ("d-5", serde_json::to_vec(&edited).unwrap()),
    ] {
        let sig = sign(SECRET.as_bytes(), &body);
        let (status, _) = app.post("issue_comment", id, &body, Some(sig)).await;
        assert_eq!(status, 202, "{id}");
    }
    app.settled().await;
    assert_eq!(gh.world().runs_on(REPO, &sha(2)).len(), runs_before);
    assert_eq!(bot_comments(&gh, PR).len(), 2);
    assert_eq!(bot_comments(&gh, PR)[0].edits, sticky_edits);
    assert_eq!(gh.world().reactions.len(), reactions);
    gh.assert_clean();
    app.stop().await;
}

#[tokio::test]
async fn rate_limits_are_waited_out_and_content_is_never_blindly_reposted() {
    let gh = fake_github(&base_spec()).await;
    {
        let mut w = gh.world();
        w.faults.push(Fault {
            operation: "pulls/list-files".into(),
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: json!({"message": "API rate limit exceeded"}),
            times: 1,
        });
        // The comment is refused with a 502: GitHub may or may not have stored it.
        w.faults.push(Fault {
            operation: "issues/create-comment".into(),
            status: 502,
            headers: vec![],
            body: json!({"message": "Server Error"}),
            times: 1,
        });
    }
    let (app, _dir) = plain_app(&gh, 1).await;
    let started = std::time::Instant::now();
    let grown = spec_with_gpus(2);
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&grown))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    sticky(&gh, 0).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after was honoured"
    );
    app.settled().await;
    gh.assert_clean();
    {
        let w = gh.world();
        assert_eq!(w.calls("pulls/list-files"), 2);
        let ops: Vec<&str> = w.requests.iter().map(|r| r.operation.as_str()).collect();
        let creates: Vec<usize> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| **o == "issues/create-comment")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(creates.len(), 2);
        assert!(
            ops[creates[0]..creates[1]].contains(&"issues/list-comments"),
            "looked for the comment before creating it again: {ops:?}"
        );
    }
    assert_eq!(bot_comments(&gh, PR).len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn more_than_fifty_annotations_go_in_batches() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let mut text = String::from("# notes\n");
    let mut ids = Vec::new();
    for i in 0..60 {
        let id = testdata::nid_seeded("project", "e00", 19, i);
        text.push_str(&format!("id {id}\n"));
        ids.push(id);
    }
    let grown = spec_with_gpus(2);
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[
            ("fleets/prod.yaml", Some(&grown)),
            ("notes/ids.txt", Some(&text)),
        ],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let comment = sticky(&gh, 0).await;
    gh.assert_clean();
    let run = the_run(&gh, &sha(2), "fleet/privacy");
    assert_eq!(run.annotations.len(), 60);
    assert_eq!(run.requests, 2, "one create with 50, one update with 10");
    assert_eq!(run.title, "60 private values committed");
    assert!(comment.body.len() < 60_000);
    for id in &ids {
        gh.assert_never_sent(id);
        assert_not_logged(&app, &[id]);
    }
    app.stop().await;
}

#[tokio::test]
async fn a_huge_pull_request_keeps_the_comment_under_githubs_limit() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let mut changes: Vec<(String, String)> = Vec::new();
    for i in 0..120 {
        let spec = base_spec()
            .replace("name: fleet1-test", &format!("name: fleet-{i:03}"))
            .replace(
                "project_prefix: \"fleet1-test-\"",
                &format!("project_prefix: \"f{i:03}-\""),
            );
        changes.push((format!("fleets/many/fleet-{i:03}.yaml"), spec));
    }
    let refs: Vec<(&str, Option<&str>)> = changes
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    open12(&app, &gh, "d-1", &sha(2), &refs).await;
    concluded(&gh, &sha(2)).await;
    let comment = sticky(&gh, 0).await;
    gh.assert_clean();
    assert!(comment.body.len() <= 60_000, "{} bytes", comment.body.len());
    assert!(
        comment.body.contains("check run"),
        "points at the check run"
    );
    let run = the_run(&gh, &sha(2), "fleet/preflight");
    assert!(run.summary.chars().count() <= 65_535);
    assert!(run.text.as_deref().unwrap_or("").chars().count() <= 65_535);
    // Paginated: 120 files need two pages of 100.
    assert_eq!(gh.world().calls("pulls/list-files"), 2);
    app.stop().await;
}

/// Every example payload of `@octokit/webhooks-examples`, signed, is answered 2xx, and every
/// example of an event the bot handles decodes.
#[tokio::test]
async fn every_webhook_example_is_acknowledged_and_handled_ones_decode() {
    let gh = fake_github(&base_spec()).await;
    // No workers: only the acknowledgement is under test.
    let (app, _dir) = plain_app(&gh, 0).await;
    let examples = fixtures::all_examples();
    assert!(examples.len() > 300, "{} examples", examples.len());
    let mut decoded = 0;
    for (i, (event, payload)) in examples.iter().enumerate() {
        let body = serde_json::to_vec(payload).unwrap();
        if [
            "pull_request",
            "issue_comment",
            "check_run",
            "installation",
            "ping",
        ]
        .contains(&event.as_str())
        {
            fleetbot::github::parse_event(event, &body)
                .unwrap_or_else(|e| panic!("example {i} of {event}: {e}"));
            decoded += 1;
        }
        let id = format!("{i:08}-0000-0000-0000-000000000000");
        let (status, _) = app
            .post(event, &id, &body, Some(sign(SECRET.as_bytes(), &body)))
            .await;
        assert_eq!(status, 202, "example {i} of {event}");
    }
    assert!(decoded > 50);
    gh.assert_clean();
    app.stop().await;
}

#[tokio::test]
async fn live_plan_shows_what_the_cloud_needs_and_unchanged_targets_add_no_demand() {
    let live = live_world(&fast_world()).await;
    let (app, gh) = (&live.app, &live.gh);
    let grown = spec_with_a_grown();
    let staging = staging_spec();
    let head = sha(2);
    open12(
        app,
        gh,
        "d-1",
        &head,
        &[
            ("fleets/prod.yaml", Some(&grown)),
            ("fleets/staging.yaml", Some(&staging)),
        ],
    )
    .await;
    concluded(gh, &head).await;
    let comment = sticky(gh, 0).await;
    let body = &comment.body;
    assert!(
        body.starts_with("<!-- fleetbot:pr-comment v1 -->\n## ✅ fleetbot preflight: ready"),
        "{body}"
    );
    assert!(
        body.contains("planned against the live state in Nebius"),
        "{body}"
    );
    // Only project a's GPU pool changes; b's cluster is proven unchanged.
    assert!(
        body.contains("| ✏️ change | cluster `fleet1-test-a/cluster` | node-group"),
        "{body}"
    );
    assert!(body.contains("node\\_count: 1 → 2"), "{body}");
    assert!(!body.contains("cluster `fleet1-test-b/cluster`"), "{body}");
    assert!(body.contains("1 cluster unchanged."), "{body}");
    // The changed target is charged in full (2 GPUs), the unchanged one not at all: a static
    // budget would ask for 3. The 2 GPUs already deployed show as in use.
    assert!(
        body.contains("| us-central1 | `compute.instance.gpu.rtx6000` | 2 GPUs | 2 GPUs |"),
        "{body}"
    );
    // A new fleet: every resource is created, planned against the same cloud.
    assert!(
        body.contains("| ➕ create | cluster `staging-a/cluster` |"),
        "{body}"
    );
    assert!(
        body.contains("| ➕ create | project `staging-b` |"),
        "{body}"
    );
    let preflight = the_run(gh, &head, "fleet/preflight");
    assert_eq!(preflight.conclusion.as_deref(), Some("success"));
    gh.assert_clean();
    // Nothing the cloud knows privately reaches GitHub or the logs.
    assert_cloud_ids_kept(&live).await;
    // As the binary publishes them: it plans against the simulator as Nebius, configured the
    // way a deployment is.
    insta::assert_snapshot!("live_comment", stable(body));
    insta::assert_snapshot!("live_preflight_summary", stable(&preflight.summary));
    insta::assert_snapshot!(
        "live_preflight_text",
        stable(preflight.text.as_deref().unwrap_or_default())
    );
    live.app.stop().await;
}

#[tokio::test]
async fn a_short_live_quota_blocks_and_an_unreachable_cloud_fails_closed() {
    // Six hundred GPU nodes: more than the tenant's allowance.
    let live = live_world(&fast_world()).await;
    let huge = base_spec().replacen(
        "    count: 1\n    platform: gpu-rtx6000",
        "    count: 600\n    platform: gpu-rtx6000",
        1,
    );
    assert_ne!(huge, base_spec());
    let head = sha(3);
    open12(
        &live.app,
        &live.gh,
        "d-1",
        &head,
        &[("fleets/prod.yaml", Some(&huge))],
    )
    .await;
    concluded(&live.gh, &head).await;
    let body = sticky(&live.gh, 0).await.body;
    let run = the_run(&live.gh, &head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    assert!(
        body.contains("blocked by compute.instance.gpu.rtx6000 in us-central1"),
        "{body}"
    );
    live.gh.assert_clean();
    assert_cloud_ids_kept(&live).await;
    live.app.stop().await;

    // A cloud that cannot be reached (nothing listens on the port): nothing is assumed; the
    // preflight fails with the reason. The port stays bound and never listens, so connecting
    // is refused; a port let go would be another test's server's to take meanwhile, and the
    // cloud's answer would be that server's (a flake that read `Unknown`).
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    // Built at run time, so the repository's own scan finds no ID-shaped literal here.
    let unreachable = &format!("tenant-{}notreachable", "e00");
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.cloud = Some((
        format!("http://127.0.0.1:{port}"),
        support::TOKEN.into(),
        unreachable.into(),
    ));
    let app = App::start(opts).await;
    let head = sha(4);
    open12(
        &app,
        &gh,
        "d-1",
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_a_grown()))],
    )
    .await;
    concluded(&gh, &head).await;
    let body = sticky(&gh, 0).await.body;
    let run = the_run(&gh, &head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    insta::assert_snapshot!("unreachable_cloud_comment", stable(&body));
    assert!(body.contains("the live plan could not be made"), "{body}");
    assert!(
        body.contains("could not read tenant quota allowances"),
        "{body}"
    );
    gh.assert_clean();
    gh.assert_never_sent(unreachable);
    assert_not_logged(&app, &[unreachable]);
    app.stop().await;
}

#[tokio::test]
async fn only_the_configured_tenant_is_read_also_for_forks() {
    let live = live_world(&fast_world()).await;
    let (app, gh) = (&live.app, &live.gh);
    // A spec pointing the bot at another tenant is refused, not read.
    let other = format!("tenant-{}otherfleetowner", "e00");
    let elsewhere =
        spec_with_a_grown().replace("tenant_id: \"\"", &format!("tenant_id: \"{other}\""));
    assert_ne!(elsewhere, spec_with_a_grown());
    let head = sha(5);
    open12(
        app,
        gh,
        "d-1",
        &head,
        &[("fleets/prod.yaml", Some(&elsewhere))],
    )
    .await;
    concluded(gh, &head).await;
    let body = sticky(gh, 0).await.body;
    let run = the_run(gh, &head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    assert!(
        body.contains(
            "the spec's tenant\\_id is not the tenant fleetbot is configured to plan against"
        ),
        "{body}"
    );
    gh.assert_never_sent(&other);
    assert_not_logged(app, &[&other]);

    // A push from a fork is planned like any other (specs are data; only the configured
    // tenant is read).
    let head = sha(6);
    {
        let mut w = gh.world();
        let parent = w.repos[REPO].pulls[&PR].head_sha.clone();
        let grown = spec_with_a_grown();
        w.commit(REPO, &parent, &head, &[("fleets/prod.yaml", Some(&grown))]);
        w.push(REPO, PR, &head);
    }
    let mut payload: serde_json::Value =
        serde_json::from_slice(&pr12("synchronize", &head)).unwrap();
    payload["pull_request"]["head"]["repo"]["full_name"] = json!("someone/fleet-config");
    app.deliver(
        "pull_request",
        "d-2",
        &serde_json::to_vec(&payload).unwrap(),
    )
    .await;
    concluded(gh, &head).await;
    let body = sticky(gh, 1).await.body;
    assert!(
        body.contains("planned against the live state in Nebius"),
        "{body}"
    );
    assert_eq!(
        the_run(gh, &head, "fleet/preflight").conclusion.as_deref(),
        Some("success")
    );
    gh.assert_clean();
    assert_cloud_ids_kept(&live).await;
    live.app.stop().await;
}

/// Issue 13: a spec pinning an existing project by an ID the tenant does not have. The live
/// plan finds the problem, and the check must fail on it, not only the summary say so.
#[tokio::test]
async fn a_pinned_project_the_tenant_does_not_have_fails_preflight() {
    let live = live_world(&fast_world()).await;
    let (app, gh) = (&live.app, &live.gh);
    let missing = testdata::nid_seeded("project", "e00", 19, 13);
    let from = "  - name: b   # display name fleet1-test-b\n";
    let pinned = base_spec().replacen(from, &format!("{from}    project_id: \"{missing}\"\n"), 1);
    assert_ne!(pinned, base_spec());
    let head = sha(7);
    open12(
        app,
        gh,
        "d-1",
        &head,
        &[("fleets/prod.yaml", Some(&pinned))],
    )
    .await;
    concluded(gh, &head).await;
    let body = sticky(gh, 0).await.body;
    gh.assert_clean();
    let run = the_run(gh, &head, "fleet/preflight");
    assert_eq!(
        run.conclusion.as_deref(),
        Some("failure"),
        "{}\n{}",
        run.title,
        run.summary
    );
    assert!(
        run.title
            .starts_with("Blocked: the live plan found problems"),
        "{}",
        run.title
    );
    assert!(
        run.summary.contains(
            "project fleet1-test-b: the pinned project\\_id is not a project of the tenant"
        ),
        "{}",
        run.summary
    );
    insta::assert_snapshot!("pinned_project_preflight_summary", stable(&run.summary));
    assert!(
        body.starts_with("<!-- fleetbot:pr-comment v1 -->\n## ❌"),
        "{body}"
    );
    // The ID is private (fleet/privacy flags it); neither it nor the cloud's IDs reach GitHub.
    assert_eq!(
        the_run(gh, &head, "fleet/privacy").conclusion.as_deref(),
        Some("failure")
    );
    gh.assert_never_sent(&missing);
    assert_not_logged(app, &[&missing]);
    assert_cloud_ids_kept(&live).await;
    live.app.stop().await;
}

/// Issue 22, item 9: a changed file's path never reaches a URL with a dot segment, so a pull
/// request cannot make the bot read another repository with its installation token.
#[tokio::test]
async fn a_path_that_climbs_out_of_the_repository_is_never_fetched() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(options(&gh, &dir, 1)).await;
    let head = sha(91);
    let climbing = "fleets/../../../../victim/private-repo/contents/x.yaml";
    open_pr(
        &gh,
        91,
        &head,
        &[
            ("fleets/prod.yaml", Some(&spec_with_gpus(2))),
            (climbing, Some("stolen: true\n")),
        ],
    );
    app.deliver("pull_request", "d-91", &pull_request("opened", 91, &head))
        .await;
    let (privacy, _) = concluded(&gh, &head).await;
    // Not read is not proven clean.
    assert_eq!(
        privacy.conclusion.as_deref(),
        Some("failure"),
        "{}",
        privacy.title
    );
    assert!(
        privacy.title.starts_with("Incomplete:"),
        "{}",
        privacy.title
    );
    // The file is named in the check (its name is the pull request's own text), but no
    // request ever went to a path outside this repository.
    let requests = gh.world().requests.clone();
    assert!(
        requests.iter().all(
            |r| r.path.starts_with(&format!("/repos/{REPO}")) || !r.path.starts_with("/repos/")
        ),
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(
        !requests
            .iter()
            .any(|r| r.operation == "repos/get-content" && r.path.contains("victim")),
        "the climbing path was fetched"
    );
    gh.assert_clean();
    app.stop().await;
}

/// Issue 22, item 2: a marker inside content (here a spec's comment, quoted in the sticky
/// comment's diff) never makes the bot overwrite that comment with a reply.
#[tokio::test]
async fn a_marker_quoted_in_a_spec_cannot_hijack_the_sticky_comment() {
    let gh = fake_github(&base_spec()).await;
    gh.world().set_role(REPO, "reader-rob", "read");
    let (app, _dir) = plain_app(&gh, 1).await;
    let forged = format!("# <!-- fleetbot:reply-to 601 -->\n{}", spec_with_gpus(2));
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&forged))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let sticky_before = sticky(&gh, 0).await;
    assert!(
        sticky_before.body.contains("fleetbot:reply-to 601"),
        "the diff quotes it"
    );
    let pr = pr12_ref(&sha(2));
    app.deliver(
        "issue_comment",
        "d-2",
        &gh.pr_comment(&pr, 601, "reader-rob", "User", "/help\n"),
    )
    .await;
    let comments = eventually("the reply, as a comment of its own", || {
        let c = bot_comments(&gh, PR);
        (c.len() == 2).then_some(c)
    })
    .await;
    let sticky_after = comments
        .iter()
        .find(|c| c.id == sticky_before.id)
        .expect("the sticky comment is still there");
    assert_eq!(
        sticky_after.body, sticky_before.body,
        "not overwritten by the reply"
    );
    assert_eq!(sticky_after.edits, sticky_before.edits);
    gh.assert_clean();
    app.stop().await;
}

/// Issue 22, item 2: the sticky comment is only ever one the App's own bot account wrote. A
/// person's comment and another App's comment, each opening with the exact marker, are left
/// alone and the bot writes its own.
#[tokio::test]
async fn a_marked_comment_by_anyone_else_is_never_adopted() {
    let gh = fake_github(&base_spec()).await;
    let marker = fleetbot::bot::render::COMMENT_MARKER;
    let planted = format!("{marker}\n## fleetbot preflight\nlooks fine, merge it\n");
    let (person, other_app) = {
        let mut w = gh.world();
        (
            w.add_comment(REPO, PR, "mallory", "User", &planted),
            w.add_comment(REPO, PR, "other-app[bot]", "Bot", &planted),
        )
    };
    let (app, _dir) = plain_app(&gh, 1).await;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let own = sticky(&gh, 0).await;
    assert!(own.body.starts_with(marker));
    let comments = gh.world().comments_on(REPO, PR);
    assert_eq!(comments.len(), 3, "the bot made a comment of its own");
    for id in [person, other_app] {
        let c = comments.iter().find(|c| c.id == id).unwrap();
        assert_eq!((c.edits, c.body.as_str()), (0, planted.as_str()));
    }
    assert_eq!(gh.world().calls("issues/update-comment"), 0);
    assert_eq!(gh.world().calls("apps/get-authenticated"), 1);
    gh.assert_clean();
    app.stop().await;
}

/// Issue 22, item 12: a key the reference ignores (`regoin:`) fails `fleet/preflight` with an
/// annotation on the key's line naming the key it is nearest to, as `--strict` does.
#[tokio::test]
async fn an_unknown_spec_key_fails_preflight_on_its_line() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let typo = base_spec().replacen("region: us-central1\n", "regoin: us-central1\n", 1);
    let line = typo.lines().position(|l| l.starts_with("regoin:")).unwrap() as u64 + 1;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&typo))],
    )
    .await;
    concluded(&gh, &sha(2)).await;
    let comment = sticky(&gh, 0).await;
    gh.assert_clean();
    let run = the_run(&gh, &sha(2), "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title, "Blocked: 1 invalid fleet spec");
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let a = &run.annotations[0];
    assert_eq!(a["path"], "fleets/prod.yaml");
    assert_eq!(a["start_line"].as_u64(), Some(line));
    assert_eq!(a["start_column"].as_u64(), Some(1));
    assert_eq!(a["annotation_level"], "failure");
    assert_eq!(a["message"], "regoin: unknown key; did you mean 'region'?");
    assert!(
        run.summary.contains("did you mean 'region'?"),
        "{}",
        run.summary
    );
    assert!(comment.body.contains("`regoin`"), "{}", comment.body);
    app.stop().await;
}

/// Issue 52, item 1: a spec of one 2 MiB anchored string and as many aliases of it as fit in
/// 4 MiB (~1.4 TB expanded) took `serve` down ten seconds after the delivery and again at every
/// restart. Now its pull request fails `fleet/preflight` at the alias that crossed the
/// reader's limit, the server stays up, and the next delivery is handled.
#[tokio::test]
async fn an_alias_bomb_fails_preflight_and_the_server_handles_the_next_delivery() {
    let gh = fake_github(&base_spec()).await;
    let (app, _dir) = plain_app(&gh, 1).await;
    let mut bomb = format!(
        "apiVersion: npa.fleet/v0.0.1\nname: fleet1-test\nnote: &n \"{}\"\nprojects: [*n",
        "x".repeat(2 << 20)
    );
    while bomb.len() < (4 << 20) - 8 {
        bomb.push_str(",*n");
    }
    bomb.push_str("]\n");
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&bomb))],
    )
    .await;
    let (_, run) = concluded(&gh, &sha(2)).await;
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title, "Blocked: 1 invalid fleet spec");
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let a = &run.annotations[0];
    assert_eq!(a["path"], "fleets/prod.yaml");
    // The eighth copy of the string crosses 16 MiB: the seventh alias, on line 4.
    assert_eq!(a["start_line"].as_u64(), Some(4));
    assert_eq!(
        a["start_column"].as_u64(),
        Some(("projects: [".len() + 1 + 6 * ",*n".len()) as u64)
    );
    assert!(
        a["message"]
            .as_str()
            .unwrap()
            .contains("document expands to more than 16777216 bytes of keys and values (alias expansion limit)"),
        "{a}"
    );

    // The server is up and takes the next push as any other (valid; no cloud to plan with).
    push12(
        &app,
        &gh,
        "d-2",
        Some(&sha(2)),
        &sha(3),
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    let (_, run) = concluded(&gh, &sha(3)).await;
    assert_eq!(
        run.conclusion.as_deref(),
        Some("neutral"),
        "{}",
        run.summary
    );
    assert!(run.summary.contains("✅ valid"), "{}", run.summary);
    gh.assert_clean();
    app.stop().await;
}

/// A cloud endpoint that takes connections and never answers: every call waits out its
/// per-attempt timeout (20 s), so a job that plans against it is still running when a test
/// wants it to be.
async fn stalled_cloud() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            open.push(conn);
        }
    });
    (endpoint, held)
}

/// The job processes `serve` runs (its child processes, whichever thread started them).
fn job_processes(app: &App) -> Vec<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{}/task", app.pid())).unwrap();
    let mut pids: Vec<u32> = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    pids.sort();
    pids
}

/// The job processes, once there are `n` of them.
async fn started_job_processes(app: &App, n: usize) -> Vec<u32> {
    eventually(&format!("{n} job processes"), || {
        let pids = job_processes(app);
        (pids.len() == n).then_some(pids)
    })
    .await
}

/// The store's record of job `id`, read from the server's SQLite file.
async fn job_record(dir: &std::path::Path, id: &str) -> fleetbot::store::JobRecord {
    use fleetbot::store::JobQueue;
    let store = fleetbot::store::SqliteStore::open(&dir.join("fleetbot.sqlite"))
        .await
        .unwrap();
    let record = store.job(id).await.unwrap().expect("the job is stored");
    store.close().await;
    record
}

/// Waits until job `id` has failed, and returns its record.
async fn failed_job(dir: &std::path::Path, id: &str) -> fleetbot::store::JobRecord {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let record = job_record(dir, id).await;
        if record.state == "failed" {
            return record;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "job {id} never failed: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 52, item 2: a job past its memory budget ends its job process, not the server. The
/// job is failed with that reason and not run again, intake answers meanwhile, and the next
/// pull request is handled by the job process started in its place.
#[tokio::test]
async fn a_job_over_its_memory_budget_is_failed_and_the_server_goes_on() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.env.push(("FLEETBOT_JOB_MEMORY_MIB", "64".into()));
    let app = App::start(opts).await;
    let first = started_job_processes(&app, 1).await;
    // A valid spec of 20,000 projects: about 150 MB to plan, which a budget of 64 MiB does
    // not allow.
    let projects: String = (0..20_000).map(|i| format!("  - name: p{i}\n")).collect();
    let big = base_spec().replacen("projects:\n", &format!("projects:\n{projects}"), 1);
    open12(
        &app,
        &gh,
        "d-big",
        &sha(2),
        &[("fleets/prod.yaml", Some(&big))],
    )
    .await;
    let record = failed_job(dir.path(), "d-big").await;
    assert_eq!(
        record.last_error,
        "exceeded its memory budget of 64 MiB; its process was ended and it is not run again"
    );
    assert_eq!(record.attempts, 1, "not run again");
    // Meanwhile and after, intake answers, and a new job process takes the next job.
    let (status, _) = app.get("/healthz").await;
    assert_eq!(status, 200);
    open_pr(&gh, 13, &sha(3), &[("README.md", Some("# fleet\n"))]);
    app.deliver(
        "pull_request",
        "d-next",
        &pull_request("opened", 13, &sha(3)),
    )
    .await;
    eventually("the next pull request's checks", || {
        let runs = gh.world().runs_on(REPO, &sha(3));
        (runs
            .iter()
            .filter(|r| r.conclusion.as_deref() == Some("skipped"))
            .count()
            == 2)
            .then_some(())
    })
    .await;
    let second = started_job_processes(&app, 1).await;
    assert_ne!(first, second, "the job process was replaced");
    assert!(
        app.log_text().contains("reached its memory budget"),
        "{}",
        app.log_text()
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains(
            "fleetbot_job_duration_seconds_count{event=\"pull_request\",outcome=\"over_memory\"} 1"
        ),
        "{metrics}"
    );
    gh.assert_clean();
    app.stop().await;
}

/// Issue 52, item 2: a job that takes its process down (here: killed, as the kernel's OOM
/// killer would) runs once more in a new one; when that ends too, the job is failed with the
/// reason, not run a third time, and deliveries that arrived meanwhile were all stored.
#[tokio::test]
async fn a_job_whose_process_ends_twice_is_failed_and_nothing_else_is_lost() {
    let (endpoint, _held) = stalled_cloud().await;
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.cloud = Some((endpoint, support::TOKEN.into(), "tenant-e00stalled".into()));
    let app = App::start(opts).await;
    let grown = spec_with_gpus(2);
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&grown))],
    )
    .await;
    let mut killed = Vec::new();
    for round in 1..=2u32 {
        // The job is running (in a job process waiting on the cloud): end that process.
        let pid = eventually(&format!("attempt {round} runs"), || {
            let pids = job_processes(&app);
            let running = job_record_now(dir.path(), "d-1");
            (running
                .as_ref()
                .is_some_and(|r| r.state == "running" && r.attempts == round)
                && pids.len() == 1
                && !killed.contains(&pids[0]))
            .then(|| pids[0])
        })
        .await;
        // SAFETY: the test's own child's child, by pid.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
        killed.push(pid);
        // Intake takes deliveries while the job process is gone.
        app.deliver(
            "pull_request",
            &format!("labeled-{round}"),
            &pr12("labeled", &sha(2)),
        )
        .await;
    }
    let record = failed_job(dir.path(), "d-1").await;
    assert_eq!(record.attempts, 2);
    assert_eq!(
        record.last_error,
        "its process ended under it 2 times (the last: killed by signal 9 (SIGKILL: killed, perhaps by the kernel's OOM killer)); not run again"
    );
    let store = fleetbot::store::SqliteStore::open(&dir.path().join("fleetbot.sqlite"))
        .await
        .unwrap();
    for round in 1..=2 {
        use fleetbot::store::JobQueue;
        assert!(
            store
                .delivery_known(&format!("labeled-{round}"))
                .await
                .unwrap()
        );
    }
    store.close().await;
    gh.assert_clean();
    app.stop().await;
}

/// The record of job `id` now, if the store answers (the test reads it while the server
/// writes).
fn job_record_now(dir: &std::path::Path, id: &str) -> Option<fleetbot::store::JobRecord> {
    let dir = dir.to_path_buf();
    let id = id.to_string();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?
            .block_on(async { Some(job_record(&dir, &id).await) })
    })
    .join()
    .ok()
    .flatten()
}

/// Issue 52, item 5: six dashboard requests against a stalled cloud finished one after
/// another, ten seconds apart (one lock held across each read, failures not kept). Now they
/// share one read: all six are answered together, each saying the cloud did not answer, and
/// the next page does not wait for the cloud again.
#[tokio::test]
async fn dashboard_pages_share_one_read_of_a_stalled_cloud() {
    let (endpoint, _held) = stalled_cloud().await;
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 0);
    opts.cloud = Some((endpoint, support::TOKEN.into(), "tenant-e00stalled".into()));
    let app = App::start(opts).await;
    let pages =
        futures_util::future::join_all((0..6).map(|_| app.dashboard_get("/api/dashboard"))).await;
    for (status, body) in &pages {
        assert_eq!(*status, 200, "{body}");
        assert!(
            body.contains("The cloud's quota did not answer in time."),
            "{body}"
        );
    }
    // The failure is kept: the next page says so without a read of its own (the unit test of
    // `SharedQuota` counts the reads).
    let (status, body) = app.dashboard_get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains("did not answer in time"), "{body}");
    gh.assert_clean();
    app.stop().await;
}

/// A server on the embedded simulator (`FLEETBOT_CLOUD=simulator`) lends it to its job
/// processes: they reach it as a resident simulator, so a pull request is planned live there,
/// its quota budget checked, as in-process workers did.
#[tokio::test]
async fn job_processes_plan_against_the_server_s_embedded_simulator() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(&world, crate::support::quick_default_world()).unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.env = vec![
        ("FLEETBOT_CLOUD", "simulator".into()),
        ("FLEETBOT_SIM_WORLD", world.display().to_string()),
        (
            "FLEETBOT_SIM_STATE",
            dir.path().join("sim.state").display().to_string(),
        ),
    ];
    let app = App::start(opts).await;
    started_job_processes(&app, 1).await;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    let (_, run) = concluded(&gh, &sha(2)).await;
    assert_eq!(
        run.conclusion.as_deref(),
        Some("success"),
        "{}",
        run.summary
    );
    assert!(
        !run.summary.contains("quota not checked"),
        "{}",
        run.summary
    );
    gh.assert_clean();
    app.stop().await;
}

/// Issue 52, item 2: a job past its time budget is ended (here a preflight waiting on a cloud
/// that never answers) and failed with that reason, not run again.
#[tokio::test]
async fn a_job_over_its_time_budget_is_ended_and_failed() {
    let (endpoint, _held) = stalled_cloud().await;
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.cloud = Some((endpoint, support::TOKEN.into(), "tenant-e00stalled".into()));
    opts.env.push(("FLEETBOT_JOB_TIMEOUT_SECS", "2".into()));
    let app = App::start(opts).await;
    let pids = started_job_processes(&app, 1).await;
    open12(
        &app,
        &gh,
        "d-1",
        &sha(2),
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    let record = failed_job(dir.path(), "d-1").await;
    assert_eq!(
        record.last_error,
        "exceeded its time budget of 2 s; ended and not run again"
    );
    assert_eq!(record.attempts, 1);
    // The job ended where it waited: its process lives on.
    assert_eq!(job_processes(&app), pids);
    gh.assert_clean();
    app.stop().await;
}

/// Sends `request` on a fresh connection and reads what comes back within `wait` (the
/// answer, or nothing when the server closed the connection).
async fn raw_exchange(url: &str, request: &[u8], wait: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = tcp.write_all(request).await;
    let mut buf = vec![0u8; 4096];
    match tokio::time::timeout(wait, tcp.read(&mut buf)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Ok(Err(_)) => String::new(),
        Err(_) => "(no answer in time)".into(),
    }
}

#[tokio::test]
async fn slow_large_and_unsigned_clients_cost_the_server_little() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.env = vec![
        ("FLEETBOT_MAX_CONNECTIONS", "4".into()),
        ("FLEETBOT_HEADER_TIMEOUT_SECS", "1".into()),
        ("FLEETBOT_BODY_TIMEOUT_SECS", "1".into()),
    ];
    let app = App::start(opts).await;
    let signed = format!("X-Hub-Signature-256: sha256={}\r\n", "0".repeat(64));
    // A body declared over the cap is refused before a byte of it is sent.
    let huge = format!(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: d-1\r\n{signed}Content-Length: 30000000\r\n\r\n"
    );
    let answer = raw_exchange(&app.url, huge.as_bytes(), Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // An unsigned body is refused before it is read.
    let unsigned = "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: d-2\r\nContent-Length: 20000000\r\n\r\n";
    let answer = raw_exchange(&app.url, unsigned.as_bytes(), Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    // A signed body that never arrives times out.
    let stalled = format!(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: d-3\r\n{signed}Content-Length: 1000\r\n\r\nonly a little"
    );
    let answer = raw_exchange(&app.url, stalled.as_bytes(), Duration::from_secs(4)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Headers that never finish: the connection is closed.
    let slow = raw_exchange(
        &app.url,
        b"POST /webhook HTTP/1.1\r\nHost:",
        Duration::from_secs(4),
    )
    .await;
    assert!(
        !slow.contains("no answer in time"),
        "a slow client kept its connection: {slow}"
    );
    // A flood of idle connections past the cap: health checks still get through.
    let addr = app.url.trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..12 {
        idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    let health = raw_exchange(
        &app.url,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(3),
    )
    .await;
    // Answered at all, within the exchange's own bound; how fast is a benchmark's figure
    // (`benches/server_timing.rs`, docs/status.md), not a pass mark on a shared machine.
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    drop(idle);
    gh.assert_clean();
    app.stop().await;
}

/// A connection to the server from `source`, another loopback address: a peer of its own,
/// as a stranger's machine would be.
async fn connect_from(url: &str, source: [u8; 4]) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::from((source, 0)))
        .unwrap();
    socket.connect(addr).await.unwrap()
}

/// The head of a `POST /webhook` of `length` bytes signed as `signature` says.
fn webhook_head(id: &str, length: usize, signature: &str) -> String {
    format!(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: {id}\r\nX-Hub-Signature-256: {signature}\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// A stranger's signature: well-formed, and wrong.
fn forged() -> String {
    format!("sha256={}", "0".repeat(64))
}

/// The status line that comes back on `tcp` within `wait` ("" when the connection was closed
/// or reset first, "(no answer in time)" when nothing came).
async fn status_line(tcp: &mut tokio::net::tcp::OwnedReadHalf, wait: Duration) -> String {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 256];
    match tokio::time::timeout(wait, tcp.read(&mut buf)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&buf[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
        Ok(Err(_)) => String::new(),
        Err(_) => "(no answer in time)".into(),
    }
}

/// The value of one metric line (`name{labels}`), 0 when absent.
fn metric(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Opens `n` uploads from `sources` in turn, each the head of a 1 MB body with a forged
/// signature and one byte of it, and then nothing.
async fn slow_strangers(
    url: &str,
    n: usize,
    sources: &[[u8; 4]],
) -> Vec<(
    tokio::net::tcp::OwnedReadHalf,
    tokio::net::tcp::OwnedWriteHalf,
)> {
    strangers_sending(url, n, sources, 1).await
}

/// [`slow_strangers`] whose uploads each send `first` bytes at once before they stall: enough
/// to be given a slot (`intake::FIRST_BYTES`), as a stranger that starts fast would be.
async fn strangers_sending(
    url: &str,
    n: usize,
    sources: &[[u8; 4]],
    first: usize,
) -> Vec<(
    tokio::net::tcp::OwnedReadHalf,
    tokio::net::tcp::OwnedWriteHalf,
)> {
    use tokio::io::AsyncWriteExt;
    let mut strangers = Vec::new();
    for i in 0..n {
        let tcp = connect_from(url, sources[i % sources.len()]).await;
        let (read, mut write) = tcp.into_split();
        let head = webhook_head(&format!("stranger-{i}"), 1_000_000, &forged());
        write.write_all(head.as_bytes()).await.unwrap();
        write.write_all(&vec![b'{'; first]).await.unwrap();
        strangers.push((read, write));
    }
    strangers
}

#[tokio::test]
async fn strangers_holding_slow_fake_signed_bodies_cannot_stall_intake() {
    // Issue 32: 16 connections with a forged signature, `Content-Length: 1000000` and a byte
    // now and then took every body slot, and genuine deliveries got 503 for ~28 s.
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(options(&gh, &dir, 1)).await;
    // 24 strangers on six addresses, each within its address's bound.
    let sources: Vec<[u8; 4]> = (2..8).map(|d| [127, 0, 0, d]).collect();
    let mut strangers = slow_strangers(&app.url, 24, &sources).await;
    // Time for the server to start reading each of them (it reads headers at once).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A genuine delivery is taken meanwhile (202), and its job runs.
    let head = sha(61);
    let preflight = app
        .open_reviewed(
            &gh,
            61,
            &head,
            &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
        )
        .await;
    assert!(preflight.conclusion.is_some());
    // The strangers are cut off by the rate floor (408), long before the body timeout (30 s).
    let answers = futures_util::future::join_all(
        strangers
            .iter_mut()
            .map(|(read, _)| status_line(read, Duration::from_secs(20))),
    )
    .await;
    for answer in &answers {
        assert!(answer.starts_with("HTTP/1.1 408"), "{answers:?}");
    }
    let (_, metrics) = app.get("/metrics").await;
    assert_eq!(
        metric(
            &metrics,
            "fleetbot_webhook_refusals_total{reason=\"too_slow\"}"
        ),
        24,
        "{metrics}"
    );
    drop(strangers);
    app.stop().await;
    gh.assert_clean();
}

#[tokio::test]
async fn a_peer_over_its_bound_drops_its_own_slowest_never_taking_a_shared_slot() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    // Four shared slots, two per address, and no rate floor: the strangers' uploads stay.
    opts.env = vec![
        ("FLEETBOT_MAX_BODY_READERS", "4".into()),
        ("FLEETBOT_MAX_BODIES_PER_PEER", "2".into()),
        ("FLEETBOT_MIN_BODY_RATE", "0".into()),
    ];
    let app = App::start(opts).await;
    // One stranger's address opens six uploads: two are read at a time; each of the others
    // takes the place of the slowest of that address's own once it has been read for a while
    // without progress, or waits for one of that address's own slots and is refused, but
    // never waits for, nor takes, a shared slot. Had they, the genuine delivery below would
    // find none free.
    let mut strangers = strangers_sending(
        &app.url,
        6,
        &[[127, 0, 0, 9]],
        fleetbot::server::intake::FIRST_BYTES,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let head = sha(62);
    app.open_reviewed(
        &gh,
        62,
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    let answers = futures_util::future::join_all(
        strangers
            .iter_mut()
            .map(|(read, _)| status_line(read, Duration::from_secs(8))),
    )
    .await;
    let refused = answers
        .iter()
        .filter(|a| a.starts_with("HTTP/1.1 503") || a.starts_with("HTTP/1.1 429"))
        .count();
    let read = answers
        .iter()
        .filter(|a| *a == "(no answer in time)")
        .count();
    assert_eq!((refused, read), (4, 2), "{answers:?}");
    let (_, metrics) = app.get("/metrics").await;
    let reason = |r: &str| {
        metric(
            &metrics,
            &format!("fleetbot_webhook_refusals_total{{reason=\"{r}\"}}"),
        )
    };
    assert_eq!(reason("evicted") + reason("peer_busy"), 4, "{metrics}");
    assert_eq!(
        metric(&metrics, "fleetbot_webhook_unverified_bodies"),
        2,
        "{metrics}"
    );
    drop(strangers);
    app.stop().await;
    gh.assert_clean();
}

/// A genuine, signed delivery of pull request 12's `opened` (as `id`) on a connection from
/// `source`, with `headers` added; the status line of the answer.
async fn genuine_from(url: &str, source: [u8; 4], headers: &str, id: &str, head: &str) -> String {
    use tokio::io::AsyncWriteExt;
    let body = pr12("opened", head);
    let signature = sign(SECRET.as_bytes(), &body);
    let mut request = webhook_head(id, body.len(), &signature);
    request.insert_str(request.len() - 2, headers);
    let tcp = connect_from(url, source).await;
    let (mut read, mut write) = tcp.into_split();
    write.write_all(request.as_bytes()).await.unwrap();
    write.write_all(&body).await.unwrap();
    status_line(&mut read, Duration::from_secs(10)).await
}

/// [`genuine_from`] with a `padding` field of `padding` bytes in the payload (the decoder
/// ignores it), so the body is larger than a block.
async fn genuine_from_padded(
    url: &str,
    source: [u8; 4],
    id: &str,
    head: &str,
    padding: usize,
) -> String {
    use tokio::io::AsyncWriteExt;
    let mut payload: serde_json::Value = serde_json::from_slice(&pr12("opened", head)).unwrap();
    payload["padding"] = json!("x".repeat(padding));
    let body = serde_json::to_vec(&payload).unwrap();
    let signature = sign(SECRET.as_bytes(), &body);
    let request = webhook_head(id, body.len(), &signature);
    let tcp = connect_from(url, source).await;
    let (mut read, mut write) = tcp.into_split();
    write.write_all(request.as_bytes()).await.unwrap();
    write.write_all(&body).await.unwrap();
    status_line(&mut read, Duration::from_secs(10)).await
}

/// Issue 52, item 3: behind a proxy that forwards no client address, every delivery comes from
/// one address; 24 slow fake-signed uploads from it made a genuine delivery wait 2 s and get
/// `429`. Now an upload that trickles never holds a slot (its first bytes are read before it
/// takes one), and of those that started fast and then stalled, the slowest is dropped for the
/// genuine delivery.
#[tokio::test]
async fn behind_one_proxy_address_slow_strangers_cannot_keep_a_genuine_delivery_out() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.env = vec![("FLEETBOT_MIN_BODY_RATE", "0".into())];
    let app = App::start(opts).await;
    let proxy = [127, 0, 0, 9];
    let mut trickling = slow_strangers(&app.url, 24, &[proxy]).await;
    let mut stalled = strangers_sending(
        &app.url,
        24,
        &[proxy],
        fleetbot::server::intake::FIRST_BYTES,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The address's eight slots are held by stalled uploads, sixteen more wait for one, and
    // the trickling ones hold none.
    let (_, metrics) = app.get("/metrics").await;
    assert_eq!(
        metric(&metrics, "fleetbot_webhook_unverified_bodies"),
        8,
        "{metrics}"
    );
    let evicted = |metrics: &str| {
        metric(
            metrics,
            "fleetbot_webhook_refusals_total{reason=\"evicted\"}",
        )
    };
    let before = evicted(&metrics);
    {
        let mut w = gh.world();
        w.commit(
            REPO,
            &sha(1),
            &sha(63),
            &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
        );
        w.open_pr(REPO, PR, "grow-gpus", &sha(63));
    }
    // A delivery larger than a block (GitHub's can be, with many commits) needs a slot: the
    // slowest stalled upload is dropped for it.
    let answer = genuine_from_padded(&app.url, proxy, "d-genuine", &sha(63), 100_000).await;
    assert_eq!(answer, "HTTP/1.1 202 Accepted");
    concluded(&gh, &sha(63)).await;
    let (_, metrics) = app.get("/metrics").await;
    assert_eq!(evicted(&metrics), before + 1, "{metrics}");
    // One that fits its block takes no slot at all.
    let answer = genuine_from(&app.url, proxy, "", "d-small", &sha(63)).await;
    assert_eq!(answer, "HTTP/1.1 202 Accepted");
    let (_, metrics) = app.get("/metrics").await;
    assert_eq!(evicted(&metrics), before + 1, "{metrics}");
    drop((trickling.drain(..), stalled.drain(..)));
    app.stop().await;
    gh.assert_clean();
}

/// Issue 52, item 3: with `FLEETBOT_TRUSTED_PROXIES`, the peer is the rightmost forwarded
/// address that is not a trusted proxy, for the source allowlist as for the per-peer bound;
/// what a client writes into the header itself, or a proxy that is not trusted, is not
/// believed.
#[tokio::test]
async fn a_trusted_proxy_s_forwarded_address_is_the_peer() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 0);
    opts.env = vec![
        ("FLEETBOT_TRUSTED_PROXIES", "127.0.0.9".into()),
        ("FLEETBOT_WEBHOOK_SOURCE_RANGES", "140.82.112.0/20".into()),
    ];
    let app = App::start(opts).await;
    let github = "X-Forwarded-For: 140.82.115.1\r\n";
    let stranger = "X-Forwarded-For: 203.0.113.5\r\n";
    let spoofed = "X-Forwarded-For: 140.82.115.1, 203.0.113.5\r\n";
    let forwarded = "Forwarded: for=203.0.113.5, for=\"140.82.115.2:443\"\r\n";
    for (i, (source, headers, status)) in [
        ([127, 0, 0, 9], github, "HTTP/1.1 202 Accepted"),
        ([127, 0, 0, 9], forwarded, "HTTP/1.1 202 Accepted"),
        ([127, 0, 0, 9], stranger, "HTTP/1.1 403 Forbidden"),
        ([127, 0, 0, 9], spoofed, "HTTP/1.1 403 Forbidden"),
        ([127, 0, 0, 9], "", "HTTP/1.1 403 Forbidden"),
        // Not a trusted proxy: its header says nothing.
        ([127, 0, 0, 10], github, "HTTP/1.1 403 Forbidden"),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = genuine_from(&app.url, source, headers, &format!("d-{i}"), &sha(2)).await;
        assert_eq!(answer, status, "{i}: {headers:?} from {source:?}");
    }
    app.stop().await;
    gh.assert_clean();
}

/// The peak resident memory of process `pid` (MiB).
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    kib / 1024
}

#[tokio::test]
async fn concurrent_large_fake_signed_bodies_leave_memory_bounded() {
    // Issue 32: 16 fake-signed 25 MB bodies sent at once peaked at 400–480 MB resident.
    use tokio::io::AsyncWriteExt;
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(options(&gh, &dir, 1)).await;
    let before = peak_rss_mib(app.pid());
    let body = std::sync::Arc::new(vec![b' '; 25 << 20]);
    let strangers: Vec<_> = (0..16u8)
        .map(|i| {
            let (url, body) = (app.url.clone(), body.clone());
            tokio::spawn(async move {
                let tcp = connect_from(&url, [127, 0, 1, 1 + i]).await;
                let (mut read, mut write) = tcp.into_split();
                let writer = tokio::spawn(async move {
                    let head = webhook_head(&format!("big-{i}"), body.len(), &forged());
                    let _ = write.write_all(head.as_bytes()).await;
                    // Refused part-way, the server closes: the rest cannot be sent.
                    let _ = write.write_all(&body).await;
                    // Open until the answer is read, as an HTTP client keeps it (hyper takes
                    // a half-closed connection for one given up on).
                    std::future::pending::<()>().await;
                    drop(write);
                });
                let answer = status_line(&mut read, Duration::from_secs(120)).await;
                writer.abort();
                answer
            })
        })
        .collect();
    // A genuine delivery is taken meanwhile: its body fits in its first block, which the
    // strangers' bytes cannot take from it.
    let head = sha(63);
    app.open_reviewed(
        &gh,
        63,
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    let answers: Vec<String> = futures_util::future::join_all(strangers)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(
        !answers.iter().any(|a| a.starts_with("HTTP/1.1 2")),
        "{answers:?}"
    );
    // The bodies may hold the unverified-byte budget (64 MiB) and what each connection
    // buffers besides; before the budget, the same 16 bodies added
    // about 320 MiB to a debug build's 50 MiB (issue 32: 400–480 MB peaks).
    let peak = peak_rss_mib(app.pid());
    eprintln!("peak resident memory {peak} MiB ({before} MiB before the bodies)");
    assert!(
        peak - before < 120,
        "peak resident memory {peak} MiB ({before} MiB before the bodies)"
    );
    let (_, metrics) = app.get("/metrics").await;
    let refused = metric(
        &metrics,
        "fleetbot_webhook_refusals_total{reason=\"memory\"}",
    ) + metric(
        &metrics,
        "fleetbot_webhook_refusals_total{reason=\"signature\"}",
    );
    assert_eq!(refused, 16, "{metrics}");
    assert_eq!(metric(&metrics, "fleetbot_webhook_unverified_bytes"), 0);
    app.stop().await;
    gh.assert_clean();
}

#[tokio::test]
async fn webhooks_are_taken_only_from_the_allowed_sources() {
    use tokio::io::AsyncWriteExt;
    let gh = fake_github(&base_spec()).await;
    gh.world().hook_ranges = vec!["127.0.0.1/32".into(), "2001:db8::/32".into()];
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.env = vec![("FLEETBOT_WEBHOOK_SOURCE_RANGES", "github".into())];
    let app = App::start(opts.clone()).await;
    assert_eq!(
        gh.world().calls("meta/get"),
        1,
        "GitHub's ranges are read at start"
    );
    // From a listed address: taken, and its job runs.
    let head = sha(64);
    app.open_reviewed(
        &gh,
        64,
        &head,
        &[("fleets/prod.yaml", Some(&spec_with_gpus(2)))],
    )
    .await;
    // Correctly signed, from an address GitHub does not list: refused before its body.
    let body = pull_request("opened", 65, &sha(65));
    let tcp = connect_from(&app.url, [127, 0, 0, 3]).await;
    let (mut read, mut write) = tcp.into_split();
    let head = webhook_head("d-65", body.len(), &sign(SECRET.as_bytes(), &body));
    write.write_all(head.as_bytes()).await.unwrap();
    let _ = write.write_all(&body).await;
    let answer = status_line(&mut read, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let (_, metrics) = app.get("/metrics").await;
    assert_eq!(
        metric(
            &metrics,
            "fleetbot_webhook_refusals_total{reason=\"source\"}"
        ),
        1,
        "{metrics}"
    );
    app.stop().await;
    // Asked for and unknowable: the server does not start (fails closed).
    gh.world().faults.push(Fault {
        operation: "meta/get".into(),
        status: 404,
        headers: vec![],
        body: json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        times: 10,
    });
    let (code, out) = app::run_to_exit(&opts, Duration::from_secs(60)).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FLEETBOT_WEBHOOK_SOURCE_RANGES=github: cannot read GitHub's hook ranges"),
        "{out}"
    );
    // Fixed ranges need no GitHub: 127.0.0.1 is not among them.
    opts.env = vec![(
        "FLEETBOT_WEBHOOK_SOURCE_RANGES",
        "127.0.0.3, 10.0.0.0/8".into(),
    )];
    let app = App::start(opts).await;
    let (status, _) = app
        .post(
            "pull_request",
            "d-66",
            &body,
            Some(sign(SECRET.as_bytes(), &body)),
        )
        .await;
    assert_eq!(status, 403);
    app.stop().await;
    gh.assert_clean();
}

#[tokio::test]
async fn the_dashboard_has_a_listener_of_its_own_or_none_unless_asked_beside_the_webhook() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    // The harness's own setting: a listener of its own, as by default (on a free port).
    let app = App::start(opts.clone()).await;
    let logs = app.log_text();
    let dashboard = logs
        .lines()
        .find_map(|l| l.strip_prefix("fleetbot serve: dashboard on "))
        .unwrap_or_else(|| panic!("the dashboard's address is printed:\n{logs}"))
        .trim()
        .to_string();
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move { http.get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(get(format!("http://{dashboard}/")).await, 200);
    assert_eq!(get(format!("http://{dashboard}/api/dashboard")).await, 200);
    // Off the webhook's listener, and the webhook is not on the dashboard's.
    assert_eq!(app.get("/").await.0, 404);
    assert_eq!(app.get("/api/dashboard").await.0, 404);
    assert_eq!(get(format!("http://{dashboard}/webhook")).await, 404);
    assert_eq!(app.get("/healthz").await.0, 200);
    app.stop().await;
    opts.env = vec![("FLEETBOT_DASHBOARD", "off".into())];
    let app = App::start(opts.clone()).await;
    assert_eq!(app.get("/").await.0, 404);
    assert_eq!(app.get("/api/dashboard").await.0, 404);
    assert_eq!(app.get("/healthz").await.0, 200);
    assert_eq!(app.dashboard(), None);
    app.stop().await;
    // Beside the webhook only when asked.
    opts.env = vec![("FLEETBOT_DASHBOARD", "same".into())];
    let app = App::start(opts).await;
    assert_eq!(app.get("/api/dashboard").await.0, 200);
    assert_eq!(app.dashboard(), None);
    app.stop().await;
    gh.assert_clean();
}

#[tokio::test]
async fn an_unreachable_store_at_start_is_given_up_on_with_each_attempt_logged() {
    // Issue 32: an unreachable PostgreSQL at start-up was 30 s of silence, then exit 1.
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    // Port 1 on loopback refuses every connection.
    opts.store_url = Some("postgres://fleetbot:hunter2@127.0.0.1:1/fleetbot".into());
    opts.env = vec![("FLEETBOT_STORE_CONNECT_SECS", "3".into())];
    let (code, out) = app::run_to_exit(&opts, Duration::from_secs(60)).await;
    assert_eq!(code, Some(1), "{out}");
    let attempts = out
        .lines()
        .filter(|l| l.contains("connecting to the store"))
        .count();
    assert!(attempts >= 2, "each attempt is logged:\n{out}");
    assert!(
        out.contains("store=postgres://fleetbot:***@127.0.0.1:1/fleetbot"),
        "{out}"
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.contains("cannot reach the store at postgres://fleetbot:***@127.0.0.1:1/fleetbot")
            && last.contains("in 3 s")
            && last.contains("last error:")
            && last.contains("FLEETBOT_STORE_CONNECT_SECS"),
        "{out}"
    );
    assert!(!out.contains("hunter2"), "{out}");

    // Issue 52: a password with an unencoded `?` was printed whole by the start-up error
    // (the redaction split the URL at the first `?`). Nothing of it is shown now.
    opts.store_url = Some("postgres://fleetbot:hun?ter2@127.0.0.1:1/fleetbot".into());
    opts.env = vec![("FLEETBOT_STORE_CONNECT_SECS", "1".into())];
    let (code, out) = app::run_to_exit(&opts, Duration::from_secs(60)).await;
    assert_ne!(code, Some(0), "{out}");
    assert!(!out.contains("hun?ter2") && !out.contains("ter2"), "{out}");
    assert!(out.contains("postgres://(not shown"), "{out}");
    gh.assert_clean();
}
