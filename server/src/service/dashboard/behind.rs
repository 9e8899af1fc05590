//! The runtime the server's pipeline runs go on: threads of their own that the OS schedules
//! behind the threads answering pages and the API. A run (or three) can keep both cores busy;
//! a reader then still gets a core as soon as it asks, and the run takes what is left.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;

/// How far behind: the nice value of a run's threads (the server's own stay at 0).
const NICE: libc::c_int = 10;

/// The threads a run may block on files with, per core. delta-rs does file work on the blocking
/// pool, a file per task, and its kernel waits on that pool from inside it: a snapshot is built
/// on a blocking thread that waits for listing tasks, which need blocking threads of their own.
/// At 4 per core (8 here), chosen to keep a checkpoint's burst of some 90 threads off the
/// server's memory, the labs' runs at once filled the pool with such waiters and hung for good
/// (`tests/labs/` with ten labs at once, 2026-12-04: every `reckon-run` thread parked in
/// delta-kernel's `block_on`). A hang is worse than a burst, so the pool is as wide as that
/// burst with room to spare, and its threads go after a second idle instead of tokio's ten.
const BLOCKING_PER_CORE: usize = 64;
/// How long an idle blocking thread of the runs' pool is kept.
const BLOCKING_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(1);

static RUNS: OnceLock<Runtime> = OnceLock::new();

/// Spawns `run` on the runs' runtime; the handle may be awaited from any runtime.
pub fn spawn<F>(run: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    RUNS.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        Builder::new_multi_thread()
            .worker_threads(threads)
            .max_blocking_threads(threads * BLOCKING_PER_CORE)
            .thread_keep_alive(BLOCKING_KEEP_ALIVE)
            .thread_name("reckon-run")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()
            .expect("the runs' runtime could not start its threads")
    })
    .spawn(run)
}

/// Lowers the calling thread's priority. On Linux the nice value belongs to each thread, and
/// `setpriority(PRIO_PROCESS, 0, ..)` sets the caller's alone; the threads a run starts (bronze's
/// decoder, the blocking pool's) inherit it.
fn lower_priority() {
    // SAFETY: setpriority only reads its integer arguments. A refusal (a policy forbidding it)
    // leaves the thread at the server's priority, which is only slower for readers, never wrong.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_go_on_threads_behind_the_servers() {
        let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let (name, nice) = spawn(async {
            let name = std::thread::current().name().map(str::to_owned);
            (name, unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) })
        })
        .await
        .unwrap();
        assert_eq!(name.as_deref(), Some("reckon-run"));
        // A process already further behind stays there: raising a priority needs a privilege.
        let expected = if own > NICE { own } else { NICE };
        assert_eq!(nice, expected, "this test's thread runs at {own}");
    }
}
