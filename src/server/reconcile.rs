//! The reconcile loop's clock: every tick, each repository of each installation gets the job of
//! its current schedule slot ([`crate::bot::reconcile`]). Every replica ticks; the job ids
//! agree, so the store keeps one job per repository and slot, and one replica runs it.

use std::time::Duration;

use tokio::sync::watch;

use crate::bot::Bot;
use crate::bot::reconcile::{ReconcileJob, schedule_slot};
use crate::github::RepoName;
use crate::store::JobQueue;
use crate::store::queue::now_ms;

/// How the clock runs.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSettings {
    /// How often the slots are looked at (a slot is minutes long; a tick of a minute starts
    /// each pass within a minute of its time).
    pub tick: Duration,
    /// Queue a pass of every repository at once (`serve --reconcile-now`): what was missed
    /// while the server was down is picked up without waiting for a slot.
    pub now: bool,
    /// How long the list of installations and repositories is reused before it is read again.
    pub relist: Duration,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        ScheduleSettings {
            tick: Duration::from_secs(60),
            now: false,
            relist: Duration::from_secs(600),
        }
    }
}

/// Runs the clock until `stop` turns true. The first periodic tick is one tick after start,
/// so a server that restarts often does not read every repository at every start (that is
/// what `now` is for).
pub async fn run_schedule<Q: JobQueue>(
    bot: Bot,
    queue: Q,
    settings: ScheduleSettings,
    mut stop: watch::Receiver<bool>,
) {
    let mut repos: Vec<(u64, RepoName)> = Vec::new();
    let mut listed_at: Option<tokio::time::Instant> = None;
    let mut first = true;
    loop {
        if !first || !settings.now {
            tokio::select! {
                _ = tokio::time::sleep(settings.tick) => {}
                _ = stop.changed() => return,
            }
        }
        if *stop.borrow() {
            return;
        }
        if listed_at.is_none_or(|at| at.elapsed() >= settings.relist) {
            match list_repositories(&bot).await {
                Ok(found) => {
                    repos = found;
                    listed_at = Some(tokio::time::Instant::now());
                }
                // Keep the last list: a GitHub outage must not stop the loop.
                Err(e) => {
                    tracing::warn!("reconcile: cannot list the installations' repositories: {e}")
                }
            }
        }
        let now = now_ms();
        for (installation, repo) in &repos {
            let name = repo.to_string();
            let key = if first && settings.now {
                format!("start-{}", uuid::Uuid::new_v4().simple())
            } else {
                match schedule_slot(&name, now, bot.reconcile_intervals().get(&name)) {
                    Some(slot) => format!("s{slot}"),
                    None => continue,
                }
            };
            let origin = if first && settings.now {
                "start"
            } else {
                "schedule"
            };
            let job = ReconcileJob {
                installation_id: *installation,
                repo: name,
                origin: origin.into(),
            }
            .to_job(&key);
            if let Err(e) = queue.enqueue(&job, now).await {
                tracing::warn!("reconcile: cannot queue a pass: {e}");
            }
        }
        first = false;
    }
}

async fn list_repositories(bot: &Bot) -> Result<Vec<(u64, RepoName)>, crate::github::ClientError> {
    let mut out = Vec::new();
    for installation in bot.github().installations().await? {
        for repo in bot.github().installation_repositories(installation).await? {
            out.push((installation, repo));
        }
    }
    Ok(out)
}
