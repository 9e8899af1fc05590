//! The pipeline's side tables: the rows drop rules kept out of a target (`_quarantine`) and the
//! rows a windowed flow read too late (`_late`), appended under the target's next version (a `txn`
//! of their own) just before the target's commit. A rerun after a crash between the two finds
//! that version in the side table already. It may have read more than the crashed try (files
//! landed since), never less, so it appends what the crashed try's commit does not hold: every
//! row is kept once.

use std::collections::HashMap;

use crate::engine::columns::row_keys;
use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;

use super::app_id;
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

/// A side table: its name, its columns, and those that tell one of its rows from another (all
/// but the run that wrote it).
pub struct Side {
    pub name: &'static str,
    pub schema: fn() -> arrow::datatypes::SchemaRef,
    same: &'static [&'static str],
}

pub const QUARANTINED: Side = Side {
    name: super::QUARANTINE,
    schema: super::quarantine_schema,
    same: &[
        "table",
        "flow",
        "rules",
        "reason",
        "row",
        "source_file",
        "source_line",
        "source_table",
        "source_version",
    ],
};

pub const LATE_ROWS: Side = Side {
    name: super::late::LATE,
    schema: super::late::late_schema,
    same: &[
        "table",
        "flow",
        "event_time",
        "window_start",
        "watermark",
        "row",
        "source_file",
        "source_line",
        "source_table",
        "source_version",
        "source_partition",
        "source_offset",
    ],
};

/// Every side table, for a full refresh that empties a target's rows from each.
pub const SIDES: [&Side; 2] = [&QUARANTINED, &LATE_ROWS];

impl Side {
    /// The `txn` app id under which the side table records the last commit of `target` it holds
    /// rows of; a full refresh of `target` sets it back to 0.
    pub fn app_id(&self, target: &str) -> String {
        format!("{}/{target}", app_id(self.name))
    }
}

/// The rows `side` holds of `target`'s flow `flow` (none before the side table exists).
pub async fn of_flow(
    cx: &FlowContext,
    side: &Side,
    target: &str,
    flow: &str,
) -> Result<Vec<RecordBatch>, FlowError> {
    let Some(table) = cx.tables.open_named(side.name).await? else {
        return Ok(vec![]);
    };
    let ctx = tables::session(&table, "side").await?;
    let quote = |s: &str| s.replace('\'', "''");
    let sql = format!(
        "SELECT * FROM side WHERE \"table\" = '{}' AND flow = '{}'",
        quote(target),
        quote(flow)
    );
    Ok(tables::query(&ctx, side.name, &sql).await?)
}

/// Appends `rows` to `side`, from `target`'s commit `version`, but those a crashed earlier try
/// of the same commit appended already.
pub(super) async fn write(
    cx: &FlowContext,
    side: &Side,
    (target, version): (&str, i64),
    rows: RecordBatch,
) -> Result<(), FlowError> {
    let table = match cx.tables.open_named(side.name).await? {
        Some(t) => t,
        None => cx.tables.create_named(side.name, &(side.schema)()).await?,
    };
    let id = side.app_id(target);
    let rows = match cx.tables.txn_version(&table, &id).await? {
        Some(done) if done > version => return Ok(()),
        Some(done) if done == version => match held(&table, side, &id, version).await? {
            Some(held) => without(&rows, &held, side)?,
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
    side: &Side,
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
        table: side.name.into(),
        source,
    };
    let df = tables::changes::inserted(&ctx, table, (commit.version, commit.version))?;
    Ok(Some(df.collect().await.map_err(query)?))
}

/// `rows` less one of each row that `held` holds.
fn without(
    rows: &RecordBatch,
    held: &[RecordBatch],
    side: &Side,
) -> Result<RecordBatch, FlowError> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for batch in held {
        for key in keys(batch, side)? {
            *counts.entry(key).or_default() += 1;
        }
    }
    let keep: BooleanArray = keys(rows, side)?
        .into_iter()
        .map(|key| match counts.get_mut(&key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Some(false)
            }
            _ => Some(true),
        })
        .collect();
    filter_record_batch(rows, &keep).map_err(|e| arrow_error(side, e))
}

/// Each row's values in the side's telling columns, as one text ([`row_keys`]).
pub(super) fn row_ids(batch: &RecordBatch, side: &Side) -> Result<Vec<String>, FlowError> {
    keys(batch, side)
}

fn keys(batch: &RecordBatch, side: &Side) -> Result<Vec<String>, FlowError> {
    let columns = side
        .same
        .iter()
        .map(|name| {
            let column = batch.column_by_name(name);
            column.cloned().ok_or_else(|| {
                FlowError::from(Refusal::SchemaClash(format!(
                    "{} has no column {name}",
                    side.name
                )))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(row_keys(&columns, side.name)?)
}

fn arrow_error(side: &Side, source: arrow::error::ArrowError) -> FlowError {
    FlowError::Table(TableError::Arrow {
        table: side.name.into(),
        source,
    })
}
