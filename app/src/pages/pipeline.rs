//! Pipeline: the lab's graph. The course's Kafka -> bronze -> orders / hourly_sales -> check, each
//! node with its rows, last run and freshness; or a declarative project's datasets drawn as an SVG
//! (laid out by the server), each with its kind, rows, last run and rules.

use leptos::prelude::*;

use crate::api::get_pipeline;
use crate::components::{RunButton, current_lab, href, short_time};
use crate::model::{GraphNode, PipelineNode, PipelineView, ProjectGraph};
use crate::pages::loaded;

#[component]
pub fn PipelinePage() -> impl IntoView {
    view! {
        <h1>"Pipeline"</h1>
        <RunButton />
        {loaded(current_lab, get_pipeline, |p: PipelineView| {
            if let Some(graph) = p.project {
                return project_view(graph).into_any();
            }
            // The graph's shape is the pipeline's: a source, bronze, two branches, the check.
            // Each arrow goes with the step it points to, so a wrapped line starts with it.
            let mut nodes = p.nodes.into_iter();
            let mut next = move || nodes.next().map(node_view);
            view! {
                <div class="graph">
                    <div class="column">{next()}</div>
                    <div class="step"><div class="arrow">"→"</div><div class="column">{next()}</div></div>
                    <div class="step"><div class="arrow">"→"</div><div class="column">{next()}{next()}</div></div>
                    <div class="step"><div class="arrow">"→"</div><div class="column">{next()}</div></div>
                </div>
            }.into_any()
        })}
    }
}

fn node_view(n: PipelineNode) -> impl IntoView {
    let node = n.name.clone();
    view! {
        <div class="node" data-node=node>
            <h2>{n.name}</h2>
            <p class="role">{n.role}</p>
            {n.unit.map(|unit| {
                let count = n.rows.map(|r| format!("{r} {unit}")).unwrap_or_else(|| "not created yet".into());
                view! { <p class="rows">{count}</p> }
            })}
            <p class="last">{match n.last_run_at {
                Some(t) => format!("{} {}", n.last_label, short_time(&t)),
                None => format!("{}: never", n.last_label),
            }}</p>
            <p class="fresh">{n.freshness}</p>
        </div>
    }
}

/// A project's graph: edges as curves from a node's right side to the next one's left, nodes as
/// boxes coloured by their last run, each a link to its table.
fn project_view(g: ProjectGraph) -> impl IntoView {
    let at = |name: &str| g.nodes.iter().find(|n| n.name == name);
    let edges = g
        .edges
        .iter()
        .filter_map(|(from, to)| {
            let (a, b) = (at(from)?, at(to)?);
            let (x1, y1) = (a.x + a.width, a.y + a.height / 2);
            let (x2, y2) = (b.x, b.y + b.height / 2);
            let mid = (x1 + x2) / 2;
            let d = format!("M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}");
            Some(view! { <path class="edge" d=d marker-end="url(#arrow)" /> })
        })
        .collect_view();
    let nodes = g.nodes.iter().cloned().map(graph_node).collect_view();
    let histories = g
        .nodes
        .iter()
        .filter(|n| n.kind == "AUTO CDC target")
        .map(|n| {
            let link = href(&format!("/history?table={}", n.name));
            view! { <p><a href=link>{format!("History of a key in {}", n.name)}</a></p> }
        })
        .collect_view();
    view! {
        <p class="lead">{format!("Project {}: {} datasets; each box shows its last run.", g.name, g.nodes.iter().filter(|n| !is_source(&n.kind)).count())}</p>
        <p class="scroll-hint">"The graph is wider than this screen: scroll it sideways."</p>
        <div class="scroll">
            <svg class="project-graph" viewBox=format!("0 0 {} {}", g.width, g.height) width=g.width height=g.height role="img">
                <title>{format!("The graph of project {}", g.name)}</title>
                <defs>
                    <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
                        <path d="M0,0 L10,5 L0,10 z" />
                    </marker>
                </defs>
                {edges}
                {nodes}
            </svg>
        </div>
        {histories}
    }
}

fn graph_node(n: GraphNode) -> impl IntoView {
    let status = n
        .status
        .map_or("never".to_string(), |s| s.as_str().to_ascii_lowercase());
    let rows = match n.rows {
        Some(r) => format!("{r} rows"),
        None if is_source(&n.kind) || n.kind == "view" => String::new(),
        None => "not created yet".into(),
    };
    // Short lines, so that they stay inside the box.
    // An idle last run shows the counts of the last run that did something, and says when.
    let when = n.counted_at.as_deref().map(short_time).unwrap_or_default();
    let last = match (n.status, n.counted_run) {
        _ if is_source(&n.kind) => "read by the flows it feeds".to_string(),
        (None, None) => "last run: none".into(),
        (Some(s), None) => format!("last run: {}", s.as_str().to_ascii_lowercase()),
        (s, Some(run)) => format!(
            "{}; counts of #{run} at {}",
            s.map_or("never", |s| s.as_str()).to_ascii_lowercase(),
            when.get(11..16).unwrap_or(&when)
        ),
    };
    let ran = n.status.is_some() || n.counted_run.is_some();
    let (figures, dropped) = match ran {
        true => (
            format!("in {} · out {}", n.rows_in, n.rows_out),
            format!("{} duplicates · {} by rules", n.duplicates, n.dropped),
        ),
        false => (String::new(), String::new()),
    };
    let counted_at = n.counted_run.map(|run| {
        format!("the last run had nothing new for it: counts of run #{run}, started {when}")
    });
    let (x, y) = (n.x, n.y);
    let rules = n
        .expectations
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (class, mark) = match r.failed {
                0 => ("rule", "✓"),
                _ => ("rule failed", "✗"),
            };
            // A long rule name is cut to fit its box; the whole is its tooltip.
            view! {
                <text x=x + 10 y=y + 124 + 18 * i as u32 class=class>
                    <title>{r.name.clone()}</title>
                    {format!("{mark} {}: {} failed", cut(&r.name, 18), r.failed)}
                </text>
            }
        })
        .collect_view();
    let body = view! {
        <rect x=x y=y width=n.width height=n.height rx="8" class=format!("node {status}") />
        <text x=x + 10 y=y + 22 class="name"><title>{n.name.clone()}</title>{cut(&n.name, 26)}</text>
        <text x=x + 10 y=y + 40 class="kind">{n.kind.clone()}</text>
        <text x=x + 10 y=y + 58 class="rows">{rows}</text>
        <text x=x + 10 y=y + 74 class="last">{last}</text>
        <text x=x + 10 y=y + 90 class="last">{figures}</text>
        <text x=x + 10 y=y + 106 class="last dropped">{dropped}</text>
        {counted_at.map(|at| view! { <title>{at}</title> })}
        {rules}
    };
    let table = (!is_source(&n.kind) && n.kind != "view")
        .then(|| href(&format!("/tables?table={}", n.name)));
    view! {
        <g class="dataset" data-node=n.name.clone() data-status=status.clone()>
            {match table {
                Some(link) => view! { <a href=link>{body}</a> }.into_any(),
                None => body.into_any(),
            }}
        </g>
    }
}

/// `text` in at most `chars` characters, cut with "…".
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > chars => format!("{}…", &text[..at]),
        _ => text.to_string(),
    }
}

/// Whether a node is what flows read rather than a dataset: landed files or a Kafka topic.
fn is_source(kind: &str) -> bool {
    matches!(kind, "files" | "Kafka topic")
}
