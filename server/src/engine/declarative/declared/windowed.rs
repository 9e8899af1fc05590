//! The process step of a windowed flow (PIPELINES §8): DataFusion runs the part of its query
//! below the aggregation over the new rows (`sql/window.rs`), each row goes to the windows in
//! source order (`engine/streaming/window.rs`, the watermark's rules shared with the course's
//! gold), and the windows the watermark closed become the rows written.

use std::sync::Arc;

use app::model::FlowRun;
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::prelude::SessionContext;

use super::expectations::Origin;
use super::late::{self, Late};
use super::session::Bounds;
use crate::engine::declarative::sql::window::{KEPT, Output, TIME, WindowPlan};
use crate::engine::event::format_micros;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::streaming::watermark::window_start;
use crate::engine::streaming::window::{Acc, Aggregate, Cell, Fate, Row, Shape, WindowState};
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

/// The columns a windowed flow writes, from its input's.
pub fn output_schema(plan: &WindowPlan, input: &Schema) -> Result<SchemaRef, FlowError> {
    let mut fields = vec![];
    for (name, output) in &plan.outputs {
        let kind = match output {
            Output::Start | Output::End => timestamp(),
            Output::Key(i) => normal(&input_type(input, &format!("__k{i}"))?),
            Output::Aggregate(i) => {
                let of = input_type(input, &format!("__a{i}"))?;
                aggregate_type(plan.aggregates[*i].0, &of)
            }
        };
        fields.push(Field::new(name, kind, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn input_type(input: &Schema, name: &str) -> Result<DataType, FlowError> {
    input
        .field_with_name(name)
        .map(|f| f.data_type().clone())
        .map_err(|_| FlowError::from(Refusal::SchemaClash(format!("no column {name}"))))
}

/// Spark's result types: counts are BIGINT; a sum of whole numbers BIGINT, of decimals ten
/// digits wider; an average DOUBLE, or of decimals four more digits after the point.
fn aggregate_type(aggregate: Aggregate, of: &DataType) -> DataType {
    match (aggregate, of) {
        (Aggregate::CountAll | Aggregate::Count | Aggregate::CountIf, _) => DataType::Int64,
        (Aggregate::Sum, DataType::Decimal128(p, s)) => DataType::Decimal128((p + 10).min(38), *s),
        (Aggregate::Avg, DataType::Decimal128(p, s)) => {
            DataType::Decimal128((p + 4).min(38), (*s + 4).min(38))
        }
        (Aggregate::Sum, t) if t.is_integer() => DataType::Int64,
        (Aggregate::Sum | Aggregate::Avg, _) => DataType::Float64,
        (Aggregate::Min | Aggregate::Max, t) => normal(t),
    }
}

/// The type a cell of `t` is written back as.
fn normal(t: &DataType) -> DataType {
    match t {
        t if t.is_integer() => DataType::Int64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Timestamp(_, zone) => DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        other => other.clone(),
    }
}

/// What one run of a windowed flow did.
pub struct Windowed {
    pub rows: RecordBatch,
    pub state: WindowState,
    /// The rows it read too late, for `_late`.
    pub late: Option<RecordBatch>,
}

/// Runs the flow's input query over the new rows in `ctx` and moves `state` through them.
pub async fn process(
    ctx: &SessionContext,
    bounds: &Bounds,
    (plan, dedup): (&WindowPlan, &[String]),
    state: &WindowState,
    origin: &Origin<'_>,
    event: &mut FlowRun,
) -> Result<Windowed, FlowError> {
    let target = origin.table;
    let query = |source| TableError::Query {
        table: target.to_string(),
        source,
    };
    let df = ctx.sql(&plan.input_sql(dedup)).await.map_err(query)?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = bounds.collect(df, target).await?;
    // The shape was checked against the state's when the flow read (`same_shape`).
    let shape = shape(plan, dedup);
    let mut running = state.run(&shape);
    let (mut late, mut duplicate) = (vec![], 0);
    for (b, batch) in batches.iter().enumerate() {
        let columns = Columns::of(batch, plan, dedup.len())?;
        for i in 0..batch.num_rows() {
            let row = columns.row(i);
            let time = row.time;
            match (running.add(row), time) {
                (Fate::Late, Some(time)) => late.push(Late {
                    batch: b,
                    row: i,
                    time,
                    window_start: window_start(time, plan.width),
                }),
                (Fate::Duplicate, _) => duplicate += 1,
                _ => {}
            }
        }
    }
    let hidden = plan.hidden(dedup);
    let late_rows = late::rows(&batches, hidden, &late, (plan.width, state.watermark), origin)?;
    event.figures.watermark_before = state.watermark.map(format_micros);
    let (state, closed) = running.finish();
    event.figures.watermark_after = state.watermark.map(format_micros);
    event.figures.rows_late = late.len() as u64;
    event.figures.rows_duplicate = duplicate;
    event.figures.hours_closed = closed.iter().map(|(s, _, _)| format_micros(*s)).collect();
    let out = output_schema(plan, &schema)?;
    let mut arrays = vec![];
    for ((_, output), field) in plan.outputs.iter().zip(out.fields()) {
        let cells: Vec<Cell> = closed
            .iter()
            .map(|(start, keys, accs)| match output {
                Output::Start => Cell::Time(*start),
                Output::End => Cell::Time(start + plan.width),
                Output::Key(i) => keys[*i].clone(),
                Output::Aggregate(i) => finish(plan.aggregates[*i].0, &accs[*i], field.data_type()),
            })
            .collect();
        arrays.push(array(&cells, field.data_type()));
    }
    let rows = RecordBatch::try_new(out, arrays).map_err(|source| TableError::Arrow {
        table: target.to_string(),
        source,
    })?;
    Ok(Windowed {
        rows,
        state,
        late: late_rows,
    })
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

/// An aggregate's value, as its column holds it.
fn finish(aggregate: Aggregate, acc: &Acc, kind: &DataType) -> Cell {
    match (aggregate, acc) {
        (_, Acc::Count(n)) => Cell::Int(*n),
        (Aggregate::Avg, Acc::Sum(_, 0)) => Cell::Null,
        (Aggregate::Avg, Acc::Sum(sum, n)) => match (sum, kind) {
            // Four more digits after the point, rounded half up as Spark rounds.
            (Cell::Dec(d), DataType::Decimal128(..)) => {
                let scaled = d * 10_000;
                let n = i128::from(*n);
                let half = if scaled >= 0 { n / 2 } else { -(n / 2) };
                Cell::Dec((scaled + half) / n)
            }
            (Cell::Int(i), _) => Cell::Float(*i as f64 / *n as f64),
            (Cell::Float(f), _) => Cell::Float(f / *n as f64),
            _ => Cell::Null,
        },
        (_, Acc::Sum(sum, _)) => sum.clone(),
        (_, Acc::Extreme(e)) => e.clone(),
    }
}

/// The new rows' columns, read as cells.
struct Columns {
    time: ArrayRef,
    kept: BooleanArray,
    keys: Vec<ArrayRef>,
    dedup: Vec<ArrayRef>,
    inputs: Vec<ArrayRef>,
}

impl Columns {
    fn of(batch: &RecordBatch, plan: &WindowPlan, dedup: usize) -> Result<Self, FlowError> {
        let column = |name: &str| {
            batch.column_by_name(name).cloned().ok_or_else(|| {
                FlowError::from(Refusal::SchemaClash(format!(
                    "the input has no column {name}"
                )))
            })
        };
        let time = column(TIME)?;
        let time = match time.data_type() {
            DataType::Timestamp(..) | DataType::Date32 => canonical(&time)?,
            other => {
                return Err(FlowError::from(Refusal::SchemaClash(format!(
                    "the watermark's column {} is {other}, not a TIMESTAMP",
                    plan.watermark.column
                ))));
            }
        };
        let kept = column(KEPT)?;
        let kept = kept
            .as_boolean_opt()
            .cloned()
            .unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()]));
        let many = |prefix: &str, n: usize| {
            (0..n)
                .map(|i| canonical(&column(&format!("{prefix}{i}"))?))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            time,
            kept,
            keys: many("__k", plan.keys.len())?,
            dedup: many("__d", dedup)?,
            inputs: many("__a", plan.aggregates.len())?,
        })
    }

    fn row(&self, i: usize) -> Row {
        let time = match cell(&self.time, i) {
            Cell::Time(t) => Some(t),
            _ => None,
        };
        Row {
            time,
            kept: self.kept.is_valid(i) && self.kept.value(i),
            keys: self.keys.iter().map(|a| cell(a, i)).collect(),
            dedup: self.dedup.iter().map(|a| cell(a, i)).collect(),
            inputs: self.inputs.iter().map(|a| cell(a, i)).collect(),
        }
    }
}

/// A column cast once to the type its cells are read from: whole numbers as BIGINT, floating
/// ones as DOUBLE, times as microseconds, anything else as text (a cast per cell would allocate
/// for every row).
fn canonical(array: &ArrayRef) -> Result<ArrayRef, FlowError> {
    let to = match array.data_type() {
        DataType::Boolean | DataType::Decimal128(..) | DataType::Date32 => return Ok(array.clone()),
        t if t.is_integer() => DataType::Int64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Timestamp(..) => DataType::Timestamp(TimeUnit::Microsecond, None),
        _ => DataType::Utf8,
    };
    cast(array, &to).map_err(|source| {
        FlowError::Table(TableError::Arrow {
            table: "a windowed flow's input".into(),
            source,
        })
    })
}

/// Row `i` of a [`canonical`] column as a cell: times in microseconds (a date's as its
/// midnight's).
fn cell(array: &ArrayRef, i: usize) -> Cell {
    use arrow::datatypes::{Date32Type, Decimal128Type, Float64Type, Int64Type};
    if array.is_null(i) {
        return Cell::Null;
    }
    match array.data_type() {
        DataType::Boolean => Cell::Bool(array.as_boolean().value(i)),
        DataType::Int64 => Cell::Int(array.as_primitive::<Int64Type>().value(i)),
        DataType::Decimal128(..) => Cell::Dec(array.as_primitive::<Decimal128Type>().value(i)),
        DataType::Float64 => Cell::Float(array.as_primitive::<Float64Type>().value(i)),
        DataType::Date32 => {
            Cell::Time(i64::from(array.as_primitive::<Date32Type>().value(i)) * 86_400_000_000)
        }
        DataType::Timestamp(..) => Cell::Time(
            array
                .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                .value(i),
        ),
        DataType::Utf8 => Cell::Text(array.as_string::<i32>().value(i).to_string()),
        _ => Cell::Null,
    }
}

/// Cells as a column of `kind`.
fn array(cells: &[Cell], kind: &DataType) -> ArrayRef {
    let int = |c: &Cell| match c {
        Cell::Int(i) | Cell::Time(i) => Some(*i),
        _ => None,
    };
    match kind {
        DataType::Int64 => Arc::new(cells.iter().map(int).collect::<Int64Array>()),
        DataType::Timestamp(_, zone) => Arc::new(
            cells
                .iter()
                .map(int)
                .collect::<TimestampMicrosecondArray>()
                .with_timezone_opt(zone.clone()),
        ),
        DataType::Date32 => Arc::new(
            cells
                .iter()
                .map(|c| int(c).map(|t| (t / 86_400_000_000) as i32))
                .collect::<Date32Array>(),
        ),
        DataType::Decimal128(p, s) => {
            let digits = cells.iter().map(|c| match c {
                Cell::Dec(d) => Some(*d),
                _ => None,
            });
            let column = digits.collect::<Decimal128Array>();
            Arc::new(
                column
                    .with_precision_and_scale(*p, *s)
                    .unwrap_or_else(|_| Decimal128Array::from(vec![None::<i128>; cells.len()])),
            )
        }
        DataType::Float64 => Arc::new(
            cells
                .iter()
                .map(|c| match c {
                    Cell::Float(f) => Some(*f),
                    Cell::Int(i) => Some(*i as f64),
                    _ => None,
                })
                .collect::<Float64Array>(),
        ),
        DataType::Boolean => Arc::new(
            cells
                .iter()
                .map(|c| match c {
                    Cell::Bool(b) => Some(*b),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        _ => {
            let text: StringArray = cells
                .iter()
                .map(|c| match c {
                    Cell::Text(t) => Some(t.clone()),
                    Cell::Null => None,
                    other => Some(format!("{other:?}")),
                })
                .collect();
            cast(&(Arc::new(text) as ArrayRef), kind)
                .unwrap_or_else(|_| arrow::array::new_null_array(kind, cells.len()))
        }
    }
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
                let state: super::TableState =
                    crate::engine::state::load(&super::state_dir(cx, &flow.target), committed)?;
                standing.watermark = state.windows.get(&flow.name).and_then(|w| w.watermark);
            }
        }
        out.push(standing);
    }
    Ok(out)
}
