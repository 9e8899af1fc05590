//! What a flow has read so far, for the check: its table's last commit, the state it committed,
//! and a session in which the flow's sources give every row up to that commit (the files, table
//! versions and offsets its progress recorded; a table read whole, as that commit read it).

use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

use super::session::Bounds;
use super::sources::{self, Reading, Registered};
use super::{TableState, committed, committed_state};
use crate::engine::declarative::graph::FlowSpec;
use crate::engine::flow::{FlowContext, FlowError};

pub struct SoFar {
    pub table: DeltaTable,
    pub state: std::sync::Arc<TableState>,
    pub ctx: SessionContext,
}

/// `flow`'s sources up to its table's last commit; `None` before the flow's first commit.
pub async fn read(cx: &FlowContext, flow: &FlowSpec) -> Result<Option<SoFar>, FlowError> {
    let target = flow.target.as_str();
    let Some(table) = cx.tables.open_named(target).await? else {
        return Ok(None);
    };
    let version = committed(cx, &table, target).await?;
    if version == 0 {
        return Ok(None);
    }
    let state = committed_state(cx, target, version)?;
    let Some(progress) = state.flows.get(&flow.name) else {
        return Ok(None);
    };
    let ctx = Bounds::DEFAULT.session();
    let mut registered = Registered {
        reading: Reading::SoFar,
        ..Registered::default()
    };
    let mut scratch = progress.clone();
    sources::register_flow(&ctx, cx, flow, &mut scratch, &mut registered).await?;
    Ok(Some(SoFar { table, state, ctx }))
}

/// Runs `sql` in `ctx` within the default bounds.
pub async fn collect(
    ctx: &SessionContext,
    sql: &str,
    target: &str,
) -> Result<(arrow::datatypes::SchemaRef, Vec<arrow::array::RecordBatch>), FlowError> {
    let df = ctx.sql(sql).await.map_err(|source| {
        FlowError::Table(crate::engine::tables::TableError::Query {
            table: target.to_string(),
            source,
        })
    })?;
    let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
    Ok((schema, Bounds::DEFAULT.collect(df, target).await?))
}
