//! The GitHub App end to end: the real router, worker, bot and GitHub client against a fake
//! GitHub on loopback that checks every request against GitHub's REST description.
//!
//! Needs the pinned npm artefacts: run `scripts/fetch-github-fixtures.sh` first (the tests fail,
//! never skip, without them).

#[path = "support/fake_github/mod.rs"]
mod fake_github;
mod support;

use std::sync::Arc;
use std::time::Duration;

use fake_github::{
    FakeGitHub, Fault, INSTALLATION, NAME, OWNER, REPO, SECRET, fixtures, github_client, sha,
};
use fleetbot::bot::handler::QuotaSource;
use fleetbot::bot::{Bot, BotSettings, Handled};
use fleetbot::github::sign;
use fleetbot::privacy::testdata;
use fleetbot::quota::InMemoryEvidence;
use fleetbot::server::{AppState, InMemorySink, JobReport, Metrics, router, run_worker, serve};
use serde_json::json;
use tokio::sync::mpsc;

const PR: u64 = 12;

fn base_spec() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/specs/fleet1-test.yaml"
    ))
    .unwrap()
}

/// The base spec with the default GPU pool grown to `n` nodes.
fn spec_with_gpus(n: u32) -> String {
    let s = base_spec();
    let from = "  gpu_nodes:\n    count: 1\n";
    assert!(s.contains(from));
    s.replacen(from, &format!("  gpu_nodes:\n    count: {n}\n"), 1)
}

fn staging_spec() -> String {
    base_spec()
        .replace("name: fleet1-test", "name: staging")
        .replace(
            "project_prefix: \"fleet1-test-\"",
            "project_prefix: \"staging-\"",
        )
}

fn pr_ref(head: &str) -> fixtures::PrRef {
    fixtures::PrRef {
        owner: OWNER.into(),
        repo: NAME.into(),
        number: PR,
        head_sha: head.into(),
        base_sha: sha(1),
        head_ref: "grow-gpus".into(),
        base_ref: "main".into(),
        installation_id: INSTALLATION,
    }
}

struct Harness {
    gh: FakeGitHub,
    url: String,
    sink: Arc<InMemorySink>,
    jobs: mpsc::UnboundedReceiver<JobReport>,
    http: reqwest::Client,
    delivery: u32,
}

impl Harness {
    /// The fake world: `main` holds `fleets/prod.yaml` (the fleet1-test example).
    async fn start(quota: Option<QuotaSource>) -> Self {
        Self::start_with(BotSettings {
            quota,
            ..BotSettings::default()
        })
        .await
    }

    async fn start_with(settings: BotSettings) -> Self {
        let gh = FakeGitHub::start().await;
        {
            let mut w = gh.world();
            w.add_repo(
                REPO,
                "main",
                &sha(1),
                &[
                    ("README.md", "# fleet config\n"),
                    ("fleets/prod.yaml", &base_spec()),
                    (".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n"),
                ],
            );
            w.set_role(REPO, "maintainer-mia", "maintain");
            w.set_role(REPO, "reader-rob", "read");
        }
        let github = github_client(&gh.url);
        let bot = Bot::new(github.clone(), settings);
        let (sink, queue) = InMemorySink::new();
        let sink = Arc::new(sink);
        let metrics = Arc::new(Metrics::default());
        let (done_tx, jobs) = mpsc::unbounded_channel();
        tokio::spawn(run_worker(queue, bot, metrics.clone(), Some(done_tx)));
        let state = AppState::new(
            fleetbot::github::WebhookSecrets::from_comma_separated(&format!("{SECRET},old-secret"))
                .unwrap(),
            sink.clone(),
            metrics,
            Some(github),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, router(state), std::future::pending()));
        Harness {
            gh,
            url,
            sink,
            jobs,
            http: reqwest::Client::new(),
            delivery: 0,
        }
    }

    fn next_delivery_id(&mut self) -> String {
        self.delivery += 1;
        format!("0000{:04}-aaaa-bbbb-cccc-000000000000", self.delivery)
    }

    async fn post(
        &self,
        event: &str,
        id: &str,
        body: &[u8],
        signature: Option<String>,
    ) -> (u16, String) {
        fake_github::post_webhook(&self.http, &self.url, event, id, body, signature).await
    }

    /// Delivers a signed event and waits for its job.
    async fn deliver(&mut self, event: &str, body: &[u8]) -> Handled {
        let id = self.next_delivery_id();
        let (status, text) = self
            .post(event, &id, body, Some(sign(SECRET.as_bytes(), body)))
            .await;
        assert_eq!((status, text.as_str()), (202, "accepted\n"));
        let job = self.next_job().await;
        assert_eq!(job.delivery_id, id);
        job.result.unwrap_or_else(|e| panic!("job failed: {e}"))
    }

    async fn next_job(&mut self) -> JobReport {
        tokio::time::timeout(Duration::from_secs(30), self.jobs.recv())
            .await
            .expect("the job finished in time")
            .expect("the worker is running")
    }

    /// Opens the pull request with `changes` on top of main and delivers `opened`.
    async fn open(&mut self, head: &str, changes: &[(&str, Option<&str>)]) -> Handled {
        {
            let mut w = self.gh.world();
            w.commit(REPO, &sha(1), head, changes);
            w.open_pr(REPO, PR, "grow-gpus", head);
        }
        let body = fixtures::pull_request("opened", &pr_ref(head));
        self.deliver("pull_request", &body).await
    }

    async fn push(&mut self, head: &str, changes: &[(&str, Option<&str>)]) -> Handled {
        {
            let mut w = self.gh.world();
            let parent = w.repos[REPO].pulls[&PR].head_sha.clone();
            w.commit(REPO, &parent, head, changes);
            w.push(REPO, PR, head);
        }
        let body = fixtures::pull_request("synchronize", &pr_ref(head));
        self.deliver("pull_request", &body).await
    }

    fn bot_comments(&self) -> Vec<fake_github::Comment> {
        self.gh
            .world()
            .comments_on(REPO, PR)
            .into_iter()
            .filter(|c| c.user_type == "Bot")
            .collect()
    }

    fn run(&self, head: &str, name: &str) -> fake_github::CheckRun {
        let runs: Vec<_> = self
            .gh
            .world()
            .runs_on(REPO, head)
            .into_iter()
            .filter(|r| r.name == name)
            .collect();
        assert_eq!(runs.len(), 1, "exactly one {name} run on {head}");
        runs.into_iter().next().unwrap()
    }
}

/// Hides what changes with every release or run (the digest covers the engine version).
fn stable(text: &str) -> String {
    let re = regex::Regex::new(r"digest `[0-9a-f]{12}`").unwrap();
    let text = re.replace_all(text, "digest `[digest]`");
    text.replace(env!("CARGO_PKG_VERSION"), "[version]")
}

fn quota(allowances: &str) -> QuotaSource {
    let text = std::fs::read_to_string(format!(
        "{}/fixtures/quotas/{allowances}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    QuotaSource {
        tenant_id: "tenant-example".into(),
        evidence: Arc::new(InMemoryEvidence {
            allowances: fleetbot::quota::json::allowance_document(&text),
            capacity: Ok(Default::default()),
        }),
    }
}

#[tokio::test]
async fn pr_opened_gets_one_comment_and_two_completed_checks() {
    let mut h = Harness::start(Some(quota("allowances-room.json"))).await;
    let grown = spec_with_gpus(2);
    let staging = staging_spec();
    let handled = h
        .open(
            &sha(2),
            &[
                ("fleets/prod.yaml", Some(&grown)),
                ("fleets/staging.yaml", Some(&staging)),
                ("README.md", Some("# fleet config\n\nNow with staging.\n")),
            ],
        )
        .await;
    assert!(matches!(handled, Handled::Preflight { .. }), "{handled:?}");
    h.gh.assert_clean();
    let comments = h.bot_comments();
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]
            .body
            .starts_with("<!-- fleetbot:pr-comment v1 -->\n## ✅")
    );
    let privacy = h.run(&sha(2), "fleet/privacy");
    let preflight = h.run(&sha(2), "fleet/preflight");
    for run in [&privacy, &preflight] {
        assert_eq!(run.status, "completed");
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{}", run.title);
    }
    assert_eq!(preflight.title, "2 fleet specs valid; quota fits");
    insta::assert_snapshot!("opened_comment", stable(&comments[0].body));
    insta::assert_snapshot!("opened_preflight_summary", stable(&preflight.summary));
    insta::assert_snapshot!(
        "opened_preflight_text",
        stable(preflight.text.as_deref().unwrap_or(""))
    );
    insta::assert_snapshot!("opened_privacy_summary", stable(&privacy.summary));
    // The App authenticated once: one installation token for the whole job.
    assert_eq!(
        h.gh.world().calls("apps/create-installation-access-token"),
        1
    );
}

#[tokio::test]
async fn a_second_push_edits_the_same_comment() {
    let mut h = Harness::start(None).await;
    let two = spec_with_gpus(2);
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&two))]).await;
    let first = h.bot_comments();
    assert_eq!(first.len(), 1);
    let three = spec_with_gpus(3);
    h.push(&sha(3), &[("fleets/prod.yaml", Some(&three))]).await;
    h.gh.assert_clean();
    let after = h.bot_comments();
    assert_eq!(after.len(), 1, "no second comment");
    assert_eq!(after[0].id, first[0].id);
    assert_eq!(after[0].edits, 1);
    assert_ne!(after[0].body, first[0].body);
    assert!(
        after[0].body.contains("gpu\\_nodes: 1 → 3"),
        "{}",
        after[0].body
    );
    assert_eq!(h.gh.world().calls("issues/create-comment"), 1);
    // Both checks on each head; without a quota source the preflight is neutral.
    for head in [sha(2), sha(3)] {
        assert_eq!(
            h.run(&head, "fleet/privacy").conclusion.as_deref(),
            Some("success")
        );
        assert_eq!(
            h.run(&head, "fleet/preflight").conclusion.as_deref(),
            Some("neutral")
        );
    }
    insta::assert_snapshot!("pushed_comment", stable(&after[0].body));
}

#[tokio::test]
async fn a_committed_private_id_fails_privacy_on_its_line_and_never_reaches_github() {
    let mut h = Harness::start(None).await;
    let id = testdata::nid("tenant", "e00", 15);
    let leaked = base_spec().replace("tenant_id: \"\"", &format!("tenant_id: \"{id}\""));
    let line = leaked.lines().position(|l| l.contains(&id)).unwrap() as u32 + 1;
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&leaked))])
        .await;
    h.gh.assert_clean();
    let run = h.run(&sha(2), "fleet/privacy");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations.len(), 1);
    let a = &run.annotations[0];
    assert_eq!(a["path"], "fleets/prod.yaml");
    assert_eq!(
        (a["start_line"].as_u64(), a["end_line"].as_u64()),
        (Some(line.into()), Some(line.into()))
    );
    assert_eq!(a["annotation_level"], "failure");
    // The value was read from GitHub, but nothing the bot sent back holds it.
    h.gh.assert_never_sent(&id);
    let comment = &h.bot_comments()[0];
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
}

#[tokio::test]
async fn an_invalid_spec_fails_preflight_on_the_spec_line() {
    let mut h = Harness::start(None).await;
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
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&broken))])
        .await;
    h.gh.assert_clean();
    let run = h.run(&sha(2), "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title, "Blocked: 1 invalid fleet spec");
    assert_eq!(run.annotations.len(), 1);
    assert_eq!(run.annotations[0]["path"], "fleets/prod.yaml");
    assert_eq!(run.annotations[0]["start_line"].as_u64(), Some(line));
    assert_eq!(
        h.run(&sha(2), "fleet/privacy").conclusion.as_deref(),
        Some("success")
    );
    insta::assert_snapshot!("invalid_spec_preflight_summary", stable(&run.summary));
    insta::assert_snapshot!("invalid_spec_comment", stable(&h.bot_comments()[0].body));
}

#[tokio::test]
async fn a_quota_shortfall_fails_preflight_naming_the_quota() {
    let mut h = Harness::start(Some(quota("allowances-one-gpu-short.json"))).await;
    let grown = spec_with_gpus(2);
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&grown))]).await;
    h.gh.assert_clean();
    let run = h.run(&sha(2), "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title, "Blocked: quota shortfall");
    assert!(
        run.summary.contains("compute.instance.gpu"),
        "{}",
        run.summary
    );
    h.gh.assert_never_sent("tenant-example");
    insta::assert_snapshot!("quota_short_preflight_summary", stable(&run.summary));
}

#[tokio::test]
async fn no_spec_change_reports_both_checks_skipped_and_posts_no_comment() {
    let mut h = Harness::start(None).await;
    h.open(
        &sha(2),
        &[("README.md", Some("# fleet config\n\nTypo fixed.\n"))],
    )
    .await;
    h.gh.assert_clean();
    for name in ["fleet/privacy", "fleet/preflight"] {
        let run = h.run(&sha(2), name);
        assert_eq!(run.conclusion.as_deref(), Some("skipped"));
        assert_eq!(run.status, "completed");
    }
    assert!(h.bot_comments().is_empty());
    assert_eq!(
        h.gh.world().calls("repos/get-content"),
        1,
        "only the config was read"
    );
    insta::assert_snapshot!(
        "skipped_preflight_summary",
        h.run(&sha(2), "fleet/preflight").summary
    );
}

#[tokio::test]
async fn a_bad_signature_is_refused_and_nothing_is_accepted() {
    let mut h = Harness::start(None).await;
    let body = fixtures::pull_request("opened", &pr_ref(&sha(2)));
    let id = h.next_delivery_id();
    let wrong = sign(b"not-the-secret", &body);
    assert_eq!(h.post("pull_request", &id, &body, Some(wrong)).await.0, 401);
    assert_eq!(h.post("pull_request", &id, &body, None).await.0, 401);
    let mut tampered = body.clone();
    tampered.push(b' ');
    let sig = sign(SECRET.as_bytes(), &body);
    assert_eq!(
        h.post("pull_request", &id, &tampered, Some(sig.clone()))
            .await
            .0,
        401
    );
    assert!(h.sink.accepted().is_empty());
    assert!(h.jobs.try_recv().is_err());
    assert!(h.gh.world().requests.is_empty());
    // The rotated-out secret still works during a rotation.
    let old = sign(b"old-secret", &body);
    assert_eq!(
        h.post("ping", &id, &body, Some(old)).await,
        (202, "ignored\n".to_string())
    );
    let metrics = h
        .http
        .get(format!("{}/metrics", h.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "fleetbot_webhook_deliveries_total{event=\"pull_request\",outcome=\"refused\"} 3"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_same_delivery_twice_is_accepted_once() {
    let mut h = Harness::start(None).await;
    let grown = spec_with_gpus(2);
    {
        let mut w = h.gh.world();
        w.commit(
            REPO,
            &sha(1),
            &sha(2),
            &[("fleets/prod.yaml", Some(&grown))],
        );
        w.open_pr(REPO, PR, "grow-gpus", &sha(2));
    }
    let body = fixtures::pull_request("opened", &pr_ref(&sha(2)));
    let sig = sign(SECRET.as_bytes(), &body);
    let id = h.next_delivery_id();
    assert_eq!(
        h.post("pull_request", &id, &body, Some(sig.clone())).await,
        (202, "accepted\n".into())
    );
    assert_eq!(
        h.post("pull_request", &id, &body, Some(sig)).await,
        (202, "duplicate\n".into())
    );
    h.next_job().await.result.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(h.jobs.try_recv().is_err(), "processed once");
    assert_eq!(h.sink.accepted().len(), 1);
    assert_eq!(h.bot_comments().len(), 1);
    assert_eq!(h.gh.world().runs_on(REPO, &sha(2)).len(), 2);
}

#[tokio::test]
async fn ping_and_unknown_events_are_acknowledged_and_ignored() {
    let mut h = Harness::start(None).await;
    for (event, body) in [
        (
            "ping",
            serde_json::to_vec(&fixtures::example("ping", None)).unwrap(),
        ),
        (
            "star",
            serde_json::to_vec(&fixtures::example("star", Some("created"))).unwrap(),
        ),
    ] {
        let id = h.next_delivery_id();
        let sig = sign(SECRET.as_bytes(), &body);
        assert_eq!(
            h.post(event, &id, &body, Some(sig)).await,
            (202, "ignored\n".into())
        );
    }
    assert!(h.sink.accepted().is_empty());
    assert!(h.jobs.try_recv().is_err());
    for path in ["/healthz", "/readyz"] {
        let r = h.http.get(format!("{}{path}", h.url)).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
}

#[tokio::test]
async fn commands_are_acknowledged_checked_per_permission_and_answered_once() {
    let mut h = Harness::start(None).await;
    let grown = spec_with_gpus(2);
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&grown))]).await;
    let pr = pr_ref(&sha(2));
    // A reader may ask for help but not re-plan; quoted and fenced commands are not commands.
    let body = "/help\n/plan\n> /verify-storage\n```\n/status\n```\n/pln\n";
    let handled = h
        .deliver(
            "issue_comment",
            &fixtures::pr_comment(&pr, 501, "reader-rob", "User", body),
        )
        .await;
    assert_eq!(handled, Handled::Commands { ran: 1, refused: 2 });
    h.gh.assert_clean();
    assert_eq!(
        h.gh.world().reactions,
        vec![(REPO.to_string(), 501, "eyes".to_string())]
    );
    let comments = h.bot_comments();
    assert_eq!(comments.len(), 2, "the sticky comment and one reply");
    insta::assert_snapshot!("reply_to_reader", comments[1].body.clone());
    // A maintainer's /plan re-runs the preflight: the sticky comment is edited, not duplicated.
    let runs_before = h.gh.world().runs_on(REPO, &sha(2)).len();
    let handled = h
        .deliver(
            "issue_comment",
            &fixtures::pr_comment(&pr, 502, "maintainer-mia", "User", "LGTM\n/plan\n"),
        )
        .await;
    assert_eq!(handled, Handled::Commands { ran: 1, refused: 0 });
    assert_eq!(h.gh.world().runs_on(REPO, &sha(2)).len(), runs_before + 2);
    assert_eq!(h.bot_comments().len(), 2);
    // Bots, edits and plain issues are ignored.
    let bot = h
        .deliver(
            "issue_comment",
            &fixtures::pr_comment(&pr, 503, "fleetbot-test[bot]", "Bot", "/plan\n"),
        )
        .await;
    assert!(matches!(bot, Handled::Ignored(_)));
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
    let handled = h
        .deliver("issue_comment", &serde_json::to_vec(&edited).unwrap())
        .await;
    assert!(matches!(handled, Handled::Ignored(_)));
    h.gh.assert_clean();
}

#[tokio::test]
async fn rate_limits_are_waited_out_and_content_is_never_blindly_reposted() {
    let mut h = Harness::start(None).await;
    {
        let mut w = h.gh.world();
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
    let started = std::time::Instant::now();
    let grown = spec_with_gpus(2);
    h.open(&sha(2), &[("fleets/prod.yaml", Some(&grown))]).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after was honoured"
    );
    h.gh.assert_clean();
    let w = h.gh.world();
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
    drop(w);
    assert_eq!(h.bot_comments().len(), 1);
}

#[tokio::test]
async fn more_than_fifty_annotations_go_in_batches() {
    let mut h = Harness::start(None).await;
    let mut text = String::from("# notes\n");
    for i in 0..60 {
        text.push_str(&format!(
            "id {}\n",
            testdata::nid_seeded("project", "e00", 19, i)
        ));
    }
    let grown = spec_with_gpus(2);
    h.open(
        &sha(2),
        &[
            ("fleets/prod.yaml", Some(&grown)),
            ("notes/ids.txt", Some(&text)),
        ],
    )
    .await;
    h.gh.assert_clean();
    let run = h.run(&sha(2), "fleet/privacy");
    assert_eq!(run.annotations.len(), 60);
    assert_eq!(run.requests, 2, "one create with 50, one update with 10");
    assert_eq!(run.title, "60 private values committed");
    let comment = &h.bot_comments()[0];
    assert!(comment.body.len() < 60_000);
}

#[tokio::test]
async fn a_huge_pull_request_keeps_the_comment_under_githubs_limit() {
    let mut h = Harness::start(None).await;
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
    h.open(&sha(2), &refs).await;
    h.gh.assert_clean();
    let comment = &h.bot_comments()[0];
    assert!(comment.body.len() <= 60_000, "{} bytes", comment.body.len());
    assert!(
        comment.body.contains("check run"),
        "points at the check run"
    );
    let run = h.run(&sha(2), "fleet/preflight");
    assert!(run.summary.chars().count() <= 65_535);
    assert!(run.text.as_deref().unwrap_or("").chars().count() <= 65_535);
    // Paginated: 120 files need two pages of 100.
    assert_eq!(h.gh.world().calls("pulls/list-files"), 2);
}

/// Every example payload of `@octokit/webhooks-examples`, signed, is answered 2xx, and every
/// example of an event the bot handles decodes.
#[tokio::test]
async fn every_webhook_example_is_acknowledged_and_handled_ones_decode() {
    let h = Harness::start(None).await;
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
        let (status, _) = h
            .post(event, &id, &body, Some(sign(SECRET.as_bytes(), &body)))
            .await;
        assert_eq!(status, 202, "example {i} of {event}");
    }
    assert!(decoded > 50);
}

/// The base spec with only project `a`'s cluster grown to two GPU nodes.
fn spec_with_a_grown() -> String {
    let from = "  - name: a   # display name fleet1-test-a\n";
    let s = base_spec();
    assert!(s.contains(from));
    s.replacen(
        from,
        &format!("{from}    clusters:\n      - name: cluster\n        gpu_nodes: {{count: 2}}\n"),
        1,
    )
}

/// The bot's inventory, whose reads fail while `fail` is set: a store that cannot be read.
#[derive(Clone)]
struct FlakyStore {
    inner: fleetbot::store::SqliteStore,
    fail: Arc<std::sync::atomic::AtomicBool>,
}

impl FlakyStore {
    fn check(&self) -> Result<(), fleetbot::store::StoreError> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(fleetbot::store::StoreError::Unreadable {
                location: self.inner.location(),
                reason: "the test made it unreadable".into(),
            });
        }
        Ok(())
    }
}

use fleetbot::store::{InventoryStore, ProjectRecord, StoreError, TargetRecord};

impl InventoryStore for FlakyStore {
    fn location(&self) -> String {
        self.inner.location()
    }
    fn targets(
        &self,
        fleet: &str,
    ) -> impl std::future::Future<Output = Result<Vec<TargetRecord>, StoreError>> + Send {
        let fleet = fleet.to_string();
        async move {
            self.check()?;
            self.inner.targets(&fleet).await
        }
    }
    fn upsert_target(
        &self,
        record: &TargetRecord,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        self.inner.upsert_target(record)
    }
    fn remove_target(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        self.inner.remove_target(fleet, project_key, cluster_name)
    }
    fn projects(
        &self,
        fleet: &str,
    ) -> impl std::future::Future<Output = Result<Vec<ProjectRecord>, StoreError>> + Send {
        let fleet = fleet.to_string();
        async move {
            self.check()?;
            self.inner.projects(&fleet).await
        }
    }
    fn upsert_project(
        &self,
        record: &ProjectRecord,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        self.inner.upsert_project(record)
    }
    fn remove_project(
        &self,
        fleet: &str,
        project_key: &str,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        self.inner.remove_project(fleet, project_key)
    }
    fn generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl std::future::Future<Output = Result<i64, StoreError>> + Send {
        let (fleet, key, name) = (
            fleet.to_string(),
            project_key.to_string(),
            cluster_name.to_string(),
        );
        async move {
            self.check()?;
            self.inner.generation(&fleet, &key, &name).await
        }
    }
    fn bump_generation(
        &self,
        fleet: &str,
        project_key: &str,
        cluster_name: &str,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send {
        self.inner.bump_generation(fleet, project_key, cluster_name)
    }
}

/// A live world: the simulator, the tenant, and the bot's inventory with its failure switch.
struct Live {
    h: Harness,
    sim: fleetbot::sim::Simulator,
    tenant: String,
    inventory: fleetbot::store::SqliteStore,
    store_fails: Arc<std::sync::atomic::AtomicBool>,
}

/// A simulator with `fleets/prod.yaml` from `main` deployed by fleetbot, and a bot that plans
/// against it with the same inventory.
async fn live_harness() -> (Harness, fleetbot::sim::Simulator, String) {
    let live = live_world().await;
    (live.h, live.sim, live.tenant)
}

async fn live_world() -> Live {
    use fleetbot::bot::live::{CloudPlanner, LiveCloud};
    use fleetbot::engine::ops::{LifecycleOptions, deploy};
    let world = include_str!("../fixtures/sim/default.yaml")
        .replace("operation_latency_ms: 150", "operation_latency_ms: 5");
    let sim = support::simulator(&world).await;
    let tenant = sim.tenant_id();
    let client = support::client(&sim);
    let dir = tempfile::tempdir().unwrap();
    let inventory = fleetbot::store::SqliteStore::open(&dir.path().join("bot.sqlite"))
        .await
        .unwrap();
    // The store outlives the directory handle: keep the files for the test's life.
    std::mem::forget(dir);
    let spec = fleetbot::spec::load_str(&base_spec(), "fleets/prod.yaml").unwrap();
    let result = deploy(
        &client,
        &inventory,
        &spec,
        &tenant,
        &LifecycleOptions::default(),
        Arc::new(|_: &str| {}),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (2, 0), "{result:?}");
    let store_fails = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cloud: Arc<dyn LiveCloud> = Arc::new(CloudPlanner::new(
        client,
        FlakyStore {
            inner: inventory.clone(),
            fail: store_fails.clone(),
        },
        "the fleetbot simulator",
        Some(tenant.clone()),
    ));
    let h = Harness::start_with(BotSettings {
        cloud: Some(cloud),
        ..BotSettings::default()
    })
    .await;
    Live {
        h,
        sim,
        tenant,
        inventory,
        store_fails,
    }
}

#[tokio::test]
async fn live_plan_shows_what_the_cloud_needs_and_unchanged_targets_add_no_demand() {
    let (mut h, sim, tenant) = live_harness().await;
    let grown = spec_with_a_grown();
    let staging = staging_spec();
    let head = sha(2);
    let handled = h
        .open(
            &head,
            &[
                ("fleets/prod.yaml", Some(&grown)),
                ("fleets/staging.yaml", Some(&staging)),
            ],
        )
        .await;
    let Handled::Preflight { verdict, .. } = handled else {
        panic!("{handled:?}")
    };
    let comments = h.bot_comments();
    assert_eq!(comments.len(), 1);
    let body = &comments[0].body;
    assert_eq!(verdict, fleetbot::bot::report::Verdict::Ready, "{body}");
    assert!(
        body.contains("planned against the live state in the fleetbot simulator"),
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
    assert_eq!(
        h.run(&head, "fleet/preflight").conclusion.as_deref(),
        Some("success")
    );
    // Nothing the cloud knows privately reaches GitHub.
    h.gh.assert_never_sent(&tenant);
    let client = support::client(&sim);
    for project in fleetbot::cloud::Cloud::list_projects(&client, &tenant)
        .await
        .unwrap()
    {
        h.gh.assert_never_sent(&project.id);
    }
    insta::assert_snapshot!("live_comment", stable(body));
    let preflight = h.run(&head, "fleet/preflight");
    insta::assert_snapshot!("live_preflight_summary", stable(&preflight.summary));
    insta::assert_snapshot!(
        "live_preflight_text",
        stable(preflight.text.as_deref().unwrap_or_default())
    );
}

#[tokio::test]
async fn a_short_live_quota_blocks_and_an_unreachable_cloud_fails_closed() {
    use fleetbot::bot::live::{CloudPlanner, LiveCloud};
    // A hundred GPU nodes: more than the tenant's allowance.
    let (mut h, _sim, _tenant) = live_harness().await;
    let huge = base_spec().replacen(
        "    count: 1\n    platform: gpu-rtx6000",
        "    count: 600\n    platform: gpu-rtx6000",
        1,
    );
    assert_ne!(huge, base_spec());
    let head = sha(3);
    h.open(&head, &[("fleets/prod.yaml", Some(&huge))]).await;
    let run = h.run(&head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    let body = &h.bot_comments()[0].body;
    assert!(
        body.contains("blocked by compute.instance.gpu.rtx6000 in us-central1"),
        "{body}"
    );

    // A cloud that cannot be reached: nothing is assumed; the preflight fails with the reason.
    let dead = fleetbot::cloud::NebiusClient::new(
        fleetbot::cloud::client::Endpoints::Single {
            uri: "http://127.0.0.1:9".into(),
        },
        fleetbot::cloud::auth::Credentials::Static(support::TOKEN.into()),
    );
    let dir = tempfile::tempdir().unwrap();
    let inventory = fleetbot::store::SqliteStore::open(&dir.path().join("bot.sqlite"))
        .await
        .unwrap();
    let cloud: Arc<dyn LiveCloud> = Arc::new(CloudPlanner::new(
        dead,
        inventory,
        "Nebius",
        Some("tenant-e00notreachable".into()),
    ));
    let mut h = Harness::start_with(BotSettings {
        cloud: Some(cloud),
        ..BotSettings::default()
    })
    .await;
    let head = sha(4);
    h.open(&head, &[("fleets/prod.yaml", Some(&spec_with_a_grown()))])
        .await;
    let run = h.run(&head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    let body = &h.bot_comments()[0].body;
    insta::assert_snapshot!("unreachable_cloud_comment", stable(body));
    assert!(body.contains("the live plan could not be made"), "{body}");
    assert!(
        body.contains("could not read tenant quota allowances"),
        "{body}"
    );
    h.gh.assert_never_sent("tenant-e00notreachable");
}

#[tokio::test]
async fn only_the_configured_tenant_is_read_also_for_forks() {
    let (mut h, _sim, tenant) = live_harness().await;
    // A spec pointing the bot at another tenant is refused, not read.
    let other = "tenant-e00otherfleetowner";
    let elsewhere =
        spec_with_a_grown().replace("tenant_id: \"\"", &format!("tenant_id: \"{other}\""));
    assert_ne!(elsewhere, spec_with_a_grown());
    let head = sha(5);
    h.open(&head, &[("fleets/prod.yaml", Some(&elsewhere))])
        .await;
    let run = h.run(&head, "fleet/preflight");
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{}", run.title);
    let body = h.bot_comments()[0].body.clone();
    assert!(
        body.contains(
            "the spec's tenant\\_id is not the tenant fleetbot is configured to plan against"
        ),
        "{body}"
    );
    h.gh.assert_never_sent(&tenant);
    h.gh.assert_never_sent(other);

    // A push from a fork is planned like any other (specs are data; only the configured
    // tenant is read).
    let head = sha(6);
    {
        let mut w = h.gh.world();
        let parent = w.repos[REPO].pulls[&PR].head_sha.clone();
        let grown = spec_with_a_grown();
        w.commit(REPO, &parent, &head, &[("fleets/prod.yaml", Some(&grown))]);
        w.push(REPO, PR, &head);
    }
    let mut payload: serde_json::Value =
        serde_json::from_slice(&fixtures::pull_request("synchronize", &pr_ref(&head))).unwrap();
    payload["pull_request"]["head"]["repo"]["full_name"] = json!("someone/fleet-config");
    let handled = h
        .deliver("pull_request", &serde_json::to_vec(&payload).unwrap())
        .await;
    assert!(matches!(handled, Handled::Preflight { .. }), "{handled:?}");
    let body = h.bot_comments()[0].body.clone();
    assert!(
        body.contains("planned against the live state in the fleetbot simulator"),
        "{body}"
    );
    assert_eq!(
        h.run(&head, "fleet/preflight").conclusion.as_deref(),
        Some("success")
    );
    h.gh.assert_never_sent(&tenant);
}

/// Issue 13: a spec pinning an existing project by an ID the tenant does not have. The live
/// plan finds the problem, and the check must fail on it, not only the summary say so.
#[tokio::test]
async fn a_pinned_project_the_tenant_does_not_have_fails_preflight() {
    let (mut h, sim, tenant) = live_harness().await;
    let missing = testdata::nid_seeded("project", "e00", 19, 13);
    let from = "  - name: b   # display name fleet1-test-b\n";
    let pinned = base_spec().replacen(from, &format!("{from}    project_id: \"{missing}\"\n"), 1);
    assert_ne!(pinned, base_spec());
    let head = sha(7);
    h.open(&head, &[("fleets/prod.yaml", Some(&pinned))]).await;
    h.gh.assert_clean();
    let run = h.run(&head, "fleet/preflight");
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
    let body = &h.bot_comments()[0].body;
    assert!(
        body.starts_with("<!-- fleetbot:pr-comment v1 -->\n## ❌"),
        "{body}"
    );
    // The ID is private (fleet/privacy flags it); neither it nor the cloud's IDs reach GitHub.
    assert_eq!(
        h.run(&head, "fleet/privacy").conclusion.as_deref(),
        Some("failure")
    );
    h.gh.assert_never_sent(&missing);
    h.gh.assert_never_sent(&tenant);
    let client = support::client(&sim);
    for project in fleetbot::cloud::Cloud::list_projects(&client, &tenant)
        .await
        .unwrap()
    {
        h.gh.assert_never_sent(&project.id);
    }
}

/// A new fleet named `name` whose projects are created as `{name}-a` and `{name}-b`.
fn new_fleet(name: &str) -> String {
    base_spec()
        .replace("name: fleet1-test", &format!("name: {name}"))
        .replace(
            "project_prefix: \"fleet1-test-\"",
            &format!("project_prefix: \"{name}-\""),
        )
}

/// `base_spec()` with `from` replaced by `to` (which must change it).
fn prod_with(from: &str, to: &str) -> String {
    let s = base_spec();
    assert!(s.contains(from), "{from:?}");
    s.replacen(from, to, 1)
}

/// Every kind of live-plan problem, each made for real in the simulator (or the bot's store)
/// and pushed as its own head: `fleet/preflight` fails, its title names the kind, and its
/// summary and the comment show the problem. Nothing private reaches GitHub.
#[tokio::test]
async fn every_kind_of_live_plan_problem_fails_preflight_through_github() {
    use fleetbot::bot::report::LiveProblemKind as K;
    use fleetbot::cloud::Cloud;
    use fleetbot::cloud::domain::{ClusterSpec, Labels};
    use fleetbot::cloud::proto::nebius::iam::v1 as iam;
    use std::sync::atomic::Ordering;

    let mut live = live_world().await;
    let client = support::client(&live.sim);
    let tenant = live.tenant.clone();
    let project = |name: &'static str, region: &'static str| {
        let client = client.clone();
        let tenant = tenant.clone();
        async move {
            client
                .create_project(&tenant, name, region, &Labels::new(), name)
                .await
                .unwrap()
        }
    };

    // Made before the pushes; each belongs to one fleet only.
    let inactive = project("ksus-a", "us-central1").await;
    live.sim.service.with_core(|core| {
        let p = core
            .state
            .projects
            .iter_mut()
            .find(|p| p.metadata.as_ref().is_some_and(|m| m.id == inactive.id))
            .unwrap();
        p.status.as_mut().unwrap().suspension_state = iam::SuspensionState::Suspended as i32;
    });
    let twin = project("kamb-a", "us-central1").await;
    live.sim.service.with_core(|core| {
        let mut copy = core
            .state
            .projects
            .iter()
            .find(|p| p.metadata.as_ref().is_some_and(|m| m.id == twin.id))
            .unwrap()
            .clone();
        copy.metadata.as_mut().unwrap().id = core.new_id("project", "us-central1");
        core.state.projects.push(copy);
    });
    project("kreg-a", "eu-north1").await;
    let foreign = project("kforeign-a", "us-central1").await;
    let subnet = client.list_subnets(&foreign.id).await.unwrap().remove(0);
    client
        .create_cluster(
            &foreign.id,
            "cluster",
            &ClusterSpec {
                subnet_id: subnet.id,
                ..Default::default()
            },
            &Labels::new(),
            "foreign",
        )
        .await
        .unwrap();
    live.inventory
        .upsert_target(&TargetRecord {
            fleet: "kengine".into(),
            project_key: "a".into(),
            cluster_name: "cluster".into(),
            backend: "soperator".into(),
            status: "deployed".into(),
            ..TargetRecord::default()
        })
        .await
        .unwrap();

    let with_defaults = |line: &str| prod_with("defaults:\n", &format!("defaults:\n  {line}\n"));
    let b = "  - name: b   # display name fleet1-test-b\n";
    let cases: Vec<(K, &str, String, &str)> = vec![
        (
            K::TenantRefused,
            "fleets/prod.yaml",
            prod_with("tenant_id: \"\"", "tenant_id: \"${NEBIUS_TENANT_ID}\""),
            "the spec's tenant\\_id is not the tenant fleetbot is configured to plan against",
        ),
        (
            K::CloudUnreadable,
            "fleets/prod.yaml",
            spec_with_a_grown(),
            "the live plan could not be made: the cloud could not be read (Unavailable)",
        ),
        (
            K::StoreUnreadable,
            "fleets/prod.yaml",
            spec_with_a_grown(),
            "the live plan could not be made: the bot's store could not be read (see the bot's log)",
        ),
        (
            K::EngineRefused,
            "fleets/kengine.yaml",
            new_fleet("kengine"),
            "persisted cluster state belongs to backend 'soperator', but the spec selects 'mk8s'",
        ),
        (
            K::ProjectNotFound,
            "fleets/prod.yaml",
            prod_with(
                b,
                &format!("{b}    project_id: project-REPLACE_AT_RUNTIME\n"),
            ),
            "project fleet1-test-b: the pinned project\\_id is not a project of the tenant (not found)",
        ),
        (
            K::ProjectAmbiguous,
            "fleets/kamb.yaml",
            new_fleet("kamb"),
            "project kamb-a: project name 'kamb-a' is ambiguous under the selected tenant",
        ),
        (
            K::ProjectIdentity,
            "fleets/kreg.yaml",
            new_fleet("kreg"),
            "project kreg-a: the existing project failed immutable identity verification: region \"eu-north1\" does not match \"us-central1\"",
        ),
        (
            K::ProjectInactive,
            "fleets/ksus.yaml",
            new_fleet("ksus"),
            "project ksus-a: the existing project cannot be used: it is suspended",
        ),
        (
            K::BucketUnusable,
            "fleets/prod.yaml",
            prod_with("storage_class: enhanced", "storage_class: standard"),
            "changing the class of a bucket is not supported",
        ),
        (
            K::NotOwned,
            "fleets/kforeign.yaml",
            new_fleet("kforeign"),
            "kforeign-a/cluster: a cluster named \"cluster\" exists but is not owned by this fleet target",
        ),
        (
            K::FilesystemShrink,
            "fleets/prod.yaml",
            prod_with(
                "filestore_disk_size_gibibytes: 1024",
                "filestore_disk_size_gibibytes: 512",
            ),
            "fleet1-test-a/cluster: filesystem \"cluster-shared-fs\" cannot shrink from 1024 to 512 GiB",
        ),
        (
            K::ExistingFilestore,
            "fleets/prod.yaml",
            with_defaults("existing_filestore: computefilesystem-REPLACE_AT_RUNTIME"),
            "fleet1-test-a/cluster: existing\\_filestore does not exist",
        ),
        (
            K::SubnetChanged,
            "fleets/prod.yaml",
            with_defaults("subnet_id: \"${NEBIUS_SUBNET_ID}\""),
            "fleet1-test-a/cluster: the cluster's subnet changed",
        ),
    ];
    let covered: std::collections::BTreeSet<K> = cases.iter().map(|c| c.0).collect();
    assert_eq!(covered, K::ALL.into(), "every kind has a scenario");

    for (i, (kind, path, spec, expected)) in cases.iter().enumerate() {
        // Faults and failures are switched on for their own case only.
        if *kind == K::CloudUnreadable {
            live.sim.service.with_core(|core| {
                core.world.faults.push(
                    serde_yaml::from_str("{method: ClusterService/List, error_rate: 1.0}").unwrap(),
                )
            });
        }
        live.store_fails
            .store(*kind == K::StoreUnreadable, Ordering::SeqCst);
        // Each head is main plus this case's spec alone.
        let head = sha(100 + i as u64);
        {
            let mut w = live.h.gh.world();
            w.commit(REPO, &sha(1), &head, &[(path, Some(spec.as_str()))]);
            if i == 0 {
                w.open_pr(REPO, PR, "grow-gpus", &head);
            } else {
                w.push(REPO, PR, &head);
            }
        }
        let action = if i == 0 { "opened" } else { "synchronize" };
        let body = fixtures::pull_request(action, &pr_ref(&head));
        live.h.deliver("pull_request", &body).await;
        live.sim.service.with_core(|core| core.world.faults.clear());

        let run = live.h.run(&head, "fleet/preflight");
        let context = format!("{kind:?}: {}\n{}", run.title, run.summary);
        assert_eq!(run.conclusion.as_deref(), Some("failure"), "{context}");
        assert!(
            run.title.starts_with(&format!(
                "Blocked: the live plan found problems ({})",
                kind.phrase()
            )),
            "{context}"
        );
        assert!(run.summary.contains("**❌ blocked**"), "{context}");
        assert!(run.summary.contains(expected), "{context}");
        assert!(
            run.annotations
                .iter()
                .any(|a| a["title"] == format!("Live plan: {}", kind.phrase())),
            "{context}"
        );
        let comment = &live.h.bot_comments()[0].body;
        assert!(
            comment.starts_with("<!-- fleetbot:pr-comment v1 -->\n## ❌"),
            "{kind:?}: {comment}"
        );
        assert!(comment.contains(expected), "{kind:?}: {comment}");
        // Only the live plan blocks here: the specs hold nothing private.
        assert_eq!(
            live.h.run(&head, "fleet/privacy").conclusion.as_deref(),
            Some("success"),
            "{kind:?}"
        );
    }
    live.h.gh.assert_clean();
    live.h.gh.assert_never_sent(&tenant);
    for p in client.list_projects(&tenant).await.unwrap() {
        live.h.gh.assert_never_sent(&p.id);
    }
}
