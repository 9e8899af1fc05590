//! A windowed flow's rows as cells and back: its input's columns read once into the cells its
//! windows group and add up, and the windows' cells written out as the table's columns.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef, TimeUnit};

use crate::engine::declarative::sql::window::{KEPT, Output, TIME, WindowPlan};
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::streaming::window::{Acc, Aggregate, Cell, Closed, Row};
use crate::engine::tables::TableError;

/// The table's rows for `windows`, in the columns of `out` ([`super::output_schema`]).
pub fn rows(
    plan: &WindowPlan,
    out: SchemaRef,
    windows: &[Closed],
    target: &str,
) -> Result<RecordBatch, FlowError> {
    let mut arrays = vec![];
    for ((_, output), field) in plan.outputs.iter().zip(out.fields()) {
        let cells: Vec<Cell> = windows
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
    RecordBatch::try_new(out, arrays).map_err(|source| {
        FlowError::Table(TableError::Arrow {
            table: target.to_string(),
            source,
        })
    })
}

/// An aggregate's value, as its column holds it.
pub(crate) fn finish(aggregate: Aggregate, acc: &Acc, kind: &DataType) -> Cell {
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
pub struct Columns {
    time: ArrayRef,
    kept: BooleanArray,
    keys: Vec<ArrayRef>,
    dedup: Vec<ArrayRef>,
    inputs: Vec<ArrayRef>,
}

impl Columns {
    pub fn of(batch: &RecordBatch, plan: &WindowPlan, dedup: usize) -> Result<Self, FlowError> {
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

    pub fn row(&self, i: usize) -> Row {
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
pub fn canonical(array: &ArrayRef) -> Result<ArrayRef, FlowError> {
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
pub fn cell(array: &ArrayRef, i: usize) -> Cell {
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
pub fn array(cells: &[Cell], kind: &DataType) -> ArrayRef {
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
