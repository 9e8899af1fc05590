//! Before a run writes anything, every flow is analysed (PIPELINES §2, as Lakeflow's validation
//! and `spark-pipelines dry-run` do): its query planned by DataFusion over the columns its
//! sources have, without reading a row. A flow that does not resolve (a name that is no table or
//! column, a type that does not fit) refuses the project at the query's place.
//!
//! Each source's columns: a `read_files` with a `schema`, or whose schema an earlier run fixed,
//! has them; a dataset of the project has what its flow's query gives (planned here first, in
//! the graph's order) or what its table holds. A source whose columns are not known yet (files
//! not landed, a schema still to be inferred) resolves by name only: the flows reading it are
//! checked at the first run that reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::expectations::visible_schema;
use super::{committed, committed_state};
use crate::engine::declarative::files::{decode, schema};
use crate::engine::declarative::graph::streaming::DEDUP_WITHIN_WATERMARK;
use crate::engine::declarative::graph::{FlowKind, FlowSpec, Graph};
use crate::engine::declarative::parse::Place;
use crate::engine::declarative::sql::{FlowQuery, Source};
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables;

/// A flow that does not resolve: where its query is, and what DataFusion said.
#[derive(Debug, thiserror::Error)]
#[error("{place}: flow {flow} does not resolve: {message}")]
pub struct Unresolved {
    pub place: Place,
    pub flow: String,
    pub message: String,
}

/// What validating a project found: the flows that resolved, and those left to their first run.
#[derive(Debug, Default)]
pub struct Validated {
    pub resolved: Vec<String>,
    /// Flows reading a source whose columns are not known yet, with that source.
    pub by_name_only: Vec<(String, String)>,
}

/// Plans every flow of `graph` in order; the first that does not resolve is the error.
pub async fn validate(cx: &FlowContext, graph: &Graph) -> Result<Validated, Unresolved> {
    let mut known: BTreeMap<String, Option<SchemaRef>> = BTreeMap::new();
    let mut validated = Validated::default();
    for flow in &graph.flows {
        let unresolved = |message: String| Unresolved {
            place: flow.query.at.clone(),
            flow: flow.name.clone(),
            message,
        };
        let reads = flow.views.iter().flat_map(|(_, q)| &q.reads);
        for read in reads.chain(&flow.query.reads) {
            if let Source::Kafka { servers, .. } = &read.source {
                super::kafka::check_servers(cx, servers.as_deref()).map_err(unresolved)?;
            }
        }
        let ctx = SessionContext::new();
        crate::engine::declarative::sql::functions::register(&ctx);
        let mut unknown = None;
        for (view, query) in &flow.views {
            unknown = unknown.or(register(&ctx, cx, &known, query, flow, graph).await);
            if unknown.is_none() {
                let df = crate::engine::declarative::sql::plan(&ctx, &query.sql)
                    .await
                    .map_err(|e| unresolved(e.to_string()))?;
                ctx.register_table(view.as_str(), df.into_view())
                    .map_err(|e| unresolved(e.to_string()))?;
            }
        }
        unknown = unknown.or(register(&ctx, cx, &known, &flow.query, flow, graph).await);
        if let Some(source) = unknown {
            validated.by_name_only.push((flow.name.clone(), source));
            known.entry(flow.target.clone()).or_insert(None);
            continue;
        }
        let columns = match (&flow.query.window, flow.kind) {
            // A windowed flow: DataFusion plans the part below its windows, whose columns give
            // the windows' (`windowed.rs`).
            (Some(plan), _) => {
                let dataset = graph.dataset(&flow.target);
                let property = dataset.and_then(|d| d.properties.get(DEDUP_WITHIN_WATERMARK));
                let dedup = super::windowed::dedup_columns(property);
                let df =
                    crate::engine::declarative::sql::plan(&ctx, &plan.input_sql(&dedup, false))
                        .await
                        .map_err(|e| unresolved(e.to_string()))?;
                let input = df.schema().as_arrow().clone();
                let out = super::windowed::output_schema(plan, &input)
                    .map_err(|e| unresolved(e.to_string()))?;
                Some(out)
            }
            (None, kind) => {
                let df = crate::engine::declarative::sql::plan(&ctx, &flow.query.sql)
                    .await
                    .map_err(|e| unresolved(e.to_string()))?;
                match kind {
                    // An AUTO CDC target's columns are not its query's (keys, SCD 2's
                    // __START_AT and __END_AT): its table's, once written (read just below).
                    FlowKind::AutoCdc => None,
                    _ => Some(visible_schema(df.schema().as_arrow())),
                }
            }
        };
        // A table fed by several flows has their union by name (and what its table holds).
        let before = match known.get(&flow.target) {
            Some(before) => before.clone(),
            None => stored_columns(cx, &flow.target).await,
        };
        let columns = match (before, columns) {
            (Some(a), Some(b)) => Some(union(&a, &b)),
            (a, b) => a.or(b),
        };
        known.insert(flow.target.clone(), columns);
        validated.resolved.push(flow.name.clone());
    }
    Ok(validated)
}

/// Registers each read of `query` as an empty table of its columns; the first source whose
/// columns are not known, if any.
async fn register(
    ctx: &SessionContext,
    cx: &FlowContext,
    known: &BTreeMap<String, Option<SchemaRef>>,
    query: &FlowQuery,
    flow: &FlowSpec,
    graph: &Graph,
) -> Option<String> {
    for read in &query.reads {
        // A temporary view the flow reads through is registered by the flow (its views come
        // first, innermost first); a stream of it under a name of its own reads the same.
        if let Source::Table(view) = &read.source
            && flow.views.iter().any(|(v, _)| v == view)
        {
            if &read.name != view {
                let provider = ctx.table_provider(view.as_str()).await.ok()?;
                let _ = ctx.register_table(read.name.as_str(), provider);
            }
            continue;
        }
        let columns = match &read.source {
            Source::Files {
                path, schema: ddl, ..
            } => {
                let ddl = match ddl {
                    Some(ddl) => Some(ddl.clone()),
                    None => fixed_schema(cx, graph, path).await,
                };
                ddl.and_then(|ddl| schema::from_ddl(&ddl).ok())
                    .map(|columns| decode::schema(&columns))
            }
            Source::Table(name) => match known.get(name) {
                Some(columns) => columns.clone(),
                None => stored_columns(cx, name).await,
            },
            Source::Kafka { .. } => Some(crate::engine::streaming::kafka::schema()),
        };
        let Some(columns) = columns else {
            return Some(match &read.source {
                Source::Files { path, .. } => format!("read_files('{path}')"),
                Source::Table(name) => name.clone(),
                Source::Kafka { topic, .. } => format!("read_kafka('{topic}')"),
            });
        };
        let mut columns = columns.as_ref().clone();
        if read.stream && matches!(read.source, Source::Table(_)) {
            // A streamed table's rows carry the version they came in (`sources::VERSION`).
            let mut fields: Vec<_> = columns
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(arrow::datatypes::Field::new(
                super::sources::VERSION,
                arrow::datatypes::DataType::Int64,
                true,
            ));
            columns = Schema::new(fields);
        }
        let empty = MemTable::try_new(Arc::new(columns), vec![vec![]]).ok()?;
        // A name registered twice (a self-join's two reads of one table) is the same table.
        let _ = ctx.register_table(read.name.as_str(), Arc::new(empty));
    }
    None
}

/// The schema an earlier run fixed for `read_files(path)`, from the committed state of a table
/// whose flow reads it.
async fn fixed_schema(cx: &FlowContext, graph: &Graph, path: &str) -> Option<String> {
    for flow in &graph.flows {
        let reads_it = flow
            .reads()
            .any(|r| matches!(&r.source, Source::Files { path: p, .. } if p == path));
        if !reads_it {
            continue;
        }
        let Ok(Some(table)) = cx.tables.open_named(&flow.target).await else {
            continue;
        };
        let version = committed(cx, &table, &flow.target)
            .await
            .ok()
            .filter(|v| *v > 0)?;
        let state = committed_state(cx, &flow.target, version).ok()?;
        if let Some(ddl) = state
            .flows
            .get(&flow.name)
            .and_then(|p| p.schemas.get(path))
        {
            return Some(ddl.clone());
        }
    }
    None
}

/// The columns of `a` and then those of `b` that `a` lacks (by name), as a table fed by both has.
fn union(a: &SchemaRef, b: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<_> = a.fields().iter().map(|f| f.as_ref().clone()).collect();
    for field in b.fields() {
        if a.field_with_name(field.name()).is_err() {
            fields.push(field.as_ref().clone().with_nullable(true));
        }
    }
    Arc::new(Schema::new(fields))
}

/// The columns dataset `name`'s table holds, if it has been written.
async fn stored_columns(cx: &FlowContext, name: &str) -> Option<SchemaRef> {
    let table = cx.tables.open_named(name).await.ok()??;
    committed(cx, &table, name).await.ok()?;
    tables::arrow_schema(&table).ok()
}

impl From<Unresolved> for FlowError {
    fn from(e: Unresolved) -> Self {
        FlowError::Refused(Refusal::Unresolved(e.to_string()))
    }
}
