//! The GitHub App through the production path: the `fleetbot` binary's own `serve`, configured
//! by environment as a deployment is, over a real SQLite store, with the fake GitHub (checked
//! against GitHub's OpenAPI description) and the simulator as its peers. Nothing in-process:
//! deliveries go in over HTTP, results are read back from GitHub.

#[path = "support/app.rs"]
mod app;
#[path = "support/fake_github/mod.rs"]
mod fake_github;
#[path = "support/postgres.rs"]
mod pg;
mod support;

use std::time::Duration;

use app::{App, AppOptions, eventually};
use fake_github::{BOT_LOGIN, FakeGitHub, REPO, sha};

fn base_spec() -> String {
    include_str!("../fixtures/specs/fleet1-test.yaml").to_string()
}

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
    let comments = eventually("the sticky comment", || {
        let c = bot_comments(&gh, 7);
        (c.len() == 1).then_some(c)
    })
    .await;

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
    tokio::time::sleep(Duration::from_millis(300)).await;
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
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gh.world().calls("issues/create-comment"), 1, "exactly once");
    assert_eq!(
        gh.world()
            .runs_on(REPO, &head)
            .iter()
            .filter(|r| r.name == "fleet/preflight")
            .count(),
        1
    );
    app.stop().await;
}

#[tokio::test]
async fn a_badly_signed_delivery_is_refused_and_nothing_runs() {
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(options(&gh, &dir, 1)).await;
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
    let (status, _) = app.post("pull_request", "d-9b", &body, None).await;
    assert_eq!(status, 401);
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
    app.stop().await;
}

#[tokio::test]
async fn a_pinned_project_the_tenant_lacks_fails_preflight() {
    let sim = support::simulator(include_str!("../fixtures/sim/default.yaml")).await;
    let tenant = sim.tenant_id();
    let gh = fake_github(&base_spec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&gh, &dir, 1);
    opts.cloud = Some((sim.endpoint(), support::TOKEN.into(), tenant.clone()));
    let app = App::start(opts).await;

    // A grammar-valid project ID that is not in the tenant.
    let missing = fleetbot::privacy::testdata::nid("project", "e00", 18);
    let spec = format!(
        "apiVersion: npa.fleet/v0.0.1\nname: pinned\nregion: us-central1\nprojects:\n  - project_id: {missing}\n    clusters: [{{name: c, cpu_nodes: {{count: 1, platform: cpu-d3, preset: 8vcpu-32gb}}}}]\n"
    );
    let head = sha(41);
    open_pr(&gh, 10, &head, &[("fleets/pinned.yaml", Some(&spec))]);
    app.deliver("pull_request", "d-10", &pull_request("opened", 10, &head))
        .await;
    let (_, preflight) = concluded(&gh, &head).await;
    assert_eq!(
        preflight.conclusion.as_deref(),
        Some("failure"),
        "{}",
        preflight.summary
    );
    assert!(
        preflight.title.contains("the live plan found problems"),
        "{}",
        preflight.title
    );
    gh.assert_never_sent(&missing);
    gh.assert_never_sent(&tenant);
    assert!(!app.log_text().contains(&missing));
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
    tokio::time::sleep(Duration::from_millis(500)).await;
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
