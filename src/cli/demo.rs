//! `fleetbot demo`: the whole loop in a minute, with nothing to register or own: a throwaway
//! spec repository, a change previewed as the App would comment on it, the merge applied under
//! the App's guard to the embedded simulator, storage verified, status, the dashboard, and
//! everything removed again.
//!
//! Every step runs the code the App runs: the preview is [`super::preview`]'s evaluation (the
//! App's `evaluate_change`), the reviewed plan is recorded as the preflight job records it,
//! the merge is applied as the apply job applies a fleet
//! ([`crate::fleet::apply::guarded::apply_alone`]: lease, guard, apply run, apply, audit), and
//! the dashboard is `fleetbot serve`'s own page over the same store.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use super::git::Git;
use crate::fleet::Session;
use crate::fleet::apply::audit::Origin;
use crate::fleet::apply::guarded::{Guarded, Review, Verdict, apply_alone};
use crate::fleet::guard::Trigger;
use crate::sim::World;
use crate::spec::FleetSpec;
use crate::store::SqliteStore;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the throwaway repository and the simulator's state, and say where they are.
    #[arg(long)]
    pub keep: bool,
    /// Clean up at once instead of waiting on a terminal for Enter (without a terminal the
    /// demo never waits).
    #[arg(long = "no-wait")]
    pub no_wait: bool,
}

/// The example fleet the demo's change adds.
const FLEET_PATH: &str = "fleets/fleet1-test.yaml";
const FLEET: &str = include_str!("../../fixtures/specs/fleet1-test.yaml");
const CONFIG: &str = "# fleetbot's settings for this repository (docs/github-app.md).\nspecs:\n  - 'fleets/**/*.yaml'\n";
const REPO_NAME: &str = "demo/fleet-config";
const PR: u64 = 1;
const STEPS: usize = 7;

pub fn run(args: DemoArgs) -> ExitCode {
    let runtime = match super::lifecycle::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let dir = match make_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("fleetbot demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = Steps::new();
    let result = runtime.block_on(demo(&dir, &args, &mut out));
    let code = match &result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out.fail(e);
            ExitCode::FAILURE
        }
    };
    if args.keep {
        out.line(&format!("Kept {} (remove it when done).", dir.display()));
    } else if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("fleetbot demo: cannot remove {}: {e}", dir.display());
    }
    if result.is_ok() {
        out.line(&format!(
            "Done in {}. Next: `fleetbot preview` in a checkout of your own spec repository shows what the App would post there (docs/github-app.md).",
            humanize(started.elapsed())
        ));
    }
    code
}

/// A fresh directory under the temporary directory.
fn make_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("fleetbot-demo-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

async fn demo(dir: &Path, args: &DemoArgs, out: &mut Steps) -> Result<(), String> {
    out.begin("Creating a spec repository with a change that adds an example fleet");
    let repo = repository(dir, out)?;
    let lab = Lab::open(dir).await?;
    out.begin(
        "Previewing the change: the comment and checks the App would post on its pull request",
    );
    lab.preview(&repo, out).await?;
    out.begin("Merging: the App's guard holds the plan to the one reviewed, then applies it");
    let spec = lab.merge(&repo, out).await?;
    out.begin("Verifying the shared filesystem on every worker (what /verify-storage posts)");
    lab.verify_storage(&spec, out).await?;
    out.begin("Status of every target");
    lab.status(&spec, out).await?;
    out.begin("Serving the dashboard");
    lab.dashboard(!args.no_wait, out).await?;
    out.begin("Cleaning up: destroying the fleet on the simulator");
    lab.cleanup(&spec, out).await
}

/// The throwaway spec repository: `main`, and the change that adds the example fleet.
struct Repo {
    git: Git,
    base: String,
    head: String,
}

fn repository(dir: &Path, out: &mut Steps) -> Result<Repo, String> {
    let path = dir.join("fleet-config");
    let git = Git::init(&path)?;
    git.write(".fleetbot.yml", CONFIG)?;
    git.write(
        "fleets/README.md",
        "# Fleets\n\nOne spec per fleet; fleetbot plans every change to them.\n",
    )?;
    let base = git.commit("Start the fleet repository")?;
    git.run(&["checkout", "-q", "-b", "add-fleet1-test"])?;
    git.write(FLEET_PATH, FLEET)?;
    let head = git.commit("Add the fleet1-test fleet")?;
    out.done(&format!(
        "{} at {}: main {}, change {} adds {FLEET_PATH}",
        REPO_NAME,
        path.display(),
        short(&base),
        short(&head)
    ));
    Ok(Repo { git, base, head })
}

/// The demo's session (the embedded simulator with its state inside the throwaway directory:
/// never Nebius, whatever credentials this machine has) as the App holds one, over one store
/// that is its inventory, its deploy state and the dashboard's.
struct Lab {
    session: Arc<Session>,
    tenant: String,
    store: SqliteStore,
}

impl Lab {
    async fn open(dir: &Path) -> Result<Lab, String> {
        let store = SqliteStore::open(&dir.join("fleetbot.sqlite"))
            .await
            .map_err(|e| e.to_string())?;
        let session = Session::simulator_with(World::embedded_default(), dir.join("sim"))
            .await
            .map_err(|e| e.to_string())?
            .with_inventory(store.clone())
            .with_deploy_state(store.clone(), Duration::from_secs(120))
            .with_evidence_dir(dir.join("evidence"));
        let probe_image = session
            .simulated_probe_image()
            .map_err(|e| e.to_string())?
            .ok_or("the simulator runs no probe")?;
        let session = session.with_probe_image(probe_image);
        let tenant = session.tenant_id().to_string();
        if tenant.is_empty() {
            return Err("the simulator names no tenant".into());
        }
        Ok(Lab {
            session: Arc::new(session),
            tenant,
            store,
        })
    }

    /// Step 2, the preview: what the App would post on the pull request, and the reviewed plan
    /// recorded as its preflight job records it.
    async fn preview(&self, repo: &Repo, out: &mut Steps) -> Result<(), String> {
        let preview = super::preview::LocalPreview::evaluate(
            repo.git.dir(),
            (Some("main"), "HEAD"),
            self.session.clone(),
            REPO_NAME,
            PR,
        )
        .await?;
        out.block(preview.comment());
        for check in preview.checks() {
            out.detail(&format!("check run {check}"));
        }
        if preview.failed() {
            return Err("a check failed; the demo's change would not be merged".into());
        }
        preview
            .record_reviewed(REPO_NAME, PR, (&repo.base, &repo.head))
            .await;
        out.done(&format!(
            "reviewed plan {} recorded",
            preview.short_digest()
        ));

        Ok(())
    }

    /// Step 3, the merge, applied as the App's apply job applies a fleet: its lease taken,
    /// re-planned, held by the guard to the plan reviewed, recorded and audited.
    async fn merge(&self, repo: &Repo, out: &mut Steps) -> Result<FleetSpec, String> {
        let git = &repo.git;
        git.run(&["checkout", "-q", "main"])?;
        git.run(&[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge the fleet1-test fleet",
            "add-fleet1-test",
        ])?;
        let merge = git.text(&["rev-parse", "HEAD"])?;
        let spec = crate::spec::load_str(FLEET, FLEET_PATH).map_err(|e| e.to_string())?;
        let kind = crate::store::queue::JobKind::Apply.as_str();
        let job_id = format!("{kind}:{REPO_NAME}#{PR}@{merge}:merge");
        let pr_key = crate::store::queue::pr_key(REPO_NAME, PR);
        let review = Review {
            job_id: &job_id,
            pr_key: &pr_key,
            head_sha: &repo.head,
            sha: &merge,
            fleet_path: FLEET_PATH,
            trigger: Trigger::Merge,
        };
        let origin = Origin {
            actor: "you",
            trigger: Trigger::Merge,
            repo: REPO_NAME,
            pr: PR,
            sha: &merge,
        };
        let deployer = self
            .session
            .deploying()
            .ok_or("the demo's session does not apply")?;
        let guarded = apply_alone(&deployer, &review, &origin, &spec, out.progress())
            .await
            .map_err(|busy| format!("the fleet is locked by {}", busy.holder))?;
        let result = match &guarded {
            Guarded::Applied(done) if guarded.verdict() == Verdict::Success => &done.result,
            Guarded::Applied(done) => {
                return Err(format!("{} target(s) failed to apply", done.result.failed));
            }
            Guarded::Refused(refusal) => {
                return Err(format!("the guard refused the merge: {refusal:?}"));
            }
            Guarded::NotApplied(why) => return Err(format!("the fleet was not applied: {why}")),
            Guarded::Unchanged { .. } | Guarded::NothingForTheEngine => {
                return Err("the merge applied nothing".into());
            }
        };
        out.detail(&format!(
            "the plan at the merge is the one reviewed; applying {} target(s)",
            result.deployed + result.failed
        ));
        out.done(&format!(
            "{} deployed in {} project(s) on the simulator",
            result.deployed,
            spec.projects.len()
        ));
        Ok(spec)
    }

    /// Step 4, storage verification on every worker, as /verify-storage runs it.
    async fn verify_storage(&self, spec: &FleetSpec, out: &mut Steps) -> Result<(), String> {
        let report = self
            .session
            .verify_storage_fleet(spec, &self.tenant, Vec::new())
            .await
            .map_err(|e| e.to_string())?;
        out.block(&report.render_text());
        if !report.passed {
            return Err("storage verification failed".into());
        }
        out.done("passed");

        Ok(())
    }

    /// Step 5, the status of every target.
    async fn status(&self, spec: &FleetSpec, out: &mut Steps) -> Result<(), String> {
        let status = self
            .session
            .fleet_status(spec)
            .await
            .map_err(|e| e.to_string())?;
        out.block(&status.render_text());
        if !status.healthy() {
            return Err("a target is not healthy".into());
        }
        out.done("every target deployed and healthy");

        Ok(())
    }

    /// Step 6, the dashboard, served as `fleetbot serve` serves it; up until Enter when `wait`.
    async fn dashboard(&self, wait: bool, out: &mut Steps) -> Result<(), String> {
        let quota = Arc::new(crate::server::dashboard::LiveQuota {
            cloud: self.session.clone(),
            tenant_id: self.tenant.clone(),
        }) as Arc<dyn crate::server::dashboard::QuotaSource>;
        let dashboard =
            crate::server::dashboard::Dashboard::new(self.store.clone(), "SQLite", Some(quota));
        let view = dashboard.view().await;
        let router = crate::server::dashboard::router(dashboard);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot listen for the dashboard: {e}"))?;
        let url = format!(
            "http://{}/",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        // Read back as a browser would, so "served" is something seen, not assumed. (reqwest is
        // built without a crypto provider; ring is the process's, as for the GitHub client.)
        let _ = rustls::crypto::ring::default_provider().install_default();
        let page = reqwest::get(&url)
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| format!("the dashboard did not answer: {}", e.without_url()))?;
        let served = page.bytes().await.map(|b| b.len()).unwrap_or(0);
        let clusters: usize = view.fleets.iter().map(|f| f.clusters.len()).sum();
        out.done(&format!(
            "{url} answers ({:.1} KiB): {} repository, {} fleet, {clusters} clusters; JSON at {url}api/dashboard",
            served as f64 / 1024.0,
            view.repositories.len(),
            view.fleets.len()
        ));
        if wait && std::io::stdin().is_terminal() {
            out.line("Press Enter to clean up and exit (the dashboard stays up until then).");
            let _ = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)
            })
            .await;
        }
        server.abort();

        Ok(())
    }

    /// Step 7, cleanup: the fleet destroyed again.
    async fn cleanup(&self, spec: &FleetSpec, out: &mut Steps) -> Result<(), String> {
        let destroyed = crate::fleet::apply::destroy(
            &self.session,
            spec,
            &crate::fleet::LifecycleOptions::default(),
            out.progress(),
        )
        .await
        .map_err(|e| e.to_string())?;
        if destroyed.failed > 0 {
            return Err(format!(
                "{} target(s) could not be destroyed",
                destroyed.failed
            ));
        }
        out.done(&format!(
            "{} cluster(s) destroyed",
            destroyed.clusters.len()
        ));
        Ok(())
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// A duration as a person reads it: `850 ms`, `12.4 s`, `2 min 5 s`.
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// The demo's output: numbered steps with their time; on a terminal a spinner while a step
/// runs, elsewhere plain lines only (so a log or a test reads the same text every time).
struct Steps {
    n: usize,
    step_started: Instant,
    bar: Option<indicatif::ProgressBar>,
    terminal: bool,
}

impl Steps {
    fn new() -> Steps {
        let terminal = std::io::stdout().is_terminal();
        let steps = Steps {
            n: 0,
            step_started: Instant::now(),
            bar: None,
            terminal,
        };
        steps.line("fleetbot demo: a throwaway spec repository, reviewed and merged as the App would, applied to the embedded Nebius simulator");
        steps
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{text}");
            }
        }
    }

    fn begin(&mut self, title: &str) {
        self.n += 1;
        self.step_started = Instant::now();
        self.line(&format!("[{}/{STEPS}] {title}", self.n));
        if self.terminal {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("      {spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            self.bar = Some(bar);
        }
    }

    /// A line under the current step.
    fn detail(&self, text: &str) {
        self.line(&format!("      {text}"));
    }

    /// A block of text under the current step, indented.
    fn block(&self, text: &str) {
        for l in text.trim_end().lines() {
            self.line(format!("      | {l}").trim_end());
        }
    }

    /// Engine progress lines: the spinner's message on a terminal, nothing elsewhere (the
    /// step's result says what happened).
    fn progress(&self) -> crate::fleet::Progress {
        let bar = self.bar.clone();
        Arc::new(move |event: &crate::fleet::Event| {
            if let Some(bar) = &bar {
                bar.set_message(event.to_string());
            }
        })
    }

    fn done(&mut self, what: &str) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.line(&format!(
            "      ok: {what} ({})",
            humanize(self.step_started.elapsed())
        ));
    }

    fn fail(&mut self, why: &str) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        eprintln!("fleetbot demo: step {} failed: {why}", self.n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_reads_them() {
        assert_eq!(humanize(Duration::from_millis(850)), "850 ms");
        assert_eq!(humanize(Duration::from_millis(12_449)), "12.4 s");
        assert_eq!(humanize(Duration::from_secs(125)), "2 min 5 s");
    }
}
