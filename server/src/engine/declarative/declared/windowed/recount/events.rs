//! A source row as an event (PIPELINES §9's "one event, one row").

use arrow::array::RecordBatch;

use crate::engine::columns::row_keys;
use crate::engine::declarative::declared::late::LANDING;
use crate::engine::flow::FlowError;

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
