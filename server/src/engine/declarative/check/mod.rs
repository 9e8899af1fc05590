//! The pipeline's check, after each run and with `reckon pipeline check`: what the flows wrote,
//! recomputed from what they read by code of its own: every AUTO CDC target against all its
//! change events (`declared/cdc/check.rs`, with the rest of AUTO CDC); `streams.rs`: every
//! table a flow fills with rows, each row accounted for (after a run, the tables with
//! `reckon.dropDuplicates`); `windows.rs`: every windowed table, window by window, against a
//! recount of every event its flow read. `reckon pipeline check` checks every table; the check
//! after a run does not recount windows yet (it would read every event each run).

mod streams;
mod windows;

pub use super::declared::cdc::check::Scope;

use super::declared::cdc::check as cdc;

use app::model::{CheckLine, ProjectCheck};

use super::graph::Graph;
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;

/// The check's lines for a project's tables, one per table it can check (and window).
pub async fn check(
    cx: &FlowContext,
    graph: &Graph,
    scope: Scope,
) -> Result<Vec<CheckLine>, FlowError> {
    Ok(report(cx, graph, scope).await?.lines)
}

/// The check's lines, and each window of the windowed tables beside its recount.
pub async fn report(
    cx: &FlowContext,
    graph: &Graph,
    scope: Scope,
) -> Result<ProjectCheck, FlowError> {
    let mut lines = streams::tables(cx, graph, scope).await?;
    lines.extend(cdc::targets(cx, graph, scope).await?);
    let mut windows = vec![];
    if scope == Scope::Every {
        let (l, w) = self::windows::tables(cx, graph).await?;
        lines.extend(l);
        windows = w;
    }
    Ok(ProjectCheck {
        lines,
        windows,
        error: None,
    })
}
