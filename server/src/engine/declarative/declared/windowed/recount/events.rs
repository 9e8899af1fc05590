//! A source row as an event (PIPELINES §9's "one event, one row") and in words.

use arrow::array::{Array, RecordBatch};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::engine::columns::row_keys;
use crate::engine::flow::FlowError;

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

/// Each row's event: its source columns but those saying where it landed (or the columns
/// `reckon.check.distinctOn` names), as one text.
pub fn event_keys(
    batch: &RecordBatch,
    hidden: usize,
    distinct_on: Option<&String>,
    target: &str,
) -> Result<Vec<String>, FlowError> {
    let schema = batch.schema();
    let named: Option<Vec<String>> =
        distinct_on.map(|d| d.split(',').map(|c| c.trim().to_string()).collect());
    let columns: Vec<_> = (hidden..batch.num_columns())
        .filter(|&i| {
            let name = schema.field(i).name();
            match &named {
                Some(named) => named.contains(name),
                None => !LANDING.contains(&name.as_str()),
            }
        })
        .map(|i| batch.column(i).clone())
        .collect();
    Ok(row_keys(&columns, target)?)
}

/// Input row `row` of `batch` for a reader: what it says (its own columns but those saying where
/// it landed), then where it landed: `order_id 1006, status placed, ... (partition 2, offset 2)`.
pub fn described(batch: &RecordBatch, hidden: usize, row: usize) -> String {
    let options = FormatOptions::default().with_null("NULL");
    let schema = batch.schema();
    let value = |i: usize| {
        ArrayFormatter::try_new(batch.column(i).as_ref(), &options)
            .map(|f| f.value(row).to_string())
            .unwrap_or_default()
    };
    let (mut says, mut place) = (vec![], vec![]);
    for i in hidden..batch.num_columns() {
        let name = schema.field(i).name().as_str();
        match name {
            "partition" | "offset" | "source_file" | "source_line" | "__file" | "__line" => {
                if !batch.column(i).is_null(row) {
                    place.push(format!("{} {}", name.trim_start_matches("__"), value(i)));
                }
            }
            _ if LANDING.contains(&name) || name.starts_with("__") => {}
            _ => says.push(format!("{name} {}", value(i))),
        }
    }
    match place.is_empty() {
        true => says.join(", "),
        false => format!("{} ({})", says.join(", "), place.join(", ")),
    }
}

