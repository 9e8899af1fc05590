//! A declarative project's graph as the pipeline page draws it: file sources and datasets laid
//! out in layers (a node one layer right of everything it reads), each with its rows and what
//! the last run did to it.

use std::collections::{BTreeMap, BTreeSet};

use app::api::ApiError;
use app::model::{FlowRun, FlowStatus, GraphNode, ProjectGraph, RuleCount};

use super::history;
use crate::engine::declarative::graph::{FlowKind, Graph};
use crate::engine::declarative::parse::Kind;
use crate::engine::declarative::sql::{FlowQuery, Source};
use crate::engine::render;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// The drawing's units: a node's width, its height before its rules (six lines), a rule's
/// line, the gaps.
const WIDTH: u32 = 240;
/// The kind of a node that is a Kafka topic a flow reads.
const KAFKA: &str = "Kafka topic";
const HEIGHT: u32 = 124;
const RULE: u32 = 18;
const GAP_X: u32 = 48;
const GAP_Y: u32 = 28;
const MARGIN: u32 = 16;

/// What a node reads: each dataset or file path a flow (or a view it uses) reads, to what it
/// fills. File sources are named by their path.
fn edges(graph: &Graph) -> BTreeSet<(String, String)> {
    let source = |read: &crate::engine::declarative::sql::Read| match &read.source {
        Source::Table(name) => name.clone(),
        Source::Files { path, .. } => path.clone(),
        Source::Kafka { topic, .. } => format!("read_kafka('{topic}')"),
    };
    let mut edges = BTreeSet::new();
    let mut add = |query: &FlowQuery, to: &str| {
        for read in &query.reads {
            edges.insert((source(read), to.to_string()));
        }
    };
    for flow in &graph.flows {
        for (view, query) in &flow.views {
            add(query, view);
        }
        add(&flow.query, &flow.target);
    }
    edges
}

/// Each node's layer: 0 for what reads nothing, else one more than the deepest it reads.
fn layers(nodes: &[String], edges: &BTreeSet<(String, String)>) -> BTreeMap<String, u32> {
    let mut layer: BTreeMap<String, u32> = nodes.iter().map(|n| (n.clone(), 0)).collect();
    // The graph has no cycle (the project would not load), so this settles within |nodes| passes.
    for _ in 0..nodes.len() {
        let mut moved = false;
        for (from, to) in edges {
            let want = layer.get(from).copied().unwrap_or(0) + 1;
            if layer.get(to).is_some_and(|&l| l < want) {
                layer.insert(to.clone(), want);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    layer
}

/// The nodes layer by layer, each layer in an order that keeps edges from crossing where it
/// can: a node's place is the mean place of what it reads (the first layer: of what reads it,
/// in the project's order).
fn ordered(
    names: Vec<String>,
    layer: &BTreeMap<String, u32>,
    edges: &BTreeSet<(String, String)>,
) -> Vec<String> {
    let declared: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut place: BTreeMap<String, f64> = BTreeMap::new();
    let mut order = vec![];
    let deepest = layer.values().copied().max().unwrap_or(0);
    for depth in 0..=deepest {
        let mut here: Vec<(f64, usize, String)> = names
            .iter()
            .filter(|n| layer[*n] == depth)
            .map(|n| {
                let near: Vec<f64> = match depth {
                    0 => edges
                        .iter()
                        .filter(|(from, _)| from == n)
                        .map(|(_, to)| declared[to.as_str()] as f64)
                        .collect(),
                    _ => edges
                        .iter()
                        .filter(|(_, to)| to == n)
                        .filter_map(|(from, _)| place.get(from).copied())
                        .collect(),
                };
                let key = match near.is_empty() {
                    true => declared[n.as_str()] as f64,
                    false => near.iter().sum::<f64>() / near.len() as f64,
                };
                (key, declared[n.as_str()], n.clone())
            })
            .collect();
        here.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (i, (_, _, name)) in here.into_iter().enumerate() {
            place.insert(name.clone(), i as f64);
            order.push(name);
        }
    }
    order
}

/// Events by target: the last run's, and each flow's last that did something (its counts, shown
/// when the last run had nothing new for it), with that run's id.
async fn last_runs(lab: &Lab) -> Result<(EventsByTarget, EventsByTarget), ApiError> {
    let history = history(lab)?;
    let last = history
        .last_finished_run(&lab.config.lab)
        .await
        .map_err(failed)?;
    let newest = match last {
        Some(run) => history
            .events(&lab.config.lab, Some(run.id))
            .await
            .map_err(failed)?,
        None => vec![],
    };
    let active = history
        .last_active_events(&lab.config.lab)
        .await
        .map_err(failed)?;
    Ok((by_target(newest), by_target(active)))
}

/// Only the events of flows the project still has.
fn of_flows(graph: &Graph, events: EventsByTarget) -> EventsByTarget {
    events
        .into_iter()
        .map(|(target, events)| {
            let kept = events
                .into_iter()
                .filter(|(_, e)| graph.flows.iter().any(|f| f.name == e.flow))
                .collect();
            (target, kept)
        })
        .collect()
}

type EventsByTarget = BTreeMap<String, Vec<(i64, FlowRun)>>;

fn by_target(events: Vec<(i64, FlowRun)>) -> EventsByTarget {
    let mut by_target: EventsByTarget = BTreeMap::new();
    for (run, event) in events {
        if let Some(target) = event.target.clone() {
            by_target.entry(target).or_default().push((run, event));
        }
    }
    by_target
}

pub async fn project_graph(lab: &Lab, graph: &Graph) -> Result<ProjectGraph, ApiError> {
    let edges = edges(graph);
    let mut names: Vec<String> = edges
        .iter()
        .map(|(from, _)| from.clone())
        .filter(|n| graph.dataset(n).is_none())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    names.extend(graph.datasets.iter().map(|d| d.name.clone()));
    let layer = layers(&names, &edges);
    let names = ordered(names, &layer, &edges);
    let (newest, active) = last_runs(lab).await?;
    let active = of_flows(graph, active);
    let mut column_heights: BTreeMap<u32, u32> = BTreeMap::new();
    let mut nodes = vec![];
    for name in names {
        let dataset = graph.dataset(&name);
        let cdc = graph
            .flows
            .iter()
            .any(|f| f.target == name && f.kind == FlowKind::AutoCdc);
        let kind = match dataset.map(|d| d.kind) {
            None if name.starts_with("read_kafka(") => KAFKA.to_string(),
            None => "files".to_string(),
            Some(_) if cdc => "AUTO CDC target".to_string(),
            Some(k) => k.as_str().to_string(),
        };
        let rows = match dataset.filter(|d| d.kind != Kind::TemporaryView) {
            Some(_) => match lab.tables.open_named(&name).await.map_err(failed)? {
                Some(table) => Some(render::count_rows(&table, &name).await.map_err(failed)?),
                None => None,
            },
            None => None,
        };
        let last: Vec<&FlowRun> = newest
            .get(&name)
            .into_iter()
            .flatten()
            .map(|(_, e)| e)
            .collect();
        let counted = active.get(&name).map(Vec::as_slice).unwrap_or_default();
        let events: Vec<&FlowRun> = counted.iter().map(|(_, e)| e).collect();
        let mut expectations: Vec<RuleCount> = dataset
            .map(|d| &d.expectations)
            .into_iter()
            .flatten()
            .map(|e| RuleCount {
                name: e.name.clone(),
                passed: 0,
                failed: 0,
            })
            .collect();
        for count in events.iter().flat_map(|e| &e.figures.expectations) {
            if let Some(rule) = expectations.iter_mut().find(|r| r.name == count.name) {
                rule.passed += count.passed;
                rule.failed += count.failed;
            }
        }
        // The worst of the flows writing it: failed, then completed, idle, skipped.
        let status = [
            FlowStatus::Failed,
            FlowStatus::Completed,
            FlowStatus::Idle,
            FlowStatus::Skipped,
        ]
        .into_iter()
        .find(|s| last.iter().any(|e| e.status == *s));
        // Counts of an earlier run when the last one had nothing new for it: that run, and
        // when it started.
        let did_something = last
            .iter()
            .any(|e| matches!(e.status, FlowStatus::Completed | FlowStatus::Failed));
        let earlier = counted
            .iter()
            .max_by_key(|(run, _)| *run)
            .filter(|_| !did_something);
        let (counted_run, counted_at) = (
            earlier.map(|(run, _)| *run),
            earlier.map(|(_, e)| e.started_at.clone()),
        );
        let column = layer[&name];
        let height = HEIGHT + RULE * expectations.len() as u32;
        let y = column_heights.entry(column).or_insert(MARGIN);
        let node = GraphNode {
            kind,
            rows,
            status,
            rows_in: events.iter().map(|e| e.figures.rows_read).sum(),
            rows_out: events.iter().map(|e| e.figures.rows_written).sum(),
            dropped: events.iter().map(|e| e.figures.rows_dropped).sum(),
            duplicates: events.iter().map(|e| e.figures.rows_duplicate).sum(),
            counted_run,
            counted_at,
            expectations,
            x: MARGIN + column * (WIDTH + GAP_X),
            y: *y,
            width: WIDTH,
            height,
            name,
        };
        *y += height + GAP_Y;
        nodes.push(node);
    }
    let columns = column_heights.len() as u32;
    Ok(ProjectGraph {
        name: graph.name.clone(),
        nodes,
        edges: edges.into_iter().collect(),
        width: 2 * MARGIN + columns * WIDTH + columns.saturating_sub(1) * GAP_X,
        height: column_heights.values().copied().max().unwrap_or(MARGIN) + MARGIN,
    })
}
