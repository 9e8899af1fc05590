//! Small files bin-packed into larger ones. Every run adds a file or two to each of a lab's
//! tables, and delta-rs pays for every file a table holds each time it opens the table or
//! commits to it (it rebuilds the snapshot's list of files), so without this a lab's runs grow
//! dearer with its age rather than with what they add. A compaction is delta-rs's `optimize`:
//! one commit that rewrites small files as fewer, larger ones and changes no data
//! (`dataChange = false`). The streams reading bronze's change feed skip it, and the incremental
//! check moves its bookkeeping to the new files without reading their rows again.

use std::num::NonZeroU64;

use deltalake::DeltaTable;
use deltalake::operations::optimize::Metrics;

use super::{TableError, TableName, Tables, commit_properties, table_name, writer_properties};

/// The size a compaction packs files up to. A file at least half of it is left alone, so rows
/// are rewritten a few times at most before they sit in a file that stays.
pub const TARGET_BYTES: u64 = 16 << 20;

/// The files of `table` small enough to be packed with another: under half the target.
pub fn small_files(table: &DeltaTable) -> Result<usize, TableError> {
    let snapshot = table.snapshot().map_err(|source| TableError::Delta {
        table: table_name(table),
        source,
    })?;
    Ok(snapshot
        .log_data()
        .into_iter()
        .filter(|file| (file.size() as u64) < TARGET_BYTES / 2)
        .count())
}

/// Compacts table `name` if it holds more than `after` small files (never when `after` is 0).
/// Returns what the compaction did, or `None` when the table was left as it was.
pub async fn compact(
    tables: &Tables,
    name: TableName,
    after: usize,
) -> Result<Option<Metrics>, TableError> {
    if after == 0 {
        return Ok(None);
    }
    let Some(table) = tables.open(name).await? else {
        return Ok(None);
    };
    if small_files(&table)? <= after {
        return Ok(None);
    }
    // No stream's progress moves: the commit carries no `txn` action.
    let properties = commit_properties(&table, vec![]);
    let target = NonZeroU64::new(TARGET_BYTES).expect("a target size above zero");
    let (table, metrics) = table
        .optimize()
        .with_target_size(target)
        .with_writer_properties(writer_properties())
        .with_commit_properties(properties)
        .await
        .map_err(|source| TableError::Delta {
            table: name.to_string(),
            source,
        })?;
    tables.keep_committed(&table);
    Ok(Some(metrics))
}
