//! Writing an AUTO CDC run into its target: the touched keys' rows appended when none existed,
//! else one MERGE on the rows' identity (keys, and `__START_AT` for SCD 2) whose source also
//! marks the rows a key no longer has; and a key filter for readers of a few keys.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::{Column, ScalarValue};
use datafusion::prelude::{Expr, SessionContext, col, lit};
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;
use deltalake::protocol::SaveMode;

use super::replay::{START_AT, Spec};
use crate::engine::declarative::parse::Scd;
use crate::engine::flow::FlowError;
use crate::engine::tables::{self, TableError};

/// The column of a MERGE source row that marks a target row to delete.
const GONE: &str = "__gone";

/// What a run changes in its target.
pub struct Rewrite {
    /// The target's rows for every key the run's events touch.
    pub rows: RecordBatch,
    /// The rows those keys had before the run and no longer have (only keys and `__START_AT`
    /// are read).
    pub gone: RecordBatch,
    /// Whether any touched key had rows before the run (else the rows are appended).
    pub existed: bool,
}

/// The columns naming one target row: the keys, and `__START_AT` for SCD 2.
pub fn identity(spec: &Spec) -> Vec<String> {
    let mut on = spec.keys.clone();
    if spec.scd == Scd::Type2 {
        on.push(START_AT.to_string());
    }
    on
}

/// The rows of `old` whose identity no row of `new` has.
pub fn not_in(
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
    let kept: HashSet<&[u8]> = kept.iter().map(|r| r.data()).collect();
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
    applied: Rewrite,
    spec: &Spec,
    progress: Transaction,
    target: &str,
) -> Result<(DeltaTable, u64, u64), FlowError> {
    let arrow_error = |source| {
        FlowError::Table(TableError::Arrow {
            table: target.to_string(),
            source,
        })
    };
    let delta = |source| TableError::Delta {
        table: target.to_string(),
        source,
    };
    let commit = tables::commit_properties(&table, vec![progress.clone()]);
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
        .map_err(arrow_error)?;
    let source = ctx.read_batch(source).map_err(|source| TableError::Query {
        table: target.to_string(),
        source,
    })?;
    let gone = || column("source", GONE);
    let before = tables::version(&table);
    let (table, metrics) = table
        .merge(source, matching(spec))
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
    use arrow::array::Int64Array;

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
