//! A flow of a declarative pipeline, in the four steps every flow has:
//!
//! - restore: the target table and its committed state (what each of its flows has read, the
//!   keys `reckon.dropDuplicates` has seen), named by the `txn` version of its last commit;
//! - read: the new files and table versions (streaming reads), or everything (a materialized
//!   view whose inputs changed); nothing new and the flow is idle;
//! - process: the query in DataFusion, then duplicates and expectations (`expectations.rs`);
//! - commit: the state file, the quarantined rows, then the rows with the new `txn` version in
//!   one Delta commit (the quarantine's own `txn` makes a rerun after a crash skip it).

pub mod accounting;
pub mod cdc;
mod columns;
mod expectations;
mod kafka;
pub mod late;
mod session;
pub mod side;
pub mod so_far;
pub mod sources;
pub mod validate;
pub mod windowed;

use std::collections::BTreeMap;
use std::sync::Arc;

use app::model::FlowRun;
use arrow::compute::concat_batches;
use arrow::datatypes::{Field, Schema};
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;
use deltalake::operations::write::SchemaMode;
use deltalake::protocol::SaveMode;
use serde::{Deserialize, Serialize};

pub use expectations::{KEPT_FILE, KEPT_LINE, QUARANTINE, quarantine_schema};
use expectations::{Origin, Sorted};
use session::Bounds;
use sources::{Progress, Registered};

use super::graph::streaming::DEDUP_WITHIN_WATERMARK;
use super::graph::{FlowKind, FlowSpec};
use super::parse::Dataset;
use super::sql::Source;
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext, Refusal};
use crate::engine::state;
use crate::engine::tables::{self, TableError};

/// What a target table remembers between runs, committed with its rows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TableState {
    /// Per flow writing the table: what it has read.
    pub flows: BTreeMap<String, Progress>,
    /// Keys `reckon.dropDuplicates` has seen, rows dropped by a rule included.
    pub seen: std::collections::BTreeSet<String>,
    /// An AUTO CDC target's keys, type and tracked columns, fixed until a full refresh.
    #[serde(default)]
    pub cdc: Option<cdc::Shape>,
    /// Per windowed flow writing the table: its watermark, open windows and duplicate keys.
    #[serde(default)]
    pub windows: BTreeMap<String, crate::engine::streaming::window::WindowState>,
}

/// The state `target`'s commit `version` holds, from memory when it is held there
/// (`engine/state.rs`).
pub fn committed_state(
    cx: &FlowContext,
    target: &str,
    version: i64,
) -> Result<std::sync::Arc<TableState>, FlowError> {
    state::committed(&cx.tables, &state_dir(cx, target), version, state::load)
}

/// The `txn` app id of a table's commits; its version names the state file.
fn app_id(table: &str) -> String {
    format!("reckon/{table}")
}

/// Where a table's state files live (a full refresh removes the folder).
pub fn state_dir(cx: &FlowContext, table: &str) -> std::path::PathBuf {
    cx.state_dir.join("pipeline").join(table)
}

/// Where an AUTO CDC target's committed change events live.
pub fn events_dir(cx: &FlowContext, table: &str) -> std::path::PathBuf {
    state_dir(cx, table).join("events")
}

/// The `txn` version of a table's last commit by its flows (0 before the first): it names the
/// state that commit made current.
pub async fn committed(cx: &FlowContext, table: &DeltaTable, name: &str) -> Result<i64, FlowError> {
    Ok(cx
        .tables
        .txn_version(table, &app_id(name))
        .await?
        .unwrap_or(0))
}

/// One flow of a project's graph, run by the runner.
pub struct Declared<'a> {
    pub flow: &'a FlowSpec,
    pub target: &'a Dataset,
    /// The history's run id, for the quarantine's `run` column.
    pub run: Option<i64>,
}

pub struct Restored {
    table: Option<DeltaTable>,
    committed: i64,
    state: TableState,
    /// Where its state files are.
    state_dir: std::path::PathBuf,
    /// An AUTO CDC flow's committed events.
    events_dir: std::path::PathBuf,
}

pub struct New {
    ctx: SessionContext,
    bounds: Bounds,
    progress: Progress,
}

pub struct Output {
    written: Written,
    progress: Progress,
    /// A windowed flow's late rows, for `_late`.
    late: Option<arrow::array::RecordBatch>,
}

/// Rows to add or to replace the dataset with, or an AUTO CDC flow's changes.
enum Written {
    Rows(Sorted),
    Changes(cdc::Applied),
}

#[async_trait::async_trait]
impl Flow for Declared<'_> {
    type State = Restored;
    type Input = New;
    type Output = Output;
    type Done = ();

    fn name(&self) -> &str {
        &self.flow.name
    }

    fn target(&self) -> Option<&str> {
        Some(&self.flow.target)
    }

    async fn restore(&mut self, cx: &FlowContext, _: &mut FlowRun) -> Result<Restored, FlowError> {
        let table = cx
            .tables
            .open_for(&self.flow.target, &self.flow.name)
            .await?;
        let committed = match &table {
            Some(t) => committed(cx, t, &self.flow.target).await?,
            None => 0,
        };
        let state = match committed {
            0 => TableState::default(),
            v => state::restore(
                &cx.tables,
                &state_dir(cx, &self.flow.target),
                v,
                state::load,
            )?,
        };
        Ok(Restored {
            table,
            committed,
            state,
            state_dir: state_dir(cx, &self.flow.target),
            events_dir: events_dir(cx, &self.flow.target),
        })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        restored: &Restored,
        event: &mut FlowRun,
    ) -> Result<Option<New>, FlowError> {
        let ctx = Bounds::DEFAULT.session();
        let mut progress = restored
            .state
            .flows
            .get(&self.flow.name)
            .cloned()
            .unwrap_or_default();
        // A changed definition: a materialized view is recomputed, a streaming flow applies its
        // new query to new rows (PIPELINES §2), and keeps the one before for the check.
        let definition = self.flow.definition(self.target);
        let changed = progress.definition.as_ref() != Some(&definition);
        event.figures.definition_changed = changed && progress.definition.is_some();
        match self.flow.kind {
            FlowKind::Append => progress.define(self.flow, self.target, definition),
            _ => progress.definition = Some(definition),
        }
        let mut registered = Registered::default();
        sources::register_flow(&ctx, cx, self.flow, &mut progress, &mut registered).await?;
        event.figures.files = std::mem::take(&mut registered.files);
        event.figures.source_versions = registered.source_versions.clone();
        if !registered.offsets.is_empty() {
            // The run page says the offsets it read, as bronze's.
            let topic = self.flow.query.reads.iter().find_map(|r| match &r.source {
                crate::engine::declarative::sql::Source::Kafka { topic, .. } => Some(topic),
                _ => None,
            });
            event.figures.source = app::model::SourceRange::Offsets {
                topic: cx.kafka_topic(topic.map_or("", String::as_str)),
                partitions: std::mem::take(&mut registered.offsets),
            };
        }
        let fresh = restored.table.is_none();
        if let (Some(plan), Some(before)) = (
            &self.flow.query.window,
            restored.state.windows.get(&self.flow.name),
        ) {
            // Refused at once, not at the next row: the table would go on wrong meanwhile.
            let property = self.target.properties.get(DEDUP_WITHIN_WATERMARK);
            let shape = windowed::shape(plan, &windowed::dedup_columns(property));
            windowed::same_shape(before, &shape, &self.flow.target)?;
        }
        let recompute = self.flow.kind == FlowKind::Materialize && (fresh || changed);
        if !registered.anything_new && !recompute {
            return Ok(None);
        }
        // A first computation over a table no run has written yet (nothing landed upstream)
        // would query a table without columns: it waits, idle, until every input exists.
        if fresh && !registered.unwritten.is_empty() {
            return Ok(None);
        }
        event.figures.rows_read = registered.new_rows;
        let bounds = Bounds::reading(registered.bytes);
        Ok(Some(New {
            ctx,
            bounds,
            progress,
        }))
    }

    async fn process(
        &mut self,
        restored: &mut Restored,
        new: New,
        event: &mut FlowRun,
    ) -> Result<Output, FlowError> {
        let target = self.flow.target.as_str();
        let origin = Origin {
            run: self.run,
            table: target,
            flow: &self.flow.name,
            source_table: streamed_table(self.flow),
        };
        let mut late = None;
        let rows = match &self.flow.query.window {
            // A windowed flow's rows are the windows its watermark closed (`windowed.rs`).
            Some(plan) => {
                let property = self.target.properties.get(DEDUP_WITHIN_WATERMARK);
                let dedup = windowed::dedup_columns(property);
                let flow = &self.flow.name;
                let before = restored.state.windows.remove(flow).unwrap_or_default();
                let committed = (restored.committed, restored.state_dir.as_path());
                let new = (&new.ctx, &new.bounds);
                let (spec, plan) = (self.flow, (plan, dedup.as_slice()));
                let done = windowed::run(new, spec, plan, (before, committed), &origin, event);
                let done = done.await?;
                restored.state.windows.insert(flow.clone(), done.state);
                late = done.late;
                done.rows
            }
            None => {
                let df = crate::engine::declarative::sql::plan(&new.ctx, &self.flow.query.sql)
                    .await
                    .map_err(|source| TableError::Query {
                        table: target.to_string(),
                        source,
                    })?;
                let schema: Arc<Schema> = Arc::new(df.schema().as_arrow().clone());
                let batches = new.bounds.collect(df, target).await?;
                if self.flow.kind == FlowKind::Materialize {
                    event.figures.rows_read = batches.iter().map(|b| b.num_rows() as u64).sum();
                }
                concat_batches(&schema, &batches).map_err(|source| TableError::Arrow {
                    table: target.to_string(),
                    source,
                })?
            }
        };
        if let Some(spec) = &self.flow.cdc {
            let shape = cdc::Shape::of(spec);
            match &restored.state.cdc {
                Some(before) if !before.same_target(&shape) => {
                    return Err(FlowError::from(Refusal::CdcShapeChanged(format!(
                        "{target} was made with {before}; flow {} now asks for {shape}: \
                         run with --full-refresh {target} to rebuild it",
                        self.flow.name
                    ))));
                }
                _ => restored.state.cdc = Some(shape),
            }
            let version = restored.committed + 1;
            let applied = cdc::apply(spec, rows, version, &restored.events_dir, &origin)?;
            for (stage, ms) in &applied.stages_ms {
                event.figures.stages_ms.insert(stage.to_string(), *ms);
            }
            event.figures.rows_dropped = applied
                .quarantined
                .as_ref()
                .map_or(0, |q| q.num_rows() as u64);
            return Ok(Output {
                written: Written::Changes(applied),
                progress: new.progress,
                late,
            });
        }
        // A windowed table's duplicates were dropped within its watermark, before its windows.
        let drop_duplicates = match &self.flow.query.window {
            Some(_) => None,
            None => self.target.properties.get("reckon.dropDuplicates"),
        };
        let (rows, duplicates) = match drop_duplicates {
            Some(keys) => {
                let keys: Vec<String> = keys.split(',').map(|k| k.trim().to_string()).collect();
                expectations::drop_duplicates(&rows, &keys, &mut restored.state.seen, target)?
            }
            None => (rows, 0),
        };
        let sorted = expectations::apply(rows, &self.target.expectations, &origin).await?;
        // Added to what a windowed flow dropped within its watermark.
        event.figures.rows_duplicate += duplicates;
        event.figures.rows_dropped = sorted.dropped;
        event.figures.expectations = sorted.rules.clone();
        Ok(Output {
            written: Written::Rows(sorted),
            progress: new.progress,
            late,
        })
    }

    async fn commit(
        &mut self,
        cx: &FlowContext,
        restored: Restored,
        output: Output,
        event: &mut FlowRun,
    ) -> Result<(), FlowError> {
        let target = &self.flow.target;
        let version = restored.committed + 1;
        let mut state = restored.state;
        state.flows.insert(self.flow.name.clone(), output.progress);
        let dir = state_dir(cx, target);
        let mut lap = crate::engine::flow::Lap::start();
        state::save(&dir, version, &state)?;
        lap.took("state", event);
        if let Some(late) = output.late {
            side::write(cx, &side::LATE_ROWS, (target, version), late).await?;
            lap.took("late ledger", event);
        }
        let sorted = match output.written {
            Written::Rows(sorted) => sorted,
            Written::Changes(applied) => {
                let flow = &self.flow.name;
                cdc::commit(cx, restored.table, version, applied, event, (flow, target)).await?;
                state::keep(&cx.tables, &dir, version, std::sync::Arc::new(state));
                return Ok(());
            }
        };
        if let Some(quarantined) = sorted.quarantined {
            side::write(cx, &side::QUARANTINED, (target, version), quarantined).await?;
            lap.took("quarantine", event);
        }
        let rows = expectations::visible(&sorted.kept).map_err(|source| TableError::Arrow {
            table: target.clone(),
            source,
        })?;
        let written = rows.num_rows() as u64;
        let table = match restored.table {
            Some(t) => t,
            None => {
                // Every column may hold NULL, as a table Spark makes: another flow into it may
                // lack a column this one gives (a literal's column is not nullable in Arrow).
                let fields: Vec<Field> = (rows.schema().fields().iter())
                    .map(|f| f.as_ref().clone().with_nullable(true))
                    .collect();
                let schema = Schema::new(fields);
                cx.tables
                    .create_for(target, &schema, &self.flow.name)
                    .await?
            }
        };
        let progress = vec![Transaction::new(app_id(target), version)];
        // Flows feeding one table may give different columns: the table takes their union by
        // name (PIPELINES §2), what a flow lacks is NULL. A materialized view is replaced whole.
        let (rows, save, schema) = match self.flow.kind {
            FlowKind::Append => (
                columns::align(&table, rows, target, &self.flow.name)?,
                SaveMode::Append,
                SchemaMode::Merge,
            ),
            FlowKind::Materialize | FlowKind::AutoCdc => {
                (rows, SaveMode::Overwrite, SchemaMode::Overwrite)
            }
        };
        let same_columns = tables::arrow_schema(&table)?.fields().len() == rows.num_columns();
        let table = match (save, same_columns) {
            // Rows added in the table's columns: delta-rs's writer, one file in the rows' order,
            // without planning the append as a query (the course's streams write so).
            (SaveMode::Append, true) => tables::append(table, vec![rows], progress).await?,
            _ => {
                let committed = tables::commit_properties(&table, progress);
                // One partition, so one file in the rows' order: a stream of this table reads
                // its rows in landing order (several writers would store them in several files,
                // in the order the writers finished).
                table
                    .write(vec![rows])
                    .with_session_state(tables::in_order_writes())
                    .with_save_mode(save)
                    .with_schema_mode(schema)
                    .with_commit_properties(committed)
                    .await
                    .map_err(|source| TableError::Delta {
                        table: target.clone(),
                        source,
                    })?
            }
        };
        lap.took("write", event);
        event.figures.rows_written = written;
        event.figures.table_version = Some(tables::version(&table));
        state::keep(&cx.tables, &dir, version, std::sync::Arc::new(state));
        state::remove_old(&dir, version);
        Ok(())
    }
}

/// The one table a flow streams from, if it streams from exactly one (for the quarantine).
pub(crate) fn streamed_table(flow: &FlowSpec) -> Option<&str> {
    let mut tables = flow.query.reads.iter().filter_map(|r| match &r.source {
        Source::Table(t) if r.stream => Some(t.as_str()),
        _ => None,
    });
    let first = tables.next();
    first.filter(|_| tables.next().is_none())
}
