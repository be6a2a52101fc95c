//! The dashboard (`GET /`, `GET /api/dashboard`) over a seeded SQLite store, served on
//! loopback: its JSON and headers read over HTTP, and the page loaded in a real headless
//! Chromium (`FLEETBOT_CHROMIUM`, from `scripts/fetch-chromium.sh`), whose DOM is checked and
//! whose screenshot is kept as `target/test-artifacts/dashboard.png`.
//!
//! Without `FLEETBOT_CHROMIUM` the browser test says it is skipped, unless `CI=true`, where a
//! missing browser fails it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fleetbot::privacy::testdata;
use fleetbot::quota::AllowanceDocument;
use fleetbot::quota::allowances::{AllowanceRecord, AllowanceStatus, StatusField};
use fleetbot::quota::wire::Wire;
use fleetbot::server::dashboard::{Dashboard, FixedQuota, QuotaReading, router, tenant_label};
use fleetbot::store::queue::{now_ms, pr_key};
use fleetbot::store::{
    AddonRecord, ApplyRun, AuditEntry, DeployStore, InventoryStore, JobOutcome, JobQueue, NewJob,
    ReviewedPlan, SqliteStore, TargetRecord,
};

/// Private values seeded into the store; none may reach the page or the JSON.
struct Private {
    tenant: String,
    project: String,
    cluster: String,
    node_group: String,
    subnet: String,
    release: String,
    token: String,
}

fn private() -> Private {
    Private {
        tenant: testdata::nid_seeded("tenant", "e00", 18, 11),
        project: testdata::nid_seeded("project", "e00", 18, 12),
        cluster: testdata::nid_seeded("mk8scluster", "e00", 18, 13),
        node_group: testdata::nid_seeded("mk8snodegroup", "e00", 18, 14),
        subnet: testdata::nid_seeded("vpcsubnet", "e00", 18, 15),
        release: testdata::nid_seeded("mk8srelease", "e00", 18, 17),
        token: testdata::github_seeded("ghp_", 36, 16),
    }
}

impl Private {
    fn all(&self) -> [&str; 7] {
        [
            &self.tenant,
            &self.project,
            &self.cluster,
            &self.node_group,
            &self.subnet,
            &self.release,
            &self.token,
        ]
    }
}

fn target(p: &Private, fleet: &str, project: &str, cluster: &str, status: &str) -> TargetRecord {
    TargetRecord {
        fleet: fleet.into(),
        project_key: project.into(),
        cluster_name: cluster.into(),
        backend: "mk8s".into(),
        status: status.into(),
        tenant_id: p.tenant.clone(),
        region: "eu-north1".into(),
        profile: "gpu-h100-sxm".into(),
        project_id: p.project.clone(),
        cluster_id: p.cluster.clone(),
        node_group_ids: vec![p.node_group.clone()],
        subnet_id: p.subnet.clone(),
        applied_digest: "sha256:5d41402abc4b2a76b9719d911017c592".into(),
        updated_at: now_ms() - 120_000,
        ..Default::default()
    }
}

fn job(id: &str, pr: Option<u64>) -> NewJob {
    NewJob {
        id: id.into(),
        kind: "webhook".into(),
        event: "pull_request".into(),
        payload: Bytes::from_static(b"{}"),
        pr_key: pr.map(|n| pr_key("Octo/Fleets", n)).unwrap_or_default(),
        fleet_key: String::new(),
        coalesce_key: String::new(),
        record_only: false,
    }
}

/// A store as a server that reviewed and applied a little would hold.
async fn seeded(dir: &Path, p: &Private) -> SqliteStore {
    let store = SqliteStore::open(&dir.join("fleetbot.sqlite"))
        .await
        .unwrap();
    let now = now_ms();
    let mut ok = target(p, "train", "research", "h100-a", "deployed");
    ok.addons = vec![AddonRecord {
        name: "gpu-operator".into(),
        release_id: p.release.clone(),
        digest: "d".into(),
    }];
    store.upsert_target(&ok).await.unwrap();
    let mut failed = target(p, "train", "research", "h100-b", "error");
    failed.error = format!(
        "cluster {} in project {} failed: quota exceeded (token {})",
        p.cluster, p.project, p.token
    );
    store.upsert_target(&failed).await.unwrap();
    store
        .upsert_target(&target(p, "infer", "serving", "l40s-a", "deployed"))
        .await
        .unwrap();

    // Both pull requests ask for quota; only #14 is still open (#12 merged below).
    let tenant = tenant_label(&p.tenant);
    let plan = |path: &str, digest: &str, pr: u64, at: i64| {
        ReviewedPlan {
        pr_key: pr_key("Octo/Fleets", pr),
        head_sha: "9f8e7d6c5b4a".into(),
        fleet_path: path.into(),
        digest: digest.into(),
        summary: serde_json::json!({
            "lines": ["+ create cluster research/h100-b", "~ resize node group"],
            "deletions": [],
            "requested": [
                {"tenant": tenant, "region": "eu-north1", "quota": "compute.instance.gpu.h100", "amount": "3"},
                {"tenant": tenant, "region": "eu-north1", "quota": "compute.filesystem.size.network-ssd", "amount": (1u64 << 40).to_string()},
            ],
        })
        .to_string(),
        recorded_at: at,
    }
    };
    store
        .record_reviewed_plan(&plan(
            "fleets/train.yaml",
            "sha256:aaa111",
            12,
            now - 600_000,
        ))
        .await
        .unwrap();
    store
        .record_reviewed_plan(&plan(
            "fleets/infer.yaml",
            "sha256:bbb222",
            14,
            now - 60_000,
        ))
        .await
        .unwrap();
    store
        .record_apply_run(&ApplyRun {
            job_id: "apply:octo/fleets#12@1234567abcdef:merge".into(),
            fleet_path: "fleets/train.yaml".into(),
            digest: "sha256:aaa111".into(),
            destructive_approved: false,
            started_at: now - 300_000,
        })
        .await
        .unwrap();
    store
        .append_audit(&AuditEntry {
            at: now - 290_000,
            actor: "octocat".into(),
            action: "apply (merge)".into(),
            repo: "Octo/Fleets".into(),
            pr: 12,
            sha: "1234567abcdef".into(),
            fleet: "fleets/train.yaml".into(),
            outcome: "success".into(),
            digest: String::new(),
            detail: String::new(),
        })
        .await
        .unwrap();
    store
        .append_audit(&AuditEntry {
            at: now - 300_000,
            actor: String::new(),
            action: fleetbot::bot::handler::CLOSED_MERGED.into(),
            repo: "Octo/Fleets".into(),
            pr: 12,
            sha: "9f8e7d6c5b4a".into(),
            fleet: String::new(),
            outcome: "closed".into(),
            digest: String::new(),
            detail: String::new(),
        })
        .await
        .unwrap();
    let lease_key = fleetbot::fleet::backend::fleet_lease_key(&p.tenant, "infer");
    store
        .take_lease(
            &lease_key,
            "apply:octo/fleets#14@abc:merge",
            "#14 at abcdef0 (merge)",
            now,
            120_000,
        )
        .await
        .unwrap();

    store
        .enqueue(&job("d-1", Some(12)), now - 10_000)
        .await
        .unwrap();
    let claimed = store
        .claim("w", now - 9_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    store
        .finish(&claimed, &JobOutcome::Done, now - 8_000)
        .await
        .unwrap();
    store
        .enqueue(&job("d-2", Some(14)), now - 5_000)
        .await
        .unwrap();
    let claimed = store
        .claim("w", now - 4_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    let error = format!("GitHub refused: Bad credentials for {}", p.token);
    store
        .finish(&claimed, &JobOutcome::Failed { error }, now - 3_000)
        .await
        .unwrap();
    store.enqueue(&job("d-3", None), now - 1_000).await.unwrap();
    store
}

fn allowance(
    p: &Private,
    name: &str,
    unit: &str,
    used: u64,
    limit: Option<u64>,
) -> AllowanceRecord {
    AllowanceRecord {
        name: name.into(),
        parent_id: p.tenant.clone(),
        region: "eu-north1".into(),
        limit: limit.into(),
        status: StatusField::Present(AllowanceStatus {
            state: "STATE_ACTIVE".into(),
            unit: unit.into(),
            usage: Wire::Value(used),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn quota(p: &Private) -> QuotaReading {
    QuotaReading {
        source: "the fleetbot simulator".into(),
        tenants: vec![(
            p.tenant.clone(),
            Ok(AllowanceDocument {
                items: vec![
                    allowance(p, "compute.instance.gpu.h100", "count", 6, Some(8)),
                    allowance(p, "mk8s.cluster.count", "count", 5, Some(5)),
                    allowance(
                        p,
                        "compute.filesystem.size.network-ssd",
                        "byte",
                        1 << 40,
                        Some(4 << 40),
                    ),
                    allowance(p, "vpc.network.count", "count", 1, None),
                ],
                next_page_token: String::new(),
            }),
        )],
    }
}

/// Serves the dashboard over the seeded store on loopback; returns the base URL.
async fn serve(store: SqliteStore, p: &Private) -> String {
    let dashboard = Dashboard::new(store, "SQLite", Some(Arc::new(FixedQuota(quota(p)))));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(fleetbot::server::serve(
        listener,
        router(dashboard),
        std::future::pending(),
    ));
    format!("http://{addr}")
}

fn assert_private_absent(text: &str, p: &Private, what: &str) {
    for value in p.all() {
        assert!(
            !text.contains(value),
            "{what} shows a private value {value}:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_and_the_page_show_the_seeded_store_and_nothing_private() {
    let dir = tempfile::tempdir().unwrap();
    let p = private();
    let base = serve(seeded(dir.path(), &p).await, &p).await;
    // reqwest is built without a default TLS provider; plain HTTP still asks for one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    let answer = http
        .get(format!("{base}/api/dashboard"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let text = answer.text().await.unwrap();
    assert_private_absent(&text, &p, "/api/dashboard");
    let view: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(view["store"], "SQLite");
    let fleets: Vec<&str> = view["fleets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(fleets, ["infer", "train"]);
    let train = &view["fleets"][1]["clusters"];
    assert_eq!(train[0]["state"], "deployed");
    assert_eq!(train[0]["addons"][0], "gpu-operator");
    assert_eq!(train[1]["state"], "error");
    assert_eq!(train[1]["tenant"], tenant_label(&p.tenant));
    let error = train[1]["error"].as_str().unwrap();
    assert!(
        error.contains("quota exceeded") && error.contains("[redacted]"),
        "{error}"
    );
    let repo = &view["repositories"][0];
    assert_eq!(repo["name"], "octo/fleets");
    assert_eq!(repo["specs"][0]["path"], "fleets/infer.yaml");
    assert_eq!(repo["specs"][0]["review_state"], "pending");
    assert_eq!(repo["specs"][1]["review_state"], "applied");
    assert_eq!(repo["specs"][1]["last_apply"]["outcome"], "success");
    assert_eq!(view["fleets"][0]["locked_by"], "#14 at abcdef0 (merge)");
    assert_eq!(view["locks"][0]["fleet"], "infer");
    assert_eq!(view["locks"][0]["repository"], "octo/fleets");
    let jobs: Vec<(&str, &str)> = view["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_str().unwrap(), j["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        jobs,
        [("d-3", "queued"), ("d-2", "failed"), ("d-1", "done")]
    );
    let bars = &view["quota"]["tenants"][0]["regions"][0]["bars"];
    assert_eq!(bars[0]["name"], "compute.filesystem.size.network-ssd");
    assert_eq!(bars[0]["percent"], 25.0);
    assert_eq!(bars[1]["used"], 6);
    assert_eq!(bars[1]["limit"], 8);
    assert_eq!(view["quota"]["tenants"][0]["regions"][0]["unlimited"], 1);
    // What the open pull request (#14) asks for, on top; the merged one (#12) no longer counts.
    assert_eq!(bars[0]["requested"], 1u64 << 40);
    assert_eq!(bars[0]["requested_percent"], 25.0);
    assert_eq!(bars[0]["requested_over"], false);
    assert_eq!(bars[1]["requested"], 3);
    assert_eq!(bars[1]["requested_by"], 1);
    assert_eq!(
        bars[1]["requested_percent"], 25.0,
        "at most what is left is drawn"
    );
    assert_eq!(bars[1]["requested_over"], true);
    assert_eq!(bars[2]["requested"], 0);

    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let html = page.text().await.unwrap();
    assert_private_absent(&html, &p, "the page");
    assert!(!html.contains("<script"), "the page has no script");

    // Read-only: nothing but GET is served.
    for path in ["/", "/api/dashboard"] {
        let post = http.post(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(post.status(), 405, "POST {path}");
    }
}

/// Chromium as the brief for this machine needs it: headless, no sandbox (root), and nothing
/// that reaches the network (there is none; without these flags it stalls waiting for it).
fn chromium(binary: &str, profile: &Path, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "chromium did not finish in 90 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_renders_in_headless_chromium() {
    let Some(binary) = std::env::var("FLEETBOT_CHROMIUM")
        .ok()
        .filter(|b| !b.is_empty())
    else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true needs FLEETBOT_CHROMIUM (scripts/fetch-chromium.sh prints it)"
        );
        eprintln!("skipped: FLEETBOT_CHROMIUM is not set (scripts/fetch-chromium.sh installs one)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = private();
    let base = serve(seeded(dir.path(), &p).await, &p).await;
    let url = format!("{base}/");

    let profile = tempfile::tempdir().unwrap();
    let (b, prof, u) = (binary.clone(), profile.path().to_path_buf(), url.clone());
    let out = tokio::task::spawn_blocking(move || chromium(&b, &prof, &["--dump-dom", &u]))
        .await
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && dom.contains("</html>"),
        "chromium --dump-dom failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(artifacts().join("dashboard.dom.html"), &dom).unwrap();

    assert_private_absent(&dom, &p, "the DOM");
    for fleet in ["train", "infer"] {
        assert!(
            dom.contains(&format!(r#"data-fleet="{fleet}""#)),
            "fleet {fleet}:\n{dom}"
        );
    }
    for (cluster, state) in [
        ("research/h100-a", "deployed"),
        ("research/h100-b", "error"),
        ("serving/l40s-a", "deployed"),
    ] {
        assert!(
            dom.contains(&format!(r#"data-cluster="{cluster}" data-state="{state}""#)),
            "{cluster} {state}:\n{dom}"
        );
    }
    assert!(dom.contains(r#"data-repository="octo/fleets""#), "{dom}");
    assert!(dom.contains(r#"data-review-state="pending""#), "{dom}");
    assert!(dom.contains(r#"data-review-state="applied""#), "{dom}");
    assert!(dom.contains("#14 at abcdef0 (merge)"), "{dom}");
    assert!(
        dom.contains(r#"<tr class="job" data-state="failed">"#),
        "{dom}"
    );
    // Every bar: its data, its drawn width, and its colour class agree.
    let bars = regex::Regex::new(
        r#"<div class="bar (\w+)" role="meter" aria-label="([^"]+)" aria-valuemin="0" aria-valuemax="(\d+)" aria-valuenow="(\d+)" data-quota="[^"]+" data-used="(\d+)" data-limit="(\d+)" data-percent="([\d.]+)" data-requested="(\d+)"><span class="fill" style="width: ([\d.]+)%;?"></span>(?:<span class="requested[^"]*" style="width: ([\d.]+)%;?"></span>)?</div>"#,
    )
    .unwrap();
    let found: Vec<(String, String, String)> = bars
        .captures_iter(&dom)
        .map(|c| (c[2].to_string(), c[7].to_string(), c[1].to_string()))
        .collect();
    assert_eq!(
        found,
        [
            (
                "compute.filesystem.size.network-ssd".into(),
                "25.0".into(),
                "ok".into()
            ),
            (
                "compute.instance.gpu.h100".into(),
                "75.0".into(),
                "high".into()
            ),
            ("mk8s.cluster.count".into(), "100.0".into(), "full".into()),
        ],
        "{dom}"
    );
    for c in bars.captures_iter(&dom) {
        assert_eq!(&c[7], &c[9], "the width is the percentage");
        assert_eq!((&c[3], &c[4]), (&c[6], &c[5]), "aria and data agree");
        assert_eq!(
            c.get(10).is_some(),
            &c[8] != "0",
            "a requested part only when asked"
        );
    }
    let requested: Vec<&str> = bars
        .captures_iter(&dom)
        .filter_map(|c| c.get(10).map(|m| m.as_str()))
        .collect();
    assert_eq!(requested, ["25.0", "25.0"], "{dom}");
    assert!(
        dom.contains("+ 3 GPUs requested by 1 open pull request, more than is left"),
        "{dom}"
    );
    assert!(
        dom.contains("+ 1.00 TiB requested by 1 open pull request<"),
        "{dom}"
    );
    assert!(dom.contains("6 GPUs of 8 GPUs"), "{dom}");
    assert!(dom.contains("1.00 TiB of 4.00 TiB"), "{dom}");

    let png = artifacts().join("dashboard.png");
    let _ = std::fs::remove_file(&png);
    let shot = format!("--screenshot={}", png.display());
    let (b, prof) = (binary, profile.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        chromium(&b, &prof, &[&shot, "--window-size=1280,900", &url])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let (width, height) = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    assert_eq!((width, height), (1280, 900), "the window's size");
    // A blank page of this size compresses to a few kilobytes; the dashboard does not.
    assert!(
        bytes.len() > 20_000,
        "a screenshot of {} bytes is blank",
        bytes.len()
    );
    eprintln!("screenshot: {}", png.display());
}
