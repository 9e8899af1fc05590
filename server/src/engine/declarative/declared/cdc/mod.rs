//! AUTO CDC (PIPELINES §5): the process and commit steps of a declared flow that applies changes
//! by key. Process: rows with a NULL key or sequence go to the quarantine; the rest are this
//! run's events; the keys they touch are replayed from all their events so far (`replay.rs`).
//! Commit: the events file (`events.rs`) and the state, then one MERGE of the touched keys' rows
//! into the target with the `txn` version that names them.

pub mod check;
pub mod events;
pub mod merge;
pub mod replay;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{Field, Schema};

use app::model::FlowRun;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;

use super::expectations::{self, Origin};
use super::{app_id, events_dir, side, state_dir};
use crate::engine::declarative::parse::{AutoCdc, ColumnList};
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::state;
use crate::engine::tables;
use crate::engine::tables::TableError;
use replay::{ARRIVAL, Spec};

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

/// What a run of an AUTO CDC flow will commit.
pub struct Applied {
    /// This run's events, each with its place in reading order.
    pub events: RecordBatch,
    /// The target's rows the run replaces.
    pub rewrite: merge::Rewrite,
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
        FlowError::from(Refusal::SchemaClash(format!(
            "AUTO CDC flow {} names {what} {column}, which {} does not give",
            cdc.name, cdc.source
        )))
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
        false => Some(expectations::quarantine(&rows, &refused, &reasons, origin)?),
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
    let gone = merge::not_in(&old, &rows, &merge::identity(&spec)).map_err(arrow_error(target))?;
    let stages_ms = vec![
        ("events", loaded),
        ("replay", replaying.elapsed().as_millis() as u64),
    ];
    Ok(Applied {
        events,
        rewrite: merge::Rewrite {
            rows,
            gone,
            existed,
        },
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

/// Commits an AUTO CDC flow's run: its events, its quarantined rows, then the target's rows.
pub(super) async fn commit(
    cx: &FlowContext,
    table: Option<DeltaTable>,
    version: i64,
    applied: Applied,
    event: &mut FlowRun,
    (flow, target): (&str, &str),
) -> Result<(), FlowError> {
    let writing = std::time::Instant::now();
    let dir = state_dir(cx, target);
    let events_dir = events_dir(cx, target);
    events::save(&events_dir, version, &applied.events)?;
    if let Some(quarantined) = applied.quarantined.clone() {
        side::write(cx, &side::QUARANTINED, (target, version), quarantined).await?;
    }
    let table = match table {
        Some(t) => t,
        None => {
            let schema = applied.rewrite.rows.schema();
            cx.tables.create_for(target, schema.as_ref(), flow).await?
        }
    };
    let progress = Transaction::new(app_id(target), version);
    let (table, upserted, deleted) =
        merge::write(table, applied.rewrite, &applied.spec, progress, target).await?;
    event.figures.rows_upserted = upserted;
    event.figures.rows_deleted = deleted;
    let written = writing.elapsed().as_millis() as u64;
    event.figures.stages_ms.insert("write".into(), written);
    event.figures.rows_written = upserted + deleted;
    event.figures.table_version = Some(tables::version(&table));
    state::remove_old(&dir, version);
    events::remove_after(&events_dir, version);
    Ok(())
}
