//! How rows and a stream's progress reach a table: delta-rs's Parquet writer, appends, and the
//! properties every commit carries (the `txn` actions, and when expired logs are cleaned).

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, Transaction};
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::config::TablePropertiesExt;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};

use super::{TableError, table_name, version};

/// Commits between checkpoints of every table Reckon creates: Delta Lake's own default (Spark's).
/// delta-rs writes one every 100 commits by default, and each commit and each refresh of a table
/// replays its log since the last checkpoint: one commit took 3.7 ms at 10 commits and 9.9 ms at
/// 100, a refresh 1.4 and 9.2 ms, so a run grew dearer with the lab's age rather than its size.
pub const CHECKPOINT_INTERVAL: &str = "10";

/// delta-rs's writer of Parquet files (with their statistics) for `table`'s new rows.
pub fn writer(table: &DeltaTable) -> Result<RecordBatchWriter, TableError> {
    RecordBatchWriter::for_table(table).map_err(|source| TableError::Delta {
        table: table_name(table),
        source,
    })
}

/// Commits rows (possibly none) with the stream's progress in the same commit, so the two agree.
/// The rows go through delta-rs's `RecordBatchWriter` (Parquet files with their statistics)
/// rather than its `write` operation, which plans each append as a DataFusion query.
pub async fn append(
    table: DeltaTable,
    batches: Vec<arrow::record_batch::RecordBatch>,
    progress: Vec<Transaction>,
) -> Result<DeltaTable, TableError> {
    let delta = |source| TableError::Delta {
        table: table_name(&table),
        source,
    };
    let mut files = vec![];
    if batches.iter().any(|b| b.num_rows() > 0) {
        let mut writer = writer(&table)?;
        for batch in batches.into_iter().filter(|b| b.num_rows() > 0) {
            writer.write(batch).await.map_err(delta)?;
        }
        files = writer.flush().await.map_err(delta)?;
    }
    let properties = commit_properties(&table, progress);
    // With no rows the progress still moves: a commit of `txn` actions only.
    commit_files(table, files, properties).await
}

/// Commits data files written already (by a `RecordBatchWriter`) as an append, with the
/// properties (the stream's progress) in the same commit.
pub async fn commit_files(
    mut table: DeltaTable,
    files: Vec<Add>,
    properties: CommitProperties,
) -> Result<DeltaTable, TableError> {
    let delta = |source| TableError::Delta {
        table: table_name(&table),
        source,
    };
    let operation = DeltaOperation::Write {
        mode: SaveMode::Append,
        partition_by: None,
        predicate: None,
    };
    let committed = CommitBuilder::from(properties)
        .with_actions(files.into_iter().map(Action::Add).collect())
        .build(
            Some(table.snapshot().map_err(delta)?),
            table.log_store(),
            operation,
        )
        .await
        .map_err(delta)?;
    // The commit's own snapshot: the table is up to date without reading its log again.
    table.state = Some(committed.snapshot());
    Ok(table)
}

/// The properties of a commit to `table` that stores `progress` with its data. Expired logs are
/// cleaned only by the commits that write a checkpoint, as Spark's Delta does: delta-rs cleans
/// after every commit by default, listing the whole `_delta_log` each time, a cost that grows with
/// the table's age and removes nothing between checkpoints (only logs a checkpoint covers can go).
pub fn commit_properties(table: &DeltaTable, progress: Vec<Transaction>) -> CommitProperties {
    let properties = CommitProperties::default().with_application_transactions(progress);
    let Ok(snapshot) = table.snapshot() else {
        return properties;
    };
    let interval = snapshot.table_config().checkpoint_interval().get() as i64;
    // delta-rs checkpoints the commit whose version v has v + 1 a multiple of the interval.
    let checkpoints = (version(table) + 2) % interval == 0;
    if checkpoints {
        // The table's own setting (delta.enableExpiredLogCleanup, on by default) decides.
        properties
    } else {
        properties.with_cleanup_expired_logs(Some(false))
    }
}

#[cfg(test)]
mod tests {
    use deltalake::kernel::{DataType, Transaction};
    use deltalake::protocol::SaveMode;
    use deltalake::{DeltaTableBuilder, TableProperty};

    use super::{CHECKPOINT_INTERVAL, append};

    fn logs(dir: &std::path::Path) -> Vec<i64> {
        let mut versions: Vec<i64> = std::fs::read_dir(dir.join("_delta_log"))
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".json")?.parse().ok()
            })
            .collect();
        versions.sort();
        versions
    }

    /// Expired logs still go, on the commit that writes the checkpoint covering them, and the
    /// commits between checkpoints leave the log alone.
    #[tokio::test]
    async fn expired_logs_go_with_the_checkpoint_that_covers_them() {
        let dir = tempfile::tempdir().unwrap();
        let url = url::Url::from_directory_path(dir.path().canonicalize().unwrap()).unwrap();
        let mut table = DeltaTableBuilder::from_url(url)
            .unwrap()
            .build()
            .unwrap()
            .create()
            .with_column("id", DataType::LONG, true, None)
            .with_configuration_property(
                TableProperty::CheckpointInterval,
                Some(CHECKPOINT_INTERVAL),
            )
            // Every log is expired at once, so only the checkpoint decides what may go.
            .with_configuration_property(
                TableProperty::LogRetentionDuration,
                Some("interval 0 seconds"),
            )
            .with_save_mode(SaveMode::ErrorIfExists)
            .await
            .unwrap();
        for v in 1..=8 {
            table = append(table, vec![], vec![Transaction::new("t", v)])
                .await
                .unwrap();
        }
        assert_eq!(logs(dir.path()), (0..=8).collect::<Vec<_>>());
        // Version 9 writes the checkpoint; versions 0 to 8 are covered by it and go.
        table = append(table, vec![], vec![Transaction::new("t", 9)])
            .await
            .unwrap();
        assert_eq!(logs(dir.path()), vec![9]);
        for v in 10..=18 {
            table = append(table, vec![], vec![Transaction::new("t", v)])
                .await
                .unwrap();
        }
        assert_eq!(logs(dir.path()), (9..=18).collect::<Vec<_>>());
        table = append(table, vec![], vec![Transaction::new("t", 19)])
            .await
            .unwrap();
        assert_eq!(logs(dir.path()), vec![19]);
        assert_eq!(super::version(&table), 19);
    }
}
