//! What a declared flow reads this run, registered in its session under the names its query uses:
//! for a streaming read, only the files not read before or the rows committed since the version
//! it last read; for a plain read, the table as it is now, or every file.

use std::collections::BTreeMap;
use std::sync::Arc;

use app::model::FileRead;
use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionContext, cast, col};
use serde::{Deserialize, Serialize};

use crate::engine::declarative::files::{self, Stamp, schema};
use crate::engine::declarative::graph::FlowSpec;
use crate::engine::declarative::parse::Dataset;
use crate::engine::declarative::sql::{FlowQuery, Read, Source};
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

/// The hidden column holding the table version a streamed row was committed in.
pub const VERSION: &str = "__version";

/// What one flow has read, committed with what it wrote.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Progress {
    /// Files read, by path, with their stamp when read.
    pub files: BTreeMap<String, Stamp>,
    /// Per table: the last version read (streaming) or seen (a materialized view's inputs).
    pub tables: BTreeMap<String, i64>,
    /// Per `read_files` path: the columns (DDL), fixed at the first run until a full refresh.
    pub schemas: BTreeMap<String, String>,
    /// Per table read whole: when it was created, so a table made again reads as changed.
    #[serde(default)]
    pub born: BTreeMap<String, i64>,
    /// Per topic read by `STREAM read_kafka` (the learner's name for it): per partition, the
    /// last offset read.
    #[serde(default)]
    pub kafka: BTreeMap<String, BTreeMap<i32, i64>>,
    /// The flow's definition when it last committed ([`FlowSpec::definition`]); `None` in state
    /// written before definitions were kept.
    #[serde(default)]
    pub definition: Option<String>,
    /// The definition as it stands: the flow and its table's rules and properties.
    #[serde(default)]
    pub spec: Option<Box<Definition>>,
    /// The flow's earlier definitions, oldest first, each with what the flow had read when it
    /// changed: the check recomputes each part of the table with the definition that wrote it.
    #[serde(default)]
    pub eras: Vec<Era>,
}

/// A flow as one of its definitions stood.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Definition {
    pub flow: FlowSpec,
    pub dataset: Dataset,
}

/// What a flow read under a definition it no longer has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Era {
    pub definition: Definition,
    /// What it had read when its definition changed (no eras of its own).
    pub until: Progress,
}

impl Progress {
    /// Keeps the definition as it stands, and when it changed, the one before as an era that
    /// ends with what has been read so far.
    pub fn define(&mut self, flow: &FlowSpec, dataset: &Dataset, definition: String) {
        let changed = self.definition.as_ref() != Some(&definition);
        if changed && let Some(old) = self.spec.take() {
            let eras = std::mem::take(&mut self.eras);
            let until = self.clone();
            self.eras = eras;
            self.eras.push(Era {
                definition: *old,
                until,
            });
        }
        self.definition = Some(definition);
        self.spec = Some(Box::new(Definition {
            flow: flow.clone(),
            dataset: dataset.clone(),
        }));
    }
}

/// What a streaming read registers: the rows new since `progress` (a run, which moves it), or
/// every row up to it (the check, recomputing what the flow has read so far: files, table
/// versions and offsets as its last commit recorded them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reading {
    #[default]
    New,
    SoFar,
}

/// What the reads registered: whether anything was new, and what each source gave.
#[derive(Debug, Default)]
pub struct Registered {
    pub new_rows: u64,
    pub anything_new: bool,
    pub files: Vec<FileRead>,
    pub source_versions: BTreeMap<String, (i64, i64)>,
    /// Tables it reads that no run has written yet (registered empty, without columns).
    pub unwritten: Vec<String>,
    /// Bytes of the new rows read into memory (files, streamed table versions).
    pub bytes: usize,
    /// The Kafka offsets a `STREAM read_kafka` read, per partition.
    pub offsets: Vec<app::model::PartitionRange>,
    /// Which rows the streaming reads registered.
    pub reading: Reading,
    /// With [`Reading::SoFar`]: the rows read up to this mark are left out (what a flow read
    /// under a later definition).
    pub after: Option<Progress>,
}

fn query_error(what: &str) -> impl Fn(datafusion::error::DataFusionError) -> TableError + '_ {
    move |source| TableError::Query {
        table: what.to_string(),
        source,
    }
}

/// Registers what `flow` reads in `ctx`: each view it reads through (innermost first, as
/// DataFusion views over their own reads), then its own reads. The graph marked what a streamed
/// view reads as streamed (PIPELINES §2), so every read is registered as it stands.
pub async fn register_flow(
    ctx: &SessionContext,
    cx: &FlowContext,
    flow: &FlowSpec,
    progress: &mut Progress,
    out: &mut Registered,
) -> Result<(), FlowError> {
    for (view, query) in &flow.views {
        let direct = through_views(ctx, &query.reads, &flow.views).await?;
        register(ctx, cx, &direct, progress, out).await?;
        let df = crate::engine::declarative::sql::plan(ctx, &query.sql)
            .await
            .map_err(query_error(view))?;
        ctx.register_table(view.as_str(), df.into_view())
            .map_err(query_error(view))?;
    }
    let direct = through_views(ctx, &flow.query.reads, &flow.views).await?;
    register(ctx, cx, &direct, progress, out).await
}

/// The reads that are not of a view. A view read under a name of the query's own (`STREAM v`
/// becomes `__read_0 AS v`) is registered under that name too; under its own name it is there.
async fn through_views(
    ctx: &SessionContext,
    reads: &[Read],
    views: &[(String, FlowQuery)],
) -> Result<Vec<Read>, FlowError> {
    let mut direct = vec![];
    for read in reads {
        match &read.source {
            Source::Table(view) if views.iter().any(|(v, _)| v == view) => {
                if &read.name != view {
                    let table = ctx.table_provider(view.as_str()).await;
                    let table = table.map_err(query_error(view))?;
                    ctx.register_table(read.name.as_str(), table)
                        .map_err(query_error(view))?;
                }
            }
            _ => direct.push(read.clone()),
        }
    }
    Ok(direct)
}

/// Registers each read in `ctx`, moving `progress` to what this run reads.
pub async fn register(
    ctx: &SessionContext,
    cx: &FlowContext,
    reads: &[Read],
    progress: &mut Progress,
    out: &mut Registered,
) -> Result<(), FlowError> {
    for read in reads {
        // A query that reads one table twice (a self-join, `FROM t a, t b`) reads it once.
        if !read.stream && ctx.table_exist(read.name.as_str()).unwrap_or(false) {
            continue;
        }
        match &read.source {
            Source::Files {
                path,
                format,
                schema: ddl,
            } => {
                let landed = files::list(&cx.data_dir, path, cx.landing_only)?;
                let landed = files::of_format(landed, *format);
                let mut new = vec![];
                for file in landed {
                    if out.reading == Reading::SoFar && read.stream {
                        let read_before =
                            |p: &Progress| p.files.get(&file.path) == Some(&file.stamp);
                        if read_before(progress) && !out.after.as_ref().is_some_and(read_before) {
                            new.push(file);
                        }
                        continue;
                    }
                    match progress.files.get(&file.path) {
                        Some(stamp) if *stamp == file.stamp || !read.stream => {
                            if !read.stream {
                                new.push(file);
                            }
                        }
                        Some(_) => out.files.push(FileRead {
                            path: file.path.clone(),
                            rows: 0,
                            rescued: 0,
                            changed: true,
                        }),
                        None => new.push(file),
                    }
                }
                let columns = match (ddl, progress.schemas.get(path)) {
                    (Some(ddl), _) | (None, Some(ddl)) => {
                        schema::from_ddl(ddl).map_err(|e| FlowError::File {
                            path: path.clone(),
                            detail: e,
                        })?
                    }
                    (None, None) => files::infer(&cx.data_dir, &new, *format)?,
                };
                if read.stream && !columns.is_empty() && out.reading == Reading::New {
                    progress
                        .schemas
                        .insert(path.clone(), schema::to_ddl(&columns));
                }
                let (batch, reads) = files::read(&cx.data_dir, &new, *format, &columns)?;
                out.anything_new |= !new.is_empty();
                out.new_rows += batch.num_rows() as u64;
                out.bytes += super::session::size(&batch);
                if read.stream && out.reading == Reading::New {
                    for file in &new {
                        progress.files.insert(file.path.clone(), file.stamp);
                    }
                }
                out.files.extend(reads);
                register_rows(ctx, read, path, vec![batch])?;
            }
            Source::Kafka {
                topic,
                starting,
                servers,
            } => {
                let source = (topic.as_str(), *starting, servers.as_deref());
                let stored = progress.kafka.get(topic).cloned().unwrap_or_default();
                let got = match (out.reading, read.stream) {
                    (Reading::SoFar, true) => {
                        let after = out.after.as_ref().and_then(|a| a.kafka.get(topic));
                        super::kafka::read_so_far(cx, source, &stored, after)?
                    }
                    _ => super::kafka::read(cx, read, source, &stored)?,
                };
                if read.stream && out.reading == Reading::New {
                    progress.kafka.insert(topic.clone(), got.offsets);
                    out.offsets.extend(got.ranges);
                }
                let rows = got.rows;
                out.anything_new |= rows.num_rows() > 0;
                out.new_rows += rows.num_rows() as u64;
                out.bytes += super::session::size(&rows);
                register_rows(ctx, read, &format!("read_kafka('{topic}')"), vec![rows])?;
            }
            Source::Table(name) => {
                let table = cx.tables.open_named(name).await?;
                let Some(table) = table else {
                    // Not written yet: nothing to read from it this run.
                    out.unwritten.push(name.clone());
                    register_rows(ctx, read, name, vec![])?;
                    continue;
                };
                let current = tables::version(&table);
                let last = progress.tables.get(name).copied();
                if !read.stream && out.reading == Reading::SoFar {
                    // The table as the last commit read it.
                    let mut table = table;
                    if let Some(seen) = last.filter(|v| *v < current) {
                        table
                            .load_version(seen.max(0) as u64)
                            .await
                            .map_err(|source| TableError::Delta {
                                table: name.clone(),
                                source,
                            })?;
                    }
                    tables::register(ctx, &table, read.name.as_str()).await?;
                    continue;
                }
                if !read.stream {
                    let born = cx.tables.born(name).unwrap_or_default();
                    out.anything_new |=
                        last != Some(current) || progress.born.get(name) != Some(&born);
                    progress.tables.insert(name.clone(), current);
                    progress.born.insert(name.clone(), born);
                    tables::register(ctx, &table, read.name.as_str()).await?;
                    continue;
                }
                if out.reading == Reading::SoFar {
                    let first = out.after.as_ref().and_then(|a| a.tables.get(name));
                    let first = first.map_or(0, |v| v + 1);
                    let rows = match last {
                        Some(last) if first <= last.min(current) => {
                            changes(&table, name, first, last.min(current)).await?
                        }
                        _ => empty_like(&table).await?,
                    };
                    register_rows(ctx, read, name, rows)?;
                    continue;
                }
                let first = last.map_or(0, |v| v + 1);
                let rows = if first <= current {
                    out.anything_new = true;
                    out.source_versions.insert(name.clone(), (first, current));
                    progress.tables.insert(name.clone(), current);
                    changes(&table, name, first, current).await?
                } else {
                    empty_like(&table).await?
                };
                out.new_rows += rows.iter().map(|b| b.num_rows() as u64).sum::<u64>();
                out.bytes += rows.iter().map(super::session::size).sum::<usize>();
                register_rows(ctx, read, name, rows)?;
            }
        }
    }
    Ok(())
}

/// Registers `rows` under the read's name (`shown` names the source in an error).
fn register_rows(
    ctx: &SessionContext,
    read: &Read,
    shown: &str,
    rows: Vec<RecordBatch>,
) -> Result<(), FlowError> {
    let schema = rows
        .first()
        .map_or_else(|| Arc::new(Schema::empty()), |b| b.schema());
    let table = MemTable::try_new(schema, vec![rows]).map_err(query_error(shown))?;
    ctx.register_table(read.name.as_str(), Arc::new(table))
        .map_err(query_error(shown))?;
    Ok(())
}

/// The rows commits `first..=last` of a table added, with the version each came in as `__version`,
/// in landing order: by version, and within a version as the commit stored them.
async fn changes(
    table: &deltalake::DeltaTable,
    name: &str,
    first: i64,
    last: i64,
) -> Result<Vec<RecordBatch>, FlowError> {
    let ctx = tables::in_order();
    let df = tables::changes::inserted(&ctx, table, (first, last))?
        .drop_columns(&["_change_type", "_commit_timestamp"])
        .and_then(|df| df.with_column_renamed("_commit_version", VERSION))
        // The change feed gives the version dictionary-encoded; the quarantine wants a number.
        .and_then(|df| df.with_column(VERSION, cast(col(VERSION), DataType::Int64)))
        .map_err(query_error(name))?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let rows = df.collect().await.map_err(query_error(name))?;
    let arrow = |source| {
        FlowError::Table(TableError::Arrow {
            table: name.to_string(),
            source,
        })
    };
    let rows = match rows.len() {
        1 => rows.into_iter().next().expect("one batch"),
        _ => arrow::compute::concat_batches(&schema, &rows).map_err(arrow)?,
    };
    // A stable sort by version: the rows of one commit keep their stored order.
    let versions = rows
        .column_by_name(VERSION)
        .and_then(|c| c.as_primitive_opt::<arrow::datatypes::Int64Type>())
        .ok_or_else(|| {
            FlowError::from(Refusal::SchemaClash(format!(
                "{name}: its change feed has no version"
            )))
        })?;
    if versions.values().is_sorted() {
        // In landing order already (one commit, or commits read in turn): no copy.
        return Ok(vec![rows]);
    }
    let mut order: Vec<u32> = (0..rows.num_rows() as u32).collect();
    order.sort_by_key(|&i| versions.value(i as usize));
    let order = arrow::array::UInt32Array::from(order);
    Ok(vec![
        arrow::compute::take_record_batch(&rows, &order).map_err(arrow)?,
    ])
}

/// No rows, with the columns a streamed read of the table has.
async fn empty_like(table: &deltalake::DeltaTable) -> Result<Vec<RecordBatch>, FlowError> {
    let schema = tables::arrow_schema(table)?;
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(VERSION, DataType::Int64, true));
    Ok(vec![RecordBatch::new_empty(Arc::new(Schema::new(fields)))])
}
