//! The course's three streams (SPEC §3) as flows: each loads what is new as one micro-batch,
//! commits its output together with its progress, and stops.

pub mod bronze;
pub mod check;
pub mod gold;
pub mod silver;

use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

use crate::engine::event::format_micros;
use crate::engine::tables::{self, TableError, table_name};

/// The watermark's delay behind the latest event time: 1 hour (SPEC §3).
pub const DELAY_MICROS: i64 = 3_600_000_000;
/// An hour in microseconds: the width of a gold window.
pub const HOUR_MICROS: i64 = 3_600_000_000;
/// How many dropped events a run record lists by name (all are counted).
pub const DROPPED_LISTED: usize = 1000;

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
