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
    /// A flow of a declarative pipeline refused its input, of one of the kinds [`Refusal`]
    /// names; its message names the table and what broke.
    #[error("{0}")]
    Refused(#[from] Refusal),
}

/// Why a declarative flow (or a question about one) was refused: the pages and the API match on
/// the kind, never on the text, which names the table and what broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// An `ON VIOLATION FAIL UPDATE` expectation failed on a row: nothing was written.
    #[error("{0}")]
    ExpectationFailed(String),
    /// A column a flow gives, or a clause names, does not fit the table or is not there.
    #[error("{0}")]
    SchemaClash(String),
    /// An AUTO CDC target's shape changed since it was made: a full refresh rebuilds it.
    #[error("{0}")]
    CdcShapeChanged(String),
    /// A windowed table's window, delay, aggregates or duplicate keys changed since its state
    /// started: a full refresh rebuilds it (Spark needs a new checkpoint).
    #[error("{0}")]
    WindowShapeChanged(String),
    /// A full refresh the project does not allow.
    #[error("{0}")]
    Refresh(String),
    /// A flow's query past a bound of its run (time, rows).
    #[error("{0}")]
    Bound(String),
    /// A flow's query does not resolve (names, columns, types), at its place.
    #[error("{0}")]
    Unresolved(String),
    /// Asked about a table or key that is not there, or not of the kind asked.
    #[error("{0}")]
    NotFound(String),
    /// A flow of the run failed: its error, as the event log has it.
    #[error("{0}")]
    FlowFailed(String),
}
