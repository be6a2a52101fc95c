//! Jobs in processes of their own, so that whatever a job does, intake keeps answering.
//!
//! `fleetbot serve` takes deliveries and stores them; with job processes (the default), it
//! runs no job itself. Each worker is a child `fleetbot serve` (the same binary and arguments,
//! told by [`CHILD_ENV`] what it is) that claims jobs from the same store, one at a time, with
//! a memory budget ([`memory`]) and a time budget. The child tells its supervisor, a line of
//! JSON at a time on its standard output ([`Report`]), which job it claimed and when its
//! outcome is recorded, and forwards the figures `/metrics` shows; the supervisor wakes it
//! through its standard input when a delivery is stored, and its standard input closing tells
//! it to stop (so no child outlives its server).
//!
//! When a child ends while it holds a job, the supervisor records the job's outcome with the
//! child's lease: over its memory budget or its time budget, the job fails with that reason
//! and is not run again; ended otherwise (a crash, the kernel's OOM killer, a kill), it runs
//! once more, and fails if its process ends again. Then a new child takes the slot. The
//! deliveries that arrive meanwhile are stored as always.

pub mod memory;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::metrics::{JobMetric, Metrics, event_label};
use super::worker::{JobHook, JobSignal, WorkerSettings, over_time};
use crate::bot::reconcile::Intervals;
use crate::fleet::resident::Resident;
use crate::github::GitHubClient;
use crate::github::client::{ApiMetricsSnapshot, RateLimitState};
use crate::store::queue::now_ms;
use crate::store::{ClaimedJob, JobOutcome, JobQueue};

/// Set in a job process's environment: the [`ChildConfig`], as JSON.
pub const CHILD_ENV: &str = "FLEETBOT_JOB_PROCESS";

/// How many times a job's process may end under it (other than for a budget) before the job
/// is failed rather than run again.
pub const MAX_PROCESS_ENDS: u32 = 2;

/// How long past a job's time budget its process is given to end the job itself (the worker
/// ends a job that waits; one that computes without waiting is ended with its process).
const KILL_MARGIN: Duration = Duration::from_secs(10);

/// How long a stopping child has beyond its workers' grace before it is killed.
const STOP_MARGIN: Duration = Duration::from_secs(5);

/// The longest wait before restarting a child that keeps ending without a job.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(60);

/// What a job process is told by its supervisor.
#[derive(Clone, Serialize, Deserialize)]
pub struct ChildConfig {
    /// The worker's id in the store (`lease_owner`).
    pub worker_id: String,
    /// The heap the process may use, in MiB (0: no budget).
    pub memory_mib: u64,
    /// The supervisor's embedded simulator, which the child reaches as a resident one.
    pub simulator: Option<Resident>,
}

impl std::fmt::Debug for ChildConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildConfig")
            .field("worker_id", &self.worker_id)
            .field("memory_mib", &self.memory_mib)
            .field("simulator", &self.simulator.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl ChildConfig {
    /// The configuration this process was started with, when it is a job process.
    pub fn from_env() -> Result<Option<ChildConfig>, String> {
        match std::env::var(CHILD_ENV) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("{CHILD_ENV}: {e}")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{CHILD_ENV}: {e}")),
        }
    }
}

/// A claimed job as a child reports it: all a supervisor needs to record its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimedWire {
    pub id: String,
    pub kind: String,
    pub event: String,
    pub pr_key: String,
    pub fleet_key: String,
    pub attempt: u32,
    pub lease_token: String,
    pub created_at: i64,
}

impl From<&ClaimedJob> for ClaimedWire {
    fn from(j: &ClaimedJob) -> Self {
        ClaimedWire {
            id: j.id.clone(),
            kind: j.kind.clone(),
            event: j.event.clone(),
            pr_key: j.pr_key.clone(),
            fleet_key: j.fleet_key.clone(),
            attempt: j.attempt,
            lease_token: j.lease_token.clone(),
            created_at: j.created_at,
        }
    }
}

impl From<ClaimedWire> for ClaimedJob {
    fn from(w: ClaimedWire) -> Self {
        ClaimedJob {
            id: w.id,
            kind: w.kind,
            event: w.event,
            payload: None,
            pr_key: w.pr_key,
            fleet_key: w.fleet_key,
            attempt: w.attempt,
            lease_token: w.lease_token,
            created_at: w.created_at,
        }
    }
}

/// One line a job process writes to its supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Report {
    /// It claimed this job and is about to run it.
    Claimed(ClaimedWire),
    /// The job's outcome is recorded (or the job was stopped without one).
    Ended { id: String },
    /// What a job recorded for `/metrics`.
    Metric(JobMetric),
    /// Each repository's reconcile interval, as the passes this process ran read them (the
    /// server's schedule cuts its slots by them).
    Intervals(Vec<(String, u64)>),
    /// GitHub calls since its last report, and the rate limits GitHub last sent.
    GitHub {
        calls: Vec<(String, String, u64)>,
        rate_limits: Vec<(String, u64, u64, u64)>,
    },
}

impl Report {
    fn github(delta: &ApiMetricsSnapshot) -> Report {
        Report::GitHub {
            calls: delta
                .calls
                .iter()
                .map(|((op, status), n)| (op.clone(), status.clone(), *n))
                .collect(),
            rate_limits: delta
                .rate_limits
                .iter()
                .map(|(r, rl)| (r.clone(), rl.limit, rl.remaining, rl.reset))
                .collect(),
        }
    }

    fn github_snapshot(
        calls: Vec<(String, String, u64)>,
        rate_limits: Vec<(String, u64, u64, u64)>,
    ) -> ApiMetricsSnapshot {
        ApiMetricsSnapshot {
            calls: calls
                .into_iter()
                .map(|(op, status, n)| ((op, status), n))
                .collect(),
            rate_limits: rate_limits
                .into_iter()
                .map(|(r, limit, remaining, reset)| {
                    let state = RateLimitState {
                        limit,
                        remaining,
                        reset,
                    };
                    (r, state)
                })
                .collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The child's side.

/// Writes one report. It blocks until the line is out, so a supervisor knows of a claimed job
/// before the job can take the process down.
pub fn report(r: &Report) {
    use std::io::Write;
    let Ok(mut line) = serde_json::to_vec(r) else {
        return;
    };
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line).and_then(|()| out.flush());
}

/// The worker hook of a job process: each claimed job is reported before it runs; when it
/// ends, the GitHub calls it made and any reconcile interval it read, then its end.
pub fn child_hook(github: GitHubClient, intervals: Intervals) -> JobHook {
    let sent = Mutex::new((ApiMetricsSnapshot::default(), Vec::new()));
    JobHook(Arc::new(move |signal| match signal {
        JobSignal::Claimed(job) => report(&Report::Claimed(job.into())),
        JobSignal::Ended(job) => {
            let now = github.metrics().snapshot();
            let read = intervals.all();
            let mut sent = sent.lock().unwrap_or_else(|e| e.into_inner());
            let delta = now.since(&sent.0);
            if !delta.is_empty() {
                report(&Report::github(&delta));
            }
            if read != sent.1 {
                report(&Report::Intervals(read.clone()));
            }
            *sent = (now, read);
            report(&Report::Ended { id: job.id.clone() });
        }
    }))
}

/// The metrics of a job process: everything its jobs record goes to the supervisor.
pub fn child_metrics() -> Metrics {
    Metrics::forwarding(|m| report(&Report::Metric(m)))
}

/// Reads the supervisor's wake-ups from standard input on a thread of its own: each byte
/// wakes the worker; the end of the input (the supervisor stopping, or gone) stops it.
pub fn listen_to_supervisor(wake: Arc<Notify>, stop: watch::Sender<bool>) {
    std::thread::spawn(move || {
        use std::io::Read;
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 64];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => wake.notify_one(),
            }
        }
        let _ = stop.send(true);
    });
}

// ---------------------------------------------------------------------------------------------
// The supervisor's side.

/// How the supervisor runs its children.
#[derive(Debug, Clone)]
pub struct SupervisorSettings {
    /// Children (each runs one job at a time).
    pub processes: usize,
    /// The worker settings the children run with (their time budgets and grace, and the id
    /// each child's worker id is made from).
    pub worker: WorkerSettings,
    /// Each child's heap budget in MiB (0: none).
    pub memory_mib: u64,
    /// The embedded simulator the children reach, when the server runs one.
    pub simulator: Option<Resident>,
    /// The program and arguments a child runs: this binary with the server's own arguments.
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// The running children.
pub struct Supervisor {
    stop: watch::Sender<bool>,
    slots: Vec<JoinHandle<()>>,
    fan_out: JoinHandle<()>,
}

impl Supervisor {
    /// Starts `settings.processes` children over `queue`; `wake` is notified by intake for
    /// each stored job, and each child is woken in turn.
    pub fn start<Q: JobQueue + Clone>(
        queue: Q,
        metrics: Arc<Metrics>,
        bot: &crate::bot::Bot,
        settings: SupervisorSettings,
        wake: Arc<Notify>,
    ) -> Supervisor {
        let (stop, stopped) = watch::channel(false);
        let wakes: Vec<Arc<Notify>> = (0..settings.processes)
            .map(|_| Arc::new(Notify::new()))
            .collect();
        let settings = Arc::new(settings);
        let slots = wakes
            .iter()
            .enumerate()
            .map(|(i, child_wake)| {
                let slot = Slot {
                    index: i,
                    queue: queue.clone(),
                    metrics: metrics.clone(),
                    github: bot.github().clone(),
                    intervals: bot.reconcile_intervals().clone(),
                    settings: settings.clone(),
                    wake: child_wake.clone(),
                    stop: stopped.clone(),
                };
                tokio::spawn(slot.run())
            })
            .collect();
        // One delivery wakes every idle child: the store hands the job to one of them.
        let fan_out = tokio::spawn(async move {
            loop {
                wake.notified().await;
                for w in &wakes {
                    w.notify_one();
                }
            }
        });
        Supervisor {
            stop,
            slots,
            fan_out,
        }
    }

    /// Tells every child to stop (a running job has its workers' grace to finish, then is
    /// released) and waits for them.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for slot in self.slots {
            let _ = slot.await;
        }
        self.fan_out.abort();
    }
}

/// One child's place: started, watched, and started again when it ends.
struct Slot<Q> {
    index: usize,
    queue: Q,
    metrics: Arc<Metrics>,
    github: GitHubClient,
    intervals: Intervals,
    settings: Arc<SupervisorSettings>,
    wake: Arc<Notify>,
    stop: watch::Receiver<bool>,
}

/// The job a child holds, as the supervisor knows it.
struct Running {
    job: ClaimedJob,
    since: Instant,
    budget: Duration,
}

/// How a child's life ended, as far as its job is concerned.
struct Ending {
    status: Option<ExitStatus>,
    /// The supervisor killed it for running past its job's time budget.
    over_time: bool,
    /// The supervisor was stopping it.
    stopping: bool,
}

impl<Q: JobQueue + Clone> Slot<Q> {
    fn worker_id(&self) -> String {
        format!("{}/p{}", self.settings.worker.id, self.index)
    }

    async fn run(mut self) {
        let mut delay = Duration::from_secs(1);
        while !*self.stop.borrow() {
            let started = Instant::now();
            let (ending, running) = match self.spawn() {
                Ok(child) => self.watch(child).await,
                Err(e) => {
                    tracing::error!(slot = self.index, "cannot start a job process: {e}");
                    (None, None)
                }
            };
            let had_job = running.is_some();
            if let (Some(ending), Some(running)) = (&ending, running) {
                self.record(ending, running).await;
            }
            if *self.stop.borrow() {
                break;
            }
            // A child that ends without a job soon after starting (a store it cannot open, a
            // bad configuration) is restarted with a growing delay, not in a loop.
            if had_job || started.elapsed() > MAX_RESTART_DELAY {
                delay = Duration::from_secs(1);
                continue;
            }
            tracing::warn!(
                slot = self.index,
                "the job process ended without a job; starting another in {} s",
                delay.as_secs()
            );
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = self.stop.changed() => break,
            }
            delay = (delay * 2).min(MAX_RESTART_DELAY);
        }
    }

    fn spawn(&self) -> std::io::Result<tokio::process::Child> {
        let config = ChildConfig {
            worker_id: self.worker_id(),
            memory_mib: self.settings.memory_mib,
            simulator: self.settings.simulator.clone(),
        };
        let config = serde_json::to_string(&config).map_err(std::io::Error::other)?;
        tokio::process::Command::new(&self.settings.program)
            .args(&self.settings.args)
            .env(CHILD_ENV, config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
    }

    /// Follows a child until it ends: its reports, wake-ups for it, its job's time budget,
    /// and a stop. Returns how it ended and the job it still held.
    async fn watch(
        &mut self,
        mut child: tokio::process::Child,
    ) -> (Option<Ending>, Option<Running>) {
        let mut stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.start_kill();
            return (None, None);
        };
        let mut lines = BufReader::new(stdout).lines();
        let mut running: Option<Running> = None;
        let mut over_time = false;
        let mut stopping = false;
        let mut stop_deadline: Option<tokio::time::Instant> = None;
        let far = || tokio::time::Instant::now() + Duration::from_secs(3600);
        loop {
            let job_deadline = running
                .as_ref()
                .filter(|_| !over_time)
                .map(|r| tokio::time::Instant::from_std(r.since + r.budget + KILL_MARGIN));
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => self.on_report(&line, &mut running),
                    // Its output closed: it is ending.
                    _ => break,
                },
                () = self.wake.notified(), if stdin.is_some() => {
                    if let Some(pipe) = stdin.as_mut()
                        && pipe.write_all(b"w").await.is_err()
                    {
                        stdin = None;
                    }
                }
                () = tokio::time::sleep_until(job_deadline.unwrap_or_else(far)), if job_deadline.is_some() => {
                    over_time = true;
                    if let Some(r) = &running {
                        tracing::error!(
                            slot = self.index,
                            job = %r.job.id,
                            "the job ran {} s past its time budget without ending; its process is killed",
                            KILL_MARGIN.as_secs()
                        );
                    }
                    let _ = child.start_kill();
                }
                _ = self.stop.changed(), if !stopping => {
                    // Closing its input is the child's signal to stop.
                    stopping = true;
                    stdin = None;
                    stop_deadline = Some(tokio::time::Instant::now() + self.settings.worker.shutdown_grace + STOP_MARGIN);
                }
                () = tokio::time::sleep_until(stop_deadline.unwrap_or_else(far)), if stop_deadline.is_some() => {
                    stop_deadline = None;
                    let _ = child.start_kill();
                }
            }
        }
        drop(stdin);
        let status = child.wait().await.ok();
        let ending = Ending {
            status,
            over_time,
            stopping,
        };
        (Some(ending), running)
    }

    fn on_report(&self, line: &str, running: &mut Option<Running>) {
        let report: Report = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(_) => {
                // Only reports are written to the pipe; anything else is shown, not obeyed.
                tracing::warn!(slot = self.index, "a job process wrote an unexpected line");
                return;
            }
        };
        match report {
            Report::Claimed(job) => {
                let job: ClaimedJob = job.into();
                let budget = self.settings.worker.budget_for(&job.kind);
                *running = Some(Running {
                    job,
                    since: Instant::now(),
                    budget,
                });
            }
            Report::Ended { id } => {
                if running.as_ref().is_some_and(|r| r.job.id == id) {
                    *running = None;
                }
            }
            Report::Metric(m) => self.metrics.absorb(m),
            Report::Intervals(read) => {
                for (repo, minutes) in read {
                    self.intervals.note(&repo, minutes);
                }
            }
            Report::GitHub { calls, rate_limits } => self
                .github
                .metrics()
                .absorb(&Report::github_snapshot(calls, rate_limits)),
        }
    }

    /// Records the outcome of the job a child held when it ended.
    async fn record(&self, ending: &Ending, running: Running) {
        let job = &running.job;
        let status = ending
            .status
            .map_or_else(|| "its status is unknown".to_string(), describe);
        let (outcome, metric) = outcome_of(
            ending,
            job,
            running.budget,
            &status,
            self.settings.memory_mib,
        );
        let label = event_label(Some(&job.event));
        match &outcome {
            JobOutcome::Failed { error } => {
                tracing::error!(slot = self.index, job = %job.id, event = label, "job failed: {error}")
            }
            JobOutcome::Retry { error, .. } => {
                tracing::warn!(slot = self.index, job = %job.id, event = label, "{error}")
            }
            _ => {}
        }
        match self.queue.finish(job, &outcome, now_ms()).await {
            Ok(true) => {}
            // Its outcome was recorded before the process ended, or its lease is another's.
            Ok(false) => {}
            Err(e) => tracing::error!(
                slot = self.index,
                job = %job.id,
                "cannot record the job's outcome: {e} (its lease runs out and it is taken again)"
            ),
        }
        self.metrics.job(label, metric, running.since.elapsed());
    }
}

/// What becomes of a job whose process ended under it, and its metric outcome.
fn outcome_of(
    ending: &Ending,
    job: &ClaimedJob,
    budget: Duration,
    status: &str,
    memory_mib: u64,
) -> (JobOutcome, &'static str) {
    let code = ending.status.and_then(|s| s.code());
    if code == Some(memory::EXIT_OVER_MEMORY) {
        let error = format!(
            "exceeded its memory budget of {memory_mib} MiB; its process was ended and it is not run again"
        );
        return (JobOutcome::Failed { error }, "over_memory");
    }
    if ending.over_time {
        return (
            JobOutcome::Failed {
                error: over_time(budget),
            },
            "timeout",
        );
    }
    if ending.stopping {
        // Stopped with the server and not released in time: another process takes it now.
        return (JobOutcome::Deferred { at: now_ms() }, "released");
    }
    if job.attempt >= MAX_PROCESS_ENDS {
        let error = format!(
            "its process ended under it {} times (the last: {status}); not run again",
            job.attempt.min(MAX_PROCESS_ENDS)
        );
        return (JobOutcome::Failed { error }, "crashed");
    }
    let error = format!("its process ended under it ({status}); it runs once more");
    (
        JobOutcome::Retry {
            at: now_ms(),
            error,
        },
        "crashed",
    )
}

/// An exit status in words.
fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL: killed, perhaps by the kernel's OOM killer)",
                libc::SIGABRT => " (SIGABRT: aborted)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGTERM => " (SIGTERM)",
                _ => "",
            };
            return format!("killed by signal {signal}{name}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => "no exit status".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(attempt: u32) -> ClaimedJob {
        ClaimedJob {
            id: "d-1".into(),
            kind: crate::store::queue::WEBHOOK_JOB.into(),
            event: "pull_request".into(),
            payload: None,
            pr_key: "o/r#1".into(),
            fleet_key: String::new(),
            attempt,
            lease_token: "t".into(),
            created_at: 0,
        }
    }

    #[cfg(unix)]
    fn exited(code: i32) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        Some(ExitStatus::from_raw(code << 8))
    }

    #[cfg(unix)]
    fn signalled(signal: i32) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        Some(ExitStatus::from_raw(signal))
    }

    #[cfg(unix)]
    #[test]
    fn a_job_whose_process_ended_is_failed_for_a_budget_and_run_once_more_otherwise() {
        let ending = |status, over_time, stopping| Ending {
            status,
            over_time,
            stopping,
        };
        let hour = Duration::from_secs(3600);
        let (o, m) = outcome_of(
            &ending(exited(memory::EXIT_OVER_MEMORY), false, false),
            &claimed(1),
            hour,
            "exit status 86",
            512,
        );
        assert_eq!(m, "over_memory");
        assert_eq!(
            o,
            JobOutcome::Failed {
                error: "exceeded its memory budget of 512 MiB; its process was ended and it is not run again".into()
            }
        );
        let (o, m) = outcome_of(
            &ending(signalled(9), true, false),
            &claimed(1),
            hour,
            "",
            512,
        );
        assert_eq!(m, "timeout");
        assert_eq!(
            o,
            JobOutcome::Failed {
                error: "exceeded its time budget of 3600 s; ended and not run again".into()
            }
        );
        let status = describe(signalled(9).unwrap());
        assert_eq!(
            status,
            "killed by signal 9 (SIGKILL: killed, perhaps by the kernel's OOM killer)"
        );
        let (o, m) = outcome_of(
            &ending(signalled(9), false, false),
            &claimed(1),
            hour,
            &status,
            512,
        );
        assert_eq!(m, "crashed");
        assert!(
            matches!(&o, JobOutcome::Retry { error, .. } if error == "its process ended under it (killed by signal 9 (SIGKILL: killed, perhaps by the kernel's OOM killer)); it runs once more"),
            "{o:?}"
        );
        let (o, _) = outcome_of(
            &ending(signalled(6), false, false),
            &claimed(2),
            hour,
            "killed by signal 6 (SIGABRT: aborted)",
            512,
        );
        assert_eq!(
            o,
            JobOutcome::Failed {
                error: "its process ended under it 2 times (the last: killed by signal 6 (SIGABRT: aborted)); not run again".into()
            }
        );
        let (o, m) = outcome_of(
            &ending(signalled(9), false, true),
            &claimed(1),
            hour,
            "",
            512,
        );
        assert_eq!(m, "released");
        assert!(matches!(o, JobOutcome::Deferred { .. }), "{o:?}");
        assert_eq!(describe(exited(3).unwrap()), "exit status 3");
    }

    #[test]
    fn reports_round_trip_as_one_json_line_each() {
        let job = claimed(3);
        let reports = [
            Report::Claimed((&job).into()),
            Report::Ended { id: "d-1".into() },
            Report::Metric(JobMetric::LockWait),
            Report::Intervals(vec![("o/r".into(), 30)]),
            Report::GitHub {
                calls: vec![("pulls/get".into(), "200".into(), 4)],
                rate_limits: vec![("core".into(), 5000, 4990, 1_700_000_000)],
            },
        ];
        for r in reports {
            let line = serde_json::to_string(&r).unwrap();
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(serde_json::from_str::<Report>(&line).unwrap(), r);
        }
        let back: ClaimedJob = ClaimedWire::from(&job).into();
        assert_eq!(back, job);
    }

    #[test]
    fn a_child_s_configuration_never_shows_the_simulator_s_token() {
        let config = ChildConfig {
            worker_id: "w/p0".into(),
            memory_mib: 1024,
            simulator: Some(Resident {
                pid: 1,
                endpoint: "http://127.0.0.1:1".into(),
                tenant_id: "tenant-e00secret".into(),
                token: "sim1.secret-token".into(),
                probe_image: "fleetbot.local/fleetbot-probe@sha256:00".into(),
            }),
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
