//! A flow's `read_kafka` (PIPELINES §8): the topic mapped to the lab's own, a missing topic or
//! another broker refused, and under `STREAM` only the messages after the offsets the flow's last
//! commit stored (its progress, committed with its rows: exactly once across crashes).

use std::collections::BTreeMap;

use arrow::array::RecordBatch;

use crate::engine::declarative::sql::{Read, Starting};
use crate::engine::flow::{FlowContext, FlowError, Refusal};
use crate::engine::streaming::kafka as kafka_source;

/// Refuses a `bootstrapServers` other than the lab's broker: a learner's SQL connects nowhere
/// else (Databricks needs the option; Reckon knows its broker).
pub fn check_servers(cx: &FlowContext, servers: Option<&str>) -> Result<(), String> {
    match servers {
        Some(asked) if asked.trim() != cx.brokers => Err(format!(
            "read_kafka: bootstrapServers '{asked}' is not this lab's broker; leave it out \
             (Reckon reads the lab's own broker, {})",
            cx.brokers
        )),
        _ => Ok(()),
    }
}

/// What one `read_kafka` read this run.
pub struct KafkaRead {
    pub rows: RecordBatch,
    /// Per partition, the last offset read (or where a `latest` start left it): the progress to
    /// commit under `STREAM`.
    pub offsets: BTreeMap<i32, i64>,
    /// The ranges read, for the run's event.
    pub ranges: Vec<app::model::PartitionRange>,
}

/// Everything a `STREAM read_kafka` of `topic` has read: each partition from its log's start to
/// the offset `stored` holds (the flow's last commit), for the check's recount; after the
/// offsets `after` holds, when given (what an earlier definition read is left out).
pub fn read_so_far(
    cx: &FlowContext,
    (topic, _, servers): (&str, Starting, Option<&str>),
    stored: &BTreeMap<i32, i64>,
    after: Option<&BTreeMap<i32, i64>>,
) -> Result<KafkaRead, FlowError> {
    let (kafka, lab_topic) = topic_of(cx, topic, servers)?;
    let asked: Vec<(i32, Option<i64>)> = stored.keys().map(|p| (*p, None)).collect();
    let mut ranges = kafka_source::ranges(kafka, &lab_topic, &asked)?;
    for range in &mut ranges {
        range.end = range
            .end
            .min(stored.get(&range.partition).map_or(0, |s| s + 1));
        // Read under an earlier definition: left to that definition's part of the check.
        if let Some(done) = after.and_then(|a| a.get(&range.partition)) {
            range.next = range.next.max(done + 1).min(range.end);
        }
    }
    let rows = kafka_source::messages(kafka, &lab_topic, topic, &ranges)?;
    Ok(KafkaRead {
        rows,
        offsets: stored.clone(),
        ranges: vec![],
    })
}

/// The lab's broker and its name for `topic`; another broker or a missing topic refused.
fn topic_of<'c>(
    cx: &'c FlowContext,
    topic: &str,
    servers: Option<&str>,
) -> Result<(&'c crate::kafka::Kafka, String), FlowError> {
    check_servers(cx, servers).map_err(Refusal::NotFound)?;
    let kafka = cx.kafka.as_deref().ok_or_else(|| {
        Refusal::NotFound("read_kafka: this lab has no Kafka broker to read".into())
    })?;
    Ok((kafka, cx.kafka_topic(topic)))
}

/// Reads `topic` for `read`: the whole topic as it is now, or under `STREAM` the messages after
/// `stored` (per partition, the last offset the flow committed).
pub fn read(
    cx: &FlowContext,
    read: &Read,
    (topic, starting, servers): (&str, Starting, Option<&str>),
    stored: &BTreeMap<i32, i64>,
) -> Result<KafkaRead, FlowError> {
    let (kafka, lab_topic) = topic_of(cx, topic, servers)?;
    let partitions = kafka.partitions(&lab_topic)?.ok_or_else(|| {
        // Never created here: a typo must not make a topic.
        Refusal::NotFound(format!(
            "read_kafka: topic '{topic}' does not exist (send to it first: the Produce page, or \
             `reckon produce`)"
        ))
    })?;
    let empty = BTreeMap::new();
    let stored = if read.stream { stored } else { &empty };
    let asked: Vec<(i32, Option<i64>)> = partitions
        .iter()
        .map(|p| (*p, stored.get(p).copied()))
        .collect();
    let mut ranges = kafka_source::ranges(kafka, &lab_topic, &asked)?;
    if starting == Starting::Latest {
        // Only what is sent after the flow first read the partition.
        for range in ranges
            .iter_mut()
            .filter(|r| !stored.contains_key(&r.partition))
        {
            range.next = range.end;
        }
    }
    let rows = kafka_source::messages(kafka, &lab_topic, topic, &ranges)?;
    let mut offsets = stored.clone();
    for range in &ranges {
        // The last offset read, or where a `latest` start left it.
        if range.end > 0 && (range.has_work() || !offsets.contains_key(&range.partition)) {
            offsets.insert(range.partition, range.end - 1);
        }
    }
    let ranges = ranges
        .iter()
        .filter(|r| r.has_work())
        .map(|r| app::model::PartitionRange {
            partition: r.partition,
            first: r.next,
            last: r.end - 1,
        })
        .collect();
    Ok(KafkaRead {
        rows,
        offsets,
        ranges,
    })
}
