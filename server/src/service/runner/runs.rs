//! The runs a lab's dashboard starts: one at a time per lab, each waiting for one of the server's
//! run slots and then for the lab's lock; and the schedule that starts one every N seconds.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use app::api::ApiError;
use app::model::{Announcement, RunStarted, RunStatus};
use tokio::sync::oneshot;

use super::child;
use super::running::{Ended, Running};
use super::{LabRunner, dedup_in_effect};

impl LabRunner {
    /// Starts a pipeline run; answers once it has an id, or, with `wait`, once it has ended.
    pub async fn start(
        &self,
        started_by: &'static str,
        wait: bool,
    ) -> Result<RunStarted, ApiError> {
        let (id_tx, id_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = running.as_ref().filter(|r| r.is_active()) {
                return Err(ApiError::Busy(match r.id {
                    Some(id) => format!("run #{id} is in progress; start another when it ends"),
                    None => "a run is starting (waiting for a free run slot or the lab's lock); \
                             start another when it ends"
                        .into(),
                }));
            }
            let lab = self.lab.started_by(started_by);
            let dedup = self.settings.current().dedup;
            let live = self.live.clone();
            let slots = self.run_slots.clone();
            let limits = self.run_limits;
            let warm = self.warm.clone();
            let active = Arc::new(AtomicBool::new(true));
            let (cancel, cancel_rx) = tokio::sync::watch::channel(false);
            let ended = Ended(active.clone());
            let task = tokio::spawn(async move {
                // At most N runs at once across labs: wait for a slot before taking the lock.
                let Ok(_slot) = slots.acquire_owned().await else {
                    return;
                };
                // Unreadable state: the run itself reports it, with the setting as asked.
                let dedup = dedup_in_effect(&lab, dedup).await.unwrap_or(dedup);
                let announce = live.clone();
                let started = move |id| {
                    let _ = id_tx.send(id);
                    let _ = announce.send(Announcement::RunStarted);
                };
                // In a process of its own, within hard limits (`child.rs`).
                let result = child::run(&lab, &warm, dedup, started, limits, cancel_rx).await;
                let _ = live.send(Announcement::RunFinished);
                drop(ended);
                let _ = done_tx.send(result);
            });
            *running = Some(Running {
                id: None,
                task,
                active,
                cancel,
            });
        }
        let id = match id_rx.await {
            Ok(Some(id)) => id,
            Ok(None) => return Err(ApiError::Failed("this lab keeps no history".into())),
            // The run ended before it started (lock busy, Kafka unreachable): say why.
            Err(_) => {
                return Err(match done_rx.await {
                    Ok(Err(e)) => e,
                    _ => ApiError::Failed("the run stopped before it started".into()),
                });
            }
        };
        if let Some(r) = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            r.id = Some(id);
        }
        if !wait {
            return Ok(RunStarted {
                id,
                status: RunStatus::Running,
                error: None,
            });
        }
        let outcome = done_rx.await.unwrap_or_else(|_| {
            Err(ApiError::Failed(
                "the run's task ended without a result".into(),
            ))
        });
        Ok(RunStarted {
            id,
            status: match outcome {
                Ok(()) => RunStatus::Succeeded,
                Err(_) => RunStatus::Failed,
            },
            error: outcome.err().map(|e| e.to_string()),
        })
    }

    /// Runs the schedule until [`LabRunner::stop_schedule`]: a run every `schedule_seconds` when
    /// set, and one when files land if the lab asks for it.
    pub fn start_schedule(self: &Arc<Self>) {
        self.start_arrival_watch();
        let dashboard = Arc::clone(self);
        let mut interval = self.settings.schedule();
        let task = tokio::spawn(async move {
            loop {
                let seconds = *interval.borrow_and_update();
                let tick = async {
                    match seconds {
                        Some(s) if s > 0 => tokio::time::sleep(Duration::from_secs(s)).await,
                        _ => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = tick => {
                        if let Err(e) = dashboard.start("schedule", false).await {
                            tracing::info!("scheduled run skipped: {e}");
                        }
                    }
                    changed = interval.changed() => if changed.is_err() { return },
                }
            }
        });
        let old = self
            .schedule_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task);
        if let Some(old) = old {
            old.abort();
        }
    }

    pub fn stop_schedule(&self) {
        if let Some(task) = self
            .arrival_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
        if let Some(task) = self
            .schedule_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }

    /// Stops the lab's run in progress, if any: its process is killed at once and the run is
    /// recorded as cancelled. Whether there was one to stop.
    pub fn cancel(&self) -> bool {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.as_ref().filter(|r| r.is_active()) {
            Some(r) => r.cancel.send(true).is_ok(),
            None => false,
        }
    }

    /// Waits for the run in progress, if any, to finish (shutdown).
    pub async fn finish_running(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(running) = running {
            tracing::info!(
                "waiting for the run in progress ({:?}) to finish",
                running.id
            );
            let _ = running.task.await;
        }
    }
}
