//! "Run when new files land": while the lab's setting is on, a watcher on its `landing/` folder
//! starts a run once files have stopped arriving for a moment (a folder of 35 days lands as
//! one run, not 70). The run is recorded as started by `file-arrival`. A run already going on
//! is waited for, then another starts: it reads what landed meanwhile.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use app::api::ApiError;
use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::LabRunner;

/// Quiet time after the last file event before the run starts.
const DEBOUNCE: Duration = Duration::from_millis(1500);
/// How long turning the setting on waits for the watcher to be in place before it answers.
const WATCH_WAIT: Duration = Duration::from_secs(5);

/// Marks the folder watched while it lives.
struct Watching<'a>(&'a tokio::sync::watch::Sender<bool>);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

/// Whether a file event is a file landing: written, closed after writing, or renamed into place,
/// and not a dot-file or `_` file (an upload's partial file, or one `read_files` skips).
fn lands(event: &notify::Event) -> bool {
    let kind = matches!(
        event.kind,
        EventKind::Create(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
            | EventKind::Access(AccessKind::Close(AccessMode::Write))
    );
    let named = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy())
            .is_some_and(|n| !n.starts_with('.') && !n.starts_with('_'))
    };
    kind && event.paths.iter().any(|p| named(p))
}

impl LabRunner {
    /// Watches the landing folder while the setting is on, until [`LabRunner::stop_schedule`].
    pub(super) fn start_arrival_watch(self: &Arc<Self>) {
        let dashboard = Arc::clone(self);
        let mut on = self.settings.arrival();
        let task = tokio::spawn(async move {
            loop {
                if *on.borrow_and_update() {
                    tokio::select! {
                        () = dashboard.watch_landing() => {}
                        changed = on.changed() => if changed.is_err() { return },
                    }
                } else if on.changed().await.is_err() {
                    return;
                }
            }
        });
        let old = self
            .arrival_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task);
        if let Some(old) = old {
            old.abort();
        }
    }

    /// Waits (at most [`WATCH_WAIT`]) until the landing folder is watched, when the server runs
    /// the watcher: the setting was just turned on, and the watcher is set up by its own task,
    /// which could otherwise miss files uploaded right after the answer (no run would start).
    pub(super) async fn arrival_watched(&self) {
        let running = self
            .arrival_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|task| !task.is_finished());
        if !running {
            return;
        }
        let mut watching = self.watching.subscribe();
        if tokio::time::timeout(WATCH_WAIT, watching.wait_for(|on| *on))
            .await
            .is_err()
        {
            tracing::warn!(
                "the landing folder is not watched yet {} s after the setting was turned on",
                WATCH_WAIT.as_secs()
            );
        }
    }

    /// Starts a run each time files land, debounced; returns only if the folder cannot be
    /// watched (said in the log), after which it waits for the setting to change.
    async fn watch_landing(&self) {
        let dir = self.lab.landing_dir();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let watcher = std::fs::create_dir_all(&dir)
            .map_err(notify::Error::io)
            .and_then(|()| {
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    if event.is_ok_and(|e| lands(&e)) {
                        let _ = tx.send(());
                    }
                })
            })
            .and_then(|mut w| w.watch(&dir, RecursiveMode::Recursive).map(|()| w));
        let _watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("cannot watch {} for new files: {e}", dir.display());
                return std::future::pending().await;
            }
        };
        self.watching.send_replace(true);
        let _watching = Watching(&self.watching);
        while rx.recv().await.is_some() {
            loop {
                match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                    Ok(Some(())) => continue,
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            loop {
                match self.start("file-arrival", false).await {
                    Err(ApiError::Busy(_)) => tokio::time::sleep(Duration::from_millis(500)).await,
                    Err(e) => {
                        tracing::info!("files landed; the run they start failed to start: {e}");
                        break;
                    }
                    Ok(_) => break,
                }
            }
        }
    }
}
