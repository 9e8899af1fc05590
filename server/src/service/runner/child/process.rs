//! One `reckon worker` process as the parent holds it: started within hard limits, told what to
//! run on its stdin, heard on its stdout, and the tail of its stderr kept for the reason of a
//! death.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use app::api::ApiError;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::config::RunLimits;
use crate::service::lab::Lab;

/// How far behind the server's threads a run's go (the child's nice value): a run can keep both
/// cores busy, and a reader still gets one as soon as it asks. A policy that forbids it leaves the
/// child at the server's priority, which is only slower for readers, never wrong.
const NICE: libc::c_int = 10;

/// The bytes of the child's stderr kept, for the reason of a death.
const STDERR_TAIL: usize = 16 << 10;

pub(super) struct Process {
    child: Child,
    pub(super) pid: u32,
    stdin: ChildStdin,
    pub(super) lines: Lines<BufReader<ChildStdout>>,
    /// The last bytes the child wrote on its stderr.
    tail: Arc<Mutex<Vec<u8>>>,
    reader: tokio::task::JoinHandle<()>,
    /// When its last run ended (when it started, before its first).
    pub(super) idle_since: Instant,
    /// Whether it has run before: a warm process that says nothing may have just ended idle.
    pub(super) used: bool,
}

impl Process {
    /// Starts `reckon worker` for `lab` within `limits`; it waits for commands on its stdin.
    pub(super) fn start(lab: &Lab, limits: &RunLimits) -> Result<Self, ApiError> {
        let idle = super::IDLE_CHILD.as_secs().to_string();
        Self::start_with(lab, limits, &["--idle".as_ref(), idle.as_ref()])
    }

    /// Starts `reckon worker` for `lab` within `limits`, with `args` after `worker`.
    pub(super) fn start_with(
        lab: &Lab,
        limits: &RunLimits,
        args: &[&std::ffi::OsStr],
    ) -> Result<Self, ApiError> {
        let mut command = Command::new(program()?);
        command
            .args(lab.config.global_args())
            .arg("worker")
            .args(args)
            // Held open by this process: the child ends when it reads the end of it (this
            // process gone, or the warm child dropped).
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
        let limits = *limits;
        // SAFETY: between fork and exec the closure only calls async-signal-safe functions
        // (getrlimit, setrlimit, setpriority, open, write, close) on values made before the fork.
        unsafe {
            command.pre_exec(move || limit_self(&limits));
        }
        let mut child = command
            .spawn()
            .map_err(|e| ApiError::Failed(format!("the run's process could not start: {e}")))?;
        let pid = child.id().unwrap_or_default();
        let stdin = child.stdin.take().expect("stdin is piped");
        let lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let tail = Arc::new(Mutex::new(Vec::new()));
        let kept = tail.clone();
        // Its last words, for a child that dies: the tail of its stderr, never all of it.
        let reader = tokio::spawn(async move {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                let mut tail = kept.lock().unwrap_or_else(|e| e.into_inner());
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    let cut = tail.len() - STDERR_TAIL;
                    tail.drain(..cut);
                }
            }
        });
        Ok(Self {
            child,
            pid,
            stdin,
            lines,
            tail,
            reader,
            idle_since: Instant::now(),
            used: false,
        })
    }

    /// Tells the child to run the lab's pipeline once: who started it, whether gold drops
    /// duplicates, and the CPU seconds it may take (`worker.rs` reads the line).
    pub(super) async fn send_run(
        &mut self,
        started_by: &str,
        dedup: bool,
        cpu_seconds: u64,
    ) -> std::io::Result<()> {
        let line = format!("run {started_by} {} {cpu_seconds}\n", u8::from(dedup));
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await
    }

    /// Whether the process is still there to take a command.
    pub(super) fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub(super) fn kill(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Waits for the process to end (after a kill, or once it closed its stdout), and says how it
    /// ended with its last words on stderr.
    pub(super) async fn ended(mut self) -> String {
        let status = self.child.wait().await;
        let _ = (&mut self.reader).await;
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
        died(status.ok(), &String::from_utf8_lossy(&tail))
    }

    /// Its resident memory in bytes, from `/proc/PID/statm` (its second field, in pages).
    pub(super) fn resident(&self) -> Option<u64> {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.pid)).ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        Some(pages * page)
    }
}

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

/// In the child, before exec: the hard limits (never above the hard limits the server has), no
/// core files, a lower priority, and first in line for the kernel's OOM killer. The CPU time's
/// hard limit stays the server's: the child, kept between runs, moves its soft limit to its
/// time used so far plus each run's own (`worker.rs`).
fn limit_self(limits: &RunLimits) -> std::io::Result<()> {
    let set = |resource, value: u64, hard_too: bool| {
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
            if hard_too {
                limit.rlim_max = value;
            }
            match libc::setrlimit(resource, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        }
    };
    set(libc::RLIMIT_DATA, limits.data, true)?;
    set(libc::RLIMIT_CPU, limits.cpu_seconds, false)?;
    set(libc::RLIMIT_NOFILE, limits.files, true)?;
    set(libc::RLIMIT_CORE, 0, true)?;
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
