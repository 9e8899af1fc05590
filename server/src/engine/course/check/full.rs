//! The full check: every table read whole, and bronze recounted from scratch (`recount.rs`), as
//! SPEC §4 describes it (`reckon check --full`). The incremental check must agree with it, always.

use std::collections::BTreeMap;

use app::model::FlowRun;
use arrow::array::RecordBatch;
use datafusion::prelude::SessionContext;

use super::{Recount, Report, offsets, recount, report, timed};
use crate::engine::course::gold::GoldState;
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{TableError, TableName};

/// The check as a flow: it reads every table and commits nothing; its report is what it hands back.
pub struct FullCheck;

/// The rows of each of the lab's tables (the columns the check reads), and gold's watermark.
pub struct Tables {
    rows: BTreeMap<TableName, Vec<RecordBatch>>,
    watermark: Option<i64>,
}

impl Tables {
    fn of(&self, name: TableName) -> &[RecordBatch] {
        self.rows.get(&name).map_or(&[], Vec::as_slice)
    }
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
        let mut rows = BTreeMap::new();
        for name in TableName::ALL {
            rows.insert(name, timed(name.as_str(), read(&ctx, cx, name)).await?);
        }
        let watermark = GoldState::committed(cx).await?.and_then(|s| s.watermark());
        Ok(Tables { rows, watermark })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        tables: &Tables,
        event: &mut FlowRun,
    ) -> Result<Option<Recount>, FlowError> {
        let (bronze, rejects) = (
            tables.of(TableName::BronzeOrders),
            tables.of(TableName::BronzeRejects),
        );
        let landed: Vec<RecordBatch> = bronze.iter().chain(rejects).cloned().collect();
        let offset_problems = timed("offsets", offsets::problems(&landed, cx)).await?;
        let started = std::time::Instant::now();
        let found = recount::recount(
            bronze,
            tables.of(TableName::Orders),
            tables.of(TableName::HourlySales),
        )?;
        tracing::debug!(
            step = "recount",
            ms = started.elapsed().as_millis() as u64,
            "check"
        );
        let rows = |name| tables.of(name).iter().map(|b| b.num_rows() as i64).sum();
        event.figures.rows_read = found.events as u64;
        Ok(Some(Recount {
            events: found.events,
            offset_problems,
            distinct: found.distinct,
            rejected: rows(TableName::BronzeRejects),
            orders: rows(TableName::Orders),
            differing: found.differing,
            hours: found.hours,
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

/// The columns the check reads of a table; `None`: all.
fn needed(name: TableName) -> Option<&'static [&'static str]> {
    match name {
        TableName::BronzeOrders => Some(&[
            "ingested_at",
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

/// A table's rows, only the columns the check reads; a table not created yet has none.
async fn read(
    ctx: &SessionContext,
    cx: &FlowContext,
    name: TableName,
) -> Result<Vec<RecordBatch>, FlowError> {
    let Some(table) = cx.tables.open(name).await? else {
        return Ok(vec![]);
    };
    let query_err = |source| TableError::Query {
        table: name.to_string(),
        source,
    };
    let provider = crate::engine::tables::provider(ctx, &table).await?;
    let mut frame = ctx.read_table(provider).map_err(query_err)?;
    if let Some(columns) = needed(name) {
        frame = frame.select_columns(columns).map_err(query_err)?;
    }
    Ok(frame.collect().await.map_err(query_err)?)
}
