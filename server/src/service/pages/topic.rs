//! The topic page: the lab's partitions, the offsets bronze stored, the lag, the last messages,
//! and the lab's consumer groups beside them.

use std::collections::HashMap;

use app::api::ApiError;
use app::model::{PartitionView, TopicMessage, TopicView};

use crate::engine::course::bronze;
use crate::engine::tables::TableName;
use crate::kafka::Kafka;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// Messages the topic page shows per partition.
const MESSAGES_SHOWN: i64 = 5;

/// The topic's partitions, the offsets bronze stored, the lag, the last messages.
pub async fn page(lab: &Lab) -> Result<TopicView, ApiError> {
    let kafka = lab.kafka().await.map_err(failed)?;
    let topic = lab.config.topic.clone();
    let mut view = TopicView {
        topic: topic.clone(),
        brokers: kafka.brokers().to_string(),
        partitions: None,
        groups: vec![],
    };
    let Some(offsets) = partition_offsets(lab, &kafka).await? else {
        return Ok(view);
    };
    let logs: Vec<(i32, i64, i64)> = offsets
        .iter()
        .map(|p| (p.partition, p.log_start, p.log_end))
        .collect();
    view.groups = super::consumers::groups(lab, &kafka, &logs)?;
    let mut shown = vec![];
    for p in offsets {
        let last_messages = kafka
            .last_messages(
                &topic,
                p.partition,
                (p.log_start, p.log_end),
                MESSAGES_SHOWN,
            )
            .map_err(failed)?
            .into_iter()
            .map(|(offset, key, value)| TopicMessage { offset, key, value })
            .collect();
        shown.push(PartitionView {
            partition: p.partition,
            log_start: p.log_start,
            log_end: p.log_end,
            bronze_offset: p.bronze_offset,
            lag: p.lag(),
            last_messages,
        });
    }
    view.partitions = Some(shown);
    Ok(view)
}

/// One partition of the lab's topic: its log and how far bronze has read it.
struct PartitionOffsets {
    partition: i32,
    log_start: i64,
    log_end: i64,
    /// The last offset bronze stored (rows or rejects), `None` before it read any.
    bronze_offset: Option<i64>,
}

impl PartitionOffsets {
    /// Messages the log holds that bronze has not read yet.
    fn lag(&self) -> i64 {
        let next = self
            .bronze_offset
            .map_or(self.log_start, |o| (o + 1).max(self.log_start));
        (self.log_end - next).max(0)
    }
}

/// Every partition of the lab's topic with its log and bronze's offset; `None` without a topic.
async fn partition_offsets(
    lab: &Lab,
    kafka: &Kafka,
) -> Result<Option<Vec<PartitionOffsets>>, ApiError> {
    let topic = &lab.config.topic;
    let Some(partitions) = kafka.partitions(topic).map_err(failed)? else {
        return Ok(None);
    };
    let stored = stored_offsets(lab, &partitions).await?;
    let ranges = kafka.log_ranges(topic, &partitions).map_err(failed)?;
    let out = partitions
        .into_iter()
        .zip(ranges)
        .map(|(partition, (log_start, log_end))| PartitionOffsets {
            partition,
            log_start,
            log_end,
            bronze_offset: stored.get(&partition).copied().flatten(),
        })
        .collect();
    Ok(Some(out))
}

/// The last offset bronze stored per partition (rows or rejects, whichever is further).
async fn stored_offsets(
    lab: &Lab,
    partitions: &[i32],
) -> Result<HashMap<i32, Option<i64>>, ApiError> {
    let mut stored: HashMap<i32, Option<i64>> = partitions.iter().map(|p| (*p, None)).collect();
    for name in [TableName::BronzeOrders, TableName::BronzeRejects] {
        let Some(table) = lab.tables.open(name).await.map_err(failed)? else {
            continue;
        };
        for p in partitions {
            let app_id = bronze::app_id(name, &lab.config.topic, *p);
            if let Some(offset) = lab
                .tables
                .txn_version(&table, &app_id)
                .await
                .map_err(failed)?
            {
                let entry = stored.entry(*p).or_default();
                *entry = Some(entry.map_or(offset, |o| o.max(offset)));
            }
        }
    }
    Ok(stored)
}

/// Messages the topic holds and how many bronze has not read; `None` without a topic.
pub async fn counts(lab: &Lab) -> Result<Option<(i64, i64)>, ApiError> {
    let kafka = lab.kafka().await.map_err(failed)?;
    let Some(offsets) = partition_offsets(lab, &kafka).await? else {
        return Ok(None);
    };
    let messages = offsets.iter().map(|p| p.log_end - p.log_start).sum();
    let lag = offsets.iter().map(PartitionOffsets::lag).sum();
    Ok(Some((messages, lag)))
}
