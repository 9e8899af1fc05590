//! A flow's `read_kafka` (PIPELINES §8): the topic mapped to the lab's own, a missing topic or
//! another broker refused, and under `STREAM` only the messages after the offsets the flow's last
//! commit stored (its [`Progress`], committed with its rows: exactly once across crashes).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::sources::{Progress, Registered};
use crate::engine::declarative::sql::{Read, Starting};
use crate::engine::flow::{FlowContext, FlowError, Refusal};
use crate::engine::streaming::kafka as kafka_source;
use crate::engine::tables::TableError;

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

/// Registers `read` of `topic` in `ctx`: the whole topic as it is now, or under `STREAM` the
/// messages since the flow's stored offsets; `progress` moves to what this run read.
pub async fn register(
    ctx: &SessionContext,
    cx: &FlowContext,
    read: &Read,
    (topic, starting, servers): (&str, Starting, Option<&str>),
    progress: &mut Progress,
    out: &mut Registered,
) -> Result<(), FlowError> {
    check_servers(cx, servers).map_err(Refusal::NotFound)?;
    let kafka = cx.kafka.as_ref().ok_or_else(|| {
        Refusal::NotFound("read_kafka: this lab has no Kafka broker to read".into())
    })?;
    let lab_topic = cx.kafka_topic(topic);
    let partitions = kafka.partitions(&lab_topic)?.ok_or_else(|| {
        // Never created here: a typo must not make a topic.
        Refusal::NotFound(format!(
            "read_kafka: topic '{topic}' does not exist (send to it first: the Produce page, or \
             `reckon produce`)"
        ))
    })?;
    let stored: BTreeMap<i32, i64> = match read.stream {
        true => progress.kafka.get(topic).cloned().unwrap_or_default(),
        false => BTreeMap::new(),
    };
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
    let batch = kafka_source::messages(kafka, &lab_topic, topic, &ranges)?;
    if read.stream {
        let offsets = progress.kafka.entry(topic.to_string()).or_default();
        for range in &ranges {
            // The last offset read, or where a `latest` start left it.
            if range.end > 0 && (range.has_work() || !offsets.contains_key(&range.partition)) {
                offsets.insert(range.partition, range.end - 1);
            }
        }
        for range in ranges.iter().filter(|r| r.has_work()) {
            out.offsets.push(app::model::PartitionRange {
                partition: range.partition,
                first: range.next,
                last: range.end - 1,
            });
        }
    }
    out.anything_new |= batch.num_rows() > 0;
    out.new_rows += batch.num_rows() as u64;
    out.bytes += super::session::size(&batch);
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(|source| {
        TableError::Query {
            table: format!("read_kafka('{topic}')"),
            source,
        }
    })?;
    ctx.register_table(read.name.as_str(), Arc::new(table))
        .map_err(|source| TableError::Query {
            table: format!("read_kafka('{topic}')"),
            source,
        })?;
    Ok(())
}
