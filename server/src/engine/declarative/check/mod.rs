//! The pipeline's check, after each run and with `reckon pipeline check`: what the flows wrote,
//! recomputed from what they read by code of its own: every AUTO CDC target against all its
//! change events (`declared/cdc/check.rs`, with the rest of AUTO CDC); `unique.rs`: every
//! `reckon.dropDuplicates` table against its source; `windows.rs`: every windowed table, window
//! by window, against a recount of every event its flow read (`reckon pipeline check` only: it
//! reads every event, and is not yet kept up to date run by run).

mod unique;
mod windows;

pub use super::declared::cdc::check::Scope;

use super::declared::cdc::check as cdc;

use app::model::CheckLine;

use super::graph::Graph;
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;

/// The check's lines for a project's tables, one per table it can check.
pub async fn check(
    cx: &FlowContext,
    graph: &Graph,
    scope: Scope,
) -> Result<Vec<CheckLine>, FlowError> {
    let mut lines = unique::tables(cx, graph).await?;
    lines.extend(cdc::targets(cx, graph, scope).await?);
    if scope == Scope::Every {
        lines.extend(windows::tables(cx, graph).await?);
    }
    Ok(lines)
}
