//! Kill-and-restart: the course scenario with the process aborted at each crash point of each
//! stream, then rerun, must leave tables identical to an uninterrupted run.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::sync::OnceLock;

use common::{SEED_BLOCK, TestLab, stderr};

const TABLES: [&str; 4] = ["bronze_orders", "bronze_rejects", "orders", "hourly_sales"];

type Tables = Vec<Vec<serde_json::Value>>;

/// Plays the course by hand; the third run (after batch 3's first send) is aborted at `crash_at`
/// first, then run again.
fn course(name: &str, crash_at: Option<&str>) -> (TestLab, Tables) {
    let lab = TestLab::new(name);
    for (i, batch) in ["1", "2", "3", "3", "4", "5"].into_iter().enumerate() {
        lab.send(batch);
        if i == 2
            && let Some(point) = crash_at
        {
            let out = lab.reckon(&["--crash-at", point, "run"]);
            assert_eq!(
                out.status.signal(),
                Some(libc_sigabrt()),
                "{point} did not abort: {}",
                stderr(&out)
            );
            assert!(stderr(&out).contains(&format!("crash point {point} reached")));
        }
        lab.ok(&["run"]);
    }
    let tables = TABLES.iter().map(|t| lab.table(t)).collect();
    (lab, tables)
}

fn libc_sigabrt() -> i32 {
    6
}

fn uninterrupted() -> &'static Tables {
    static REFERENCE: OnceLock<Tables> = OnceLock::new();
    REFERENCE.get_or_init(|| course("reference", None).1)
}

fn crash_and_rerun(point: &str) {
    let (lab, tables) = course(&point.replace(':', "-"), Some(point));
    let reference = uninterrupted();
    for ((name, got), want) in TABLES.iter().zip(&tables).zip(reference) {
        assert_eq!(got, want, "{name} differs after a crash at {point}");
    }
    assert_eq!(
        lab.check(),
        (SEED_BLOCK.to_string(), 0),
        "check after a crash at {point}"
    );
}

#[test]
fn bronze_after_read() {
    crash_and_rerun("bronze:after-read");
}

#[test]
fn bronze_after_write() {
    crash_and_rerun("bronze:after-write");
}

#[test]
fn bronze_after_commit() {
    crash_and_rerun("bronze:after-commit");
}

#[test]
fn silver_after_read() {
    crash_and_rerun("silver:after-read");
}

#[test]
fn silver_after_write() {
    crash_and_rerun("silver:after-write");
}

#[test]
fn silver_after_commit() {
    crash_and_rerun("silver:after-commit");
}

#[test]
fn gold_after_read() {
    crash_and_rerun("gold:after-read");
}

#[test]
fn gold_after_write() {
    crash_and_rerun("gold:after-write");
}

#[test]
fn gold_after_commit() {
    crash_and_rerun("gold:after-commit");
}
