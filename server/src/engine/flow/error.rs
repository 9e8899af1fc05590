//! What can stop a flow, for every kind of flow: the course's streams, the check and a
//! declarative project's flows.

use crate::engine::tables::TableError;
use crate::kafka::KafkaError;

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Kafka(#[from] KafkaError),
    #[error(
        "topic {topic} partition {partition}: bronze stored offset {stored}, but the log {place} \
         (log start {log_start}, log end {log_end}); the topic was recreated or truncated. \
         Run `reckon reset` to start the lab again from the new topic"
    )]
    OffsetsOutOfRange {
        topic: String,
        partition: i32,
        stored: i64,
        place: &'static str,
        log_start: i64,
        log_end: i64,
    },
    #[error(
        "topic {topic} does not exist, but bronze has read from it before: run `reckon reset` to start again"
    )]
    TopicMissing { topic: String },
    #[error(
        "topic {topic} partition {partition}: stopped receiving messages at offset {at} before the end offset {end}"
    )]
    Stalled {
        topic: String,
        partition: i32,
        at: i64,
        end: i64,
    },
    #[error(
        "gold's state was started with deduplication {started}; running it {asked} would count what was already \
         counted differently. Reset the lab and replay (`reckon reset`, then send and run again) to change it"
    )]
    DedupSettingFixed {
        started: &'static str,
        asked: &'static str,
    },
    #[error("gold state {path}: {detail}")]
    State { path: String, detail: String },
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
    /// A flow of a declarative pipeline refused its input (a rule that fails the update, a
    /// type clash, a read it may not make); the message names the table and what broke.
    #[error("{0}")]
    Refused(String),
}
