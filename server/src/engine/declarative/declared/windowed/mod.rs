//! The process step of a windowed flow (PIPELINES §8): DataFusion runs the part of its query
//! below the aggregation over the new rows (`sql/window.rs`), each row goes to the windows in
//! source order (`engine/streaming/window.rs`, the watermark's rules shared with the course's
//! gold), and the windows the watermark closed become the rows written.

use std::sync::Arc;

use app::model::FlowRun;
use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;

mod cells;
pub mod recount;
mod schema;

pub use cells::{Columns, canonical, cell};
pub use schema::output_schema;

use super::expectations::Origin;
use super::late::{self, Late};
use super::session::Bounds;
use crate::engine::declarative::graph::FlowSpec;
use crate::engine::declarative::sql::{self, window::WindowPlan};
use crate::engine::event::format_micros;
use crate::engine::flow::{FlowError, Lap, Refusal};
use crate::engine::streaming::watermark::window_start;
use crate::engine::streaming::window::{Fate, Shape, WindowState};
use crate::engine::tables::TableError;

/// The duplicate keys `reckon.dropDuplicatesWithinWatermark` names (none: every row counts).
pub fn dedup_columns(property: Option<&String>) -> Vec<String> {
    property
        .map(|p| {
            p.split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The shape of `plan`'s windows.
pub fn shape(plan: &WindowPlan, dedup: &[String]) -> Shape {
    Shape {
        width: plan.width,
        delay: plan.watermark.delay,
        aggregates: plan.aggregates.iter().map(|(a, _)| *a).collect(),
        dedup: !dedup.is_empty(),
    }
}

/// What one run of a windowed flow did.
pub struct Windowed {
    pub rows: RecordBatch,
    pub state: WindowState,
    /// The rows it read too late, for `_late`.
    pub late: Option<RecordBatch>,
}

/// How a windowed flow reads its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Only the columns its windows need, and the late rows' own columns in a second read of
    /// the same query: for a flow of one source and no view, whose rows come back in the same
    /// order.
    Lean,
    /// Every column at once: a join or a union may give its rows in another order the second
    /// time.
    Whole,
}

/// A windowed flow's process step: its windows over the new rows, read lean when its one source
/// gives the same rows twice, else whole; and once more whole, from the state its table's last
/// commit (`committed`: its version and folder) left, when the second read gave other rows.
pub async fn run(
    (ctx, bounds): (&SessionContext, &Bounds),
    flow: &FlowSpec,
    (plan, dedup): (&WindowPlan, &[String]),
    (state, committed): (WindowState, (i64, &std::path::Path)),
    origin: &Origin<'_>,
    event: &mut FlowRun,
) -> Result<Windowed, FlowError> {
    let reading = match flow.query.reads.len() == 1 && flow.views.is_empty() {
        true => Reading::Lean,
        false => Reading::Whole,
    };
    let read = (plan, dedup, reading);
    if let Some(done) = process(ctx, bounds, read, state, origin, event).await? {
        return Ok(done);
    }
    let mut before = match committed {
        (0, _) => super::TableState::default(),
        (version, dir) => crate::engine::state::load::<super::TableState>(dir, version)?,
    };
    let state = before.windows.remove(&flow.name).unwrap_or_default();
    let read = (plan, dedup, Reading::Whole);
    let done = process(ctx, bounds, read, state, origin, event).await?;
    Ok(done.expect("a whole reading keeps its late rows' columns"))
}

/// Runs the flow's input query over the new rows in `ctx` and moves `state` through them.
/// `None` when a lean reading's second read did not give the same rows (a condition that
/// changes from one read to the next, such as `now()`): the caller reads again, whole, from
/// the committed state.
async fn process(
    ctx: &SessionContext,
    bounds: &Bounds,
    (plan, dedup, reading): (&WindowPlan, &[String], Reading),
    state: WindowState,
    origin: &Origin<'_>,
    event: &mut FlowRun,
) -> Result<Option<Windowed>, FlowError> {
    let target = origin.table;
    let query = |source| TableError::Query {
        table: target.to_string(),
        source,
    };
    let mut lap = Lap::start();
    let whole = reading == Reading::Whole;
    let df = sql::plan(ctx, &plan.input_sql(dedup, whole))
        .await
        .map_err(query)?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = bounds.collect(df, target).await?;
    lap.took("query", event);
    // The shape was checked against the state's when the flow read (`same_shape`).
    let shape = shape(plan, dedup);
    let before = state.watermark;
    let mut running = state.run(&shape);
    // Late rows by their place in the input (its n-th row), with their time.
    let (mut late, mut duplicate, mut at) = (vec![], 0, 0);
    for batch in &batches {
        let columns = Columns::of(batch, plan, dedup.len())?;
        for i in 0..batch.num_rows() {
            let row = columns.row(i);
            let time = row.time;
            match (running.add(row), time) {
                (Fate::Late, Some(time)) => late.push((at + i, time)),
                (Fate::Duplicate, _) => duplicate += 1,
                _ => {}
            }
        }
        at += batch.num_rows();
    }
    lap.took("windows", event);
    let (width, hidden) = (plan.width, plan.hidden(dedup));
    let late_rows = match (late.is_empty(), reading) {
        (true, _) => None,
        (false, Reading::Whole) => {
            let placed = placed(&batches, &late, (plan, dedup.len()), at)?;
            let placed = placed.expect("the same rows as read");
            late::rows(&batches, hidden, &placed, (width, before), origin)?
        }
        (false, Reading::Lean) => {
            // The same query with the source's own columns: one partition reads the same rows
            // of one source in the same order, so the n-th row is the same row (its time is
            // checked).
            let df = sql::plan(ctx, &plan.input_sql(dedup, true))
                .await
                .map_err(query)?;
            let again = bounds.collect(df, target).await?;
            let Some(placed) = placed(&again, &late, (plan, dedup.len()), at)? else {
                return Ok(None);
            };
            let rows = late::rows(&again, hidden, &placed, (width, before), origin)?;
            lap.took("late rows", event);
            rows
        }
    };
    event.figures.watermark_before = before.map(format_micros);
    let (state, closed) = running.finish();
    event.figures.watermark_after = state.watermark.map(format_micros);
    event.figures.rows_late = late.len() as u64;
    event.figures.rows_duplicate = duplicate;
    event.figures.hours_closed = closed.iter().map(|(s, _, _)| format_micros(*s)).collect();
    let out = output_schema(plan, &schema)?;
    let rows = cells::rows(plan, out, &closed, target)?;
    Ok(Some(Windowed {
        rows,
        state,
        late: late_rows,
    }))
}

/// Each late row's batch and row in `batches`, from its place in the input (`late` in order);
/// `None` unless `batches` hold the `total` rows read first, each late row where it was, with
/// its event time.
fn placed(
    batches: &[RecordBatch],
    late: &[(usize, i64)],
    (plan, dedup): (&WindowPlan, usize),
    total: usize,
) -> Result<Option<Vec<Late>>, FlowError> {
    if batches.iter().map(RecordBatch::num_rows).sum::<usize>() != total {
        return Ok(None);
    }
    let (mut out, mut first, mut next) = (vec![], 0, late.iter().peekable());
    for (b, batch) in batches.iter().enumerate() {
        let end = first + batch.num_rows();
        let columns = Columns::of(batch, plan, dedup)?;
        while let Some((at, time)) = next.next_if(|(at, _)| *at < end) {
            if columns.row(at - first).time != Some(*time) {
                return Ok(None);
            }
            out.push(Late {
                batch: b,
                row: at - first,
                time: *time,
                window_start: window_start(*time, plan.width),
            });
        }
        first = end;
    }
    Ok(Some(out))
}

/// Refuses to go on from `state` with another shape than it started with: its open windows
/// and keys would mean something else (Spark needs a new checkpoint).
pub fn same_shape(state: &WindowState, shape: &Shape, target: &str) -> Result<(), FlowError> {
    match state.started_with().filter(|before| *before != shape) {
        Some(before) => Err(FlowError::from(Refusal::WindowShapeChanged(format!(
            "{target}'s windows were started as {}; the query now asks for {}: run with \
             --full-refresh {target} to rebuild it",
            described(before),
            described(shape)
        )))),
        None => Ok(()),
    }
}

/// A shape in words: "1-hour windows, 1-hour delay, 2 aggregates, duplicates dropped".
fn described(shape: &Shape) -> String {
    let minutes = |m: i64| format!("{} min", m / 60_000_000);
    format!(
        "{} windows, a {} delay, {} aggregate(s), {}",
        minutes(shape.width),
        minutes(shape.delay),
        shape.aggregates.len(),
        match shape.dedup {
            true => "duplicates dropped within the watermark",
            false => "duplicates counted",
        }
    )
}

/// Where a windowed flow's windows stand as its table's last commit left them.
#[derive(Debug, Clone)]
pub struct Standing {
    pub target: String,
    pub width: i64,
    pub delay: i64,
    pub watermark: Option<i64>,
}

impl Standing {
    /// The start of the last window written (final), if the watermark closed any.
    pub fn final_through(&self) -> Option<i64> {
        // [s, s + width) is closed once s + width <= the watermark.
        let w = self.watermark?;
        Some(window_start(w - self.width, self.width))
    }
}

/// Each windowed flow of `graph` and where its windows stand.
pub async fn standing(
    cx: &crate::engine::flow::FlowContext,
    graph: &crate::engine::declarative::graph::Graph,
) -> Result<Vec<Standing>, FlowError> {
    let mut out = vec![];
    for flow in &graph.flows {
        let Some(plan) = &flow.query.window else {
            continue;
        };
        let mut standing = Standing {
            target: flow.target.clone(),
            width: plan.width,
            delay: plan.watermark.delay,
            watermark: None,
        };
        if let Some(table) = cx.tables.open_named(&flow.target).await? {
            let committed = super::committed(cx, &table, &flow.target).await?;
            if committed > 0 {
                let state = super::committed_state(cx, &flow.target, committed)?;
                standing.watermark = state.windows.get(&flow.name).and_then(|w| w.watermark);
            }
        }
        out.push(standing);
    }
    Ok(out)
}
