//! The late ledger (PIPELINES §9): what the watermark left out of the lab's windowed tables, and
//! why. Each row read after its window had closed, with its window, the watermark when it was
//! read, the run that read it and where it came from.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::project::get_late;
use crate::components::{current_lab, href};
use crate::model::{LateLedger, LateRow};
use crate::pages::loaded;

#[component]
pub fn LatePage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let chosen = move || (lab.clone(), query.read().get("table"));
    view! {
        <h1>"Late rows: what the watermark left out, and why"</h1>
        <p class="lead">
            "A windowed table writes each window once, when its watermark passes the window's end. "
            "The watermark is the latest event time read so far, less the delay the table allows. "
            "A row read after that has nowhere to go: Spark leaves it out of the table, and so does Reckon, "
            "but Reckon keeps it here, so the check can say which numbers it changes. "
            "A recount of all events (a materialized view over the same source) counts them."
        </p>
        {loaded(chosen, |(lab, table)| get_late(lab, table), ledger_view)}
    }
}

fn ledger_view(ledger: LateLedger) -> impl IntoView {
    let tables = match ledger.tables.is_empty() {
        true => view! {
            <p>"This lab's pipeline has no windowed table: nothing can be late. Module 9 written in SQL (the Code page) has one, "<code>"hourly_sales"</code>"."</p>
        }
        .into_any(),
        false => view! {
            <ul class="windowed">
                {ledger.tables.into_iter().map(|(table, delay)| {
                    let link = href(&format!("/late?table={table}"));
                    view! {
                        <li><a href=link>{table.clone()}</a>{format!(": a window closes when an event {delay} past its end arrives")}</li>
                    }
                }).collect_view()}
            </ul>
        }
        .into_any(),
    };
    let more = (ledger.more > 0).then(|| {
        view! { <p>{format!("{} more late rows are not shown (the API gives them by table).", ledger.more)}</p> }
    });
    let rows = match ledger.rows.is_empty() {
        true => view! { <p class="note no-late">"No late rows: every row read so far came in time for its window."</p> }.into_any(),
        false => view! {
            <p class="scroll-hint">"The table is wider than this screen: scroll it sideways."</p>
            <table class="late-rows">
                <thead><tr>
                    <th>"event time"</th><th>"table"</th><th>"window"</th><th>"watermark when read"</th>
                    <th>"run"</th><th>"the row"</th>
                </tr></thead>
                <tbody>{ledger.rows.into_iter().map(row_view).collect_view()}</tbody>
            </table>
        }
        .into_any(),
    };
    view! {
        {tables}
        <h2>"Rows read after their window closed"</h2>
        {rows}
        {more}
    }
}

fn row_view(r: LateRow) -> impl IntoView {
    let run = r.run.map(|id| {
        view! { <a href=href(&format!("/runs/{id}"))>{format!("#{id}")}</a> }
    });
    let source = r
        .source
        .map(|s| view! { <span class="source">{format!(" from {s}")}</span> });
    let table = r.table.clone();
    view! {
        <tr data-table=table>
            <td class="time">{short(&r.event_time)}</td>
            <td>{r.table}</td>
            <td class="time">{format!("{} to {}", short(&r.window_start), short(&r.window_end))}</td>
            <td class="time">{r.watermark.as_deref().map(short).unwrap_or_else(|| "unset".into())}</td>
            <td>{run}</td>
            <td><code>{r.row}</code>{source}</td>
        </tr>
    }
}

/// `2026-10-01T09:50:00Z` as `2026-10-01 09:50`.
fn short(time: &str) -> String {
    time.get(..16)
        .map_or_else(|| time.to_string(), |t| t.replace('T', " "))
}
