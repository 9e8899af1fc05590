//! Writing a run's rows while they are read: the decoded chunks are put back in the order they
//! were polled and streamed into one new Parquet file of `bronze_orders` by delta-rs's
//! `RecordBatchWriter`, so the encoding runs beside the polling instead of after it. The file
//! is only data until the commit names it (`tables::commit_files`): a run that fails before its
//! commit leaves a file no version holds.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;

use arrow::record_batch::RecordBatch;
use deltalake::DeltaTableError;
use deltalake::kernel::Add;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};

use crate::engine::tables::{TableError, TableName};

/// Writes the batches of each chunk that `decoded` hands over (`(index, batches)`, in any
/// order) in chunk order, so a partition's rows stay in offset order; returns the files written.
/// It runs on a thread of its own beside the polling, with a runtime of its own for the writer
/// (the run's thread is blocked polling meanwhile).
pub(super) fn write_in_order(
    mut writer: RecordBatchWriter,
    decoded: Receiver<(usize, Vec<RecordBatch>)>,
) -> Result<Vec<Add>, TableError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| delta(DeltaTableError::Generic(e.to_string())))?;
    let written = runtime.block_on(async {
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        for (index, batches) in decoded {
            waiting.insert(index, batches);
            while let Some(batches) = waiting.remove(&next) {
                for batch in batches {
                    writer.write(batch).await?;
                }
                next += 1;
            }
        }
        // The file's last row group and footer, its upload and its stats: a run's tail.
        let flushing = std::time::Instant::now();
        let files = writer.flush().await;
        let ms = flushing.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(flow = "bronze", flush_ms = ms);
        files
    });
    written.map_err(delta)
}

fn delta(source: DeltaTableError) -> TableError {
    TableError::Delta {
        table: TableName::BronzeOrders.to_string(),
        source,
    }
}
