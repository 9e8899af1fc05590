//! A consumer group as the course's demo uses one (`kcat`/`rpk topic consume` style): read a
//! topic's messages in group G, committing each offset to the group as it goes, and stop after
//! N messages or at the end offsets seen when it started. It commits where it starts on every
//! partition, so the next read of G resumes at the group's committed offsets on all of them. Bronze never works like this (its offsets live in the Delta
//! commit, exactly once); this is for seeing the consumer-group model itself.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use app::model::{ConsumedMessage, GroupRead, ResumedAt};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::{Kafka, KafkaError, REQUEST_TIMEOUT, base_config, blocking};

impl Kafka {
    /// Reads `topic` in group `group`: from its committed offsets, or (no commit yet) from the
    /// beginning with `from_beginning`, else from the end; commits each message's offset; stops
    /// after `max` messages or at the end offsets seen when it started.
    pub fn consume_group(
        &self,
        topic: &str,
        group: &str,
        from_beginning: bool,
        max: usize,
    ) -> Result<GroupRead, KafkaError> {
        let consumer: BaseConsumer = base_config(&self.brokers)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "false")
            .create()?;
        let partitions = self.partitions(topic)?.unwrap_or_default();
        let mut wanted = TopicPartitionList::new();
        for &p in &partitions {
            wanted.add_partition(topic, p);
        }
        let committed = blocking(|| consumer.committed_offsets(wanted, REQUEST_TIMEOUT))?;
        let mut start = TopicPartitionList::new();
        let mut resumed = vec![];
        let mut ends = BTreeMap::new();
        let ranges = self.log_ranges(topic, &partitions)?;
        for (&p, (low, high)) in partitions.iter().zip(ranges) {
            let commit = committed
                .find_partition(topic, p)
                .and_then(|e| e.offset().to_raw())
                .filter(|o| *o >= 0);
            let (offset, from) = match commit {
                Some(o) => (o.max(low), "committed"),
                None if from_beginning => (low, "beginning"),
                None => (high, "end"),
            };
            start.add_partition_offset(topic, p, Offset::Offset(offset))?;
            resumed.push(ResumedAt {
                partition: p,
                offset,
                from: from.to_string(),
            });
            ends.insert(p, high);
        }
        consumer.assign(&start)?;
        // The group's position on every partition from now on, read from or not: the next read
        // resumes there (a partition left uncommitted would start at the end next time, and
        // skip what this read did not reach).
        blocking(|| consumer.commit(&start, CommitMode::Sync))?;
        let mut next: BTreeMap<i32, i64> =
            resumed.iter().map(|r| (r.partition, r.offset)).collect();
        let mut messages = vec![];
        let started = Instant::now();
        while messages.len() < max && next.iter().any(|(p, o)| *o < ends[p]) {
            if started.elapsed() > REQUEST_TIMEOUT * 3 {
                break;
            }
            let Some(message) = blocking(|| consumer.poll(Duration::from_millis(200))) else {
                continue;
            };
            let message = message?;
            let (p, offset) = (message.partition(), message.offset());
            if offset >= ends[&p] {
                continue;
            }
            let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
            messages.push(ConsumedMessage {
                partition: p,
                offset,
                key: text(message.key()),
                value: text(message.payload()).unwrap_or_default(),
            });
            let mut commit = TopicPartitionList::new();
            commit.add_partition_offset(topic, p, Offset::Offset(offset + 1))?;
            blocking(|| consumer.commit(&commit, CommitMode::Sync))?;
            next.insert(p, offset + 1);
        }
        Ok(GroupRead {
            group: group.to_string(),
            group_id: group.to_string(),
            topic: topic.to_string(),
            resumed,
            messages,
            committed: next,
            sentences: vec![],
        })
    }

    /// The ids of the broker's consumer groups that start with `prefix`, sorted.
    pub fn group_ids(&self, prefix: &str) -> Result<Vec<String>, KafkaError> {
        let consumer: BaseConsumer = base_config(&self.brokers).create()?;
        let list = blocking(|| consumer.fetch_group_list(None, REQUEST_TIMEOUT))?;
        let mut ids: Vec<String> = list
            .groups()
            .iter()
            .map(|g| g.name().to_string())
            .filter(|name| name.starts_with(prefix))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Group `group`'s committed offset on each of `partitions` of `topic` (`None`: no commit).
    pub fn committed(
        &self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, Option<i64>>, KafkaError> {
        let consumer: BaseConsumer = base_config(&self.brokers)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()?;
        let mut wanted = TopicPartitionList::new();
        for &p in partitions {
            wanted.add_partition(topic, p);
        }
        let committed = blocking(|| consumer.committed_offsets(wanted, REQUEST_TIMEOUT))?;
        Ok(partitions
            .iter()
            .map(|&p| {
                let offset = committed
                    .find_partition(topic, p)
                    .and_then(|e| e.offset().to_raw())
                    .filter(|o| *o >= 0);
                (p, offset)
            })
            .collect())
    }
}
