//! The runs timeline: a row per run, a bar per stream on the run's time axis, coloured by outcome.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_runs;
use crate::components::{RunButton, current_lab, href, short_time};
use crate::model::{RunStatus, RunsPage as Page, StreamBar, TimelineRun};
use crate::pages::loaded;

#[component]
pub fn RunsPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let page = move || {
        let q = query.read();
        (lab.clone(), q.get("before"), q.get("limit"))
    };
    view! {
        <h1>"Runs"</h1>
        <RunButton />
        {loaded(page, |(lab, before, limit)| get_runs(lab, before, limit), move |page: Page| {
            // One time axis for the page: the longest run spans the whole width.
            let longest = page.runs.iter().filter_map(|r| r.duration_ms).max().unwrap_or(1).max(1);
            let limit = query.read_untracked().get("limit").map(|l| format!("&limit={l}")).unwrap_or_default();
            let older = page.older.map(|id| view! { <a class="older" href=href(&format!("/runs?before={id}{limit}"))>"Older runs"</a> });
            let empty = page.runs.is_empty().then(|| view! { <p>"No runs yet."</p> });
            view! {
                {empty}
                <ol class="timeline">
                    {page.runs.into_iter().map(|run| view! { <TimelineRow run longest /> }).collect_view()}
                </ol>
                {older}
            }
        })}
    }
}

#[component]
fn TimelineRow(run: TimelineRun, longest: i64) -> impl IntoView {
    let status = run.run.status;
    let checked = run.check.is_some();
    let check = run
        .check
        .map(|c| view! { <span class=format!("verdict {c}")>{format!("check: {c}")}</span> });
    let bars = run
        .streams
        .iter()
        .map(|bar| bar_view(bar, longest, status))
        .collect_view();
    // A check on its own (`reckon check`, the end of a scenario played) ran no stream: no axis,
    // no figures.
    let streams = (!run.streams.is_empty()).then(|| {
        let figures = run.streams.into_iter().map(figures_view).collect_view();
        view! {
            <div class="axis">{bars}</div>
            <table class="figures">
                <tbody>
                <tr><th>"stream"</th><th>"read"</th><th>"written"</th><th>"late"</th><th>"duplicate"</th><th>"rejected"</th><th>"watermark"</th></tr>
                {figures}
                </tbody>
            </table>
        }
    });
    let alone = (streams.is_none() && checked)
        .then(|| view! { <p class="note">"The check alone: no stream ran."</p> });
    view! {
        <li class=format!("run {status}") data-run=run.run.id.to_string()>
            <div class="run-head">
                <a href=href(&format!("/runs/{}", run.run.id))>{format!("#{}", run.run.id)}</a>
                <span class="when">{short_time(&run.run.started_at)}</span>
                <span class="who">{run.run.started_by.clone()}</span>
                <span class=format!("status {status}")>{status.as_str()}</span>
                {check}
                {run.run.error.clone().map(|e| view! { <span class="error">{e}</span> })}
            </div>
            {streams}
            {alone}
        </li>
    }
}

fn bar_view(bar: &StreamBar, longest: i64, status: RunStatus) -> impl IntoView + use<> {
    let (flow, n) = (&bar.flow, &bar.flow.figures);
    let left = bar.offset_ms as f64 * 100.0 / longest as f64;
    let width = (flow.duration_ms.max(1) as f64 * 100.0 / longest as f64).max(0.5);
    let outcome = if status == RunStatus::Failed {
        "failed"
    } else if n.rows_late + n.rows_duplicate + n.rows_rejected > 0 {
        "dropped"
    } else {
        "ok"
    };
    view! {
        <span
            class=format!("bar {} {outcome}", flow.flow)
            style=format!("left: {left:.2}%; width: {width:.2}%")
            title=format!("{}: {} ms", flow.flow, flow.duration_ms)
        >
            // A name too long for its bar is left to the legend under the axis.
            {(width >= 12.0).then(|| flow.flow.clone())}
        </span>
    }
}

fn figures_view(bar: StreamBar) -> impl IntoView {
    let n = bar.flow.figures;
    let watermark = match (&n.watermark_before, &n.watermark_after) {
        (None, None) => String::new(),
        (before, after) => format!(
            "{} -> {}",
            before
                .as_deref()
                .map(short_time)
                .unwrap_or_else(|| "none".into()),
            after
                .as_deref()
                .map(short_time)
                .unwrap_or_else(|| "none".into())
        ),
    };
    view! {
        <tr>
            <td>{bar.flow.flow}</td>
            <td>{n.rows_read}</td>
            <td>{n.rows_written}</td>
            <td>{n.rows_late}</td>
            <td>{n.rows_duplicate}</td>
            <td>{n.rows_rejected}</td>
            <td>{watermark}</td>
        </tr>
    }
}
