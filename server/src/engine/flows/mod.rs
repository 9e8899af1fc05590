//! The course's three streams (SPEC §3) as flows: each loads what is new as one micro-batch,
//! commits its output together with its progress, and stops.

pub mod bronze;
pub mod gold;
pub mod silver;

use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

use crate::engine::event::format_micros;
use crate::engine::tables::{self, TableError, table_name};
use crate::kafka::KafkaError;

/// The watermark's delay behind the latest event time: 1 hour (SPEC §3).
pub const DELAY_MICROS: i64 = 3_600_000_000;
/// An hour in microseconds: the width of a gold window.
pub const HOUR_MICROS: i64 = 3_600_000_000;
/// How many dropped events a run record lists by name (all are counted).
pub const DROPPED_LISTED: usize = 1000;

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

/// The parts of a flow's event that flows fill in.
pub use app::model::{DropReason, DroppedEvent, PartitionRange, SourceRange};

/// The bronze commits a downstream stream has not processed yet, first and last inclusive.
pub(crate) fn pending(bronze: &DeltaTable, processed: Option<i64>) -> Option<(i64, i64)> {
    let first = processed.map_or(0, |v| v + 1);
    let last = crate::engine::tables::version(bronze);
    (first <= last).then_some((first, last))
}

/// A session in which the rows bronze commits `first..=last` added are the table `changes`, with
/// the change feed's `_commit_version` beside each row. Nothing is read until a query runs.
pub(crate) fn bronze_changes(
    bronze: &DeltaTable,
    versions: (i64, i64),
) -> Result<SessionContext, TableError> {
    let ctx = SessionContext::new();
    let inserts = tables::changes::inserted(&ctx, bronze, versions)?;
    ctx.register_table("changes", inserts.into_view())
        .map_err(|source| TableError::Query {
            table: table_name(bronze),
            source,
        })?;
    Ok(ctx)
}

/// Runs `sql` in a session of [`bronze_changes`].
pub(crate) async fn query_changes(
    ctx: &SessionContext,
    sql: &str,
) -> Result<Vec<RecordBatch>, TableError> {
    crate::engine::tables::query(ctx, "changes of bronze_orders", sql).await
}

/// Renders a watermark for a run record.
pub(crate) fn show_time(micros: Option<i64>) -> Option<String> {
    micros.map(format_micros)
}
