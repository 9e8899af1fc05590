//! Files a table stopped using, deleted once they have been out of use long enough. A MERGE
//! rewrites every file holding a key it changes, so `orders` leaves a copy of itself behind on
//! most runs: without this a lab's folder grows with the square of its runs (100 runs of 500
//! events left 22 MB of `orders` on disk for a table of 0.4 MB). delta-rs's `VACUUM`
//! deletes them, in its full mode: the files the log removed and any file in the table's folder
//! the log does not name (a run that crashed before its commit), each only once it has been out
//! of use for the time kept, so earlier versions stay readable (time travel) that long.
//!
//! Only the tables no stream reads the history of are vacuumed: `orders` and `hourly_sales`.
//! Silver and gold read bronze's change feed, and the what-if replay reads it from version 0, so
//! bronze keeps every file it had; it only appends, and compaction rewrites a row a few times
//! at most, so it grows with its rows, not its runs.

use std::time::Duration;

use deltalake::operations::vacuum::VacuumMode;

use super::{TableError, TableName, Tables};

/// The tables vacuumed: those read only as they are now (or at an earlier version by hand).
pub const VACUUMED: [TableName; 2] = [TableName::Orders, TableName::HourlySales];

/// What a vacuum deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vacuumed {
    pub files: usize,
}

/// Deletes the files of table `name` out of use for longer than `keep` (`None`: there were
/// none). It commits (delta-rs's `VACUUM START` and `VACUUM END`) only when it deletes some.
pub async fn vacuum(
    tables: &Tables,
    name: TableName,
    keep: Duration,
) -> Result<Option<Vacuumed>, TableError> {
    let Some(table) = tables.open(name).await? else {
        return Ok(None);
    };
    let delta = |source| TableError::Delta {
        table: name.to_string(),
        source,
    };
    let keep = chrono::Duration::from_std(keep).unwrap_or(chrono::Duration::MAX);
    let (table, metrics) = table
        .vacuum()
        .with_mode(VacuumMode::Full)
        .with_retention_period(keep)
        // The table's own minimum (a week) is delta-rs's guard against deleting what a reader
        // elsewhere may still need; here a lab's runs hold its lock, and the time kept is set.
        .with_enforce_retention_duration(false)
        .await
        .map_err(delta)?;
    if metrics.files_deleted.is_empty() {
        return Ok(None);
    }
    tables.keep_committed(&table);
    Ok(Some(Vacuumed {
        files: metrics.files_deleted.len(),
    }))
}
