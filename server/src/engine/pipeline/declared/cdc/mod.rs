//! AUTO CDC (PIPELINES §5): the process and commit steps of a declared flow that applies changes
//! by key. Process: rows with a NULL key or sequence go to the quarantine; the rest are this
//! run's events; the keys they touch are replayed from all their events so far (`replay.rs`).
//! Commit: the events file (`events.rs`) and the state, then one MERGE of the touched keys' rows
//! into the target with the `txn` version that names them.

pub mod events;
pub mod replay;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::{Column, ScalarValue};
use datafusion::prelude::{Expr, SessionContext, col, lit};
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::protocol::SaveMode;

use super::rules::{self, Origin};
use crate::engine::flows::FlowError;
use crate::engine::pipeline::parse::{AutoCdc, ColumnList, Scd};
use crate::engine::tables::{self, TableError};
use replay::{ARRIVAL, START_AT, Spec};

/// What a target keeps of its flow in its committed state: enough to read its events back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shape {
    pub keys: Vec<String>,
    pub sequence: String,
    pub source: String,
    /// Type and tracked columns, in words.
    pub history: String,
}

impl Shape {
    pub fn of(cdc: &AutoCdc) -> Self {
        Self {
            keys: cdc.keys.clone(),
            sequence: cdc.sequence_by.clone(),
            source: cdc.source.clone(),
            history: format!("{:?}, history on {:?}", cdc.scd, cdc.track),
        }
    }

    /// Whether a target made with `self` can go on with `other` (PIPELINES §5).
    pub fn same_target(&self, other: &Shape) -> bool {
        self.keys == other.keys && self.history == other.history
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "keys ({}), {}", self.keys.join(", "), self.history)
    }
}

/// The column of a MERGE source row that marks a target row to delete.
const GONE: &str = "__gone";

/// What a run of an AUTO CDC flow will commit.
pub struct Applied {
    /// This run's events, each with its place in reading order.
    pub events: RecordBatch,
    /// The target's rows for every key the events touch.
    pub rows: RecordBatch,
    /// The rows the touched keys had before this run that they no longer have: deleted by the
    /// MERGE (their columns as the target's; only keys and `__START_AT` are read).
    pub gone: RecordBatch,
    /// Whether any touched key had rows before this run (else the rows are appended).
    pub existed: bool,
    pub quarantined: Option<RecordBatch>,
    pub spec: Spec,
    /// Milliseconds spent reading the touched keys' committed events, and replaying them.
    pub stages_ms: Vec<(&'static str, u64)>,
}

fn arrow_error(table: &str) -> impl Fn(arrow::error::ArrowError) -> FlowError + '_ {
    move |source| {
        FlowError::Table(TableError::Arrow {
            table: table.to_string(),
            source,
        })
    }
}

/// The replay's settings for the query's columns; a column the flow names and the source lacks
/// is refused by name.
pub fn spec(cdc: &AutoCdc, schema: &Schema) -> Result<Spec, FlowError> {
    let visible: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| !n.starts_with("__"))
        .collect();
    let refuse = |what: &str, column: &str| {
        FlowError::Refused(format!(
            "AUTO CDC flow {} names {what} {column}, which {} does not give",
            cdc.name, cdc.source
        ))
    };
    for (what, list) in [("column", &cdc.columns), ("tracked column", &cdc.track)] {
        if let ColumnList::Only(names) | ColumnList::Except(names) = list
            && let Some(missing) = names.iter().find(|n| !visible.contains(n))
        {
            return Err(refuse(what, missing));
        }
    }
    let columns: Vec<String> = cdc.columns.select(&visible).into_iter().cloned().collect();
    for key in &cdc.keys {
        if !columns.contains(key) {
            return Err(refuse("key", key));
        }
    }
    if !visible.contains(&cdc.sequence_by) {
        return Err(refuse("SEQUENCE BY column", &cdc.sequence_by));
    }
    let untracked: Vec<String> = columns
        .iter()
        .filter(|c| !cdc.keys.contains(c) && **c != cdc.sequence_by)
        .cloned()
        .collect();
    let tracked = cdc.track.select(&untracked).into_iter().cloned().collect();
    Ok(Spec {
        keys: cdc.keys.clone(),
        sequence: cdc.sequence_by.clone(),
        scd: cdc.scd,
        ignore_null_updates: cdc.ignore_null_updates,
        columns,
        tracked,
    })
}

/// Sorts this run's rows into events and quarantined rows, and replays the touched keys.
pub fn apply(
    cdc: &AutoCdc,
    rows: RecordBatch,
    version: i64,
    events_dir: &Path,
    origin: &Origin<'_>,
) -> Result<Applied, FlowError> {
    let target = origin.table;
    let spec = spec(cdc, &rows.schema())?;
    let mut refused = vec![];
    let mut reasons = vec![];
    for row in 0..rows.num_rows() {
        let null_key = spec
            .keys
            .iter()
            .filter(|k| rows.column_by_name(k).is_some_and(|c| c.is_null(row)))
            .collect::<Vec<_>>();
        let null_sequence = rows
            .column_by_name(&spec.sequence)
            .is_some_and(|c| c.is_null(row));
        let reason = match (null_key.first(), null_sequence) {
            (Some(k), _) => format!("key {k} is NULL"),
            (None, true) => format!("SEQUENCE BY {} is NULL", spec.sequence),
            (None, false) => continue,
        };
        refused.push(row);
        reasons.push(("AUTO CDC".to_string(), reason));
    }
    let quarantined = match refused.is_empty() {
        true => None,
        false => Some(rules::quarantine(&rows, &refused, &reasons, origin)?),
    };
    let keep: BooleanArray = (0..rows.num_rows())
        .map(|r| Some(!refused.contains(&r)))
        .collect();
    let valid = filter_record_batch(&rows, &keep).map_err(arrow_error(target))?;
    let events = with_arrival(&valid, version).map_err(arrow_error(target))?;
    let touched: BTreeSet<_> = replay::by_key(&events, &spec.keys)
        .map_err(arrow_error(target))?
        .into_keys()
        .collect();
    let loading = std::time::Instant::now();
    let before = events::load(
        events_dir,
        version - 1,
        &events.schema(),
        &spec.keys,
        Some(&touched),
    )?;
    let existed = before.num_rows() > 0;
    let loaded = loading.elapsed().as_millis() as u64;
    let replaying = std::time::Instant::now();
    let all = concat_batches(&events.schema(), [&before, &events]).map_err(arrow_error(target))?;
    let rows = replay::replay(&all, &spec).map_err(arrow_error(target))?;
    // The rows these keys have now, as the committed events make them (the check holds the
    // table to that), less those the new rows keep.
    let old = replay::replay(&before, &spec).map_err(arrow_error(target))?;
    let gone = not_in(&old, &rows, &identity(&spec)).map_err(arrow_error(target))?;
    let stages_ms = vec![
        ("events", loaded),
        ("replay", replaying.elapsed().as_millis() as u64),
    ];
    Ok(Applied {
        events,
        rows,
        gone,
        existed,
        quarantined,
        spec,
        stages_ms,
    })
}

/// `batch` with [`ARRIVAL`]: the commit's version in the high bits, the row in the low ones.
fn with_arrival(
    batch: &RecordBatch,
    version: i64,
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let arrival: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..batch.num_rows() as i64).map(|i| (version << 32) | i),
    ));
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .filter(|f| f.name() != ARRIVAL)
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns: Vec<ArrayRef> = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .filter(|(f, _)| f.name() != ARRIVAL)
        .map(|(_, c)| c.clone())
        .collect();
    fields.push(Field::new(
        ARRIVAL,
        arrow::datatypes::DataType::Int64,
        false,
    ));
    columns.push(arrival);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// The first row of each key of `batch`, keys in order.
pub fn first_per_key(batch: &RecordBatch, keys: &[String]) -> Result<RecordBatch, FlowError> {
    let table = "the change events";
    let mut keep = vec![false; batch.num_rows()];
    for rows in replay::by_key(batch, keys)
        .map_err(arrow_error(table))?
        .into_values()
    {
        keep[rows[0]] = true;
    }
    filter_record_batch(batch, &BooleanArray::from(keep)).map_err(arrow_error(table))
}

/// The key columns of `batch`.
pub fn key_columns(batch: &RecordBatch, keys: &[String]) -> Result<RecordBatch, FlowError> {
    let indices: Vec<usize> = keys
        .iter()
        .filter_map(|k| batch.schema().index_of(k).ok())
        .collect();
    batch
        .project(&indices)
        .map_err(arrow_error("the change events"))
}

/// The columns naming one target row: the keys, and `__START_AT` for SCD 2.
fn identity(spec: &Spec) -> Vec<String> {
    let mut on = spec.keys.clone();
    if spec.scd == Scd::Type2 {
        on.push(START_AT.to_string());
    }
    on
}

/// The rows of `old` whose identity no row of `new` has.
fn not_in(
    old: &RecordBatch,
    new: &RecordBatch,
    on: &[String],
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let columns = |b: &RecordBatch| {
        on.iter()
            .map(|c| {
                b.column_by_name(c)
                    .cloned()
                    .ok_or_else(|| arrow::error::ArrowError::SchemaError(format!("no column {c}")))
            })
            .collect::<Result<Vec<ArrayRef>, _>>()
    };
    let (old_columns, new_columns) = (columns(old)?, columns(new)?);
    let converter = arrow::row::RowConverter::new(
        old_columns
            .iter()
            .map(|c| arrow::row::SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let kept = converter.convert_columns(&new_columns)?;
    let kept: std::collections::HashSet<&[u8]> = kept.iter().map(|r| r.data()).collect();
    let before = converter.convert_columns(&old_columns)?;
    let mask: BooleanArray = before
        .iter()
        .map(|r| Some(!kept.contains(r.as_ref())))
        .collect();
    filter_record_batch(old, &mask)
}

/// `target.k = source.k AND ...` (and `__START_AT` for SCD 2): one target row per source row.
fn matching(spec: &Spec) -> Expr {
    identity(spec)
        .iter()
        .map(|c| column("target", c).eq(column("source", c)))
        .reduce(Expr::and)
        .unwrap_or(lit(false))
}

fn column(relation: &str, name: &str) -> Expr {
    col(Column::new(Some(relation), name))
}

/// The most keys [`key_filter`] is asked to name.
pub const FILTER_KEYS: usize = 1_024;

/// Rows whose key is one of `existed`'s (its key columns, one row per key, at most
/// [`FILTER_KEYS`]), columns of `relation` or unqualified.
pub fn key_filter(
    existed: &RecordBatch,
    keys: &[String],
    relation: Option<&str>,
) -> Result<Expr, FlowError> {
    let column = |name: &str| col(Column::new(relation, name));
    let scalar = |c: &ArrayRef, i: usize| {
        ScalarValue::try_from_array(c, i).map_err(|source| {
            FlowError::Table(TableError::Query {
                table: "the change events".into(),
                source,
            })
        })
    };
    if let [key] = keys {
        // IN lists of a few thousand each: one list of 100 k literals overflows the stack of
        // the planner's recursion.
        let values = existed.column(0);
        let mut lists = vec![];
        for start in (0..existed.num_rows()).step_by(4_096) {
            let end = (start + 4_096).min(existed.num_rows());
            let list = (start..end)
                .map(|i| scalar(values, i).map(lit))
                .collect::<Result<Vec<_>, _>>()?;
            lists.push(column(key).in_list(list, false));
        }
        return Ok(any(lists));
    }
    let mut rows = vec![];
    for i in 0..existed.num_rows() {
        let mut all = lit(true);
        for (k, key) in keys.iter().enumerate() {
            all = all.and(column(key).eq(lit(scalar(existed.column(k), i)?)));
        }
        rows.push(all);
    }
    Ok(any(rows))
}

/// `a OR b OR ...` as a balanced tree (its depth grows with the log of the count).
fn any(mut exprs: Vec<Expr>) -> Expr {
    match exprs.len() {
        0 => lit(false),
        1 => exprs.pop().expect("one"),
        n => {
            let right = exprs.split_off(n / 2);
            any(exprs).or(any(right))
        }
    }
}

/// Writes the touched keys' rows: appended when none existed before, else one MERGE whose
/// source holds the new rows and a delete marker for each row that is gone: it updates matching
/// rows, inserts new ones and deletes the marked ones, and leaves files of other keys alone.
/// Returns the table, rows upserted and rows deleted.
pub async fn write(
    table: DeltaTable,
    applied: Applied,
    progress: Transaction,
    target: &str,
) -> Result<(DeltaTable, u64, u64), FlowError> {
    let delta = |source| TableError::Delta {
        table: target.to_string(),
        source,
    };
    let commit = CommitProperties::default().with_application_transaction(progress.clone());
    if !applied.existed {
        let upserted = applied.rows.num_rows() as u64;
        let table = table
            .write(vec![applied.rows])
            .with_save_mode(SaveMode::Append)
            .with_commit_properties(commit)
            .await
            .map_err(delta)?;
        return Ok((table, upserted, 0));
    }
    let ctx = SessionContext::new();
    let schema: SchemaRef = applied.rows.schema();
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let marked = |batch: RecordBatch, delete: bool| {
        let n = batch.num_rows();
        let mut columns = batch.columns().to_vec();
        columns.push(Arc::new(BooleanArray::from(vec![delete; n])) as ArrayRef);
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(GONE, arrow::datatypes::DataType::Boolean, false));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
    };
    let source = marked(applied.rows, false)
        .and_then(|rows| Ok((rows, marked(applied.gone, true)?)))
        .and_then(|(rows, gone)| concat_batches(&rows.schema(), [&rows, &gone]))
        .map_err(arrow_error(target))?;
    let source = ctx.read_batch(source).map_err(|source| TableError::Query {
        table: target.to_string(),
        source,
    })?;
    let gone = || column("source", GONE);
    let before = tables::version(&table);
    let (table, metrics) = table
        .merge(source, matching(&applied.spec))
        .with_source_alias("source")
        .with_target_alias("target")
        .when_matched_delete(|delete| delete.predicate(gone()))
        .map_err(delta)?
        .when_matched_update(|update| {
            names.iter().fold(update.predicate(!gone()), |u, n| {
                u.update(Column::new_unqualified(n), column("source", n))
            })
        })
        .map_err(delta)?
        .when_not_matched_insert(|insert| {
            names.iter().fold(insert.predicate(!gone()), |i, n| {
                i.set(Column::new_unqualified(n), column("source", n))
            })
        })
        .map_err(delta)?
        .with_commit_properties(commit)
        .await
        .map_err(delta)?;
    let upserted = (metrics.num_target_rows_inserted + metrics.num_target_rows_updated) as u64;
    let deleted = metrics.num_target_rows_deleted as u64;
    let table = match tables::version(&table) == before {
        // Nothing changed: the progress still needs its commit.
        true => tables::append(table, vec![], vec![progress]).await?,
        false => table,
    };
    Ok((table, upserted, deleted))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check filters a target by up to [`FILTER_KEYS`] keys: the filter plans and runs on a
    /// Delta table (100 k keys overflow the stack of the table's predicate conversion).
    #[tokio::test]
    async fn a_filter_on_the_most_keys_the_check_asks_for_plans_and_runs() {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..FILTER_KEYS as i64));
        let keys = RecordBatch::try_from_iter(vec![("id", ids)]).unwrap();
        let filter = key_filter(&keys, &["id".to_string()], None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tables = crate::engine::tables::Tables::new(dir.path(), None);
        let table = tables
            .create_named("t", keys.schema().as_ref())
            .await
            .unwrap();
        let table = table.write(vec![keys]).await.unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", table.table_provider().await.unwrap())
            .unwrap();
        let rows = ctx.table("t").await.unwrap().filter(filter).unwrap();
        assert_eq!(rows.count().await.unwrap(), FILTER_KEYS);
    }
}
