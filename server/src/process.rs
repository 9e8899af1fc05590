//! How a Reckon process starts (the CLI, the server, the benches that stand for them): its
//! allocator, then the async runtime; and how a server gives back what a run freed.
//!
//! The allocator is jemalloc, for Rust and for the C inside (SQLite, librdkafka) alike. glibc's
//! malloc let the server grow run after run (an arena per thread that allocates at the same
//! moment, each keeping what it freed); capped at two arenas it stayed bounded, but then every
//! thread queued on those two locks, and a run's threads, scheduled behind the readers'
//! (`service::dashboard::behind`), held a lock while the OS kept them waiting. `make bench`'s
//! labs bench measured the readers' p99 at 0.8 to 2.2 s that way, and 68 to 123 ms with jemalloc
//! (its arenas and per-thread caches take no shared lock on the common path). Its memory after
//! 100 runs, with [`give_back`] after each, is about 5 % above that after 10: heap profiles showed
//! no live growth run to run, and the jump there was at a table's 100th commit (a checkpoint's
//! burst of file threads, now bounded in `service::dashboard::behind`; `bench/results.md`).

pub mod cpu;

use tokio::runtime::{Builder, Runtime};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Builds the multi-threaded runtime. Its threads' stacks are 32 MiB (reserved, touched only as
/// used): a project's statements are read and planned on them, and an expression as deep as the
/// parser allows (`engine::pipeline::parse::depth`) is walked recursively by sqlparser's code.
pub fn runtime() -> std::io::Result<Runtime> {
    Builder::new_multi_thread()
        .thread_stack_size(32 << 20)
        .enable_all()
        .build()
}

/// Gives the pages a finished run freed back to the OS at once: jemalloc returns freed memory
/// over about ten seconds (its decay), and a run's working set (a batch, a query's tables) is
/// freed all at once when it ends. Off the threads answering pages. `false` if jemalloc refused.
pub fn give_back() -> bool {
    // `arena.<all>.purge` takes no value and returns none (jemalloc's mallctl(3)).
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: the name is NUL-terminated; jemalloc's purge reads and writes through no pointer
    // (all four are null). A refusal only leaves the memory to the decay.
    let status = unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    status == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_finished_run_can_give_its_memory_back() {
        let freed: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 1 << 16]).collect();
        drop(freed);
        assert!(super::give_back(), "jemalloc refused arena.<all>.purge");
    }
}
