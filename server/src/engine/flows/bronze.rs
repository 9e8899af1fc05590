//! bronze: Kafka -> `bronze_orders` (and `bronze_rejects`). Reads each partition from the offset
//! stored in the table's `txn` actions + 1 up to the end offset seen at the start, and commits the
//! rows with the last offset read per partition in one Delta commit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app::model::FlowRun;
use arrow::array::{
    ArrayRef, Decimal128Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow::record_batch::RecordBatch;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::{FlowError, PartitionRange, SourceRange};
use crate::engine::event::OrderEvent;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{self, TableError, TableName};
use crate::kafka::{Kafka, KafkaError};

/// How long bronze waits for the next message of a range it knows exists.
const STALL_TIMEOUT: Duration = Duration::from_secs(30);

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

/// The new rows and the new rejects, as batches.
pub struct Batches {
    rows: RecordBatch,
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
        let bronze = cx.tables.open_or_create(TableName::BronzeOrders).await?;
        let rejects = cx.tables.open_or_create(TableName::BronzeRejects).await?;
        let ranges = plan(cx, self.kafka, &bronze, &rejects).await?;
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
        let read =
            crate::kafka::blocking(|| read(&reader, &cx.topic, &planned.ranges, ingested_at))?;
        event.figures.rows_read = read.good + read.rejected;
        event.figures.rows_rejected = read.new_rejects;
        Ok(Some(read))
    }

    async fn process(
        &mut self,
        _: &mut Planned,
        read: Read,
        _: &mut FlowRun,
    ) -> Result<Batches, FlowError> {
        Ok(Batches {
            rows: read.rows_batch()?,
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
            tables::append(rejects, vec![batch], progress(TableName::BronzeRejects)).await?;
        }
        event.figures.rows_written = batches.rows.num_rows() as u64;
        let committed = progress(TableName::BronzeOrders);
        let table = tables::append(bronze, vec![batches.rows], committed).await?;
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
    Ok(ranges)
}

/// A landed message that parsed.
struct Landed {
    offset: i64,
    kafka_timestamp: Option<i64>,
    event: OrderEvent,
}

/// A landed message that did not.
struct Rejected {
    partition: i32,
    offset: i64,
    kafka_timestamp: Option<i64>,
    value: String,
    reason: String,
}

/// What one run read, per partition in offset order.
pub struct Read {
    rows: BTreeMap<i32, Vec<Landed>>,
    rejects: Vec<Rejected>,
    ingested_at: i64,
    good: u64,
    rejected: u64,
    new_rejects: u64,
}

fn read(
    reader: &BaseConsumer,
    topic: &str,
    ranges: &[Range],
    ingested_at: i64,
) -> Result<Read, FlowError> {
    let mut out = Read {
        rows: BTreeMap::new(),
        rejects: vec![],
        ingested_at,
        good: 0,
        rejected: 0,
        new_rejects: 0,
    };
    let mut assignment = TopicPartitionList::new();
    // Last offset each partition still owes us.
    let mut owed: BTreeMap<i32, (i64, Option<i64>)> = BTreeMap::new();
    for r in ranges.iter().filter(|r| r.next < r.end) {
        assignment
            .add_partition_offset(topic, r.partition, Offset::Offset(r.next))
            .map_err(KafkaError::from)?;
        owed.insert(r.partition, (r.end - 1, r.rejects_done));
        out.rows
            .insert(r.partition, Vec::with_capacity((r.end - r.next) as usize));
    }
    if owed.is_empty() {
        return Ok(out);
    }
    reader.assign(&assignment).map_err(KafkaError::from)?;
    let mut position: BTreeMap<i32, i64> =
        ranges.iter().map(|r| (r.partition, r.next - 1)).collect();
    let mut last_message = Instant::now();
    while !owed.is_empty() {
        let Some(message) = reader.poll(Duration::from_millis(500)) else {
            if last_message.elapsed() > STALL_TIMEOUT {
                let (&partition, &(end, _)) = owed.iter().next().expect("owed is not empty");
                return Err(FlowError::Stalled {
                    topic: topic.into(),
                    partition,
                    at: position.get(&partition).copied().unwrap_or(-1) + 1,
                    end: end + 1,
                });
            }
            continue;
        };
        let message = message.map_err(KafkaError::from)?;
        last_message = Instant::now();
        let partition = message.partition();
        let offset = message.offset();
        let Some(&(last, rejects_done)) = owed.get(&partition) else {
            continue;
        };
        if offset > last {
            continue;
        }
        position.insert(partition, offset);
        let kafka_timestamp = message.timestamp().to_millis().map(|ms| ms * 1000);
        let value = message.payload().unwrap_or_default();
        match OrderEvent::parse(value) {
            Ok(event) => {
                out.good += 1;
                if let Some(rows) = out.rows.get_mut(&partition) {
                    rows.push(Landed {
                        offset,
                        kafka_timestamp,
                        event,
                    });
                }
            }
            Err(invalid) => {
                out.rejected += 1;
                if rejects_done.is_none_or(|done| offset > done) {
                    out.new_rejects += 1;
                    out.rejects.push(Rejected {
                        partition,
                        offset,
                        kafka_timestamp,
                        value: String::from_utf8_lossy(value).into_owned(),
                        reason: invalid.to_string(),
                    });
                }
            }
        }
        if offset == last {
            owed.remove(&partition);
        }
    }
    Ok(out)
}

/// The columns every landed message has in both bronze tables (SPEC §2).
struct LandedColumns {
    partition: Int32Builder,
    offset: Int64Builder,
    kafka_timestamp: TimestampMicrosecondBuilder,
    ingested_at: TimestampMicrosecondBuilder,
}

impl LandedColumns {
    fn with_capacity(n: usize) -> Self {
        Self {
            partition: Int32Builder::with_capacity(n),
            offset: Int64Builder::with_capacity(n),
            kafka_timestamp: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
            ingested_at: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
        }
    }

    fn append(
        &mut self,
        partition: i32,
        offset: i64,
        kafka_timestamp: Option<i64>,
        ingested_at: i64,
    ) {
        self.partition.append_value(partition);
        self.offset.append_value(offset);
        self.kafka_timestamp.append_option(kafka_timestamp);
        self.ingested_at.append_value(ingested_at);
    }

    /// The four columns, followed by the table's own.
    fn finish(mut self, rest: Vec<ArrayRef>) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.partition.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.kafka_timestamp.finish()),
            Arc::new(self.ingested_at.finish()),
        ];
        columns.extend(rest);
        columns
    }
}

impl Read {
    fn rows_batch(&self) -> Result<RecordBatch, TableError> {
        let n: usize = self.rows.values().map(Vec::len).sum();
        let mut landed = LandedColumns::with_capacity(n);
        let mut order_id = Int64Builder::with_capacity(n);
        let mut customer = StringBuilder::with_capacity(n, n * 4);
        let mut status = StringBuilder::with_capacity(n, n * 6);
        let mut amount = Decimal128Builder::with_capacity(n)
            .with_precision_and_scale(18, 2)
            .map_err(arrow_err)?;
        let mut event_time = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
        for (&p, rows) in &self.rows {
            for row in rows {
                landed.append(p, row.offset, row.kafka_timestamp, self.ingested_at);
                order_id.append_value(row.event.order_id);
                customer.append_value(&row.event.customer_id);
                status.append_value(&row.event.status);
                amount.append_value(row.event.amount_cents);
                event_time.append_value(row.event.event_time_micros);
            }
        }
        let columns = landed.finish(vec![
            Arc::new(order_id.finish()),
            Arc::new(customer.finish()),
            Arc::new(status.finish()),
            Arc::new(amount.finish()),
            Arc::new(event_time.finish()),
        ]);
        RecordBatch::try_new(TableName::BronzeOrders.schema(), columns).map_err(arrow_err)
    }

    fn rejects_batch(&self) -> Result<RecordBatch, TableError> {
        let mut landed = LandedColumns::with_capacity(self.rejects.len());
        let mut value = StringBuilder::new();
        let mut reason = StringBuilder::new();
        let mut sorted: Vec<&Rejected> = self.rejects.iter().collect();
        sorted.sort_by_key(|r| (r.partition, r.offset));
        for r in sorted {
            landed.append(r.partition, r.offset, r.kafka_timestamp, self.ingested_at);
            value.append_value(&r.value);
            reason.append_value(&r.reason);
        }
        let columns = landed.finish(vec![Arc::new(value.finish()), Arc::new(reason.finish())]);
        RecordBatch::try_new(TableName::BronzeRejects.schema(), columns).map_err(arrow_err)
    }
}

fn arrow_err(source: arrow::error::ArrowError) -> TableError {
    TableError::Arrow {
        table: "bronze_orders".into(),
        source,
    }
}
