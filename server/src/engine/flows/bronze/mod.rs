//! bronze: Kafka -> `bronze_orders` (and `bronze_rejects`). Reads each partition from the offset
//! stored in the table's `txn` actions + 1 up to the end offset seen at the start, and commits the
//! rows with the last offset read per partition in one Delta commit. `read.rs` polls the topic
//! while decoders (`batch.rs` builds their Arrow batches) and a writer (`write.rs`, the run's
//! Parquet file) work beside it.

mod batch;
mod read;
mod write;

use app::model::FlowRun;
use arrow::record_batch::RecordBatch;
use deltalake::DeltaTable;
use deltalake::kernel::{Add, Transaction};

use super::{FlowError, PartitionRange, SourceRange};
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{self, TableName};
use crate::kafka::Kafka;
use read::Read;

/// The `txn` app id under which bronze stores the last offset read from a partition.
pub fn app_id(table: TableName, topic: &str, partition: i32) -> String {
    format!("{table}/{topic}/{partition}")
}

/// One partition's work for this run: offsets `next..end`, and the rejects already committed.
struct Range {
    partition: i32,
    next: i64,
    end: i64,
    /// Rejects up to this offset are in `bronze_rejects` already (a run crashed after writing them).
    rejects_done: Option<i64>,
}

/// The bronze flow, reading the lab's topic through `kafka`.
pub struct Bronze<'a> {
    pub kafka: &'a Kafka,
}

/// Both tables, and each partition's range for this run.
pub struct Planned {
    bronze: DeltaTable,
    rejects: DeltaTable,
    ranges: Vec<Range>,
}

/// The files the new rows were written to, and the new rejects as a batch.
pub struct Batches {
    files: Vec<Add>,
    rows: u64,
    rejects: Option<RecordBatch>,
}

impl Planned {
    fn has_work(&self) -> bool {
        self.ranges.iter().any(|r| r.next < r.end)
    }
}

/// The last offset read per partition, as `txn` actions of `table`.
fn progress(ranges: &[Range], table: TableName, topic: &str) -> Vec<Transaction> {
    ranges
        .iter()
        .filter(|r| r.next < r.end)
        .map(|r| Transaction::new(app_id(table, topic, r.partition), r.end - 1))
        .collect()
}

#[async_trait::async_trait]
impl Flow for Bronze<'_> {
    type State = Planned;
    type Input = Read;
    type Output = Batches;
    type Done = ();

    fn name(&self) -> &str {
        "bronze"
    }

    fn target(&self) -> Option<&str> {
        Some(TableName::BronzeOrders.as_str())
    }

    async fn restore(&mut self, cx: &FlowContext, _: &mut FlowRun) -> Result<Planned, FlowError> {
        let started = std::time::Instant::now();
        let bronze = cx.tables.open_or_create(TableName::BronzeOrders).await?;
        let rejects = cx.tables.open_or_create(TableName::BronzeRejects).await?;
        let opened = started.elapsed();
        let ranges = plan(cx, self.kafka, &bronze, &rejects).await?;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            flow = "bronze",
            tables_ms = ms(opened),
            planned_ms = ms(started.elapsed() - opened)
        );
        Ok(Planned {
            bronze,
            rejects,
            ranges,
        })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        planned: &Planned,
        event: &mut FlowRun,
    ) -> Result<Option<Read>, FlowError> {
        if !planned.has_work() {
            return Ok(None);
        }
        let ingested_at = chrono::Utc::now().timestamp_micros();
        let reader = self.kafka.reader()?;
        let writer = tables::writer(&planned.bronze)?;
        let read = crate::kafka::blocking(|| {
            read::read(&reader, &cx.topic, &planned.ranges, ingested_at, writer)
        })?;
        event.figures.rows_read = read.good + read.rejected;
        event.figures.rows_rejected = read.new_rejects;
        Ok(Some(read))
    }

    async fn process(
        &mut self,
        _: &mut Planned,
        mut read: Read,
        _: &mut FlowRun,
    ) -> Result<Batches, FlowError> {
        Ok(Batches {
            files: std::mem::take(&mut read.files),
            rows: read.good,
            rejects: (read.new_rejects > 0)
                .then(|| read.rejects_batch())
                .transpose()?,
        })
    }

    async fn commit(
        &mut self,
        cx: &FlowContext,
        planned: Planned,
        batches: Batches,
        event: &mut FlowRun,
    ) -> Result<(), FlowError> {
        let topic = &cx.topic;
        let Planned {
            bronze,
            rejects,
            ranges,
        } = planned;
        let progress = |table| progress(&ranges, table, topic);
        if let Some(batch) = batches.rejects {
            // Rejects first: if the bronze commit below never happens, the rerun skips what is here.
            let rejects =
                tables::append(rejects, vec![batch], progress(TableName::BronzeRejects)).await?;
            cx.tables.keep_committed(&rejects);
        }
        event.figures.rows_written = batches.rows;
        let progress = progress(TableName::BronzeOrders);
        let table = tables::commit_files(bronze, batches.files, progress).await?;
        cx.tables.keep_committed(&table);
        event.figures.table_version = Some(tables::version(&table));
        event.figures.source = SourceRange::Offsets {
            topic: topic.clone(),
            partitions: ranges
                .iter()
                .filter(|r| r.next < r.end)
                .map(|r| PartitionRange {
                    partition: r.partition,
                    first: r.next,
                    last: r.end - 1,
                })
                .collect(),
        };
        Ok(())
    }
}

/// Works out each partition's range, refusing offsets that the topic's log no longer matches.
async fn plan(
    cx: &FlowContext,
    kafka: &Kafka,
    bronze: &DeltaTable,
    rejects: &DeltaTable,
) -> Result<Vec<Range>, FlowError> {
    let topic = &cx.topic;
    let partitions = match kafka.partitions(topic)? {
        Some(p) => p,
        None => {
            if tables::txn_version(bronze, &app_id(TableName::BronzeOrders, topic, 0))
                .await?
                .is_some()
            {
                return Err(FlowError::TopicMissing {
                    topic: topic.clone(),
                });
            }
            kafka.ensure_topic(topic, cx.partitions).await?
        }
    };
    let listed = std::time::Instant::now();
    let mut ranges = Vec::with_capacity(partitions.len());
    for partition in partitions {
        let stored =
            tables::txn_version(bronze, &app_id(TableName::BronzeOrders, topic, partition)).await?;
        let (log_start, log_end) = kafka.log_offsets(topic, partition)?;
        let next = stored.map_or(log_start, |s| s + 1);
        let out_of_range = |place| FlowError::OffsetsOutOfRange {
            topic: topic.clone(),
            partition,
            stored: stored.unwrap_or(-1),
            place,
            log_start,
            log_end,
        };
        if next > log_end {
            return Err(out_of_range("ends before it"));
        }
        if next < log_start {
            return Err(out_of_range("starts after it"));
        }
        let rejects_done =
            tables::txn_version(rejects, &app_id(TableName::BronzeRejects, topic, partition))
                .await?;
        ranges.push(Range {
            partition,
            next,
            end: log_end,
            rejects_done,
        });
    }
    tracing::debug!(
        flow = "bronze",
        ranges = ranges.len(),
        offsets_ms = listed.elapsed().as_secs_f64() * 1e3
    );
    Ok(ranges)
}
