//! What the check reads beside its recount: the table's rows by window, and the late ledger.

use std::collections::{BTreeMap, HashMap};

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use super::super::super::late;
use super::super::super::side;
use super::super::{canonical, cell, cells};
use crate::engine::declarative::sql::window::{Output, WindowPlan};
use crate::engine::flow::{FlowContext, FlowError};
use crate::engine::streaming::window::{Acc, Cell, Closed};
use crate::engine::tables::{self, TableError};

/// A window's aggregates as the table's columns show them.
pub fn texts(
    plan: &WindowPlan,
    out: &arrow::datatypes::SchemaRef,
    key: &(i64, Vec<Cell>),
    accs: &[Acc],
    target: &str,
) -> Result<Vec<String>, FlowError> {
    let closed: Closed = (key.0, key.1.clone(), accs.to_vec());
    let batch = cells::rows(plan, out.clone(), &[closed], target)?;
    aggregate_texts(&batch, plan, 0, target)
}

/// Row `row`'s aggregate columns as text.
fn aggregate_texts(
    batch: &RecordBatch,
    plan: &WindowPlan,
    row: usize,
    target: &str,
) -> Result<Vec<String>, FlowError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = vec![];
    for (name, _) in plan
        .outputs
        .iter()
        .filter(|(_, o)| matches!(o, Output::Aggregate(_)))
    {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| missing(target, name))?;
        let shown = ArrayFormatter::try_new(column.as_ref(), &options).map_err(|source| {
            TableError::Arrow {
                table: target.to_string(),
                source,
            }
        })?;
        out.push(shown.value(row).to_string());
    }
    Ok(out)
}

pub fn missing(target: &str, name: &str) -> FlowError {
    FlowError::from(crate::engine::flow::Refusal::SchemaClash(format!(
        "{target} has no column {name} to check"
    )))
}

/// A key cell as text.
pub fn cell_text(cell: &Cell) -> String {
    match cell {
        Cell::Null => "NULL".into(),
        Cell::Bool(b) => b.to_string(),
        Cell::Int(i) => i.to_string(),
        Cell::Dec(d) => d.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Text(t) => t.clone(),
        Cell::Time(t) => crate::engine::event::format_micros(*t),
    }
}

pub type Written = BTreeMap<(i64, Vec<Cell>), Vec<Vec<String>>>;

/// The table's rows by window and keys, with their aggregates as text.
pub async fn stored(
    table: &deltalake::DeltaTable,
    plan: &WindowPlan,
    target: &str,
) -> Result<Written, FlowError> {
    let ctx = tables::session(table, "target").await?;
    let batches = tables::query(&ctx, target, "SELECT * FROM target").await?;
    let mut out: Written = BTreeMap::new();
    for batch in &batches {
        let mut start = None;
        let mut keys = vec![None; plan.keys.len()];
        for (name, output) in &plan.outputs {
            let column = || -> Result<_, FlowError> {
                let c = batch
                    .column_by_name(name)
                    .ok_or_else(|| missing(target, name))?;
                canonical(c)
            };
            match output {
                Output::Start => start = Some((column()?, 0)),
                Output::End if start.is_none() => start = Some((column()?, plan.width)),
                Output::Key(i) => keys[*i] = Some(column()?),
                _ => {}
            }
        }
        let Some((start, shift)) = start else {
            return Err(missing(target, "window start or end"));
        };
        for row in 0..batch.num_rows() {
            let Cell::Time(t) = cell(&start, row) else {
                continue;
            };
            let keys: Vec<Cell> = keys
                .iter()
                .map(|k| k.as_ref().map_or(Cell::Null, |k| cell(k, row)))
                .collect();
            let values = aggregate_texts(batch, plan, row, target)?;
            out.entry((t - shift, keys)).or_default().push(values);
        }
    }
    Ok(out)
}

/// The ledger's late rows of `target`'s flow, per window start: how many of each identity.
pub async fn ledger(
    cx: &FlowContext,
    target: &str,
    flow: &str,
) -> Result<HashMap<i64, HashMap<String, usize>>, FlowError> {
    let mut out: HashMap<i64, HashMap<String, usize>> = HashMap::new();
    for batch in side::of_flow(cx, &side::LATE_ROWS, target, flow).await? {
        for (start, id) in late::ledger_identities(&batch)? {
            *out.entry(start).or_default().entry(id).or_default() += 1;
        }
    }
    Ok(out)
}
