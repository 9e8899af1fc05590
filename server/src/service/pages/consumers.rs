//! Consumer groups, the course's demo of offsets: a learner starts a consumer in group G on the
//! lab's topic, reads N messages, stops, sends more and starts it again. Each lab's groups are
//! its own: Kafka knows group G of lab L as `reckon.L.G`, and a lab lists and reads only groups
//! with its own prefix, on its own topic.

use app::api::ApiError;
use app::model::{ConsumeRequest, GroupPartition, GroupRead, GroupView};

use crate::kafka::Kafka;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// Messages one read may ask for.
pub const MAX_MESSAGES: usize = 1000;

/// Groups the topic page lists.
const GROUPS_LISTED: usize = 20;

/// The prefix of every group id of the lab.
fn prefix(lab: &Lab) -> String {
    format!("reckon.{}.", lab.config.lab)
}

/// Kafka's id of the lab's group `name`.
pub fn group_id(lab: &Lab, name: &str) -> String {
    format!("{}{name}", prefix(lab))
}

/// A group's name: 1 to 40 letters, digits, `-` or `_` (no dot: the lab's prefix ends at one).
pub fn validate_group(name: &str) -> Result<(), ApiError> {
    let ok = (1..=40).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::field(
            "group",
            format!("{name:?}: 1 to 40 letters, digits, '-' or '_'"),
        ))
    }
}

/// Reads the lab's topic in its group `request.group`, committing as it goes, and says where it
/// resumed and why.
pub async fn consume(lab: &Lab, request: &ConsumeRequest) -> Result<GroupRead, ApiError> {
    validate_group(&request.group)?;
    if !(1..=MAX_MESSAGES).contains(&request.max) {
        return Err(ApiError::field(
            "max",
            format!("between 1 and {MAX_MESSAGES} messages, got {}", request.max),
        ));
    }
    let kafka = lab.kafka().await.map_err(failed)?;
    if kafka
        .partitions(&lab.config.topic)
        .map_err(failed)?
        .is_none()
    {
        return Err(ApiError::NotFound(format!(
            "topic {} does not exist yet: send an event first",
            lab.config.topic
        )));
    }
    let id = group_id(lab, &request.group);
    let topic = lab.config.topic.clone();
    let (group, max, from_beginning) = (request.group.clone(), request.max, request.from_beginning);
    let mut read =
        tokio::task::spawn_blocking(move || kafka.consume_group(&topic, &id, from_beginning, max))
            .await
            .map_err(|e| ApiError::Failed(format!("the consumer stopped: {e}")))?
            .map_err(failed)?;
    read.group = group;
    read.sentences = said_of_read(&read);
    record(lab, &read).await;
    Ok(read)
}

/// Keeps the read in the history: the classroom's evidence of a group that resumed where it
/// committed.
pub async fn record(lab: &Lab, read: &GroupRead) {
    if let Some(history) = lab.history()
        && let Err(e) = history.record_group_read(&lab.config.lab, read).await
    {
        tracing::warn!(
            "could not record group {}'s read in the history: {e}",
            read.group
        );
    }
}

/// Where the read resumed on each partition and why, what it committed, and how bronze differs.
pub fn said_of_read(read: &GroupRead) -> Vec<String> {
    let mut out: Vec<String> = read
        .resumed
        .iter()
        .map(|r| {
            let why = match r.from.as_str() {
                "committed" => format!(
                    "the offset group {} committed when it last read: the next one it had not read",
                    read.group
                ),
                "beginning" => "no commit yet, and \"from the beginning\" was asked".into(),
                _ => "no commit yet, so only messages sent from now on (tick \"from the beginning\" to read what is there)".into(),
            };
            format!("Partition {}: resumed at offset {}, {why}.", r.partition, r.offset)
        })
        .collect();
    out.push(format!(
        "Read {} message(s), committing after each: the next start of group {} resumes right after \
         the last one read, even if this consumer is killed.",
        read.messages.len(),
        read.group
    ));
    out.push(
        "Bronze keeps no consumer group: it stores the offsets it read in the same Delta commit \
         as the rows, so a run that fails writes neither and the next one reads the same messages \
         again, exactly once. A group commits apart from what is done with the messages: a crash \
         between the two reads a message twice, or never."
            .into(),
    );
    out
}

/// The lab's groups on its topic: each partition's committed offset and lag, given each
/// partition's log as (partition, log start, log end).
pub fn groups(
    lab: &Lab,
    kafka: &Kafka,
    logs: &[(i32, i64, i64)],
) -> Result<Vec<GroupView>, ApiError> {
    let prefix = prefix(lab);
    let partitions: Vec<i32> = logs.iter().map(|(p, ..)| *p).collect();
    let mut out = vec![];
    for id in kafka
        .group_ids(&prefix)
        .map_err(failed)?
        .into_iter()
        .take(GROUPS_LISTED)
    {
        let committed = kafka
            .committed(&id, &lab.config.topic, &partitions)
            .map_err(failed)?;
        // A group of the lab that never committed on this topic is not one of its consumers.
        if committed.values().all(Option::is_none) {
            continue;
        }
        out.push(GroupView {
            name: id[prefix.len()..].to_string(),
            group_id: id.clone(),
            partitions: logs
                .iter()
                .map(|&(p, start, end)| {
                    let at = committed.get(&p).copied().flatten();
                    GroupPartition {
                        partition: p,
                        committed: at,
                        lag: (end - at.unwrap_or(start).max(start)).max(0),
                    }
                })
                .collect(),
        });
    }
    Ok(out)
}
