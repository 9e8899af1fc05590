//! Pipeline: Kafka -> bronze -> orders / hourly_sales -> check, each node with its rows, last run
//! and freshness.

use leptos::prelude::*;

use crate::api::get_pipeline;
use crate::components::{RunButton, current_lab, short_time};
use crate::model::{PipelineNode, PipelineView};
use crate::pages::loaded;

#[component]
pub fn PipelinePage() -> impl IntoView {
    view! {
        <h1>"Pipeline"</h1>
        <RunButton />
        {loaded(current_lab, get_pipeline, |p: PipelineView| {
            // The graph's shape is the pipeline's: a source, bronze, two branches, the check.
            let mut nodes = p.nodes.into_iter();
            let mut next = move || nodes.next().map(node_view);
            view! {
                <div class="graph">
                    <div class="column">{next()}</div>
                    <div class="arrow">"→"</div>
                    <div class="column">{next()}</div>
                    <div class="arrow">"→"</div>
                    <div class="column">{next()}{next()}</div>
                    <div class="arrow">"→"</div>
                    <div class="column">{next()}</div>
                </div>
            }
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
