//! Every run the server starts (a button, the API, the schedule, a file's arrival) goes in a
//! child process of `reckon` (`reckon worker`), never in the server: a learner's query can
//! overflow a stack, take all the memory or spin for ever, and none of that can be stopped
//! inside a process. The parent sets hard limits before the child starts (`setrlimit`: private
//! data, CPU time, open files; `process.rs`), polls the child's resident memory and kills it past
//! [`RunLimits::resident`](crate::config::RunLimits), kills it at its wall time, and kills it when a lab's run is cancelled.
//! The child records its run in the history as the command line does; a child that dies is
//! recorded by the parent, with how it ended, and the next run recovers as after a crash (every
//! flow's state is committed with its data).
//!
//! A child that ended its run well is kept for the lab's next run ([`Warm`]), up to
//! [`IDLE_CHILD`] idle, while it holds under half its memory bound: its tables stay open.
//! It ends when its stdin, held by the parent, closes.
//!
//! The protocol: the parent writes `run <started by> <dedup 0|1> <CPU seconds>` on the child's
//! stdin; the child answers on its stdout `started <id>` once it holds the lab's lock and has a
//! history id, then `ok` or `failed <the error as JSON>`. Its stderr's last lines name what
//! killed it.

use std::time::Duration;

use app::api::ApiError;
use app::model::RunStatus;
use tokio::sync::watch;

use crate::config::RunLimits;
use crate::service::lab::Lab;
use process::Process;

mod check;
mod process;

pub use check::{check_project, reader};

/// A warm child's idle time after which it ends itself (`reckon worker --idle`).
pub const IDLE_CHILD: Duration = Duration::from_secs(300);

/// A warm child idle this long is ended by the parent and a new one started: never one that may
/// be ending on its own just as it is told to run.
const STALE: Duration = Duration::from_secs(240);

/// How often the parent reads the child's resident memory.
const POLL: Duration = Duration::from_millis(100);

/// The lab's child kept between runs, if any: its tables stay open and up to date, its
/// connections made, so a small run costs what it would in the server (`benches/child.rs`).
/// One per lab; a run takes it and gives it back when it ended well and holds little memory.
#[derive(Default)]
pub struct Warm(std::sync::Mutex<Option<Process>>);

impl Warm {
    fn take(&self) -> Option<Process> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.take()
            .filter(|p| p.idle_since.elapsed() < STALE)
            .and_then(|mut p| p.is_alive().then_some(p))
    }

    fn keep(&self, mut process: Process) {
        process.idle_since = std::time::Instant::now();
        process.used = true;
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(process);
    }

    /// Ends the child kept, if any: after a reset, a switch of pipeline or the lab's deletion,
    /// the next run starts a new one. (Dropping it kills it.)
    pub fn cool(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// The process id of the child kept, if any (tests).
    pub fn pid(&self) -> Option<u32> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|p| p.pid)
    }
}

/// What became of one run in one process.
struct Outcome {
    id: Option<i64>,
    /// How the child said the run went.
    said: Option<Result<(), ApiError>>,
    /// Why the parent stopped it, if it did.
    killed: Option<String>,
    cancelled: bool,
}

/// Runs `lab`'s pipeline once in its child process (the one kept warm, else a new one) within
/// `limits`; tells `started` the run's history id once the child has one; `cancel` set to true
/// kills it.
pub async fn run(
    lab: &Lab,
    warm: &Warm,
    dedup: bool,
    started: impl FnOnce(Option<i64>),
    limits: RunLimits,
    mut cancel: watch::Receiver<bool>,
) -> Result<(), ApiError> {
    end_crashed_runs(lab).await;
    let mut started = Some(started);
    let mut process = match warm.take() {
        Some(p) => p,
        None => Process::start(lab, &limits)?,
    };
    let mut outcome = drive(&mut process, lab, dedup, &mut started, &limits, &mut cancel).await;
    // A warm child that ended before it took the run (its idle time up just then) said
    // nothing: the run goes to a new one.
    if process.used && outcome.id.is_none() && outcome.said.is_none() && outcome.killed.is_none() {
        drop(process);
        process = Process::start(lab, &limits)?;
        outcome = drive(&mut process, lab, dedup, &mut started, &limits, &mut cancel).await;
    }
    let Outcome {
        id,
        said,
        killed,
        cancelled,
    } = outcome;
    if let (None, Some(said)) = (&killed, said.as_ref()) {
        // It said how the run went and waits for the next: kept, unless it holds much memory.
        let small = process
            .resident()
            .is_some_and(|bytes| bytes < limits.resident / 2);
        if small {
            warm.keep(process);
        }
        if let Err(e) = said {
            // Recorded by the child, unless it failed past recording: then here.
            record_end(lab, id, RunStatus::Failed, &e.to_string()).await;
        }
        return said.clone();
    }
    if killed.is_some() {
        process.kill();
    }
    // What it said before it ended or was stopped (a line sent just before a kill included).
    let mut said = said;
    while let Ok(Some(line)) = process.lines.next_line().await {
        said = outcome_of(&line).or(said);
    }
    let died = process.ended().await;
    let why = match (killed, said) {
        // It finished before the kill took: the run is what it said.
        (_, Some(Ok(()))) => return Ok(()),
        (None, Some(Err(e))) => {
            record_end(lab, id, RunStatus::Failed, &e.to_string()).await;
            return Err(e);
        }
        (Some(why), _) => why,
        (None, None) => died,
    };
    // A child that died before it had a run id recorded nothing: the caller learns why from the
    // result (the `started` it was given is dropped unused).
    let status = match cancelled {
        true => RunStatus::Canceled,
        false => RunStatus::Failed,
    };
    record_end(lab, id, status, &why).await;
    Err(ApiError::Failed(why))
}

/// Tells `process` to run and follows it until it says how the run went, ends, or is to be
/// stopped (past its memory or wall time, or cancelled).
async fn drive(
    process: &mut Process,
    lab: &Lab,
    dedup: bool,
    started: &mut Option<impl FnOnce(Option<i64>)>,
    limits: &RunLimits,
    cancel: &mut watch::Receiver<bool>,
) -> Outcome {
    let mut outcome = Outcome {
        id: None,
        said: None,
        killed: None,
        cancelled: false,
    };
    if let Err(e) = process
        .send_run(lab.started_by_name(), dedup, limits.cpu_seconds)
        .await
    {
        // Its stdin is closed: it has ended (what it says on the way out is read after).
        tracing::debug!("the run's process took no command: {e}");
        return outcome;
    }
    let deadline = tokio::time::sleep(limits.wall);
    tokio::pin!(deadline);
    let mut poll = tokio::time::interval(POLL);
    // A dropped sender (the lab deleted) cannot cancel any more: stop asking it.
    let mut can_cancel = true;
    outcome.killed = loop {
        tokio::select! {
            line = process.lines.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(n) = line.strip_prefix("started ") {
                        outcome.id = n.trim().parse().ok().filter(|n: &i64| *n > 0);
                        if let Some(tell) = started.take() {
                            tell(outcome.id);
                        }
                    } else if let Some(said) = outcome_of(&line) {
                        outcome.said = Some(said);
                        break None;
                    }
                }
                // The child closed its stdout: it has ended, or is ending.
                _ => break None,
            },
            () = &mut deadline => break Some(format!(
                "the run passed {} s, the most a run may take, and was stopped",
                limits.wall.as_secs()
            )),
            _ = poll.tick() => {
                if let Some(bytes) = process.resident().filter(|b| *b > limits.resident) {
                    break Some(format!(
                        "the run's memory passed {} MiB ({} MiB), the most a run may hold, and \
                         it was stopped",
                        limits.resident >> 20,
                        bytes >> 20
                    ));
                }
            }
            changed = cancel.changed(), if can_cancel => match changed {
                Ok(()) if *cancel.borrow() => {
                    outcome.cancelled = true;
                    break Some("the run was cancelled".to_string());
                }
                Ok(()) => {}
                Err(_) => can_cancel = false,
            },
        }
    };
    outcome
}

/// How the run went, if `line` of the child's stdout says: `ok`, or `failed` and the error as
/// JSON (`worker.rs` writes them).
fn outcome_of(line: &str) -> Option<Result<(), ApiError>> {
    if line == "ok" {
        return Some(Ok(()));
    }
    let why = line.strip_prefix("failed ")?;
    let error = serde_json::from_str(why).unwrap_or_else(|_| ApiError::Failed(why.to_string()));
    Some(Err(error))
}

/// Runs of the lab still marked running while nobody holds its lock were cut by a crash (a
/// command-line run killed, a server stopped hard): recorded as such before the next run.
async fn end_crashed_runs(lab: &Lab) {
    let (Ok(Some(_lock)), Some(history)) = (lab.try_lock(), lab.history()) else {
        return;
    };
    match history.end_crashed_runs(&lab.config.lab).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            "lab {}: {n} run(s) recorded as ended by a crash",
            lab.config.lab
        ),
        Err(e) => tracing::warn!("could not record the runs a crash ended: {e}"),
    }
}

/// Records a run whose process the parent stopped, or that died, as ended with `why`.
async fn record_end(lab: &Lab, id: Option<i64>, status: RunStatus, why: &str) {
    let (Some(id), Some(history)) = (id, lab.history()) else {
        return;
    };
    if let Err(e) = history.end_run(id, status, why).await {
        tracing::warn!("could not record how run #{id} ended: {e}");
    }
}
