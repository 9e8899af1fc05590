//! How rows and a stream's progress reach a table: delta-rs's Parquet writer, appends, and the
//! properties every commit carries (the `txn` actions, and when expired logs are cleaned).

use deltalake::DeltaTable;
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, Add, Transaction};
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::parquet::schema::types::ColumnPath;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::config::TablePropertiesExt;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};

use super::{TableError, table_name, version};

/// Commits between checkpoints of every table Reckon creates: Delta Lake's own default (Spark's).
/// delta-rs writes one every 100 commits by default, and each commit and each refresh of a table
/// replays its log since the last checkpoint: one commit took 3.7 ms at 10 commits and 9.9 ms at
/// 100, a refresh 1.4 and 9.2 ms, so a run grew dearer with the lab's age rather than its size.
pub const CHECKPOINT_INTERVAL: &str = "10";

/// Columns whose values are (nearly) all different from row to row: a dictionary would hold
/// every value once more, and building it hashed each of them (in bronze's profile the Parquet
/// writer's dictionary interner cost more than parsing the events).
const UNIQUE_COLUMNS: [&str; 5] = [
    "offset",
    "kafka_timestamp",
    "order_id",
    "event_time",
    "hour",
];

/// delta-rs's writer of Parquet files (with their statistics) for `table`'s new rows: Snappy, as
/// delta-rs writes, with plain encoding for the columns of [`UNIQUE_COLUMNS`].
pub fn writer(table: &DeltaTable) -> Result<RecordBatchWriter, TableError> {
    let writer = RecordBatchWriter::for_table(table).map_err(|source| TableError::Delta {
        table: table_name(table),
        source,
    })?;
    Ok(writer.with_writer_properties(writer_properties()))
}

/// How Reckon writes Parquet: Snappy, plain encoding for the columns of [`UNIQUE_COLUMNS`].
pub fn writer_properties() -> WriterProperties {
    UNIQUE_COLUMNS
        .into_iter()
        .fold(
            WriterProperties::builder().set_compression(Compression::SNAPPY),
            |builder, column| {
                builder.set_column_dictionary_enabled(ColumnPath::from(column), false)
            },
        )
        .build()
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
    // With no rows the progress still moves: a commit of `txn` actions only.
    commit_files(table, files, progress).await
}

/// Commits data files written already (by a `RecordBatchWriter`) as an append, with the
/// stream's progress in the same commit.
pub async fn commit_files(
    mut table: DeltaTable,
    files: Vec<Add>,
    progress: Vec<Transaction>,
) -> Result<DeltaTable, TableError> {
    let properties = commit_properties(&table, progress);
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
/// the table's age. Only logs a checkpoint covers can go, and those that expire between two
/// checkpoints now wait for the next one (at most the interval's commits less one).
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
        for v in 1..=19 {
            table = append(table, vec![], vec![Transaction::new("t", v)])
                .await
                .unwrap();
            let expected: Vec<i64> = match v {
                // Version 9 writes a checkpoint; versions 0 to 8 are covered by it and go.
                1..=8 => (0..=v).collect(),
                9..=18 => (9..=v).collect(),
                _ => vec![19],
            };
            assert_eq!(logs(dir.path()), expected, "the logs after version {v}");
        }
        assert_eq!(super::version(&table), 19);
    }

    /// The writer leaves the dictionary out for row-unique columns only.
    #[tokio::test]
    async fn unique_columns_are_written_plain_and_the_rest_with_a_dictionary() {
        use std::sync::Arc;

        use arrow::array::{
            ArrayRef, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
        };
        use arrow::record_batch::RecordBatch;
        use deltalake::parquet::file::reader::{FileReader, SerializedFileReader};

        use crate::engine::tables::{TableName, Tables};

        let dir = tempfile::tempdir().unwrap();
        let table = Tables::new(dir.path(), None)
            .open_or_create(TableName::BronzeRejects)
            .await
            .unwrap();
        let n = 1000;
        let ts =
            |v: i64| Arc::new(TimestampMicrosecondArray::from(vec![v; n]).with_timezone("UTC"));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![0; n])),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            ts(1),
            ts(2),
            Arc::new(StringArray::from(vec!["not json"; n])),
            Arc::new(StringArray::from(vec!["expected value"; n])),
        ];
        let batch = RecordBatch::try_new(TableName::BronzeRejects.schema(), columns).unwrap();
        let table = append(table, vec![batch], vec![]).await.unwrap();
        let file = table.get_file_uris().unwrap().next().unwrap();
        let path: std::path::PathBuf = url::Url::parse(&file)
            .map(|u| u.to_file_path().unwrap())
            .unwrap_or_else(|_| file.into());
        let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let group = reader.metadata().row_group(0);
        let dictionary = |name: &str| {
            let column = group
                .columns()
                .iter()
                .find(|c| c.column_path().string() == name)
                .unwrap();
            column.dictionary_page_offset().is_some()
        };
        assert!(!dictionary("offset"));
        assert!(!dictionary("kafka_timestamp"));
        assert!(dictionary("partition"));
        assert!(dictionary("reason"));
    }
}
