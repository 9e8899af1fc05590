//! The full check: every table read whole into one session and recounted with batch queries, as
//! SPEC §4 describes it (`reckon check --full`). The incremental check must agree with it, always.

use std::sync::Arc;

use app::model::FlowRun;
use arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::{
    Recount, Report, SILVER_DIFFERENCES, hours, ints, offsets, query, report, scalar, timed,
};
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::flows::FlowError;
use crate::engine::flows::gold::GoldState;
use crate::engine::tables::{TableError, TableName};

/// The check as a flow: it reads every table and commits nothing; its report is what it hands back.
pub struct FullCheck;

/// The lab's tables, read into one session; the offsets bronze and its rejects hold; and gold's
/// watermark.
pub struct Tables {
    ctx: SessionContext,
    landed: Vec<RecordBatch>,
    watermark: Option<i64>,
}

#[async_trait::async_trait]
impl Flow for FullCheck {
    type State = Tables;
    type Input = Recount;
    type Output = Report;
    type Done = Report;

    fn name(&self) -> &str {
        "check"
    }

    fn target(&self) -> Option<&str> {
        None
    }

    async fn restore(&mut self, cx: &FlowContext, _: &mut FlowRun) -> Result<Tables, FlowError> {
        let ctx = SessionContext::new();
        let mut landed = vec![];
        for name in TableName::ALL {
            let batches = timed(name.as_str(), register(&ctx, cx, name)).await?;
            if matches!(name, TableName::BronzeOrders | TableName::BronzeRejects) {
                landed.extend(batches);
            }
        }
        let watermark = GoldState::committed(cx).await?.and_then(|s| s.watermark);
        Ok(Tables {
            ctx,
            landed,
            watermark,
        })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        tables: &Tables,
        event: &mut FlowRun,
    ) -> Result<Option<Recount>, FlowError> {
        let ctx = &tables.ctx;
        let events = scalar(ctx, "SELECT count(*) AS n FROM bronze_orders").await?;
        event.figures.rows_read = events as u64;
        Ok(Some(Recount {
            events,
            offset_problems: timed("offsets", offsets::problems(&tables.landed, cx)).await?,
            distinct: timed("distinct", scalar(ctx, DISTINCT_EVENTS)).await?,
            rejected: scalar(ctx, "SELECT count(*) AS n FROM bronze_rejects").await?,
            orders: scalar(ctx, "SELECT count(*) AS n FROM orders").await?,
            differing: ints(
                &timed("silver", query(ctx, SILVER_DIFFERENCES)).await?,
                "order_id",
            )?,
            hours: hours::figures(&timed("hours", query(ctx, hours::HOURS)).await?)?,
        }))
    }

    async fn process(
        &mut self,
        tables: &mut Tables,
        recount: Recount,
        _: &mut FlowRun,
    ) -> Result<Report, FlowError> {
        Ok(report(recount, tables.watermark))
    }

    async fn commit(
        &mut self,
        _: &FlowContext,
        _: Tables,
        report: Report,
        _: &mut FlowRun,
    ) -> Result<Report, FlowError> {
        // The check writes no table: its lines go to the run's history with its event.
        Ok(report)
    }
}

/// Events told apart by order, status and time: fewer than bronze's events when some were sent
/// twice.
const DISTINCT_EVENTS: &str =
    "SELECT count(*) AS n FROM (SELECT DISTINCT order_id, status, event_time FROM bronze_orders)";

/// The columns the check reads of a table; `None`: all.
fn needed(name: TableName) -> Option<&'static [&'static str]> {
    match name {
        TableName::BronzeOrders => Some(&[
            "partition",
            "offset",
            "order_id",
            "customer_id",
            "status",
            "amount",
            "event_time",
        ]),
        TableName::BronzeRejects => Some(&["partition", "offset"]),
        _ => None,
    }
}

/// Registers a table for SQL with the columns the check reads, read once into memory: the
/// check's queries scan bronze several times, and decoding its Parquet files once instead of per
/// query is most of the check's cost. A table not created yet is an empty one with its schema.
/// Returns the rows read.
async fn register(
    ctx: &SessionContext,
    cx: &FlowContext,
    name: TableName,
) -> Result<Vec<RecordBatch>, FlowError> {
    let query_err = |source| TableError::Query {
        table: name.to_string(),
        source,
    };
    let provider: Arc<dyn datafusion::catalog::TableProvider> = match cx.tables.open(name).await? {
        Some(table) => {
            let delta = |source| TableError::Delta {
                table: name.to_string(),
                source,
            };
            table
                .update_datafusion_session(&ctx.state())
                .map_err(delta)?;
            table.table_provider().await.map_err(|e| query_err(e))?
        }
        None => Arc::new(MemTable::try_new(name.schema(), vec![vec![]]).map_err(query_err)?),
    };
    let mut frame = ctx.read_table(provider).map_err(query_err)?;
    if let Some(columns) = needed(name) {
        frame = frame.select_columns(columns).map_err(query_err)?;
    }
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame.collect().await.map_err(query_err)?;
    // As many partitions as the session runs in parallel, batches dealt out in turn.
    let parallel = ctx.state().config().target_partitions().max(1);
    let mut partitions = vec![vec![]; parallel];
    for (i, batch) in batches.iter().enumerate() {
        partitions[i % parallel].push(batch.clone());
    }
    let table = MemTable::try_new(schema, partitions).map_err(query_err)?;
    ctx.register_table(name.as_str(), Arc::new(table))
        .map_err(query_err)?;
    Ok(batches)
}
