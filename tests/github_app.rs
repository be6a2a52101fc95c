//! The GitHub App end to end: the real router, worker, bot and GitHub client against a fake
//! GitHub on loopback that checks every request against GitHub's REST description.
//!
//! Needs the pinned npm artefacts: run `scripts/fetch-github-fixtures.sh` first (the tests fail,
//! never skip, without them).
//!
//! Every scenario that the `fleetbot serve` binary's real configuration can express runs on the
//! production path in `tests/app.rs`. Only these stay in-process, because each needs something
//! below that configuration:
//! - a static quota source (`BotSettings::quota` with fixture allowances, no cloud): the binary
//!   reads quota only from a live cloud, so `pr_opened_…` (with its static-budget snapshots)
//!   and `a_quota_shortfall_…` stay here;
//! - failure injection into the bot's own inventory (`stores::WatchedStore`, for the store-unreadable
//!   kind) and into the simulator mid-run: `every_kind_of_live_plan_problem_…`.

use crate::fake_github;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use fake_github::{
    FakeGitHub, INSTALLATION, NAME, OWNER, REPO, SECRET, fixtures, github_client, sha,
};
use fleetbot::bot::handler::QuotaSource;
use fleetbot::bot::{Bot, BotSettings, Handled};
use fleetbot::github::sign;
use fleetbot::quota::InMemoryEvidence;
use fleetbot::server::{AppState, InMemorySink, JobReport, Metrics, router, run_worker, serve};
use fleetbot::store::{InventoryStore, TargetRecord};
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
        Self::start_on(settings, &sha(1)).await
    }

    /// As [`Harness::start_with`], with `main` at `base` (a real git SHA, for the preview).
    async fn start_on(settings: BotSettings, base: &str) -> Self {
        let gh = FakeGitHub::start().await;
        {
            let mut w = gh.world();
            w.add_repo(
                REPO,
                "main",
                base,
                &[
                    ("README.md", "# fleet config\n"),
                    ("fleets/prod.yaml", &base_spec()),
                    (".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n"),
                ],
            );
        }
        let github = github_client(&gh.url);
        let bot = Bot::new(github.clone(), settings);
        let (sink, queue) = InMemorySink::new();
        let metrics = Arc::new(Metrics::default());
        let (done_tx, jobs) = mpsc::unbounded_channel();
        tokio::spawn(run_worker(queue, bot, metrics.clone(), Some(done_tx)));
        let state = AppState::new(
            fleetbot::github::WebhookSecrets::from_comma_separated(SECRET).unwrap(),
            Arc::new(sink),
            metrics,
            Some(github),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, router(state), std::future::pending()));
        Harness {
            gh,
            url,
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
        fake_github::manifest::assert_subscribed(event);
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

/// A live world: the simulator, the tenant, and the bot's inventory with its failure switch.
struct Live {
    h: Harness,
    sim: fleetbot::sim::Simulator,
    tenant: String,
    inventory: fleetbot::store::SqliteStore,
    store_fails: Arc<std::sync::atomic::AtomicBool>,
}

/// A simulator with `fleets/prod.yaml` from `main` deployed by fleetbot, and a bot that plans
/// against it with the same inventory behind the failure switch.
async fn live_world() -> Live {
    use crate::support::deploy;
    use fleetbot::engine::ops::LifecycleOptions;
    let world = crate::support::quick_default_world();
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
        Arc::new(|_: &fleetbot::engine::ops::Event| {}),
    )
    .await
    .unwrap();
    assert_eq!((result.deployed, result.failed), (2, 0), "{result:?}");
    let watched = crate::stores::WatchedStore::new(inventory.clone());
    let store_fails = watched.reads_fail.clone();
    // The simulator's own name: a client a test made knows no more than its endpoint.
    let cloud = Arc::new(
        fleetbot::Session::over(client, watched)
            .with_tenant(tenant.clone())
            .named("the fleetbot simulator"),
    );
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
            "project fleet1-test-b: project\\_id is a placeholder; give the existing project's ID in the runtime values",
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

/// Fetching is bounded per kind of file, by count and by size, and whatever is left unread
/// fails the check it would have fed: a pull request of many specs, one of them huge, fetches
/// only what the limits allow, never downloads the huge one, and passes nothing it did not read.
#[tokio::test]
async fn fetches_are_capped_per_pull_request_and_per_file_and_what_is_unread_fails() {
    let mut h = Harness::start_with(BotSettings {
        max_spec_files: 3,
        max_fetched_files: 2,
        max_file_bytes: 64 * 1024,
        ..BotSettings::default()
    })
    .await;
    let huge = format!("{}# {}\n", new_fleet("h"), "x".repeat(5 << 20));
    let big_note = "y".repeat(2 << 20);
    let (a, b, c, d) = (
        new_fleet("a"),
        new_fleet("b"),
        new_fleet("c"),
        new_fleet("d"),
    );
    h.open(
        &sha(2),
        &[
            ("docs/big.md", Some(&big_note)),
            ("docs/small.md", Some("notes\n")),
            ("docs/third.md", Some("more notes\n")),
            ("fleets/a-huge.yaml", Some(&huge)),
            ("fleets/a.yaml", Some(&a)),
            ("fleets/b.yaml", Some(&b)),
            ("fleets/c.yaml", Some(&c)),
            ("fleets/d.yaml", Some(&d)),
        ],
    )
    .await;
    h.gh.assert_clean();
    let preflight = h.run(&sha(2), "fleet/preflight");
    assert_eq!(preflight.conclusion.as_deref(), Some("failure"));
    let shown = format!(
        "{}\n{}",
        preflight.summary,
        preflight.text.unwrap_or_default()
    );
    for expected in [
        "more than 3 changed specs; not fetched",
        "more than the 4194304 bytes read; not fetched",
    ] {
        assert!(shown.contains(expected), "{expected:?} in\n{shown}");
    }
    let privacy = h.run(&sha(2), "fleet/privacy");
    assert_eq!(
        privacy.conclusion.as_deref(),
        Some("failure"),
        "{}",
        privacy.title
    );
    let shown = format!("{}\n{}", privacy.summary, privacy.text.unwrap_or_default());
    for expected in [
        "more than the 65536 bytes read; not fetched",
        "more than 2 changed files; not fetched",
    ] {
        assert!(shown.contains(expected), "{expected:?} in\n{shown}");
    }
    let world = h.gh.world();
    let contents: Vec<_> = world
        .requests
        .iter()
        .filter(|r| r.operation == "repos/get-content")
        .collect();
    // The config, two notes (one stopped on its stated size), three changed specs (one stopped
    // the same way) and the one unchanged spec the one-fleet-one-file rule reads; neither large
    // file was downloaded. (Each bot keeps its own spec blobs: with one cache per process this
    // count depended on which test had read `prod.yaml` first.)
    let mut paths: Vec<&str> = contents.iter().map(|r| r.path.as_str()).collect();
    paths.sort_unstable();
    let repo = "/repos/octo-org/fleet-config/contents";
    let expected: Vec<String> = [
        ".fleetbot.yml",
        "docs/big.md",
        "docs/small.md",
        "fleets/a-huge.yaml",
        "fleets/a.yaml",
        "fleets/b.yaml",
        "fleets/prod.yaml",
    ]
    .iter()
    .map(|p| format!("{repo}/{p}"))
    .collect();
    assert_eq!(paths, expected);
    let served: usize = contents.iter().map(|r| r.bytes_sent).sum();
    assert!(served < 256 * 1024, "{served} bytes of contents were sent");
}

/// A local spec repository: `main` holds the README, `fleets/prod.yaml` (the base spec) and
/// the config; branch `grow-gpus` changes `changes` on top. Returns the base and head SHAs.
fn local_spec_repo(dir: &std::path::Path, changes: &[(&str, &str)]) -> (String, String) {
    let git = |args: &[&str]| support::git(dir, args);
    let write = |path: &str, text: &str| support::write_file(dir, path, text);
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.email", "dev@example.com"]);
    git(&["config", "user.name", "dev"]);
    write("README.md", "# fleet config\n");
    write("fleets/prod.yaml", &base_spec());
    write(".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    let base = git(&["rev-parse", "HEAD"]);
    git(&["checkout", "-qb", "grow-gpus"]);
    for (path, text) in changes {
        write(path, text);
    }
    git(&["add", "-A"]);
    git(&["commit", "-qm", "grow"]);
    (base, git(&["rev-parse", "HEAD"]))
}

/// `fleetbot preview` in a git checkout holding the same commits posts, byte for byte, what
/// the App posts for the pull request of those commits: the sticky comment and both check
/// runs (title, summary, text and conclusion).
#[tokio::test]
async fn preview_of_a_local_change_is_what_the_app_posts() {
    let dir = tempfile::tempdir().unwrap();
    let grown = spec_with_gpus(2);
    let staging = staging_spec();
    let (base, head) = local_spec_repo(
        dir.path(),
        &[
            ("fleets/prod.yaml", &grown),
            ("fleets/staging.yaml", &staging),
            ("README.md", "# fleet config\n\nNow with staging.\n"),
        ],
    );

    let mut h = Harness::start_on(BotSettings::default(), &base).await;
    {
        let mut w = h.gh.world();
        w.commit(
            REPO,
            &base,
            &head,
            &[
                ("fleets/prod.yaml", Some(&grown)),
                ("fleets/staging.yaml", Some(&staging)),
                ("README.md", Some("# fleet config\n\nNow with staging.\n")),
            ],
        );
        w.open_pr(REPO, PR, "grow-gpus", &head);
    }
    let mut pr = pr_ref(&head);
    pr.base_sha = base.clone();
    h.deliver("pull_request", &fixtures::pull_request("opened", &pr))
        .await;
    h.gh.assert_clean();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args([
            "preview",
            "--no-cloud",
            "--output",
            "json",
            "--repo-name",
            REPO,
        ])
        .args(["--number", &PR.to_string(), "-C"])
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let preview: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let comments = h.bot_comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(preview["comment"], comments[0].body.as_str());
    for (i, name) in ["fleet/privacy", "fleet/preflight"].into_iter().enumerate() {
        let posted = h.run(&head, name);
        let shown = &preview["checks"][i];
        assert_eq!(shown["name"], name);
        assert_eq!(shown["head_sha"], head.as_str());
        assert_eq!(shown["conclusion"], posted.conclusion.as_deref().unwrap());
        assert_eq!(shown["output"]["title"], posted.title.as_str());
        assert_eq!(shown["output"]["summary"], posted.summary.as_str());
        assert_eq!(
            shown["output"]["text"].as_str(),
            posted.text.as_deref(),
            "{name} text"
        );
    }
}

/// The GitHub Action's path: `fleetbot preview --post` in a workflow run posts, with the
/// workflow's own token, the comment and check runs the App posts for the same pull request;
/// a second run edits its one comment; every request is one GitHub's REST description allows.
#[tokio::test]
async fn the_action_posts_what_the_app_posts_with_the_workflow_token() {
    let dir = tempfile::tempdir().unwrap();
    let grown = spec_with_gpus(2);
    let (base, head) = local_spec_repo(dir.path(), &[("fleets/prod.yaml", &grown)]);

    // The App reviews the pull request as usual…
    let mut h = Harness::start_on(BotSettings::default(), &base).await;
    {
        let mut w = h.gh.world();
        w.commit(REPO, &base, &head, &[("fleets/prod.yaml", Some(&grown))]);
        w.open_pr(REPO, PR, "grow-gpus", &head);
        w.workflow_tokens
            .insert("ghs_workflowtoken1".into(), "github-actions[bot]".into());
    }
    let mut pr = pr_ref(&head);
    pr.base_sha = base.clone();
    let event = fixtures::pull_request("opened", &pr);
    h.deliver("pull_request", &event).await;
    let app_comment = h.bot_comments()[0].body.clone();

    // …and so does the Action, from the checkout and the event GitHub Actions hands it.
    // GitHub's payload names the repository's real default branch (the example's says master).
    let mut payload: serde_json::Value = serde_json::from_slice(&event).unwrap();
    payload["repository"]["default_branch"] = "main".into();
    let event_path = dir.path().join("event.json");
    std::fs::write(&event_path, payload.to_string()).unwrap();
    // Run without blocking: the fake GitHub answers on this test's runtime.
    let post = || {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
            .args(["preview", "--post", "--output", "json", "-C"])
            .arg(dir.path())
            .env("GITHUB_TOKEN", "ghs_workflowtoken1")
            .env("GITHUB_REPOSITORY", REPO)
            .env("GITHUB_EVENT_PATH", &event_path)
            .env("GITHUB_API_URL", &h.gh.url)
            .env("FLEETBOT_CLOUD", "none")
            .env_remove("RUST_LOG")
            .env_remove("FLEETBOT_RUNTIME_VALUES")
            .output()
    };
    let out = post().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "posted 2 check runs and a new comment on {REPO}#{PR}"
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ghs_workflowtoken1"),
        "the token was printed"
    );
    let preview: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let action_comments: Vec<_> = h
        .bot_comments()
        .into_iter()
        .filter(|c| c.user == "github-actions[bot]")
        .collect();
    assert_eq!(action_comments.len(), 1);
    assert_eq!(
        action_comments[0].body, app_comment,
        "the Action's comment is the App's"
    );
    assert_eq!(preview["comment"], app_comment.as_str());
    let runs = h.gh.world().runs_on(REPO, &head);
    for name in ["fleet/privacy", "fleet/preflight"] {
        let mut same: Vec<_> = runs.iter().filter(|r| r.name == name).collect();
        assert_eq!(same.len(), 2, "{name}: the App's run and the Action's");
        let (a, b) = (same.remove(0), same.remove(0));
        assert_eq!(
            (&a.title, &a.summary, &a.text),
            (&b.title, &b.summary, &b.text)
        );
        assert_eq!(a.conclusion, b.conclusion);
    }

    // A second run (a re-run, or a push with nothing new) keeps one comment.
    let out = post().await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the updated comment"));
    let action_comments = h
        .bot_comments()
        .into_iter()
        .filter(|c| c.user == "github-actions[bot]")
        .count();
    assert_eq!(action_comments, 1);
    h.gh.assert_clean();

    // Outside a workflow run for a pull request it says what is missing, and posts nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(["preview", "--post", "-C"])
        .arg(dir.path())
        .env_remove("GITHUB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "fleetbot preview: --post runs in a GitHub Actions job for a pull request: GITHUB_TOKEN is not set\n"
    );
}

/// `fleetbot register`: the page posts the shipped manifest (rehosted) to GitHub's "new App"
/// form with a state; only GitHub's redirect carrying that state is taken; the one-time code
/// is traded for the App's credentials, which land 0600 outside any checkout and are never
/// printed.
#[tokio::test]
async fn register_trades_githubs_code_for_credentials_and_never_prints_them() {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::AsyncBufReadExt;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let gh = FakeGitHub::start().await;
    gh.world()
        .manifest_codes
        .insert("code-abc123".into(), "acme-fleetbot".into());
    let home = tempfile::tempdir().unwrap();
    let creds = home.path().join("creds");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args([
            "register",
            "--url",
            "https://fleet.acme.test/",
            "--name",
            "acme-fleetbot",
        ])
        .args([
            "--github-url",
            "https://github.example",
            "--api-url",
            &gh.url,
            "--out",
        ])
        .arg(&creds)
        .env_remove("RUST_LOG")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    let page_url = regex::Regex::new(r"open (http://127\.0\.0\.1:\d+/) in a browser")
        .unwrap()
        .captures(&first)
        .unwrap_or_else(|| panic!("{first}"))[1]
        .to_string();
    // The page as a browser reads its attributes: entities decoded.
    let page = reqwest::get(&page_url).await.unwrap().text().await.unwrap();
    let page = page
        .replace("&#x2f;", "/")
        .replace("&#x27;", "'")
        .replace("&quot;", "\u{1}")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let action = regex::Regex::new(
        r#"action="https://github\.example/settings/apps/new\?state=([0-9a-f]{32})""#,
    )
    .unwrap()
    .captures(&page)
    .unwrap_or_else(|| panic!("{page}"))[1]
        .to_string();
    // Quotes inside the attribute were `&quot;` (kept apart above as \u{1}).
    let manifest = regex::Regex::new(r#"name="manifest" value="([^"]*)""#)
        .unwrap()
        .captures(&page)
        .unwrap()[1]
        .replace('\u{1}', "\"");
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(
        manifest["hook_attributes"]["url"],
        "https://fleet.acme.test/webhook"
    );
    assert_eq!(manifest["redirect_url"], format!("{page_url}callback"));
    assert_eq!(manifest["default_permissions"]["checks"], "write");

    // An answer without this run's state is not taken.
    let wrong = reqwest::get(format!("{page_url}callback?code=code-abc123&state=other"))
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    let answer = reqwest::get(format!(
        "{page_url}callback?code=code-abc123&state={action}"
    ))
    .await
    .unwrap();
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert_eq!(status, 200, "{text}\n{:?}", gh.world().violations);
    assert!(text.contains("Registered <b>acme-fleetbot</b>"), "{text}");
    let status = child.wait().await.unwrap();
    assert!(status.success());
    let mut rest = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        rest.push_str(&line);
        rest.push('\n');
    }
    assert!(
        rest.contains("Registered the GitHub App acme-fleetbot (App ID 4242)."),
        "{rest}"
    );
    assert!(
        rest.contains("https://github.example/apps/acme-fleetbot/installations/new"),
        "{rest}"
    );
    assert!(
        !rest.contains("whsec-from-the-fake-1") && !rest.contains("PRIVATE KEY"),
        "{rest}"
    );

    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let env = creds.join("acme-fleetbot.env");
    let key = creds.join("acme-fleetbot.private-key.pem");
    assert_eq!(
        (mode(&creds), mode(&env), mode(&key)),
        (0o700, 0o600, 0o600)
    );
    let env_text = std::fs::read_to_string(&env).unwrap();
    assert!(env_text.contains("FLEETBOT_APP_ID=4242\n"), "{env_text}");
    assert!(env_text.contains("FLEETBOT_WEBHOOK_SECRET=whsec-from-the-fake-1\n"));
    assert!(env_text.contains(&format!(
        "FLEETBOT_APP_PRIVATE_KEY_PATH={}\n",
        key.canonicalize().unwrap().display()
    )));
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        std::fs::read_to_string(fake_github::app_private_key_path()).unwrap()
    );
    // The code was good once.
    assert!(gh.world().manifest_codes.is_empty());
    gh.assert_clean();
}
