//! The full check: every table read whole into one session and recounted with batch queries, as
//! SPEC §4 describes it (`reckon check --full`). The incremental check must agree with it, always.

use std::sync::Arc;

use app::model::FlowRun;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::{Recount, Report, SILVER_DIFFERENCES, hours, ints, offsets, query, report, scalar};
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::flows::FlowError;
use crate::engine::flows::gold::GoldState;
use crate::engine::tables::{TableError, TableName};

/// The check as a flow: it reads every table and commits nothing; its report is what it hands back.
pub struct FullCheck;

/// The lab's tables, read into one session, and gold's watermark.
pub struct Tables {
    ctx: SessionContext,
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
        for name in TableName::ALL {
            register(&ctx, cx, name).await?;
        }
        let watermark = GoldState::committed(cx).await?.and_then(|s| s.watermark);
        Ok(Tables { ctx, watermark })
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
            offset_problems: offsets::problems(ctx, cx).await?,
            distinct: scalar(
                ctx,
                "SELECT count(*) AS n FROM (SELECT DISTINCT order_id, status, event_time FROM bronze_orders)",
            )
            .await?,
            rejected: scalar(ctx, "SELECT count(*) AS n FROM bronze_rejects").await?,
            orders: scalar(ctx, "SELECT count(*) AS n FROM orders").await?,
            differing: ints(&query(ctx, SILVER_DIFFERENCES).await?, "order_id")?,
            hours: hours::figures(&query(ctx, hours::HOURS).await?)?,
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

/// Registers a table for SQL, read once into memory: the check's queries scan bronze several
/// times, and decoding its Parquet files once instead of per query is most of the check's cost.
/// A table not created yet is an empty one with its schema.
async fn register(
    ctx: &SessionContext,
    cx: &FlowContext,
    name: TableName,
) -> Result<(), FlowError> {
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
    let schema = provider.schema();
    let batches = ctx
        .read_table(provider)
        .map_err(query_err)?
        .collect()
        .await
        .map_err(query_err)?;
    // As many partitions as the session runs in parallel, batches dealt out in turn.
    let parallel = ctx.state().config().target_partitions().max(1);
    let mut partitions = vec![vec![]; parallel];
    for (i, batch) in batches.into_iter().enumerate() {
        partitions[i % parallel].push(batch);
    }
    let table = MemTable::try_new(schema, partitions).map_err(query_err)?;
    ctx.register_table(name.as_str(), Arc::new(table))
        .map_err(query_err)?;
    Ok(())
}
