//! Reading a Kafka topic exactly once, for the course's bronze and a project's `read_kafka`
//! (PIPELINES §8): each partition from the offset its table last committed + 1 (its log's start
//! before its first read) to the end its log had when the run asked, the offsets committed with
//! the rows. A stored offset the log no longer matches (the topic made again, or emptied) is
//! refused here, for both, never read past.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    BinaryBuilder, Int32Builder, Int64Builder, RecordBatch, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, Timestamp};
use rdkafka::{Offset, TopicPartitionList};

use crate::engine::flow::FlowError;
use crate::kafka::{Kafka, KafkaError};

/// How long a read waits for the next message of a range it knows exists.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One partition's work for a run: offsets `next..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub partition: i32,
    pub next: i64,
    pub end: i64,
}

impl Range {
    pub fn has_work(&self) -> bool {
        self.next < self.end
    }
}

/// Each partition's range: from its stored offset + 1 (or its log's start) to its log's end,
/// refusing a stored offset the log no longer matches. `stored` is (partition, last offset read).
pub fn ranges(
    kafka: &Kafka,
    topic: &str,
    stored: &[(i32, Option<i64>)],
) -> Result<Vec<Range>, FlowError> {
    let partitions: Vec<i32> = stored.iter().map(|(p, _)| *p).collect();
    let logs = kafka.log_ranges(topic, &partitions)?;
    stored
        .iter()
        .zip(logs)
        .map(|(&(partition, stored), (log_start, log_end))| {
            let next = stored.map_or(log_start, |s| s + 1);
            let out_of_range = |place| FlowError::OffsetsOutOfRange {
                topic: topic.into(),
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
            Ok(Range {
                partition,
                next,
                end: log_end,
            })
        })
        .collect()
}

/// Assigns `reader` the partitions of `topic` at the given offsets: it starts fetching there.
pub fn assign(
    reader: &BaseConsumer,
    topic: &str,
    at: impl Iterator<Item = (i32, i64)>,
) -> Result<(), FlowError> {
    let mut assignment = TopicPartitionList::new();
    for (partition, offset) in at {
        assignment
            .add_partition_offset(topic, partition, Offset::Offset(offset))
            .map_err(KafkaError::from)?;
    }
    Ok(reader.assign(&assignment).map_err(KafkaError::from)?)
}

/// The columns `read_kafka` gives, as Databricks documents them.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, true),
    ]))
}

/// Every message of `ranges`, in partition and offset order within a partition, as
/// [`schema`]'s columns; `shown` is the topic's name in the `topic` column (the learner's
/// name, not the lab's).
pub fn messages(
    kafka: &Kafka,
    topic: &str,
    shown: &str,
    ranges: &[Range],
) -> Result<RecordBatch, FlowError> {
    let owed: Vec<Range> = ranges.iter().copied().filter(Range::has_work).collect();
    let total: i64 = owed.iter().map(|r| r.end - r.next).sum();
    let mut columns = Columns::with_capacity(usize::try_from(total).unwrap_or(0).min(1 << 20));
    if !owed.is_empty() {
        let reader = kafka.reader()?;
        assign(&reader, topic, owed.iter().map(|r| (r.partition, r.next)))?;
        let polled = crate::kafka::blocking(|| poll(&reader, topic, shown, &owed, &mut columns));
        if polled.is_err() {
            // It may hold more of what failed: never put back for another read.
            reader.discard();
        }
        polled?;
    }
    columns.finish()
}

struct Columns {
    key: BinaryBuilder,
    value: BinaryBuilder,
    topic: StringBuilder,
    partition: Int32Builder,
    offset: Int64Builder,
    timestamp: TimestampMicrosecondBuilder,
    kind: Int32Builder,
}

impl Columns {
    fn with_capacity(n: usize) -> Self {
        Self {
            key: BinaryBuilder::with_capacity(n, 0),
            value: BinaryBuilder::with_capacity(n, 0),
            topic: StringBuilder::with_capacity(n, 0),
            partition: Int32Builder::with_capacity(n),
            offset: Int64Builder::with_capacity(n),
            timestamp: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
            kind: Int32Builder::with_capacity(n),
        }
    }

    fn finish(mut self) -> Result<RecordBatch, FlowError> {
        let columns: Vec<arrow::array::ArrayRef> = vec![
            Arc::new(self.key.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.topic.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.timestamp.finish()),
            Arc::new(self.kind.finish()),
        ];
        RecordBatch::try_new(schema(), columns).map_err(|source| {
            FlowError::Table(crate::engine::tables::TableError::Arrow {
                table: "read_kafka".into(),
                source,
            })
        })
    }
}

/// Polls each range to its end, appending its messages to `columns`.
fn poll(
    reader: &BaseConsumer,
    topic: &str,
    shown: &str,
    ranges: &[Range],
    columns: &mut Columns,
) -> Result<(), FlowError> {
    // Per partition: the offset read last.
    let mut at: Vec<(i32, i64, i64)> = ranges
        .iter()
        .map(|r| (r.partition, r.next - 1, r.end - 1))
        .collect();
    let mut idle_since = None;
    while let Some(&(partition, last_read, _)) = at.iter().find(|(_, read, last)| read < last) {
        let Some(message) = reader.poll(Duration::from_millis(200)) else {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() > STALL_TIMEOUT {
                let end = at
                    .iter()
                    .find(|(p, _, _)| *p == partition)
                    .map_or(0, |a| a.2);
                return Err(FlowError::Stalled {
                    topic: topic.into(),
                    partition,
                    at: last_read + 1,
                    end: end + 1,
                });
            }
            continue;
        };
        idle_since = None;
        let message = message.map_err(KafkaError::from)?;
        let Some(place) = at.iter_mut().find(|(p, _, _)| *p == message.partition()) else {
            continue;
        };
        // Past the range's end (a send since the run asked) or a repeat: not this run's.
        if message.offset() <= place.1 || message.offset() > place.2 {
            continue;
        }
        place.1 = message.offset();
        columns.key.append_option(message.key());
        columns.value.append_option(message.payload());
        columns.topic.append_value(shown);
        columns.partition.append_value(message.partition());
        columns.offset.append_value(message.offset());
        let (time, kind) = match message.timestamp() {
            Timestamp::CreateTime(ms) => (Some(ms * 1000), Some(0)),
            Timestamp::LogAppendTime(ms) => (Some(ms * 1000), Some(1)),
            Timestamp::NotAvailable => (None, None),
        };
        columns.timestamp.append_option(time);
        columns.kind.append_option(kind);
    }
    Ok(())
}
