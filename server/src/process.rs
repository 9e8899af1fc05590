//! How a Reckon process starts (the CLI, the server, the benches that stand for them): the
//! allocator's settings first, then the async runtime; and how a server gives back what a run
//! freed.
//!
//! glibc's malloc gives threads that allocate at the same moment arenas of their own (up to 8 per
//! core) and keeps what each frees. A server whose runs go on several threads (its workers, the
//! runs' own, bronze's decoder, DataFusion's tasks) grew run after run that way: `make bench`'s
//! labs bench measured 144 MiB after 10 runs and 229 MiB after 100, and 136 and 161 MiB with two
//! arenas. Two arenas cost a little contention between threads, on 2 cores hardly any.

use tokio::runtime::{Builder, Runtime};

/// Arenas glibc's malloc may make.
const ARENAS: i32 = 2;

/// Caps the allocator's arenas (before any thread starts), then builds the multi-threaded runtime.
pub fn runtime() -> std::io::Result<Runtime> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets one of malloc's parameters; it is called before any other thread
    // exists. A refusal (it returns 0) leaves glibc's default, which is only larger.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
    Builder::new_multi_thread().enable_all().build()
}

/// Gives the pages a finished run freed back to the OS: glibc keeps freed memory for reuse, and
/// a run's working set (a batch, a query's tables) is freed all at once when it ends. Walks the
/// heap once, a few milliseconds, off the threads answering pages.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of malloc's own heaps to the OS.
    unsafe {
        libc::malloc_trim(0);
    }
}
