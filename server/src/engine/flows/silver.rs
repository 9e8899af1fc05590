//! silver: `bronze_orders` -> `orders`, the newest state of each order. Reads only the bronze
//! commits since the version it last processed, keeps the newest event per order in the batch,
//! and MERGEs it in, storing the bronze version in the same commit.

use std::time::Instant;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use deltalake::kernel::Transaction;
use deltalake::kernel::transaction::CommitProperties;

use super::{SourceRange, StreamError, StreamRun, pending, query_bronze_changes};
use crate::engine::crash::{CrashPoint, Moment};
use crate::engine::tables::{self, TableError, TableName};
use crate::service::lab::Lab;

/// The `txn` app id under which silver stores the bronze version it has processed.
pub const APP_ID: &str = "orders/bronze_orders";

/// Newest event per order in the batch; ties on `event_time` keep the one stored first.
const NEWEST_PER_ORDER: &str = r#"
    SELECT order_id, customer_id, status, amount, event_time, rows_read FROM (
        SELECT order_id, customer_id, status, amount, event_time,
               row_number() OVER (PARTITION BY order_id
                                  ORDER BY event_time DESC, _commit_version, "partition", "offset") AS rank,
               count(*) OVER () AS rows_read
        FROM changes)
    WHERE rank = 1"#;

pub async fn run(lab: &Lab) -> Result<StreamRun, StreamError> {
    let started = Instant::now();
    let mut record = StreamRun::new("silver");
    let bronze = lab.tables.open_or_create(TableName::BronzeOrders).await?;
    let orders = lab.tables.open_or_create(TableName::Orders).await?;
    let Some((first, last)) = pending(&bronze, tables::txn_version(&orders, APP_ID).await?) else {
        record.duration_ms = started.elapsed().as_millis() as u64;
        return Ok(record);
    };
    record.source = SourceRange::Versions {
        table: TableName::BronzeOrders.to_string(),
        first,
        last,
    };
    let (ctx, newest) = query_bronze_changes(&bronze, (first, last), NEWEST_PER_ORDER).await?;
    record.rows_read = newest.iter().find(|b| b.num_rows() > 0).map_or(0, |b| {
        b.column(5).as_primitive::<Int64Type>().value(0) as u64
    });
    CrashPoint::abort_if(lab.config.crash_at, "silver", Moment::AfterRead);

    let progress = Transaction::new(APP_ID, last);
    let progress_again = progress.clone();
    let before = tables::version(&orders);
    let table = if newest.iter().all(|b| b.num_rows() == 0) {
        tables::append(orders, vec![], vec![progress]).await?
    } else {
        let query = |source| TableError::Query {
            table: TableName::BronzeOrders.to_string(),
            source,
        };
        let source = ctx
            .read_batches(newest)
            .and_then(|df| df.drop_columns(&["rows_read"]))
            .map_err(query)?;
        let delta = |source| TableError::Delta {
            table: TableName::Orders.to_string(),
            source,
        };
        let (table, metrics) = orders
            .merge(source, "target.order_id = source.order_id")
            .with_source_alias("source")
            .with_target_alias("target")
            .when_matched_update(|update| {
                update
                    .predicate("source.event_time > target.event_time")
                    .update("customer_id", "source.customer_id")
                    .update("status", "source.status")
                    .update("amount", "source.amount")
                    .update("event_time", "source.event_time")
            })
            .map_err(delta)?
            .when_not_matched_insert(|insert| {
                insert
                    .set("order_id", "source.order_id")
                    .set("customer_id", "source.customer_id")
                    .set("status", "source.status")
                    .set("amount", "source.amount")
                    .set("event_time", "source.event_time")
            })
            .map_err(delta)?
            .with_commit_properties(
                CommitProperties::default().with_application_transaction(progress),
            )
            .await
            .map_err(delta)?;
        record.rows_written =
            (metrics.num_target_rows_inserted + metrics.num_target_rows_updated) as u64;
        if tables::version(&table) == before {
            // A MERGE that changes nothing (a repeat of an event) commits nothing, so the
            // progress needs a commit of its own, or the next run would read this batch again.
            tables::append(table, vec![], vec![progress_again]).await?
        } else {
            table
        }
    };
    record.table_version = Some(tables::version(&table));
    CrashPoint::abort_if(lab.config.crash_at, "silver", Moment::AfterCommit);
    record.duration_ms = started.elapsed().as_millis() as u64;
    Ok(record)
}
