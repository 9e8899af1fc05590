//! The event log (PIPELINES §6): one event per flow per run, newest run first, filtered by run
//! and flow; each run's flows drawn as bars on one time axis.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::project::get_events;
use crate::components::{current_lab, href, short_time};
use crate::model::{EventLog, FlowRun, RunEvents};
use crate::pages::loaded;

#[component]
pub fn EventsPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let chosen = move || (lab.clone(), query.read().get("run"));
    let flow = move || query.read().get("flow").unwrap_or_default();
    view! {
        <h1>"Event log"</h1>
        <form method="get" class="filter">
            <label class="field"><span>"run"</span><input name="run" size="5" value=move || query.read().get("run").unwrap_or_default() /></label>
            <label class="field"><span>"flow"</span><input name="flow" size="16" value=flow /></label>
            <button type="submit">"Show"</button>
            <a href=href("/events")>"everything"</a>
        </form>
        {loaded(chosen, |(lab, run)| get_events(lab, run), move |log: EventLog| {
            let flow = flow();
            let empty = log.runs.is_empty().then(|| view! { <p>"No runs yet."</p> });
            view! {
                {empty}
                {log.runs.into_iter().map(|run| run_view(run, flow.clone())).collect_view()}
            }
        })}
    }
}

fn run_view(run: RunEvents, flow: String) -> impl IntoView {
    // One axis per run: from its first flow's start to its last flow's end.
    let span = run
        .events
        .iter()
        .zip(&run.offsets_ms)
        .map(|(e, at)| at + e.duration_ms.max(1) as i64)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let bars = run
        .events
        .iter()
        .zip(&run.offsets_ms)
        .map(|(e, at)| {
            let left = *at as f64 / span * 100.0;
            let width = (e.duration_ms.max(1) as f64 / span * 100.0).max(0.5);
            view! {
                <div class="lane">
                    <span class="lane-name">{e.flow.clone()}</span>
                    <span class="lane-track">
                        <span class=format!("bar {}", e.status.as_str().to_ascii_lowercase())
                              style=format!("left:{left:.2}%;width:{width:.2}%")
                              title=format!("{} {} ms", e.flow, e.duration_ms)></span>
                    </span>
                </div>
            }
        })
        .collect_view();
    let rows = run
        .events
        .into_iter()
        .filter(|e| flow.is_empty() || e.flow == flow || e.target.as_ref() == Some(&flow))
        .map(event_row)
        .collect_view();
    view! {
        <section class="run-events" data-run=run.run.to_string()>
            <h2><a href=href(&format!("/runs/{}", run.run))>{format!("Run #{}", run.run)}</a></h2>
            <div class="lanes">{bars}</div>
            <div class="scroll">
                <table class="events">
                    <thead><tr><th>"flow"</th><th>"target"</th><th>"status"</th><th>"in"</th><th>"out"</th><th>"duplicates"</th><th>"dropped by rule"</th><th>"upserted"</th><th>"deleted"</th><th>"files"</th><th>"started"</th><th>"ms"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

fn event_row(e: FlowRun) -> impl IntoView {
    let n = &e.figures;
    let files = n.files.iter().filter(|f| !f.changed).count();
    let rules: Vec<String> = n
        .expectations
        .iter()
        .filter(|r| r.failed > 0)
        .map(|r| format!("{} failed {}", r.name, r.failed))
        .collect();
    let note = e.error.clone().unwrap_or_else(|| rules.join("; "));
    view! {
        <tr data-flow=e.flow.clone() class=e.status.as_str().to_ascii_lowercase()>
            <td>{e.flow.clone()}</td>
            <td>{e.target.clone().unwrap_or_default()}</td>
            <td class=format!("status {}", e.status.as_str().to_ascii_lowercase())>{e.status.as_str()}</td>
            <td class="n">{n.rows_read}</td>
            <td class="n">{n.rows_written}</td>
            <td class="n">{n.rows_duplicate}</td>
            <td class="n">{n.rows_dropped}</td>
            <td class="n">{n.rows_upserted}</td>
            <td class="n">{n.rows_deleted}</td>
            <td class="n">{files}</td>
            <td class="when">{short_time(&e.started_at)}</td>
            <td class="n">{e.duration_ms}</td>
        </tr>
        // The rules a flow's rows failed, or its error, on a line of their own under it.
        {(!note.is_empty()).then(|| view! {
            <tr class="why" data-flow-note=e.flow.clone()><td colspan="11">{note}</td></tr>
        })}
    }
}
