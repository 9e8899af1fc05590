//! The late ledger's rows (PIPELINES §8 and §9): each row a windowed flow read after the
//! watermark had passed its window, with its event time, its window, the watermark then, the
//! run that read it and where it came from. Kept in the pipeline's `_late`, committed with the
//! flow as `_quarantine` is (`side.rs`).

use std::sync::Arc;

use arrow::array::TimestampMicrosecondArray;
use arrow::array::UInt32Array;
use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::compute::{cast, concat_batches, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::expectations::{Origin, file_of, line_of, number_at, row_json, rows_json};
use super::sources::VERSION;
use crate::engine::flow::FlowError;
use crate::engine::tables::TableError;

/// The pipeline's table of late rows.
pub const LATE: &str = "_late";

pub fn late_schema() -> SchemaRef {
    let text = |name| Field::new(name, DataType::Utf8, true);
    let number = |name| Field::new(name, DataType::Int64, true);
    let time = |name| {
        Field::new(
            name,
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        )
    };
    Arc::new(Schema::new(vec![
        number("run"),
        text("table"),
        text("flow"),
        time("event_time"),
        time("window_start"),
        time("window_end"),
        time("watermark"),
        text("row"),
        text("source_file"),
        number("source_line"),
        text("source_table"),
        number("source_version"),
        number("source_partition"),
        number("source_offset"),
    ]))
}

/// Columns that say where and when a row landed, not what it says: rows that differ only in
/// them are one event sent more than once (PIPELINES §9's "one event, one row").
pub const LANDING: [&str; 14] = [
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "kafka_timestamp",
    "ingested_at",
    "_metadata",
    "source_file",
    "source_line",
    "raw",
    "__version",
    "__file",
    "__line",
    "topic",
];

/// A row kept as JSON (`row_json`: its columns in order) for a reader: what it says, then where
/// it landed: `order_id 1006, status placed, amount 22.00 (partition 2, offset 2)`.
pub fn described(json: &str) -> String {
    let Ok(Ordered(fields)) = serde_json::from_str::<Ordered>(json) else {
        return json.to_string();
    };
    let text = |raw: &serde_json::value::RawValue| {
        let raw = raw.get();
        match serde_json::from_str::<String>(raw) {
            Ok(s) => s,
            Err(_) => raw.to_string(),
        }
    };
    let (mut says, mut place) = (vec![], vec![]);
    for (name, value) in &fields {
        match name.as_str() {
            "partition" | "offset" | "source_file" | "source_line" => {
                if value.get() != "null" {
                    place.push(format!("{name} {}", text(value)));
                }
            }
            _ if LANDING.contains(&name.as_str()) || name.starts_with("__") => {}
            _ => says.push(format!("{name} {}", text(value))),
        }
    }
    match place.is_empty() {
        true => says.join(", "),
        false => format!("{} ({})", says.join(", "), place.join(", ")),
    }
}

/// A JSON object's fields in their order, each value as written.
struct Ordered(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Ordered, A::Error> {
                let mut fields = vec![];
                while let Some(field) = map.next_entry()? {
                    fields.push(field);
                }
                Ok(Ordered(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// One late row: where it is in the flow's input, its event time and window start.
pub struct Late {
    pub batch: usize,
    pub row: usize,
    pub time: i64,
    pub window_start: i64,
}

/// The ledger's rows for `late`, read from `batches` (the flow's input: its own columns from
/// position `hidden` on) when the watermark was `watermark`.
pub fn rows(
    batches: &[RecordBatch],
    hidden: usize,
    late: &[Late],
    (width, watermark): (i64, Option<i64>),
    origin: &Origin<'_>,
) -> Result<Option<RecordBatch>, FlowError> {
    if late.is_empty() {
        return Ok(None);
    }
    let n = late.len();
    // The late rows' own columns taken out together, in input order (`late` is), so their JSON
    // is written at once rather than a row at a time (a run can read thousands late).
    let mut parts = vec![];
    for (b, batch) in batches.iter().enumerate() {
        let rows: Vec<u32> = late
            .iter()
            .filter(|l| l.batch == b)
            .map(|l| l.row as u32)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let own: Vec<usize> = (hidden..batch.num_columns()).collect();
        let source = batch.project(&own).map_err(arrow_error)?;
        parts.push(take_record_batch(&source, &UInt32Array::from(rows)).map_err(arrow_error)?);
    }
    let source = concat_batches(&parts[0].schema(), &parts).map_err(arrow_error)?;
    let texts: Vec<Option<String>> = rows_json(&source)?.into_iter().map(Some).collect();
    let (mut files, mut lines, mut versions) = (vec![], vec![], vec![]);
    let (mut partitions, mut offsets) = (vec![], vec![]);
    for row in 0..source.num_rows() {
        files.push(file_of(&source, row));
        lines.push(line_of(&source, row));
        versions.push(number_at(&source, VERSION, row));
        partitions.push(whole(&source, "partition", row));
        offsets.push(whole(&source, "offset", row));
    }
    let times = |values: Vec<Option<i64>>| -> ArrayRef {
        Arc::new(TimestampMicrosecondArray::from(values).with_timezone("UTC"))
    };
    let same = |v: &str| Arc::new(StringArray::from(vec![Some(v.to_string()); n])) as ArrayRef;
    let tables: Vec<Option<String>> = versions
        .iter()
        .map(|v| v.and(origin.source_table.map(String::from)))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![origin.run; n])),
        same(origin.table),
        same(origin.flow),
        times(late.iter().map(|l| Some(l.time)).collect()),
        times(late.iter().map(|l| Some(l.window_start)).collect()),
        times(late.iter().map(|l| Some(l.window_start + width)).collect()),
        times(vec![watermark; n]),
        Arc::new(StringArray::from(texts)),
        Arc::new(StringArray::from(files)),
        Arc::new(Int64Array::from(lines)),
        Arc::new(StringArray::from(tables)),
        Arc::new(Int64Array::from(versions)),
        Arc::new(Int64Array::from(partitions)),
        Arc::new(Int64Array::from(offsets)),
    ];
    RecordBatch::try_new(late_schema(), columns)
        .map(Some)
        .map_err(arrow_error)
}

/// What tells a late row from another, as the flow's input row `row` of `batch` (its own
/// columns from position `hidden` on) and as the ledger keeps it: its source version, file,
/// line and the row as JSON; with the JSON alone, to name it.
pub fn identity(
    batch: &RecordBatch,
    hidden: usize,
    row: usize,
) -> Result<(String, String), FlowError> {
    let own: Vec<usize> = (hidden..batch.num_columns()).collect();
    let source = batch.project(&own).map_err(arrow_error)?;
    let json = row_json(&source, row)?;
    let place = (
        number_at(&source, VERSION, row),
        file_of(&source, row),
        line_of(&source, row),
    );
    Ok((identity_text(place, &json), json))
}

fn identity_text(
    (version, file, line): (Option<i64>, Option<String>, Option<i64>),
    json: &str,
) -> String {
    format!("{version:?}\u{1}{file:?}\u{1}{line:?}\u{1}{json}")
}

/// The ledger's rows in `batch` (of `_late`) as (window start, identity).
pub fn ledger_identities(batch: &RecordBatch) -> Result<Vec<(i64, String)>, FlowError> {
    use arrow::datatypes::TimestampMicrosecondType;
    let starts = batch
        .column_by_name("window_start")
        .map(|c| cast(c, &DataType::Timestamp(TimeUnit::Microsecond, None)))
        .transpose()
        .map_err(arrow_error)?;
    let Some(starts) = starts else {
        return Ok(vec![]);
    };
    let starts = starts.as_primitive::<TimestampMicrosecondType>();
    // Each text column cast once for the batch (read back, a Delta table may give a view type).
    let (rows, files) = (texts(batch, "row"), texts(batch, "source_file"));
    let at = |column: &Option<StringArray>, row: usize| {
        column
            .as_ref()
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row).to_string())
    };
    let mut out = vec![];
    for row in 0..batch.num_rows() {
        let json = at(&rows, row).unwrap_or_default();
        let place = (
            number_at(batch, "source_version", row),
            at(&files, row),
            number_at(batch, "source_line", row),
        );
        out.push((starts.value(row), identity_text(place, &json)));
    }
    Ok(out)
}

/// Column `name` of a side table's rows as text, whichever string type it was read back as.
pub(super) fn texts(batch: &RecordBatch, name: &str) -> Option<StringArray> {
    let column = batch.column_by_name(name)?;
    let column = cast(column, &DataType::Utf8).ok()?;
    Some(column.as_string::<i32>().clone())
}

/// A whole number in column `name` at `row`, whatever its integer type (Kafka's partition is
/// an INT, its offset a BIGINT).
fn whole(batch: &RecordBatch, name: &str, row: usize) -> Option<i64> {
    let column = batch.column_by_name(name)?;
    if !column.data_type().is_integer() || column.is_null(row) {
        return None;
    }
    let one = cast(&column.slice(row, 1), &DataType::Int64).ok()?;
    Some(one.as_primitive::<arrow::datatypes::Int64Type>().value(0))
}

fn arrow_error(source: arrow::error::ArrowError) -> FlowError {
    FlowError::Table(TableError::Arrow {
        table: LATE.into(),
        source,
    })
}
