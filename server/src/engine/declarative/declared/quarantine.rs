//! The rows drop rules kept out of a target, appended to the pipeline's `_quarantine` under the
//! target's next version (a `txn` of their own) just before the target's commit. A rerun after a
//! crash between the two finds that version in the quarantine already. It may have read more
//! than the crashed try (files landed since), never less, so it appends what the crashed try's
//! commit does not hold: every dropped row is kept once.

use std::collections::HashMap;

use crate::engine::columns::row_keys;
use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;

use super::{QUARANTINE, app_id, quarantine_schema};
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

/// What tells one quarantined row from another: all but the run that wrote it.
const SAME: [&str; 9] = [
    "table",
    "flow",
    "rules",
    "reason",
    "row",
    "source_file",
    "source_line",
    "source_table",
    "source_version",
];

/// The `txn` app id under which the quarantine records the last commit of `target` it holds rows
/// of; a full refresh of `target` sets it back to 0.
pub fn quarantine_app_id(target: &str) -> String {
    format!("{}/{target}", app_id(QUARANTINE))
}

/// Appends `rows`, dropped from `target`'s commit `version`, but those a crashed earlier try of
/// the same commit appended already.
pub(super) async fn write(
    cx: &FlowContext,
    target: &str,
    version: i64,
    rows: RecordBatch,
) -> Result<(), FlowError> {
    let table = match cx.tables.open_named(QUARANTINE).await? {
        Some(t) => t,
        None => {
            cx.tables
                .create_named(QUARANTINE, &quarantine_schema())
                .await?
        }
    };
    let id = quarantine_app_id(target);
    let rows = match cx.tables.txn_version(&table, &id).await? {
        Some(done) if done > version => return Ok(()),
        Some(done) if done == version => match held(&table, &id, version).await? {
            Some(held) => without(&rows, &held)?,
            // The crashed try's commit is no longer in the log: keep what it wrote, add nothing.
            None => return Ok(()),
        },
        _ => rows,
    };
    if rows.num_rows() > 0 {
        tables::append(table, vec![rows], vec![Transaction::new(id, version)]).await?;
    }
    Ok(())
}

/// The rows the commit that stored `version` under `id` appended; `None` if the log lost it.
async fn held(
    table: &DeltaTable,
    id: &str,
    version: i64,
) -> Result<Option<Vec<RecordBatch>>, FlowError> {
    let Some(commit) = tables::commits::last_txn_commit(table, id).await? else {
        return Ok(None);
    };
    if commit.covers != version {
        return Ok(None);
    }
    let ctx = SessionContext::new();
    let query = |source| TableError::Query {
        table: QUARANTINE.into(),
        source,
    };
    let df = tables::changes::inserted(&ctx, table, (commit.version, commit.version))?;
    Ok(Some(df.collect().await.map_err(query)?))
}

/// `rows` less one of each row that `held` holds.
fn without(rows: &RecordBatch, held: &[RecordBatch]) -> Result<RecordBatch, FlowError> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for batch in held {
        for key in keys(batch)? {
            *counts.entry(key).or_default() += 1;
        }
    }
    let keep: BooleanArray = keys(rows)?
        .into_iter()
        .map(|key| match counts.get_mut(&key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Some(false)
            }
            _ => Some(true),
        })
        .collect();
    filter_record_batch(rows, &keep).map_err(arrow_error)
}

/// Each row's values in the columns of [`SAME`], as one text ([`row_keys`]).
fn keys(batch: &RecordBatch) -> Result<Vec<String>, FlowError> {
    let columns = SAME
        .iter()
        .map(|name| {
            let column = batch.column_by_name(name);
            column.cloned().ok_or_else(|| {
                FlowError::from(Refusal::SchemaClash(format!(
                    "{QUARANTINE} has no column {name}"
                )))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(row_keys(&columns, QUARANTINE)?)
}

fn arrow_error(source: arrow::error::ArrowError) -> FlowError {
    FlowError::Table(TableError::Arrow {
        table: QUARANTINE.into(),
        source,
    })
}
