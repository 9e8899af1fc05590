//! `reckon pipeline history TABLE KEY`: one key of an AUTO CDC target, its rows as the table
//! holds them, each with the change events that made it (where each came from, its sequence, the
//! commit that applied it) and the events that arrived late, after a greater sequence.

use app::model::{ChangeEvent, KeyHistory, KeyVersion};
use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::ScalarValue;

use super::declared::cdc::events;
use super::declared::cdc::replay::{ARRIVAL, END_AT, START_AT};
use super::declared::sources::VERSION;
use super::declared::{self, KEPT_FILE, KEPT_LINE, TableState};
use super::files::decode::{FILE, LINE};
use super::graph::DELETE;
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::state;
use crate::engine::tables::{self, TableError};

fn text(batch: &RecordBatch, column: &str, row: usize) -> Option<String> {
    let array = batch.column_by_name(column)?;
    if array.is_null(row) {
        return None;
    }
    let options = FormatOptions::default();
    ArrayFormatter::try_new(array.as_ref(), &options)
        .ok()
        .map(|f| f.value(row).to_string())
}

fn scalar(batch: &RecordBatch, column: &str, row: usize) -> Option<ScalarValue> {
    let array = batch.column_by_name(column)?;
    ScalarValue::try_from_array(array, row).ok()
}

/// Where an event came from, in words.
fn source(batch: &RecordBatch, row: usize, streamed: &str) -> String {
    let file = text(batch, FILE, row).or_else(|| text(batch, KEPT_FILE, row));
    let line = text(batch, LINE, row).or_else(|| text(batch, KEPT_LINE, row));
    match (file, line, text(batch, VERSION, row)) {
        (Some(f), Some(l), _) => format!("{f}:{l}"),
        (Some(f), None, _) => f,
        (None, _, Some(v)) => format!("{streamed} version {v}"),
        _ => streamed.to_string(),
    }
}

/// The history of key `key` (its columns' values joined by `,`) in AUTO CDC target `target`.
pub async fn key_history(
    cx: &FlowContext,
    target: &str,
    key: &str,
) -> Result<KeyHistory, FlowError> {
    if !crate::engine::tables::is_table_name(target) {
        return Err(FlowError::from(Refusal::NotFound(format!(
            "table: {target:?} is not a table's name (letters, digits and _)"
        ))));
    }
    let table = cx.tables.open_named(target).await?.ok_or_else(|| {
        FlowError::from(Refusal::NotFound(format!(
            "{target} has not been written yet"
        )))
    })?;
    let committed = declared::committed(cx, &table, target).await?;
    let state_dir = declared::state_dir(cx, target);
    let not_cdc = || {
        FlowError::from(Refusal::NotFound(format!(
            "{target} is not written by an AUTO CDC flow"
        )))
    };
    if committed == 0 {
        return Err(not_cdc());
    }
    let state: TableState = state::load(&state_dir, committed)?;
    let cdc = state.cdc.ok_or_else(not_cdc)?;
    let dir = declared::events_dir(cx, target);
    let mut history = KeyHistory {
        table: target.to_string(),
        key: key.to_string(),
        versions: vec![],
    };
    let Some(schema) = events::newest_schema(&dir, committed)? else {
        return Ok(history);
    };
    let all = events::load(&dir, committed, &schema, &cdc.keys, None)?;
    let key_of = |batch: &RecordBatch, row: usize| {
        cdc.keys
            .iter()
            .map(|k| text(batch, k, row).unwrap_or_else(|| "NULL".into()))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut mine: Vec<usize> = (0..all.num_rows())
        .filter(|&r| key_of(&all, r) == key)
        .collect();
    let sequence = |r: usize| scalar(&all, &cdc.sequence, r);
    let arrival = |r: usize| {
        all.column_by_name(ARRIVAL)
            .map(|c| c.as_primitive::<Int64Type>().value(r))
            .unwrap_or_default()
    };
    mine.sort_by(|&a, &b| {
        sequence(a)
            .partial_cmp(&sequence(b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(arrival(a).cmp(&arrival(b)))
    });
    let changes: Vec<(Option<ScalarValue>, ChangeEvent)> = mine
        .iter()
        .map(|&r| {
            // Late: a greater sequence of this key was applied in an earlier commit.
            let late_after = mine
                .iter()
                .filter(|&&o| sequence(o) > sequence(r) && arrival(o) >> 32 < arrival(r) >> 32)
                .map(|&o| text(&all, &cdc.sequence, o).unwrap_or_default())
                .next();
            let delete = all
                .column_by_name(DELETE)
                .is_some_and(|c| c.as_boolean().value(r));
            (
                sequence(r),
                ChangeEvent {
                    sequence: text(&all, &cdc.sequence, r).unwrap_or_default(),
                    op: if delete { "DELETE" } else { "UPSERT" }.into(),
                    source: source(&all, r, &cdc.source),
                    commit: arrival(r) >> 32,
                    late_after,
                    sequence_n: number(&sequence(r)),
                },
            )
        })
        .collect();
    let rows = stored(&table, &cdc.keys, key).await?;
    for row in 0..rows.num_rows() {
        let start = scalar(&rows, START_AT, row).filter(|s| !s.is_null());
        let end = scalar(&rows, END_AT, row).filter(|s| !s.is_null());
        let within = |s: &Option<ScalarValue>, delete: bool| match (&start, &end) {
            // SCD 1: the row is every event's.
            (None, _) => true,
            (Some(a), None) => s.as_ref().is_some_and(|s| s >= a),
            (Some(a), Some(b)) => s
                .as_ref()
                .is_some_and(|s| s >= a && (s < b || (delete && s == b))),
        };
        history.versions.push(KeyVersion {
            values: (0..rows.num_columns())
                .map(|c| {
                    let name = rows.schema().field(c).name().clone();
                    let value = text(&rows, &name, row).unwrap_or_else(|| "NULL".into());
                    (name, value)
                })
                .filter(|(n, _)| n != START_AT && n != END_AT)
                .collect(),
            start: text(&rows, START_AT, row),
            end: text(&rows, END_AT, row),
            start_n: number(&start),
            end_n: number(&end),
            events: changes
                .iter()
                .filter(|(s, e)| within(s, e.op == "DELETE"))
                .map(|(_, e)| e.clone())
                .collect(),
        });
    }
    if history.versions.is_empty() && !changes.is_empty() {
        // SCD 1 after a delete: no row, the events still say what happened.
        history.versions.push(KeyVersion {
            values: vec![],
            start: None,
            end: None,
            start_n: None,
            end_n: None,
            events: changes.into_iter().map(|(_, e)| e).collect(),
        });
    }
    Ok(history)
}

/// A sequence value as a number for a time axis (a timestamp: its raw count of its unit).
fn number(value: &Option<ScalarValue>) -> Option<i64> {
    match value
        .as_ref()?
        .cast_to(&arrow::datatypes::DataType::Int64)
        .ok()?
    {
        ScalarValue::Int64(n) => n,
        _ => None,
    }
}

/// The target's rows of `key`, oldest version first.
async fn stored(
    table: &deltalake::DeltaTable,
    keys: &[String],
    key: &str,
) -> Result<RecordBatch, FlowError> {
    let name = tables::table_name(table);
    let error = |source| TableError::Query {
        table: name.clone(),
        source,
    };
    let ctx = tables::session(table, "target").await?;
    let df = ctx.table("target").await.map_err(error)?;
    let schema = df.schema().as_arrow().clone();
    let batches = df.collect().await.map_err(error)?;
    let all = arrow::compute::concat_batches(&std::sync::Arc::new(schema), &batches).map_err(
        |source| TableError::Arrow {
            table: name.clone(),
            source,
        },
    )?;
    let keep: arrow::array::BooleanArray = (0..all.num_rows())
        .map(|r| {
            let k: Vec<String> = keys
                .iter()
                .map(|c| text(&all, c, r).unwrap_or_else(|| "NULL".into()))
                .collect();
            Some(k.join(",") == key)
        })
        .collect();
    let mine =
        arrow::compute::filter_record_batch(&all, &keep).map_err(|source| TableError::Arrow {
            table: name.clone(),
            source,
        })?;
    if mine.column_by_name(START_AT).is_none() {
        return Ok(mine);
    }
    let order = arrow::compute::sort_to_indices(
        mine.column_by_name(START_AT).expect("checked"),
        None,
        None,
    )
    .map_err(|source| TableError::Arrow {
        table: name.clone(),
        source,
    })?;
    arrow::compute::take_record_batch(&mine, &order).map_err(|source| {
        FlowError::Table(TableError::Arrow {
            table: name.clone(),
            source,
        })
    })
}
