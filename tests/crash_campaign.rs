//! The crash campaign of merge to deploy: `fleetbot serve` applying a merged fleet against a
//! separately running `fleetbot sim`, killed (SIGKILL) at a random moment of the apply and
//! started again over the same store, trial after trial. Each trial must converge (the
//! `fleet/apply` check succeeds and a fresh plan is quiet) with no duplicated and no orphaned
//! cloud resource.
//!
//! Run by `scripts/crash-campaign.sh` (`CRASH_TRIALS`, default 50; `CRASH_SEED` replays a
//! campaign). It is `#[ignore]`d in the suite: it takes minutes, and its figures go in
//! docs/status.md.

use crate::app_harness as app;
use crate::fake_github;
use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use app::{App, AppOptions};
use fake_github::{REPO, fixtures, sha};
use fleetbot::cloud::Cloud;
use fleetbot::cloud::auth::Credentials;
use fleetbot::cloud::client::{Endpoints, NebiusClient};
use fleetbot::store::InventoryStore;
use support::SimProcess;

const TOKEN: &str = "crash-campaign-token";
const PR: u64 = 12;

/// `fleetbot sim` in its own process, with a world a little faster than the default.
fn start_sim(dir: &std::path::Path) -> SimProcess {
    let world = dir.join("world.yaml");
    std::fs::write(
        &world,
        include_str!("../fixtures/sim/default.yaml")
            .replace("operation_latency_ms: 150", "operation_latency_ms: 40"),
    )
    .unwrap();
    SimProcess::start(TOKEN, &dir.join("sim-state.json"), Some(&world))
}

fn client(sim: &SimProcess) -> NebiusClient {
    NebiusClient::new(
        Endpoints::Single {
            uri: sim.endpoint.clone(),
        },
        Credentials::Static(TOKEN.to_string()),
    )
}

/// A small deterministic generator (xorshift), so a campaign can be replayed by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What one trial found.
#[derive(Debug, Default)]
struct Trial {
    killed_after_ms: u64,
    /// The kill landed before the apply concluded.
    mid_apply: bool,
    converged: bool,
    duplicated: Vec<String>,
    orphaned: Vec<String>,
    took: Duration,
}

fn spec() -> String {
    include_str!("../fixtures/specs/fleet1-test.yaml").to_string()
}

async fn trial(rng: &mut Rng, kill_window_ms: u64) -> Trial {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let sim = start_sim(dir.path());
    let gh = fake_github::FakeGitHub::start().await;
    gh.world().add_repo(
        REPO,
        "main",
        &sha(1),
        &[
            ("README.md", "# fleet config\n"),
            (".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n"),
        ],
    );
    let options = AppOptions {
        github_url: gh.url.clone(),
        dir: dir.path().to_path_buf(),
        workers: 2,
        cloud: Some((sim.endpoint.clone(), TOKEN.into(), sim.tenant.clone())),
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: Some(1),
        env: Vec::new(),
    };
    let mut app = App::start(options.clone()).await;
    let head = sha(2);
    app.open_reviewed(&gh, PR, &head, &[("fleets/prod.yaml", Some(&spec()))])
        .await;
    let merge = sha(90);
    gh.world().merge(REPO, PR, &merge);
    let pr = fixtures::PrRef {
        owner: fake_github::OWNER.into(),
        repo: fake_github::NAME.into(),
        number: PR,
        head_sha: head.clone(),
        base_sha: sha(1),
        head_ref: "change".into(),
        base_ref: "main".into(),
        installation_id: fake_github::INSTALLATION,
    };
    app.deliver(
        "pull_request",
        "merge",
        &fixtures::merged(&pr, &merge, "mia"),
    )
    .await;
    let killed_after_ms = rng.below(kill_window_ms);
    tokio::time::sleep(Duration::from_millis(killed_after_ms)).await;
    let done_before_kill = gh
        .world()
        .runs_on(REPO, &merge)
        .into_iter()
        .any(|r| r.name == "fleet/apply" && r.conclusion.is_some());
    app.kill();
    app = App::start(options).await;
    let concluded = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let done = gh
                .world()
                .runs_on(REPO, &merge)
                .into_iter()
                .filter(|r| r.name == "fleet/apply")
                .any(|r| r.conclusion.as_deref() == Some("success"));
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .is_ok();
    if !concluded {
        // What the check and the server said, to see why.
        for r in gh.world().runs_on(REPO, &merge) {
            println!(
                "    run {}: {} {:?} {}\n{}",
                r.id, r.status, r.conclusion, r.title, r.summary
            );
        }
        let logs = app.log_text();
        let tail: Vec<&str> = logs.lines().rev().take(40).collect();
        for line in tail.into_iter().rev() {
            println!("    | {line}");
        }
    }
    app.stop().await;
    gh.assert_clean();
    let (duplicated, orphaned, quiet) = inspect(&sim, dir.path()).await;
    Trial {
        killed_after_ms,
        mid_apply: !done_before_kill,
        converged: concluded && quiet,
        duplicated,
        orphaned,
        took: started.elapsed(),
    }
}

/// Every resource of the tenant's projects: duplicates (two of one kind and name in one
/// project, or two projects of one name), orphans (a resource no inventory record names), and
/// whether planning the spec again is quiet.
async fn inspect(sim: &SimProcess, dir: &std::path::Path) -> (Vec<String>, Vec<String>, bool) {
    let cloud = client(sim);
    let store = fleetbot::store::SqliteStore::open(&dir.join("fleetbot.sqlite"))
        .await
        .unwrap();
    let targets = store.targets("fleet1-test").await.unwrap();
    let projects = store.projects("fleet1-test").await.unwrap();
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    for p in &projects {
        for id in [
            &p.project_id,
            &p.created_network_id,
            &p.created_subnet_id,
            &p.subnet_id,
            &p.bucket_id,
        ] {
            recorded.insert(id.clone());
        }
    }
    for t in &targets {
        recorded.extend(
            [
                &t.cluster_id,
                &t.filesystem_id,
                &t.gpu_cluster_id,
                &t.subnet_id,
            ]
            .into_iter()
            .cloned(),
        );
        recorded.extend(t.node_group_ids.iter().cloned());
    }
    let mut duplicated = Vec::new();
    let mut orphaned = Vec::new();
    let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    // A resource is fleetbot's when it carries fleetbot's label (a project's default network,
    // made by the cloud, is not); an orphan is one of fleetbot's that no record names.
    let mut note = |scope: &str,
                    kind: &str,
                    name: &str,
                    id: &str,
                    labels: &fleetbot::cloud::domain::Labels,
                    orphaned: &mut Vec<String>| {
        let ours = labels
            .get(fleetbot::engine::desired::LABEL_MANAGED_BY)
            .map(String::as_str)
            == Some(fleetbot::engine::desired::MANAGED_BY);
        if !ours {
            return;
        }
        *seen
            .entry((scope.to_string(), kind.to_string(), name.to_string()))
            .or_default() += 1;
        if !recorded.contains(id) {
            orphaned.push(format!("{kind} {name} in {scope}"));
        }
    };
    for project in cloud.list_projects(&sim.tenant).await.unwrap() {
        if !project.name.starts_with("fleet1-test-") {
            continue;
        }
        let scope = project.name.clone();
        // Every project of the fleet's names counts (a second one is a duplicate), labelled or
        // not.
        let named = fleetbot::cloud::domain::Labels::from([(
            fleetbot::engine::desired::LABEL_MANAGED_BY.to_string(),
            fleetbot::engine::desired::MANAGED_BY.to_string(),
        )]);
        note(
            "tenant",
            "project",
            &project.name,
            &project.id,
            &named,
            &mut orphaned,
        );
        for n in cloud.list_networks(&project.id).await.unwrap() {
            note(&scope, "network", &n.name, &n.id, &n.labels, &mut orphaned);
        }
        for s in cloud.list_subnets(&project.id).await.unwrap() {
            note(&scope, "subnet", &s.name, &s.id, &s.labels, &mut orphaned);
        }
        for b in cloud.list_buckets(&project.id).await.unwrap() {
            note(&scope, "bucket", &b.name, &b.id, &b.labels, &mut orphaned);
        }
        for f in cloud.list_filesystems(&project.id).await.unwrap() {
            note(
                &scope,
                "filesystem",
                &f.name,
                &f.id,
                &f.labels,
                &mut orphaned,
            );
        }
        for g in cloud.list_gpu_clusters(&project.id).await.unwrap() {
            note(
                &scope,
                "gpu-cluster",
                &g.name,
                &g.id,
                &g.labels,
                &mut orphaned,
            );
        }
        for c in cloud.list_clusters(&project.id).await.unwrap() {
            note(&scope, "cluster", &c.name, &c.id, &c.labels, &mut orphaned);
            for g in cloud.list_node_groups(&c.id).await.unwrap() {
                note(
                    &scope,
                    "node-group",
                    &g.name,
                    &g.id,
                    &g.labels,
                    &mut orphaned,
                );
            }
        }
    }
    for ((scope, kind, name), n) in seen {
        if n > 1 {
            duplicated.push(format!("{n} × {kind} {name} in {scope}"));
        }
    }
    let spec = fleetbot::spec::load_str(&spec(), "fleets/prod.yaml").unwrap();
    let options = fleetbot::engine::ops::LifecycleOptions::default();
    let quiet =
        match fleetbot::engine::ops::prepare(&cloud, &store, &spec, &sim.tenant, &options).await {
            Ok(prepared) => prepared.plan.is_quiet() && !prepared.plan.has_problems(),
            Err(_) => false,
        };
    (duplicated, orphaned, quiet)
}

/// A campaign setting from the environment, or its default.
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed `name` replays, or a fresh one; always odd (the generator's state).
fn seed_from_env(name: &str) -> u64 {
    let fresh = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    };
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(fresh)
        | 1
}

#[tokio::test]
#[ignore = "minutes long: run by scripts/crash-campaign.sh"]
async fn a_killed_apply_converges_without_duplicates_or_orphans() {
    let trials: usize = env_or("CRASH_TRIALS", 50);
    let seed = seed_from_env("CRASH_SEED");
    let mut rng = Rng(seed);
    // Kills land anywhere from the merge delivery to well past a whole apply's length.
    let window_ms: u64 = env_or("CRASH_WINDOW_MS", 1400);
    println!("crash campaign: {trials} trials, seed {seed}, kill window {window_ms} ms");
    let mut results = Vec::new();
    for i in 0..trials {
        let t = trial(&mut rng, window_ms).await;
        println!(
            "trial {:>3}: killed after {:>4} ms ({}); converged {}; duplicated {}; orphaned {}; {:.1} s",
            i + 1,
            t.killed_after_ms,
            if t.mid_apply {
                "mid-apply"
            } else {
                "after it concluded"
            },
            t.converged,
            t.duplicated.len(),
            t.orphaned.len(),
            t.took.as_secs_f64()
        );
        for d in &t.duplicated {
            println!("    duplicated: {d}");
        }
        for o in &t.orphaned {
            println!("    orphaned: {o}");
        }
        results.push(t);
    }
    let duplicated: usize = results.iter().map(|t| t.duplicated.len()).sum();
    let orphaned: usize = results.iter().map(|t| t.orphaned.len()).sum();
    let converged = results.iter().filter(|t| t.converged).count();
    let mid_apply = results.iter().filter(|t| t.mid_apply).count();
    println!(
        "crash campaign: {trials} trials (seed {seed}), {mid_apply} killed mid-apply: {converged} converged, {duplicated} duplicated, {orphaned} orphaned resources"
    );
    assert_eq!((converged, duplicated, orphaned), (trials, 0, 0));
}

use crate::pg;

/// A small CPU-only fleet of its own per pull request: `f{i}` with two projects.
fn campaign_spec(i: usize) -> String {
    format!(
        "apiVersion: npa.fleet/v0.0.1\nname: f{i}\nregion: us-central1\nproject_prefix: f{i}-\ndefaults:\n  cpu_nodes: {{count: 1, platform: cpu-d3, preset: 8vcpu-32gb}}\n  gpu_nodes: null\n  enable_filestore: false\nprojects:\n  - name: a\n  - name: b\n"
    )
}

/// What one fault campaign found.
#[derive(Debug, Default)]
struct Campaign {
    merges: usize,
    /// Pull request heads without the App's fleet/preflight, merges without a successful
    /// fleet/apply, at the end.
    lost: Vec<String>,
    duplicated: Vec<String>,
    orphaned: Vec<String>,
    /// Apply leases still held after every apply ended.
    stuck_locks: Vec<String>,
    /// Fleets whose live plan is quiet at the end.
    converged: usize,
    kills: usize,
    dropped_deliveries: usize,
}

/// Two `fleetbot serve` replicas on one PostgreSQL against `fleetbot sim` failing 10 % of its
/// calls (UNAVAILABLE or RESOURCE_EXHAUSTED) and a GitHub answering 502 to 10 % of repository
/// calls; pull requests opened and merged with 10 % of their deliveries dropped, and one
/// replica killed (SIGKILL) at a random moment and restarted with `--reconcile-now`.
async fn campaign(rng: &mut Rng, fleets: usize) -> Campaign {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(
        &world,
        include_str!("../fixtures/sim/default.yaml")
            .replace("operation_latency_ms: 150", "operation_latency_ms: 40")
            + &format!(
                "faults:\n  - {{method: '*', error_rate: 0.05, code: unavailable}}\n  - {{method: '*', error_rate: 0.05, code: resource_exhausted}}\nseed: {}\n",
                rng.next()
            ),
    )
    .unwrap();
    let sim = SimProcess::start(TOKEN, &dir.path().join("sim-state.json"), Some(&world));
    let gh = fake_github::FakeGitHub::start().await;
    gh.world().add_repo(
        REPO,
        "main",
        &sha(1),
        &[
            ("README.md", "# fleet config\n"),
            (".fleetbot.yml", "specs: ['fleets/**/*.yaml']\n"),
        ],
    );
    {
        let mut w = gh.world();
        w.flaky_rate = 0.1;
        w.flaky_seed = rng.next() | 1;
    }
    let url = pg::fresh_database().await;
    let mut options = Vec::new();
    let mut replicas = Vec::new();
    for r in 0..2 {
        let replica_dir = dir.path().join(format!("replica-{r}"));
        std::fs::create_dir_all(&replica_dir).unwrap();
        let opts = AppOptions {
            github_url: gh.url.clone(),
            dir: replica_dir,
            workers: 2,
            cloud: Some((sim.endpoint.clone(), TOKEN.into(), sim.tenant.clone())),
            store_url: Some(url.clone()),
            webhook_secrets: None,
            job_lease_secs: Some(2),
            env: vec![("FLEETBOT_RECONCILE_TICK_SECS", "0".into())],
        };
        replicas.push(App::start(opts.clone()).await);
        options.push(opts);
    }
    let mut out = Campaign {
        merges: fleets,
        ..Campaign::default()
    };
    let kill_at = rng.below(fleets as u64) as usize;
    let mut heads = Vec::new();
    for i in 0..fleets {
        let number = 100 + i as u64;
        let head = sha(200 + i as u64);
        let base = gh.world().repos[REPO].branches["main"].clone();
        {
            let mut w = gh.world();
            w.commit(
                REPO,
                &base,
                &head,
                &[(&format!("fleets/f{i}.yaml"), Some(&campaign_spec(i)))],
            );
            w.open_pr(REPO, number, &format!("change-{i}"), &head);
        }
        heads.push((number, head.clone()));
        let to = rng.below(2) as usize;
        if rng.below(10) == 0 {
            out.dropped_deliveries += 1;
        } else {
            let body = fake_github::pr_delivery("opened", number, &head, &format!("change-{i}"));
            replicas[to]
                .deliver("pull_request", &format!("open-{i}"), &body)
                .await;
        }
        // Reviewed (or, its delivery lost, reviewed by the pass /reconcile queues).
        let reviewed = wait_for(&gh, &head, "fleet/preflight", Duration::from_secs(20)).await;
        if !reviewed {
            reconcile(&replicas[1 - to], &gh, number, &head, i).await;
            wait_for(&gh, &head, "fleet/preflight", Duration::from_secs(30)).await;
        }
        let merge = sha(300 + i as u64);
        gh.world().merge(REPO, number, &merge);
        let pr = fixtures::PrRef {
            owner: fake_github::OWNER.into(),
            repo: fake_github::NAME.into(),
            number,
            head_sha: head.clone(),
            base_sha: base.clone(),
            head_ref: format!("change-{i}"),
            base_ref: "main".into(),
            installation_id: fake_github::INSTALLATION,
        };
        let to = rng.below(2) as usize;
        if rng.below(10) == 0 {
            out.dropped_deliveries += 1;
        } else {
            replicas[to]
                .deliver(
                    "pull_request",
                    &format!("merge-{i}"),
                    &fixtures::merged(&pr, &merge, "mia"),
                )
                .await;
        }
        if i == kill_at {
            // One replica dies at a random moment of this merge's apply, and comes back
            // with a reconcile pass of its own.
            tokio::time::sleep(Duration::from_millis(rng.below(1500))).await;
            let victim = rng.below(2) as usize;
            replicas[victim].kill();
            out.kills += 1;
            let mut again = options[victim].clone();
            again.env.push(("FLEETBOT_RECONCILE_NOW", "1".into()));
            replicas[victim] = App::start(again).await;
        }
        // A merge whose delivery was lost is applied by the next pass while it is the head.
        if !wait_for(&gh, &merge, "fleet/apply", Duration::from_secs(30)).await {
            reconcile(&replicas[0], &gh, number, &merge, i).await;
        }
        let applied = wait_for_success(&gh, &merge, Duration::from_secs(90)).await;
        if !applied {
            out.lost
                .push(format!("the merge of #{number} was not applied"));
            // Why, for whoever replays the seed.
            for r in gh.world().runs_on(REPO, &merge) {
                println!(
                    "    run {} {}: {} {:?} {}",
                    r.id, r.name, r.status, r.conclusion, r.title
                );
            }
            for (n, app) in replicas.iter().enumerate() {
                let logs = app.log_text();
                let lines: Vec<&str> = logs
                    .lines()
                    .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("reconcil"))
                    .collect();
                for line in lines.iter().rev().take(15) {
                    println!("    replica {n} | {line}");
                }
            }
        }
    }
    for (number, head) in &heads {
        if !gh
            .world()
            .runs_on(REPO, head)
            .iter()
            .any(|r| r.name == "fleet/preflight" && r.conclusion.is_some())
        {
            out.lost
                .push(format!("#{number} at {head} was never reviewed"));
        }
    }
    for app in replicas {
        app.stop().await;
    }
    gh.assert_clean();
    let store = fleetbot::store::PostgresStore::connect(&url).await.unwrap();
    let now = fleetbot::store::queue::now_ms();
    use fleetbot::store::OverviewStore;
    // Fleet locks only: an apply's acknowledgement (`ack:<job>`) is a marker that runs out by
    // itself and holds nothing.
    for lease in store.live_leases(now).await.unwrap() {
        if !lease.fleet_key.starts_with("ack:") {
            out.stuck_locks.push(lease.fleet_key);
        }
    }
    let cloud = client(&sim);
    for i in 0..fleets {
        let spec = fleetbot::spec::load_str(&campaign_spec(i), "f.yaml").unwrap();
        let (duplicated, orphaned) = resources(&cloud, &sim.tenant, &store, &spec).await;
        out.duplicated.extend(duplicated);
        out.orphaned.extend(orphaned);
        let options = fleetbot::engine::ops::LifecycleOptions::default();
        // The faults stay on: a plan that cannot be read is tried again.
        for _ in 0..5 {
            if let Ok(prepared) =
                fleetbot::engine::ops::prepare(&cloud, &store, &spec, &sim.tenant, &options).await
            {
                if prepared.plan.is_quiet() && !prepared.plan.has_problems() {
                    out.converged += 1;
                }
                break;
            }
        }
    }
    out
}

/// `/reconcile` on pull request `number` (comments are delivered reliably).
async fn reconcile(app: &App, gh: &fake_github::FakeGitHub, number: u64, head: &str, i: usize) {
    let pr = fixtures::PrRef {
        owner: fake_github::OWNER.into(),
        repo: fake_github::NAME.into(),
        number,
        head_sha: head.to_string(),
        base_sha: sha(1),
        head_ref: format!("change-{i}"),
        base_ref: "main".into(),
        installation_id: fake_github::INSTALLATION,
    };
    gh.world().set_role(REPO, "admin-ada", "admin");
    let body = gh.pr_comment(&pr, 9_000 + i as u64, "admin-ada", "User", "/reconcile");
    app.deliver("issue_comment", &format!("reconcile-{i}-{head}"), &body)
        .await;
}

async fn wait_for(gh: &fake_github::FakeGitHub, sha: &str, name: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if gh.world().runs_on(REPO, sha).iter().any(|r| r.name == name) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn wait_for_success(gh: &fake_github::FakeGitHub, sha: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if gh
            .world()
            .runs_on(REPO, sha)
            .iter()
            .any(|r| r.name == "fleet/apply" && r.conclusion.as_deref() == Some("success"))
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Duplicated and orphaned resources of one fleet's projects (as [`inspect`], over any
/// store).
async fn resources(
    cloud: &NebiusClient,
    tenant: &str,
    store: &impl InventoryStore,
    spec: &fleetbot::spec::FleetSpec,
) -> (Vec<String>, Vec<String>) {
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    for t in store.targets(&spec.name).await.unwrap() {
        recorded.insert(t.cluster_id.clone());
        recorded.extend(t.node_group_ids.iter().cloned());
    }
    for p in store.projects(&spec.name).await.unwrap() {
        recorded.insert(p.created_network_id.clone());
        recorded.insert(p.created_subnet_id.clone());
    }
    let ours = |labels: &fleetbot::cloud::domain::Labels| {
        labels
            .get(fleetbot::engine::desired::LABEL_MANAGED_BY)
            .map(String::as_str)
            == Some(fleetbot::engine::desired::MANAGED_BY)
    };
    let (mut duplicated, mut orphaned) = (Vec::new(), Vec::new());
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for project in retry(|| cloud.list_projects(tenant))
        .await
        .expect("cannot read projects (faults on)")
    {
        if !project.name.starts_with(&spec.project_prefix) {
            continue;
        }
        *names
            .entry(format!("project {}", project.name))
            .or_default() += 1;
        for c in retry(|| cloud.list_clusters(&project.id))
            .await
            .expect("cannot read clusters (faults on)")
        {
            if !ours(&c.labels) {
                continue;
            }
            *names
                .entry(format!("cluster {} in {}", c.name, project.name))
                .or_default() += 1;
            if !recorded.contains(&c.id) {
                orphaned.push(format!("cluster {} in {}", c.name, project.name));
            }
            for g in retry(|| cloud.list_node_groups(&c.id))
                .await
                .expect("cannot read node groups (faults on)")
            {
                *names
                    .entry(format!(
                        "node group {} of {} in {}",
                        g.name, c.name, project.name
                    ))
                    .or_default() += 1;
                if ours(&g.labels) && !recorded.contains(&g.id) {
                    orphaned.push(format!("node group {} in {}", g.name, project.name));
                }
            }
        }
    }
    for (name, n) in names {
        if n > 1 {
            duplicated.push(format!("{n} × {name}"));
        }
    }
    (duplicated, orphaned)
}

/// A read tried again while the simulator's faults refuse it.
async fn retry<T, F, Fut>(call: F) -> Result<T, fleetbot::cloud::CloudError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, fleetbot::cloud::CloudError>>,
{
    let mut last = None;
    for _ in 0..10 {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap())
}

#[tokio::test]
#[ignore = "minutes long: run by scripts/fault-campaign.sh"]
async fn a_fault_campaign_loses_nothing_and_converges() {
    let runs: usize = env_or("FAULT_RUNS", 3);
    let fleets: usize = env_or("FAULT_FLEETS", 4);
    let seed = seed_from_env("FAULT_SEED");
    let mut rng = Rng(seed);
    println!("fault campaign: {runs} runs of {fleets} merges, seed {seed}");
    let mut totals = Campaign::default();
    for run in 0..runs {
        let started = Instant::now();
        let c = campaign(&mut rng, fleets).await;
        println!(
            "run {:>2}: {} merges, {} deliveries dropped, {} kill(s): lost {}, duplicated {}, orphaned {}, stuck locks {}, converged {}/{} fleets; {:.0} s",
            run + 1,
            c.merges,
            c.dropped_deliveries,
            c.kills,
            c.lost.len(),
            c.duplicated.len(),
            c.orphaned.len(),
            c.stuck_locks.len(),
            c.converged,
            c.merges,
            started.elapsed().as_secs_f64()
        );
        for line in c
            .lost
            .iter()
            .chain(&c.duplicated)
            .chain(&c.orphaned)
            .chain(&c.stuck_locks)
        {
            println!("    {line}");
        }
        totals.merges += c.merges;
        totals.dropped_deliveries += c.dropped_deliveries;
        totals.kills += c.kills;
        totals.converged += c.converged;
        totals.lost.extend(c.lost);
        totals.duplicated.extend(c.duplicated);
        totals.orphaned.extend(c.orphaned);
        totals.stuck_locks.extend(c.stuck_locks);
    }
    println!(
        "fault campaign (seed {seed}): {} merges, {} deliveries dropped, {} kills: {} lost, {} duplicated, {} orphaned, {} stuck locks; {}/{} fleets converged",
        totals.merges,
        totals.dropped_deliveries,
        totals.kills,
        totals.lost.len(),
        totals.duplicated.len(),
        totals.orphaned.len(),
        totals.stuck_locks.len(),
        totals.converged,
        totals.merges
    );
    assert_eq!(
        (
            totals.lost.len(),
            totals.duplicated.len(),
            totals.orphaned.len(),
            totals.stuck_locks.len(),
            totals.converged
        ),
        (0, 0, 0, 0, totals.merges)
    );
}
