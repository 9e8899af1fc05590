//! silver: `bronze_orders` -> `orders`, the newest state of each order. Reads only the bronze
//! commits since the version it last processed, keeps the newest event per order in the batch,
//! and MERGEs it in, storing the bronze version in the same commit.

use app::model::FlowRun;
use arrow::datatypes::Int64Type;
use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;

use super::{SourceRange, bronze_changes, pending, query_changes};
use crate::engine::columns::Columns;
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{self, TableError, TableName};

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

/// The silver flow.
pub struct Silver;

/// Bronze as it is now, and `orders` with the bronze version it has processed.
pub struct Tables {
    bronze: DeltaTable,
    orders: DeltaTable,
    processed: Option<i64>,
}

/// The rows of the new bronze commits, up to `last`, as the table `changes` of `ctx`.
pub struct Changes {
    ctx: SessionContext,
    last: i64,
}

/// The newest event per order among them.
pub struct Newest {
    ctx: SessionContext,
    rows: Vec<RecordBatch>,
    last: i64,
}

#[async_trait::async_trait]
impl Flow for Silver {
    type State = Tables;
    type Input = Changes;
    type Output = Newest;
    type Done = ();

    fn name(&self) -> &str {
        "silver"
    }

    fn target(&self) -> Option<&str> {
        Some(TableName::Orders.as_str())
    }

    async fn restore(&mut self, cx: &FlowContext, _: &mut FlowRun) -> Result<Tables, FlowError> {
        let bronze = cx.tables.open_or_create(TableName::BronzeOrders).await?;
        let orders = cx.tables.open_or_create(TableName::Orders).await?;
        let processed = cx.tables.txn_version(&orders, APP_ID).await?;
        Ok(Tables {
            bronze,
            orders,
            processed,
        })
    }

    async fn read(
        &mut self,
        _: &FlowContext,
        state: &Tables,
        event: &mut FlowRun,
    ) -> Result<Option<Changes>, FlowError> {
        let Some((first, last)) = pending(&state.bronze, state.processed) else {
            return Ok(None);
        };
        event.figures.source = SourceRange::Versions {
            table: TableName::BronzeOrders.to_string(),
            first,
            last,
        };
        let ctx = bronze_changes(&state.bronze, (first, last))?;
        Ok(Some(Changes { ctx, last }))
    }

    async fn process(
        &mut self,
        _: &mut Tables,
        changes: Changes,
        event: &mut FlowRun,
    ) -> Result<Newest, FlowError> {
        let rows = query_changes(&changes.ctx, NEWEST_PER_ORDER).await?;
        if let Some(batch) = rows.iter().find(|b| b.num_rows() > 0) {
            let read =
                Columns::of(batch, "silver's newest events").primitive::<Int64Type>("rows_read")?;
            event.figures.rows_read = read.value(0) as u64;
        }
        Ok(Newest {
            ctx: changes.ctx,
            rows,
            last: changes.last,
        })
    }

    async fn commit(
        &mut self,
        cx: &FlowContext,
        state: Tables,
        newest: Newest,
        event: &mut FlowRun,
    ) -> Result<(), FlowError> {
        let progress = Transaction::new(APP_ID, newest.last);
        let orders = state.orders;
        let table = if newest.rows.iter().all(|b| b.num_rows() == 0) {
            tables::append(orders, vec![], vec![progress]).await?
        } else {
            let (table, written) = merge(orders, newest, progress).await?;
            event.figures.rows_written = written;
            table
        };
        cx.tables.keep_committed(&table);
        event.figures.table_version = Some(tables::version(&table));
        Ok(())
    }
}

/// MERGEs the newest events into `orders` with the progress in the same commit; returns the
/// table and the rows inserted or updated.
async fn merge(
    orders: DeltaTable,
    newest: Newest,
    progress: Transaction,
) -> Result<(DeltaTable, u64), FlowError> {
    let query = |source| TableError::Query {
        table: TableName::BronzeOrders.to_string(),
        source,
    };
    let source = newest
        .ctx
        .read_batches(newest.rows)
        .and_then(|df| df.drop_columns(&["rows_read"]))
        .map_err(query)?;
    let delta = |source| TableError::Delta {
        table: TableName::Orders.to_string(),
        source,
    };
    let before = tables::version(&orders);
    let committed = tables::commit_properties(&orders, vec![progress.clone()]);
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
        .with_commit_properties(committed)
        .await
        .map_err(delta)?;
    let written = (metrics.num_target_rows_inserted + metrics.num_target_rows_updated) as u64;
    tracing::debug!(
        flow = "silver",
        files_scanned = metrics.num_target_files_scanned,
        files_skipped = metrics.num_target_files_skipped_during_scan,
        rows_copied = metrics.num_target_rows_copied,
        scan_ms = metrics.scan_time_ms,
        rewrite_ms = metrics.rewrite_time_ms,
        merge_ms = metrics.execution_time_ms,
    );
    let table = if tables::version(&table) == before {
        // A MERGE that changes nothing (a repeat of an event) commits nothing, so the progress
        // needs a commit of its own, or the next run would read this batch again.
        tables::append(table, vec![], vec![progress]).await?
    } else {
        table
    };
    Ok((table, written))
}
