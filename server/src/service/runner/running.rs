//! The run a lab's dashboard has going, if any: one per lab at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::JoinHandle;

pub struct Running {
    /// `None` while it waits for the lab's lock (a CLI run may hold it).
    pub id: Option<i64>,
    /// The task driving it; shutdown waits for it so a run finishes instead of being cut.
    pub task: JoinHandle<()>,
    /// True until the run has ended and said how: the next run may start from then on, even
    /// before the task has wound down.
    pub active: Arc<AtomicBool>,
    /// Set to true to stop the run: its process is killed, the run recorded as cancelled.
    pub cancel: tokio::sync::watch::Sender<bool>,
}

impl Running {
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }
}

/// Marks a run ended when dropped: after its outcome is sent, on any early return, or when its
/// task is aborted or panics (the task's future, holding it, is dropped then).
pub struct Ended(pub Arc<AtomicBool>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
