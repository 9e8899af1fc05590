//! bronze: Kafka -> `bronze_orders` (and `bronze_rejects`). Reads each partition from the offset
//! stored in the table's `txn` actions + 1 up to the end offset seen at the start, and commits the
//! rows with the last offset read per partition in one Delta commit. `read.rs` polls the topic
//! while decoders (`batch.rs` builds their Arrow batches) and a writer (`write.rs`, the run's
//! Parquet file) work beside it.
//!
//! The round trips to the broker overlap the local work: the topic's partitions are asked while
//! the tables open, and a run whose partitions all have a stored offset assigns its reader there
//! before it asks where the logs end, so the first fetch is on its way during that question.

mod batch;
mod read;
mod write;

use std::sync::Arc;

use app::model::FlowRun;
use arrow::record_batch::RecordBatch;
use deltalake::DeltaTable;
use deltalake::kernel::{Add, Transaction};

use super::{PartitionRange, SourceRange};
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::streaming::kafka as kafka_source;
use crate::engine::tables::{self, TableName};
use crate::kafka::Kafka;
use read::Read;

/// The `txn` app id under which bronze stores the last offset read from a partition.
pub fn app_id(table: TableName, topic: &str, partition: i32) -> String {
    format!("{table}/{topic}/{partition}")
}

/// Where one partition stands before this run, from the tables.
struct Start {
    partition: i32,
    /// The last offset stored; `None` before the partition's first run.
    stored: Option<i64>,
    /// Rejects up to this offset are in `bronze_rejects` already (a run crashed after writing them).
    rejects_done: Option<i64>,
}

/// One partition's work for this run: offsets `next..end`, and the rejects already committed.
struct Range {
    partition: i32,
    next: i64,
    end: i64,
    rejects_done: Option<i64>,
}

/// The bronze flow, reading the lab's topic through `kafka`.
pub struct Bronze {
    pub kafka: Arc<Kafka>,
}

/// Both tables, and where each partition stands.
pub struct Planned {
    bronze: DeltaTable,
    rejects: DeltaTable,
    starts: Vec<Start>,
}

/// What a run read, with the ranges it read.
pub struct Loaded {
    ranges: Vec<Range>,
    read: Read,
}

/// The files the new rows were written to, the new rejects as a batch, and the ranges read.
pub struct Batches {
    ranges: Vec<Range>,
    files: Vec<Add>,
    rows: u64,
    rejects: Option<RecordBatch>,
}

/// The last offset read per partition, as `txn` actions of `table`.
fn progress(ranges: &[Range], table: TableName, topic: &str) -> Vec<Transaction> {
    ranges
        .iter()
        .filter(|r| r.next < r.end)
        .map(|r| Transaction::new(app_id(table, topic, r.partition), r.end - 1))
        .collect()
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[async_trait::async_trait]
impl Flow for Bronze {
    type State = Planned;
    type Input = Loaded;
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
        // The broker's answer is on its way while the tables open.
        let (kafka, topic) = (self.kafka.clone(), cx.topic.clone());
        let listing = tokio::task::spawn_blocking(move || kafka.partitions(&topic));
        let (bronze, rejects) = tokio::try_join!(
            cx.tables.open_or_create(TableName::BronzeOrders),
            cx.tables.open_or_create(TableName::BronzeRejects)
        )?;
        let opened = started.elapsed();
        let listed = listing
            .await
            .expect("listing the topic's partitions panicked")?;
        let starts = starts(cx, &self.kafka, listed, &bronze, &rejects).await?;
        tracing::debug!(
            flow = "bronze",
            tables_ms = ms(opened),
            planned_ms = ms(started.elapsed())
        );
        Ok(Planned {
            bronze,
            rejects,
            starts,
        })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        planned: &Planned,
        event: &mut FlowRun,
    ) -> Result<Option<Loaded>, FlowError> {
        let started = std::time::Instant::now();
        let reader = self.kafka.reader()?;
        // Resuming every partition where it stopped, the reader starts fetching at once; a
        // partition's first run starts at its log's start, which the answer below tells.
        let early = planned.starts.iter().all(|s| s.stored.is_some());
        if early {
            let at = planned.starts.iter();
            let at = at.filter_map(|s| Some((s.partition, s.stored? + 1)));
            kafka_source::assign(&reader, &cx.topic, at)?;
        }
        let ranges = match self.ranges(&cx.topic, &planned.starts) {
            Ok(ranges) => ranges,
            Err(refused) => {
                // It may have fetched from where the log does not reach, and hold that error.
                reader.discard();
                return Err(refused);
            }
        };
        let asked = started.elapsed();
        if !ranges.iter().any(|r| r.next < r.end) {
            return Ok(None);
        }
        if !early {
            let at = ranges.iter().map(|r| (r.partition, r.next));
            kafka_source::assign(&reader, &cx.topic, at)?;
        }
        tracing::debug!(flow = "bronze", early, log_ms = ms(asked));
        let ingested_at = chrono::Utc::now().timestamp_micros();
        let writer = tables::writer(&planned.bronze)?;
        let read =
            crate::kafka::blocking(|| read::read(&reader, &cx.topic, &ranges, ingested_at, writer));
        let read = match read {
            Ok(read) => read,
            Err(failed) => {
                // Not put back for another run: it may hold more of what failed this one.
                reader.discard();
                return Err(failed);
            }
        };
        event.figures.rows_read = read.good + read.rejected;
        event.figures.rows_rejected = read.new_rejects;
        Ok(Some(Loaded { ranges, read }))
    }

    async fn process(
        &mut self,
        _: &mut Planned,
        loaded: Loaded,
        _: &mut FlowRun,
    ) -> Result<Batches, FlowError> {
        let Loaded { ranges, mut read } = loaded;
        Ok(Batches {
            ranges,
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
            bronze, rejects, ..
        } = planned;
        let ranges = &batches.ranges;
        let progress = |table| progress(ranges, table, topic);
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

impl Bronze {
    /// Each partition's range for this run: from its stored offset + 1 (or its log's start) to
    /// its log's end, refusing offsets that the topic's log no longer matches (one rule for
    /// bronze and `read_kafka`: `engine/streaming/kafka.rs`).
    fn ranges(&self, topic: &str, starts: &[Start]) -> Result<Vec<Range>, FlowError> {
        let stored: Vec<(i32, Option<i64>)> =
            starts.iter().map(|s| (s.partition, s.stored)).collect();
        let ranges = kafka_source::ranges(&self.kafka, topic, &stored)?;
        Ok(ranges
            .into_iter()
            .zip(starts)
            .map(|(range, start)| Range {
                partition: range.partition,
                next: range.next,
                end: range.end,
                rejects_done: start.rejects_done,
            })
            .collect())
    }
}

/// Where each partition of the topic stands in the tables. A topic that is gone while bronze
/// holds offsets of it is refused; one never read is made.
async fn starts(
    cx: &FlowContext,
    kafka: &Kafka,
    listed: Option<Vec<i32>>,
    bronze: &DeltaTable,
    rejects: &DeltaTable,
) -> Result<Vec<Start>, FlowError> {
    let topic = &cx.topic;
    let partitions = match listed {
        Some(p) => p,
        None => {
            // Bronze holding offsets of any partition of it: the topic is gone, not new (its
            // events may have gone to some partitions only).
            for partition in 0..cx.partitions.max(1) {
                let stored = app_id(TableName::BronzeOrders, topic, partition);
                if cx.tables.txn_version(bronze, &stored).await?.is_some() {
                    return Err(FlowError::TopicMissing {
                        topic: topic.clone(),
                    });
                }
            }
            kafka.ensure_topic(topic, cx.partitions).await?
        }
    };
    let mut starts = Vec::with_capacity(partitions.len());
    for partition in partitions {
        let stored = cx
            .tables
            .txn_version(bronze, &app_id(TableName::BronzeOrders, topic, partition))
            .await?;
        let rejects_done = cx
            .tables
            .txn_version(rejects, &app_id(TableName::BronzeRejects, topic, partition))
            .await?;
        starts.push(Start {
            partition,
            stored,
            rejects_done,
        });
    }
    Ok(starts)
}
