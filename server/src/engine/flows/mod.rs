//! The three streams (SPEC §3). Each loads what is new as one micro-batch, commits its output
//! together with its progress, and stops; each returns a [`StreamRun`] record of what it did.

pub mod bronze;
pub mod gold;
pub mod silver;

use std::fmt;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::prelude::{SessionContext, col, lit};
use deltalake::DeltaTable;
use deltalake::delta_datafusion::DeltaCdfTableProvider;
use serde::Serialize;

use crate::engine::event::format_micros;
use crate::engine::tables::{TableError, table_name};
use crate::kafka::KafkaError;

/// The watermark's delay behind the latest event time: 1 hour (SPEC §3).
pub const DELAY_MICROS: i64 = 3_600_000_000;
/// An hour in microseconds: the width of a gold window.
pub const HOUR_MICROS: i64 = 3_600_000_000;
/// How many dropped events a run record lists by name (all are counted).
pub const DROPPED_LISTED: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
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
}

/// Which part of its source a stream run covered, partitions read, events not counted: the
/// dashboard's own types, so a run record reads the same in the history and on the page.
pub use app::model::{DroppedEvent, PartitionRange, SourceRange};

/// What one stream run did (SPEC §3); the history keeps these, the tables keep the truth.
#[derive(Debug, Clone, Serialize)]
pub struct StreamRun {
    pub stream: &'static str,
    pub rows_read: u64,
    pub rows_written: u64,
    pub rows_late: u64,
    pub rows_duplicate: u64,
    pub rows_rejected: u64,
    pub source: SourceRange,
    /// The table version this run committed, `None` when it committed nothing.
    pub table_version: Option<i64>,
    pub watermark_before: Option<String>,
    pub watermark_after: Option<String>,
    pub hours_closed: Vec<String>,
    /// The first [`DROPPED_LISTED`] late or duplicate events, for explanations.
    pub dropped: Vec<DroppedEvent>,
    pub started_at: String,
    pub duration_ms: u64,
}

impl StreamRun {
    pub fn new(stream: &'static str) -> Self {
        Self {
            stream,
            rows_read: 0,
            rows_written: 0,
            rows_late: 0,
            rows_duplicate: 0,
            rows_rejected: 0,
            source: SourceRange::Nothing,
            table_version: None,
            watermark_before: None,
            watermark_after: None,
            hours_closed: vec![],
            dropped: vec![],
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            duration_ms: 0,
        }
    }
}

impl fmt::Display for StreamRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<7}read {}, wrote {}",
            self.stream, self.rows_read, self.rows_written
        )?;
        if self.rows_late > 0 {
            write!(f, ", late {}", self.rows_late)?;
        }
        if self.rows_duplicate > 0 {
            write!(f, ", duplicate {}", self.rows_duplicate)?;
        }
        if self.rows_rejected > 0 {
            write!(f, ", rejected {}", self.rows_rejected)?;
        }
        match &self.source {
            SourceRange::Nothing => write!(f, "; nothing new")?,
            SourceRange::Offsets { topic, partitions } => {
                write!(f, "; {topic}")?;
                for p in partitions {
                    write!(f, " p{}:{}..{}", p.partition, p.first, p.last)?;
                }
            }
            SourceRange::Versions { table, first, last } => {
                write!(f, "; {table} v{first}..v{last}")?
            }
        }
        if let Some(v) = self.table_version {
            write!(f, "; committed v{v}")?;
        }
        if self.watermark_before.is_some() || self.watermark_after.is_some() {
            let show = |w: &Option<String>| w.clone().unwrap_or_else(|| "unset".into());
            write!(
                f,
                "; watermark {} -> {}",
                show(&self.watermark_before),
                show(&self.watermark_after)
            )?;
        }
        if !self.hours_closed.is_empty() {
            write!(f, "; closed {}", self.hours_closed.join(", "))?;
        }
        write!(f, " ({:.2} s)", self.duration_ms as f64 / 1000.0)
    }
}

/// The bronze commits a downstream stream has not processed yet, first and last inclusive.
pub(crate) fn pending(bronze: &DeltaTable, processed: Option<i64>) -> Option<(i64, i64)> {
    let first = processed.map_or(0, |v| v + 1);
    let last = crate::engine::tables::version(bronze);
    (first <= last).then_some((first, last))
}

/// Runs `sql` over the rows bronze commits `first..=last` added, which it sees as the table
/// `changes`, with the change feed's `_commit_version` beside each row. Returns the session too,
/// for work on the results.
pub(crate) async fn query_bronze_changes(
    bronze: &DeltaTable,
    (first, last): (i64, i64),
    sql: &str,
) -> Result<(SessionContext, Vec<RecordBatch>), TableError> {
    let table = table_name(bronze);
    let delta = |source| TableError::Delta {
        table: table.clone(),
        source,
    };
    let query = |source| TableError::Query {
        table: table.clone(),
        source,
    };
    let ctx = SessionContext::new();
    bronze
        .update_datafusion_session(&ctx.state())
        .map_err(delta)?;
    let cdf = bronze
        .clone()
        .scan_cdf()
        .with_starting_version(first as u64)
        .with_ending_version(last as u64);
    let provider = DeltaCdfTableProvider::try_new(cdf).map_err(delta)?;
    // Bronze only appends; the filter keeps that assumption out of every query.
    let inserts = ctx
        .read_table(Arc::new(provider))
        .and_then(|df| df.filter(col("_change_type").eq(lit("insert"))))
        .map_err(query)?;
    ctx.register_table("changes", inserts.into_view())
        .map_err(query)?;
    let rows = ctx
        .sql(sql)
        .await
        .map_err(query)?
        .collect()
        .await
        .map_err(query)?;
    Ok((ctx, rows))
}

/// Renders a watermark for a run record.
pub(crate) fn show_time(micros: Option<i64>) -> Option<String> {
    micros.map(format_micros)
}
