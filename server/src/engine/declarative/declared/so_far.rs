//! What a flow has read so far, for the check: its table's last commit, the state it committed,
//! and a session in which the flow's sources give every row up to that commit (the files, table
//! versions and offsets its progress recorded; a table read whole, as that commit read it); in
//! parts when its definition changed, each definition over what it read (PIPELINES §9).

use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

use super::session::Bounds;
use super::sources::{self, Progress, Reading, Registered};
use super::{TableState, committed, committed_state};
use crate::engine::declarative::graph::FlowSpec;
use crate::engine::declarative::parse::Dataset;
use crate::engine::flow::{FlowContext, FlowError};

pub struct SoFar {
    pub table: DeltaTable,
    pub state: std::sync::Arc<TableState>,
    pub ctx: SessionContext,
}

/// What a flow read under one of its definitions: that definition, and a session in which its
/// sources give those rows.
pub struct Segment {
    pub flow: FlowSpec,
    /// Its table's rules and properties then (`None`: as they are now).
    pub dataset: Option<Dataset>,
    pub ctx: SessionContext,
}

/// `flow`'s sources up to its table's last commit; `None` before the flow's first commit.
pub async fn read(cx: &FlowContext, flow: &FlowSpec) -> Result<Option<SoFar>, FlowError> {
    let Some((table, state)) = last_commit(cx, flow).await? else {
        return Ok(None);
    };
    let progress = &state.flows[&flow.name];
    let ctx = session(cx, flow, progress, None).await?;
    Ok(Some(SoFar { table, state, ctx }))
}

/// What `flow` read up to its table's last commit, in the parts each of its definitions read
/// (oldest first; one part when it never changed, or changed before definitions were kept).
pub async fn segments(
    cx: &FlowContext,
    flow: &FlowSpec,
) -> Result<Option<(DeltaTable, Vec<Segment>)>, FlowError> {
    let Some((table, state)) = last_commit(cx, flow).await? else {
        return Ok(None);
    };
    let progress = &state.flows[&flow.name];
    let mut out = vec![];
    let mut after: Option<&Progress> = None;
    for era in &progress.eras {
        let old = &era.definition;
        let ctx = session(cx, &old.flow, &era.until, after).await?;
        out.push(Segment {
            flow: old.flow.clone(),
            dataset: Some(old.dataset.clone()),
            ctx,
        });
        after = Some(&era.until);
    }
    out.push(Segment {
        flow: flow.clone(),
        dataset: None,
        ctx: session(cx, flow, progress, after).await?,
    });
    Ok(Some((table, out)))
}

/// The table and the state of `flow`'s last commit; `None` before it.
async fn last_commit(
    cx: &FlowContext,
    flow: &FlowSpec,
) -> Result<Option<(DeltaTable, std::sync::Arc<TableState>)>, FlowError> {
    let target = flow.target.as_str();
    let Some(table) = cx.tables.open_named(target).await? else {
        return Ok(None);
    };
    let version = committed(cx, &table, target).await?;
    if version == 0 {
        return Ok(None);
    }
    let state = committed_state(cx, target, version)?;
    if !state.flows.contains_key(&flow.name) {
        return Ok(None);
    }
    Ok(Some((table, state)))
}

/// A session in which `flow`'s sources give every row up to `progress`, after `after`.
async fn session(
    cx: &FlowContext,
    flow: &FlowSpec,
    progress: &Progress,
    after: Option<&Progress>,
) -> Result<SessionContext, FlowError> {
    let ctx = Bounds::DEFAULT.session();
    let mut registered = Registered {
        reading: Reading::SoFar,
        after: after.cloned(),
        ..Registered::default()
    };
    let mut scratch = progress.clone();
    sources::register_flow(&ctx, cx, flow, &mut scratch, &mut registered).await?;
    Ok(ctx)
}

/// Runs `sql` in `ctx` within the default bounds.
pub async fn collect(
    ctx: &SessionContext,
    sql: &str,
    target: &str,
) -> Result<(arrow::datatypes::SchemaRef, Vec<arrow::array::RecordBatch>), FlowError> {
    let df = crate::engine::declarative::sql::plan(ctx, sql)
        .await
        .map_err(|source| {
            FlowError::Table(crate::engine::tables::TableError::Query {
                table: target.to_string(),
                source,
            })
        })?;
    let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
    Ok((schema, Bounds::DEFAULT.collect(df, target).await?))
}
