//! Every run the server starts (a button, the API, the schedule, a file's arrival) goes in a
//! child process of `reckon` (`reckon worker`), never in the server: a learner's query can
//! overflow a stack, take all the memory or spin for ever, and none of that can be stopped
//! inside a process. The parent sets hard limits before the child starts (`setrlimit`: private
//! data, CPU time, open files; the child ends when its stdin, held by the parent, closes), polls
//! the child's resident memory
//! and kills it past [`Limits::resident`], kills it at [`Limits::wall`], and kills it when a lab's
//! run is cancelled. The child records its run in the history as the command line does; a child
//! that dies is recorded by the parent, with how it ended, and the next run recovers as after a
//! crash (every flow's state is committed with its data).
//!
//! The protocol on the child's stdout: `started <id>` once it holds the lab's lock and has a
//! history id, then `ok` or `failed <the error as JSON>`. Its stderr's last lines name what killed it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use app::api::ApiError;
use app::model::RunStatus;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::watch;

use crate::service::lab::Lab;

/// What a run's process may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Resident memory (bytes), polled; past it the child is killed.
    pub resident: u64,
    /// Private writable memory it may map (`RLIMIT_DATA`), reservations and stacks included.
    pub data: u64,
    /// CPU seconds (`RLIMIT_CPU`), all threads together.
    pub cpu_seconds: u64,
    /// Wall time; past it the child is killed.
    pub wall: Duration,
    /// Open files (`RLIMIT_NOFILE`).
    pub files: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        resident: 2 << 30,
        // jemalloc's arenas, the run's 512 MiB stack and tokio's threads reserve more than they
        // use: 16 GiB of mappings for 2 GiB resident leaves them room.
        data: 16 << 30,
        cpu_seconds: 900,
        wall: Duration::from_secs(300),
        files: 4096,
    };
}

/// How far behind the server's threads a run's go (the child's nice value): a run can keep both
/// cores busy, and a reader still gets one as soon as it asks. A policy that forbids it leaves the
/// child at the server's priority, which is only slower for readers, never wrong.
const NICE: libc::c_int = 10;

/// The bytes of the child's stderr kept, for the reason of a death.
const STDERR_TAIL: usize = 16 << 10;

/// How often the parent reads the child's resident memory.
const POLL: Duration = Duration::from_millis(100);

/// The `reckon` program that runs a lab's run: `RECKON_WORKER` when set, this program when it is
/// `reckon`, else the `reckon` beside the folder this program is in (a test or bench binary in
/// cargo's `deps/` folder runs the `reckon` cargo built beside it).
fn program() -> Result<PathBuf, ApiError> {
    if let Some(path) = std::env::var_os("RECKON_WORKER") {
        return Ok(PathBuf::from(path));
    }
    let me = std::env::current_exe()
        .map_err(|e| ApiError::Failed(format!("cannot find the reckon program: {e}")))?;
    if me.file_stem().is_some_and(|s| s == "reckon") {
        return Ok(me);
    }
    let beside = me
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("reckon"));
    beside.filter(|p| p.is_file()).ok_or_else(|| {
        ApiError::Failed("cannot find the reckon program for the run; set RECKON_WORKER".into())
    })
}

/// Runs `lab`'s pipeline once in a child process within `limits`; tells `started` the run's
/// history id once the child has one; `cancel` set to true kills it.
pub async fn run(
    lab: &Lab,
    dedup: bool,
    started: impl FnOnce(Option<i64>),
    limits: Limits,
    mut cancel: watch::Receiver<bool>,
) -> Result<(), ApiError> {
    end_crashed_runs(lab).await;
    let mut command = Command::new(program()?);
    command
        .args(lab.config.global_args())
        .args(["worker", "--started-by", lab.started_by_name()])
        .args(dedup.then_some("--dedup"))
        // Held open by this process: the child ends when it reads the end of it (this
        // process gone, or this run dropped).
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The child's settings are its arguments alone, not the server's environment (its
    // instructor token among it).
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RECKON_") {
            command.env_remove(key);
        }
    }
    // SAFETY: between fork and exec the closure only calls async-signal-safe functions
    // (getrlimit, setrlimit, setpriority, open, write, close) on values made before the fork.
    unsafe {
        command.pre_exec(move || limit_self(&limits));
    }
    let mut child = command
        .spawn()
        .map_err(|e| ApiError::Failed(format!("the run's process could not start: {e}")))?;
    let pid = child.id().unwrap_or_default();
    let _stdin = child.stdin.take();
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let mut stderr = child.stderr.take().expect("stderr is piped");
    // Its last words, for a child that dies: the tail of its stderr, never all of it.
    let errors = tokio::spawn(async move {
        let (mut tail, mut chunk) = (Vec::new(), [0u8; 8192]);
        while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
            tail.extend_from_slice(&chunk[..n]);
            if tail.len() > 2 * STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    });
    let mut started = Some(started);
    let mut id = None;
    let mut said: Option<Result<(), ApiError>> = None;
    let deadline = tokio::time::sleep(limits.wall);
    tokio::pin!(deadline);
    let mut poll = tokio::time::interval(POLL);
    let mut cancelled = false;
    // A dropped sender (the lab deleted) cannot cancel any more: stop asking it.
    let mut can_cancel = true;
    let killed: Option<String> = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(n) = line.strip_prefix("started ") {
                        id = n.trim().parse().ok().filter(|n: &i64| *n > 0);
                        if let Some(tell) = started.take() {
                            tell(id);
                        }
                    } else if let Some(outcome) = outcome(&line) {
                        said = Some(outcome);
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
                if let Some(bytes) = resident(pid).filter(|b| *b > limits.resident) {
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
                    cancelled = true;
                    break Some("the run was cancelled".to_string());
                }
                Ok(()) => {}
                Err(_) => can_cancel = false,
            },
        }
    };
    if killed.is_some() {
        let _ = child.start_kill();
    }
    let status = child.wait().await;
    // What it said before it ended or was stopped (a line sent just before a kill included).
    while let Ok(Some(line)) = lines.next_line().await {
        said = outcome(&line).or(said);
    }
    let errors = errors.await.unwrap_or_default();
    let why = match (killed, said) {
        // It finished before the kill took: the run is what it said.
        (_, Some(Ok(()))) => return Ok(()),
        (None, Some(Err(e))) => {
            // Recorded by the child, unless it failed past recording (a panic): then here.
            record_end(lab, id, RunStatus::Failed, &e.to_string()).await;
            return Err(e);
        }
        (Some(why), _) => why,
        (None, None) => died(status.ok(), &errors),
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

/// How the run went, if `line` of the child's stdout says: `ok`, or `failed` and the error as
/// JSON (`worker.rs` writes them).
fn outcome(line: &str) -> Option<Result<(), ApiError>> {
    if line == "ok" {
        return Some(Ok(()));
    }
    let why = line.strip_prefix("failed ")?;
    let error = serde_json::from_str(why).unwrap_or_else(|_| ApiError::Failed(why.to_string()));
    Some(Err(error))
}

/// In the child, before exec: the hard limits (never above the hard limits the server has), no
/// core files, a lower priority, and first in line for the kernel's OOM killer.
fn limit_self(limits: &Limits) -> std::io::Result<()> {
    let set = |resource, value: u64| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct they are given.
        unsafe {
            if libc::getrlimit(resource, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let value = (value as libc::rlim_t).min(limit.rlim_max);
            limit.rlim_cur = value;
            limit.rlim_max = value;
            match libc::setrlimit(resource, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        }
    };
    set(libc::RLIMIT_DATA, limits.data)?;
    set(libc::RLIMIT_CPU, limits.cpu_seconds)?;
    set(libc::RLIMIT_NOFILE, limits.files)?;
    set(libc::RLIMIT_CORE, 0)?;
    // SAFETY: setpriority reads integers; open, write and close take a static C string and a
    // static buffer.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
        let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY);
        if fd >= 0 {
            libc::write(fd, b"1000".as_ptr().cast(), 4);
            libc::close(fd);
        }
    }
    Ok(())
}

/// A process's resident memory in bytes, from `/proc/PID/statm` (its second field, in pages).
fn resident(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

/// Why a child that said nothing ended: its signal or code, and its last words.
fn died(status: Option<std::process::ExitStatus>, errors: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let last: Vec<&str> = errors.lines().rev().take(3).collect();
    let said = last.into_iter().rev().collect::<Vec<_>>().join(" / ");
    let how = match status {
        Some(s) if s.signal() == Some(libc::SIGXCPU) || s.signal() == Some(libc::SIGKILL) => {
            format!(
                "the run's process was stopped by signal {} (past its CPU time?)",
                s.signal().unwrap_or_default()
            )
        }
        Some(s) if s.signal().is_some() => format!(
            "the run's process died of signal {} (a stack overflow aborts with 6)",
            s.signal().unwrap_or_default()
        ),
        Some(s) => format!("the run's process ended with {s} without saying how the run went"),
        None => "the run's process could not be waited for".into(),
    };
    match said.is_empty() {
        true => how,
        false => format!("{how}: {said}"),
    }
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
