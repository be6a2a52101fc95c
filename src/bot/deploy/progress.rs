//! The apply's progress: published on its check run at most every few seconds, or handed to
//! the caller's own sink when there is no check run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fleet::Event;

use crate::fleet::Outcome;

use crate::fleet::Progress;
use crate::github::RepoClient;

/// Publishes the apply's progress on its check run, at most every few seconds, from the
/// engine's progress lines; only counts and the current target's name are shown.
pub(super) struct ProgressReporter {
    state: Arc<Mutex<ProgressState>>,
    /// The task that publishes, or the caller's own sink (an apply without GitHub).
    task: Option<tokio::task::JoinHandle<()>>,
    forward: Option<Progress>,
}

#[derive(Default)]
struct ProgressState {
    done: usize,
    step: String,
    changed: bool,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(2);

impl ProgressReporter {
    pub(super) fn start(
        repo: RepoClient,
        check_run_id: u64,
        title: String,
        targets: usize,
    ) -> Self {
        let state = Arc::new(Mutex::new(ProgressState::default()));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(PROGRESS_EVERY);
            loop {
                tick.tick().await;
                let summary = {
                    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                    if !s.changed {
                        continue;
                    }
                    s.changed = false;
                    format!(
                        "{} of {targets} target(s) done.\n\nNow: {}",
                        s.done.min(targets),
                        s.step
                    )
                };
                if let Err(e) = repo.report_progress(check_run_id, &title, &summary).await {
                    tracing::warn!("cannot report apply progress: {e}");
                }
            }
        });
        ProgressReporter {
            state,
            task: Some(task),
            forward: None,
        }
    }

    pub(super) fn forwarding(sink: Progress) -> Self {
        ProgressReporter {
            state: Arc::default(),
            task: None,
            forward: Some(sink),
        }
    }

    pub(super) fn sink(&self) -> Progress {
        if let Some(sink) = &self.forward {
            return sink.clone();
        }
        let state = self.state.clone();
        Arc::new(move |event: &Event| {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            // Only the target's name and how it ended: a failure carries the cloud's text,
            // which the check run does not show.
            match (&event.subject, event.outcome()) {
                (Some(target), Some(outcome)) => {
                    s.done += 1;
                    s.step = format!(
                        "{target} {}",
                        match outcome {
                            Outcome::Deployed => "deployed",
                            Outcome::Destroyed => "destroyed",
                            _ if outcome.ok() => "done",
                            _ => "failed",
                        }
                    );
                }
                (Some(target), None) if !target.contains(' ') => s.step = target.clone(),
                _ => {}
            }
            s.changed = true;
        })
    }

    pub(super) async fn stop(self) {
        if let Some(task) = self.task {
            task.abort();
        }
    }
}
