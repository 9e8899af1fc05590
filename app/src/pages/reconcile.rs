//! Reconciliation of a lab that runs its own project (PIPELINES §9): every table worked out
//! again from the rows its flows read. Each window of a windowed table as the table holds it,
//! beside what all its events say and the check's verdict; then the check's other lines.

use leptos::prelude::*;

use crate::components::{VerdictBadge, href};
use crate::model::{ProjectCheck, WindowCheck};

/// A project lab's Reconciliation: the lead, then the check.
pub fn project_view(check: ProjectCheck) -> impl IntoView {
    view! {
        <p class="lead">
            "Every table of the project, worked out again from every row its flows read. "
            "A window is "<b>"late"</b>" when it lacks only rows that came after it was written (see "
            <a href=href("/late")>"Late rows"</a>"), a "<b>"PROBLEM"</b>" when it counts an event twice or misses one that came in time, "
            <b>"waiting"</b>" until the watermark passes its end."
        </p>
        {check_view(check)}
    }
}

fn check_view(check: ProjectCheck) -> impl IntoView {
    if let Some(error) = check.error {
        return view! { <p class="error">{format!("The check could not run: {error}")}</p> }
            .into_any();
    }
    if check.lines.is_empty() {
        return view! { <p>"Nothing to check yet: run the pipeline first."</p> }.into_any();
    }
    let mut tables: Vec<String> = check.windows.iter().map(|w| w.table.clone()).collect();
    tables.dedup();
    let windows = tables
        .into_iter()
        .map(|table| {
            let rows: Vec<WindowCheck> = check.windows.iter().filter(|w| w.table == table).cloned().collect();
            let job = rows.iter().any(|w| w.recount_job.is_some());
            view! {
                <h2>{format!("{table}: each window beside all its events")}</h2>
                <p class="scroll-hint">"The table is wider than this screen: scroll it sideways."</p>
                <table class="windows">
                    <thead><tr>
                        <th>"window"</th><th>"the table says"</th><th>"all events say"</th>
                        {job.then(|| view! { <th>"the recount job says"</th> })}
                        <th>"verdict"</th><th>"why"</th>
                    </tr></thead>
                    <tbody>{rows.into_iter().map(|w| window_row(w, job)).collect_view()}</tbody>
                </table>
            }
        })
        .collect_view();
    let others = check
        .lines
        .into_iter()
        .filter(|l| l.hour.is_none())
        .map(|l| view! { <li><VerdictBadge verdict=l.verdict />" "{l.text}</li> })
        .collect_view();
    view! {
        {windows}
        <h2>"Every table"</h2>
        <ul class="check-lines">{others}</ul>
    }
    .into_any()
}

fn window_row(w: WindowCheck, job: bool) -> impl IntoView {
    let recount = job.then(|| view! { <td class="recount-job">{w.recount_job.clone().unwrap_or_else(|| "-".into())}</td> });
    let start = w
        .start
        .get(..16)
        .map_or_else(|| w.start.clone(), |t| t.replace('T', " "));
    let keys = w.keys.join(" ");
    view! {
        <tr class=format!("window {}", w.verdict) data-window=w.start.clone() data-verdict=w.verdict.as_str()>
            <td class="when">{format!("{start} {keys}")}</td>
            <td>{w.said.unwrap_or_else(|| "not written".into())}</td>
            <td>{w.events.unwrap_or_else(|| "no event".into())}</td>
            {recount}
            <td><VerdictBadge verdict=w.verdict /></td>
            <td class="explanation">{w.why}</td>
        </tr>
    }
}
