//! A project read from its folder (`spark-pipeline.yml` and the `.sql` files its globs name) into
//! a graph: the datasets, the flows that fill them, and the order to run the flows in. A cycle or
//! a name no statement creates is refused, naming both ends.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::parse::{AutoCdc, Dataset, Kind, ParseError, Place, QueryText, Statement};
use super::sql::{FlowQuery, Read, Source, flow_query};

mod definition;
mod load;
pub mod streaming;

pub use load::load;

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("{path}: {detail}")]
    File { path: PathBuf, detail: String },
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{place}: {message}")]
    Graph { place: Place, message: String },
}

/// What fills a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FlowKind {
    /// Appends what is new (a streaming table's query or an `INSERT INTO` flow).
    Append,
    /// Recomputes the whole dataset (a materialized view).
    Materialize,
    /// Applies changes by key (`AUTO CDC`, PIPELINES §5).
    AutoCdc,
}

/// How deep views may read views: each level is a step of the graph's walk and of the query's
/// plan, so a chain of thousands could overflow a thread's stack.
const MAX_VIEW_DEPTH: usize = 32;

/// The column an AUTO CDC flow's query adds: whether the row is a delete.
pub const DELETE: &str = "__delete";

/// A flow of the graph, with what it reads after views are seen through.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FlowSpec {
    pub name: String,
    pub target: String,
    pub kind: FlowKind,
    pub query: FlowQuery,
    /// The temporary views it reads, innermost first, each with its own query.
    pub views: Vec<(String, FlowQuery)>,
    /// The stored datasets it reads (through views too).
    pub upstream: BTreeSet<String>,
    /// What an AUTO CDC flow does with its rows.
    pub cdc: Option<AutoCdc>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Graph {
    pub name: String,
    /// Every dataset by name, in statement order.
    pub datasets: Vec<Dataset>,
    /// The flows in the order they run.
    pub flows: Vec<FlowSpec>,
    /// A day of a gold table is final once files of this many later days have loaded
    /// (`configuration: reckon.finalAfterDays` in `spark-pipeline.yml`; 1 unless set).
    #[serde(default = "one_day")]
    pub final_after_days: u32,
}

fn one_day() -> u32 {
    1
}

impl FlowSpec {
    /// What it reads: its query's reads, then its views'.
    pub fn reads(&self) -> impl Iterator<Item = &Read> {
        let views = self.views.iter().flat_map(|(_, q)| &q.reads);
        self.query.reads.iter().chain(views)
    }
}

impl Graph {
    /// Whether any flow (or a view it reads through) reads Kafka: its run connects to the broker.
    pub fn reads_kafka(&self) -> bool {
        self.flows.iter().any(|f| {
            let views = f.views.iter().flat_map(|(_, q)| &q.reads);
            views.chain(&f.query.reads).any(|r| {
                matches!(
                    r.source,
                    crate::engine::declarative::sql::Source::Kafka { .. }
                )
            })
        })
    }

    pub fn dataset(&self, name: &str) -> Option<&Dataset> {
        self.datasets.iter().find(|d| d.name == name)
    }

    /// Why a full refresh of `tables` is refused, if it is: a table the project lacks, or a flow
    /// that streams from a refreshed table (through views too) into a table not refreshed, which
    /// would then miss or repeat rows.
    pub fn refresh_refused(&self, tables: &[String]) -> Option<String> {
        if let Some(name) = tables.iter().find(|t| self.dataset(t).is_none()) {
            return Some(format!(
                "--full-refresh {name}: the project has no dataset {name}"
            ));
        }
        self.flows.iter().find_map(|flow| {
            flow.reads().find_map(|read| match &read.source {
                Source::Table(table)
                    if read.stream && tables.contains(table) && !tables.contains(&flow.target) =>
                {
                    let target = &flow.target;
                    Some(format!(
                        "--full-refresh {table}: {target} streams from {table}; refresh {target} \
                         too (it would otherwise miss or repeat rows)"
                    ))
                }
                _ => None,
            })
        })
    }
}

/// The graph of parsed statements.
pub fn build(name: String, statements: Vec<Statement>) -> Result<Graph, ProjectError> {
    let refused = |place: &Place, message: String| ProjectError::Graph {
        place: place.clone(),
        message,
    };
    let mut datasets: Vec<Dataset> = vec![];
    let mut flows: Vec<(String, String, FlowKind, FlowQuery, Place)> = vec![];
    let mut cdcs: Vec<AutoCdc> = vec![];
    for statement in statements {
        match statement {
            Statement::Dataset(d) => {
                if let Some(first) = datasets.iter().find(|e| e.name == d.name) {
                    return Err(refused(
                        &d.at,
                        format!("{} is created twice (first at {})", d.name, first.at),
                    ));
                }
                if let Some(q) = &d.query
                    && d.kind != Kind::TemporaryView
                {
                    let kind = match d.kind {
                        Kind::MaterializedView => FlowKind::Materialize,
                        _ => FlowKind::Append,
                    };
                    flows.push((
                        d.name.clone(),
                        d.name.clone(),
                        kind,
                        flow_query(q, "__read")?,
                        d.at.clone(),
                    ));
                }
                datasets.push(d);
            }
            Statement::Insert(f) => {
                flows.push((
                    f.name,
                    f.target,
                    FlowKind::Append,
                    flow_query(&f.query, "__read")?,
                    f.at,
                ));
            }
            Statement::AutoCdc(c) => {
                // The source's rows, each marked as a delete or not: the query the flow runs.
                let delete = c.delete_when.as_deref().unwrap_or("false");
                let text = QueryText {
                    sql: format!(
                        "SELECT *, coalesce(({delete}), false) AS {DELETE} FROM STREAM({})",
                        c.source
                    ),
                    at: c.at.clone(),
                };
                flows.push((
                    c.name.clone(),
                    c.target.clone(),
                    FlowKind::AutoCdc,
                    flow_query(&text, "__read")?,
                    c.at.clone(),
                ));
                cdcs.push(c);
            }
        }
    }
    // Each flow keeps its own progress under its name: two flows of one name would share it.
    for (i, (name, .., at)) in flows.iter().enumerate() {
        if let Some((.., first)) = flows[..i].iter().find(|f| &f.0 == name) {
            return Err(refused(
                at,
                format!(
                    "flow {name} is defined twice (first at {first}): give each flow its own name"
                ),
            ));
        }
    }
    let mut views: BTreeMap<String, FlowQuery> = BTreeMap::new();
    for d in datasets.iter().filter(|d| d.kind == Kind::TemporaryView) {
        if let Some(q) = &d.query {
            views.insert(
                d.name.clone(),
                flow_query(q, &format!("__view_{}", d.name))?,
            );
        }
    }
    let mut graph = vec![];
    let writers: Vec<(String, String)> = flows.iter().map(|f| (f.0.clone(), f.1.clone())).collect();
    for (name, target, kind, query, at) in flows {
        match datasets.iter().find(|d| d.name == target) {
            Some(d) if d.kind == Kind::StreamingTable || (kind == FlowKind::Materialize) => {}
            Some(d) => {
                return Err(refused(
                    &at,
                    format!(
                        "flow {name} inserts into {target}, a {}: only a streaming table takes flows",
                        d.kind.as_str()
                    ),
                ));
            }
            None => {
                return Err(refused(
                    &at,
                    format!("flow {name} inserts into {target}, which no statement creates"),
                ));
            }
        }
        let cdc = cdcs.iter().find(|c| c.name == name).cloned();
        if kind == FlowKind::AutoCdc {
            check_cdc_target(&name, &target, &writers, &datasets, &at)?;
        }
        let mut seen = vec![];
        let upstream = see_through(&name, &query, &views, &datasets, &mut seen, &mut vec![])?;
        stream_through(&query, &mut seen);
        let flow = FlowSpec {
            name,
            target,
            kind,
            query,
            views: seen,
            upstream,
            cdc,
        };
        let (name, target, query) = (&flow.name, &flow.target, &flow.query);
        for read in flow.reads().filter(|r| r.stream) {
            if let Source::Table(table) = &read.source
                && let Some(d) = datasets.iter().find(|d| &d.name == table)
                && d.kind == Kind::MaterializedView
            {
                return Err(refused(
                    &query.at,
                    format!(
                        "flow {name} streams from {table}, a materialized view: it is computed \
                         again whole on each run, so a stream would take every row again; read \
                         it without STREAM"
                    ),
                ));
            }
        }
        if flow.upstream.contains(target) {
            return Err(refused(
                &query.at,
                format!("a cycle: flow {name} writes {target} and reads it too"),
            ));
        }
        if flow.kind == FlowKind::Append && !flow.reads().any(|r| r.stream) {
            return Err(refused(
                &query.at,
                format!(
                    "flow {name} feeds streaming table {target} but reads nothing with STREAM: \
                     it would add every row again on each run (use STREAM(...), or a materialized view)"
                ),
            ));
        }
        let dataset = datasets.iter().find(|d| d.name == *target);
        if let Some(why) = streaming::refusal(&flow, dataset) {
            return Err(refused(&query.at, why));
        }
        graph.push(flow);
    }
    let flows = order(graph)?;
    Ok(Graph {
        name,
        datasets,
        flows,
        final_after_days: one_day(),
    })
}

/// An AUTO CDC target is a streaming table declared without a query, rules or
/// `reckon.dropDuplicates`, and this flow is the only one writing it.
fn check_cdc_target(
    flow: &str,
    target: &str,
    writers: &[(String, String)],
    datasets: &[Dataset],
    at: &Place,
) -> Result<(), ProjectError> {
    let refused = |message: String| ProjectError::Graph {
        place: at.clone(),
        message,
    };
    let others: Vec<&str> = writers
        .iter()
        .filter(|(name, into)| into == target && name != flow)
        .map(|(name, _)| name.as_str())
        .collect();
    if !others.is_empty() {
        return Err(refused(format!(
            "AUTO CDC flow {flow} must be the only flow into {target}, which {} also write(s)",
            others.join(", ")
        )));
    }
    if let Some(d) = datasets.iter().find(|d| d.name == target)
        && (!d.expectations.is_empty() || d.properties.contains_key("reckon.dropDuplicates"))
    {
        return Err(refused(format!(
            "{target} is written by AUTO CDC flow {flow}: put its expectations and \
             reckon.dropDuplicates on the source table instead"
        )));
    }
    Ok(())
}

/// The stored datasets a query reads, through the views it reads (collected into `seen`, each
/// after the views it reads). `inside` holds the views being seen through, outermost first: a view
/// that reads one of them is a cycle, refused before it can recurse forever.
fn see_through(
    flow: &str,
    query: &FlowQuery,
    views: &BTreeMap<String, FlowQuery>,
    datasets: &[Dataset],
    seen: &mut Vec<(String, FlowQuery)>,
    inside: &mut Vec<String>,
) -> Result<BTreeSet<String>, ProjectError> {
    let mut upstream = BTreeSet::new();
    for read in &query.reads {
        let Source::Table(table) = &read.source else {
            continue;
        };
        if let Some(view) = views.get(table) {
            if let Some(i) = inside.iter().position(|v| v == table) {
                let mut cycle = inside[i..].to_vec();
                cycle.push(table.clone());
                return Err(ProjectError::Graph {
                    place: query.at.clone(),
                    message: format!(
                        "a cycle of views: {} (a view must not read itself)",
                        cycle.join(" reads ")
                    ),
                });
            }
            if seen.iter().any(|(n, _)| n == table) {
                continue;
            }
            if inside.len() >= MAX_VIEW_DEPTH {
                return Err(ProjectError::Graph {
                    place: query.at.clone(),
                    message: format!(
                        "flow {flow} reads views {MAX_VIEW_DEPTH} deep ({} ...): a view may read \
                         views {MAX_VIEW_DEPTH} deep at most",
                        inside[..3].join(" reads ")
                    ),
                });
            }
            inside.push(table.clone());
            upstream.extend(see_through(flow, view, views, datasets, seen, inside)?);
            inside.pop();
            seen.push((table.clone(), view.clone()));
        } else if datasets.iter().any(|d| &d.name == table) {
            upstream.insert(table.clone());
        } else {
            return Err(ProjectError::Graph {
                place: query.at.clone(),
                message: format!("flow {flow} reads {table}, which no statement creates"),
            });
        }
    }
    Ok(upstream)
}

/// A streaming read of a view streams what the view reads (PIPELINES §2), through views of views:
/// every read of a streamed view is marked streamed. `views` holds each view after the views it
/// reads (as [`see_through`] collects them), so walking it backwards meets a reader first.
fn stream_through(query: &FlowQuery, views: &mut [(String, FlowQuery)]) {
    let table = |r: &super::sql::Read| match &r.source {
        Source::Table(t) if r.stream => Some(t.clone()),
        _ => None,
    };
    let mut streamed: BTreeSet<String> = query.reads.iter().filter_map(table).collect();
    for (name, q) in views.iter_mut().rev() {
        if streamed.contains(name.as_str()) {
            q.reads.iter_mut().for_each(|r| r.stream = true);
        }
        streamed.extend(q.reads.iter().filter_map(table));
    }
}

/// The flows in dependency order; between independent flows, statement order.
fn order(mut pending: Vec<FlowSpec>) -> Result<Vec<FlowSpec>, ProjectError> {
    let mut ordered: Vec<FlowSpec> = vec![];
    while !pending.is_empty() {
        // A flow is ready when no pending flow (other than itself) writes what it reads.
        let ready = pending.iter().position(|f| {
            f.upstream.iter().all(|table| {
                !pending
                    .iter()
                    .any(|other| other.name != f.name && &other.target == table)
            })
        });
        match ready {
            Some(i) => ordered.push(pending.remove(i)),
            None => {
                let f = &pending[0];
                let blocking = f
                    .upstream
                    .iter()
                    .find(|t| pending.iter().any(|o| &o.target == *t))
                    .cloned()
                    .unwrap_or_default();
                return Err(ProjectError::Graph {
                    place: f.query.at.clone(),
                    message: format!(
                        "a cycle: {} reads {blocking}, which depends on {} again (flows must form a graph without cycles)",
                        f.target, f.target
                    ),
                });
            }
        }
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests;
