//! How a Reckon process starts (the CLI, the server, the benches that stand for them): its
//! allocator, then the async runtime.
//!
//! The allocator is jemalloc, for Rust and for the C inside (SQLite, librdkafka) alike. glibc's
//! malloc let the server grow run after run (an arena per thread that allocates at the same
//! moment, each keeping what it freed); capped at two arenas it stayed bounded, but then every
//! thread queued on those two locks, and a run's threads, scheduled behind the readers', held a
//! lock while the OS kept them waiting. `make bench`'s
//! labs bench measured the readers' p99 at 0.8 to 2.2 s that way, and 68 to 123 ms with jemalloc
//! (its arenas and per-thread caches take no shared lock on the common path). Runs now go in
//! processes of their own (`service::runner::child`): what a run allocates goes back to the
//! OS when its process ends, not into the server's heap. `unprefixed_malloc` makes the C inside
//! (SQLite, librdkafka) allocate with jemalloc too.

pub mod cpu;
pub mod sandbox;

use tokio::runtime::{Builder, Runtime};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Builds the multi-threaded runtime. Its threads' stacks are 32 MiB (reserved, touched only as
/// used): a project's statements are read and planned on them, and an expression as deep as the
/// parser allows (`engine::declarative::parse::depth`) is walked recursively by sqlparser's code.
pub fn runtime() -> std::io::Result<Runtime> {
    Builder::new_multi_thread()
        .thread_stack_size(32 << 20)
        .enable_all()
        .build()
}
