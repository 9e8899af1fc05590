//! Every AUTO CDC target recomputed from all the change events its flow has committed, by plain
//! sorting and folding here, apart from the flow's own replay (`declared/cdc/replay.rs`), and
//! compared with the table row by row.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use app::model::{CheckLine, Verdict};
use arrow::array::{AsArray, RecordBatch};
use datafusion::common::ScalarValue;

use super::replay::{ARRIVAL, by_key};
use super::{self as cdc_flow, events};
use crate::engine::declarative::declared;
use crate::engine::declarative::graph::{DELETE, Graph};
use crate::engine::declarative::parse::Scd;
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

/// Which keys a check recomputes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every key (`reckon pipeline check`).
    Every,
    /// The keys of the target's last commit (each run's check): the only rows that commit
    /// changed, each recomputed from its full history.
    LastRun,
}

/// One change event as plain values.
struct Event {
    sequence: ScalarValue,
    delete: bool,
    arrival: i64,
    values: Vec<ScalarValue>,
}

pub(super) fn scalar(
    batch: &RecordBatch,
    column: &str,
    row: usize,
) -> Result<ScalarValue, FlowError> {
    let array = batch.column_by_name(column).ok_or_else(|| {
        FlowError::from(Refusal::SchemaClash(format!(
            "the change events have no column {column}"
        )))
    })?;
    ScalarValue::try_from_array(array, row).map_err(|source| {
        FlowError::Table(TableError::Query {
            table: "the change events".into(),
            source,
        })
    })
}

/// A key's rows from its events: sorted by sequence, a tie won by a delete, else the last read;
/// then folded. Each row: its values, then start and end for SCD 2.
fn recompute(
    mut events: Vec<Event>,
    scd: Scd,
    tracked: &[usize],
    keep_nulls: bool,
) -> Vec<Vec<ScalarValue>> {
    events.sort_by(|a, b| {
        a.sequence
            .partial_cmp(&b.sequence)
            .unwrap_or(Ordering::Equal)
            .then(a.delete.cmp(&b.delete))
            .then(a.arrival.cmp(&b.arrival))
    });
    // Deletes sort after upserts of their sequence: the last event of a sequence counts.
    let mut winners: Vec<Event> = vec![];
    for e in events {
        match winners.last_mut() {
            Some(last) if last.sequence == e.sequence => *last = e,
            _ => winners.push(e),
        }
    }
    let mut rows: Vec<Vec<ScalarValue>> = vec![];
    let mut current: Option<(Vec<ScalarValue>, ScalarValue)> = None;
    for e in winners {
        if e.delete {
            if let Some((values, start)) = current.take()
                && scd == Scd::Type2
            {
                rows.push([values, vec![start, e.sequence.clone()]].concat());
            }
            continue;
        }
        let mut values = e.values.clone();
        if keep_nulls && let Some((before, _)) = &current {
            for (v, b) in values.iter_mut().zip(before) {
                if v.is_null() {
                    *v = b.clone();
                }
            }
        }
        current = match current.take() {
            Some((before, start))
                if scd == Scd::Type1 || tracked.iter().all(|&t| before[t] == values[t]) =>
            {
                Some((values, start))
            }
            Some((before, start)) => {
                rows.push([before, vec![start, e.sequence.clone()]].concat());
                Some((values, e.sequence))
            }
            None => Some((values, e.sequence)),
        };
    }
    if let Some((values, start)) = current {
        rows.push(match scd {
            Scd::Type1 => values,
            Scd::Type2 => {
                let end = ScalarValue::try_from(&start.data_type()).unwrap_or(ScalarValue::Null);
                [values, vec![start, end]].concat()
            }
        });
    }
    rows
}

/// Checks every AUTO CDC target of `graph`, each key of `scope`; one line each.
pub async fn targets(
    cx: &FlowContext,
    graph: &Graph,
    scope: Scope,
) -> Result<Vec<CheckLine>, FlowError> {
    let mut lines = vec![];
    for flow in graph.flows.iter().filter(|f| f.cdc.is_some()) {
        let cdc = flow.cdc.as_ref().expect("an AUTO CDC flow");
        let target = &flow.target;
        let Some(table) = cx.tables.open_named(target).await? else {
            continue;
        };
        let committed = declared::committed(cx, &table, target).await?;
        let dir = declared::events_dir(cx, target);
        let Some(schema) = events::newest_schema(&dir, committed)? else {
            continue;
        };
        let wanted = match scope {
            Scope::Every => None,
            Scope::LastRun => {
                let recent = events::load_version(&dir, committed, &schema)?;
                let keys = by_key(&recent, &cdc.keys).map_err(|source| {
                    FlowError::Table(TableError::Arrow {
                        table: target.clone(),
                        source,
                    })
                })?;
                Some(keys.into_keys().collect())
            }
        };
        let all = events::load(&dir, committed, &schema, &cdc.keys, wanted.as_ref())?;
        let spec = super::spec(cdc, &schema)?;
        let tracked: Vec<usize> = spec
            .tracked
            .iter()
            .filter_map(|t| spec.columns.iter().position(|c| c == t))
            .collect();
        let mut by_key: BTreeMap<Vec<String>, Vec<Event>> = BTreeMap::new();
        for row in 0..all.num_rows() {
            let key = spec
                .keys
                .iter()
                .map(|k| scalar(&all, k, row).map(|v| v.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            let delete = all
                .column_by_name(DELETE)
                .map(|c| c.as_boolean().value(row))
                .unwrap_or(false);
            let arrival = all
                .column_by_name(ARRIVAL)
                .map(|c| c.as_primitive::<arrow::datatypes::Int64Type>().value(row))
                .unwrap_or_default();
            let values = spec
                .columns
                .iter()
                .map(|c| scalar(&all, c, row))
                .collect::<Result<Vec<_>, _>>()?;
            by_key.entry(key).or_default().push(Event {
                sequence: scalar(&all, &spec.sequence, row)?,
                delete,
                arrival,
                values,
            });
        }
        let keys = by_key.len();
        let seen: std::collections::BTreeSet<Vec<String>> = by_key.keys().cloned().collect();
        let mut expected: BTreeMap<Vec<String>, Vec<Vec<String>>> = BTreeMap::new();
        for (key, events) in by_key {
            let rows = recompute(events, spec.scd, &tracked, spec.ignore_null_updates);
            let mut rows: Vec<Vec<String>> = rows
                .iter()
                .map(|r| r.iter().map(ToString::to_string).collect())
                .collect();
            rows.sort();
            if !rows.is_empty() {
                expected.insert(key, rows);
            }
        }
        let only = match scope {
            Scope::Every => None,
            Scope::LastRun => {
                let firsts = cdc_flow::first_per_key(&all, &spec.keys)?;
                let keys = cdc_flow::key_columns(&firsts, &spec.keys)?;
                // Many keys (a first run): every row is read, the map below keeps theirs.
                match keys.num_rows() {
                    0 => Some(datafusion::prelude::lit(false)),
                    n if n > cdc_flow::merge::FILTER_KEYS => None,
                    _ => Some(cdc_flow::merge::key_filter(&keys, &spec.keys, None)?),
                }
            }
        };
        let mut stored = stored_rows(&table, &spec.keys, &spec.columns, spec.scd, only).await?;
        if scope == Scope::LastRun {
            stored.retain(|k, _| seen.contains(k));
        }
        let differing: Vec<String> = expected
            .keys()
            .chain(stored.keys())
            .filter(|k| expected.get(*k) != stored.get(*k))
            .map(|k| k.join(","))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        lines.push(match differing.as_slice() {
            [] => CheckLine::says(
                Verdict::Ok,
                match scope {
                    Scope::Every => format!("{target} has the history of all {keys} keys"),
                    Scope::LastRun => {
                        format!(
                            "{target} has the history of the {keys} keys its last commit changed"
                        )
                    }
                },
            ),
            some => CheckLine::says(
                Verdict::Problem,
                format!(
                    "{target} differs from its change events for {} key(s): {}",
                    some.len(),
                    some.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
                ),
            ),
        });
    }
    Ok(lines)
}

/// The target's rows per key, as text, sorted.
async fn stored_rows(
    table: &deltalake::DeltaTable,
    keys: &[String],
    columns: &[String],
    scd: Scd,
    only: Option<datafusion::prelude::Expr>,
) -> Result<BTreeMap<Vec<String>, Vec<Vec<String>>>, FlowError> {
    let name = tables::table_name(table);
    let ctx = tables::session(table, "target").await?;
    let mut names: Vec<String> = columns.to_vec();
    if scd == Scd::Type2 {
        names.extend(["__START_AT".to_string(), "__END_AT".to_string()]);
    }
    let query_error = |source| TableError::Query {
        table: name.clone(),
        source,
    };
    let mut df = ctx
        .table("target")
        .await
        .and_then(|df| df.select_columns(&names.iter().map(String::as_str).collect::<Vec<_>>()))
        .map_err(query_error)?;
    if let Some(only) = only {
        df = df.filter(only).map_err(query_error)?;
    }
    let mut out: BTreeMap<Vec<String>, Vec<Vec<String>>> = BTreeMap::new();
    for batch in df.collect().await.map_err(query_error)? {
        for row in 0..batch.num_rows() {
            let values = names
                .iter()
                .map(|n| scalar(&batch, n, row).map(|v| v.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            let key = keys
                .iter()
                .map(|k| scalar(&batch, k, row).map(|v| v.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            out.entry(key).or_default().push(values);
        }
    }
    out.values_mut().for_each(|rows| rows.sort());
    Ok(out)
}
