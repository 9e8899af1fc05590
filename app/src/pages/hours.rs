//! Reconciliation: each hour of `hourly_sales` beside the bronze recount, with its verdict, why,
//! and how its verdict changed across runs.

use leptos::prelude::*;

use crate::api::project::get_reconciliation;
use crate::components::{RunButton, VerdictBadge, current_lab, href, short_time};
use crate::model::{HourRow, Reconciliation};
use crate::pages::loaded;
use crate::pages::reconcile::project_view;
use crate::pages::whatif::WhatIfSection;

#[component]
pub fn HoursPage() -> impl IntoView {
    view! {
        <h1>"Reconciliation"</h1>
        {loaded(current_lab, get_reconciliation, |page: Reconciliation| match page {
            Reconciliation::Course(hours) => course_view(hours).into_any(),
            Reconciliation::Project(check) => project_view(check).into_any(),
        })}
        <WhatIfSection />
    }
}

fn course_view(hours: Vec<HourRow>) -> impl IntoView {
    let table = match hours.is_empty() {
        true => view! { <p>"No hours yet: send events and run the pipeline."</p> }.into_any(),
        false => view! {
            <table class="hours">
                <thead>
                    <tr>
                        <th>"hour"</th><th>"counted"</th><th>"revenue"</th><th>"bronze"</th>
                        <th>"bronze revenue"</th><th>"verdict"</th><th>"why"</th><th>"across runs"</th>
                    </tr>
                </thead>
                <tbody>
                    {hours.into_iter().map(hour_row).collect_view()}
                </tbody>
            </table>
        }
        .into_any(),
    };
    view! {
        <p class="lead">
            "Each hour as the gold stream counted it, beside a recount of bronze's distinct placed events."
        </p>
        <RunButton />
        {table}
    }
}

fn hour_row(h: HourRow) -> impl IntoView {
    let changes = h
        .history
        .iter()
        .map(|v| view! { <a class=format!("change {}", v.verdict) href=href(&format!("/runs/{}", v.run_id))>{format!("#{} {}", v.run_id, v.verdict)}</a>" " })
        .collect_view();
    view! {
        <tr class=format!("hour {}", h.verdict) data-hour=h.hour.clone() data-verdict=h.verdict.as_str()>
            <td class="when">{hour_label(&h.hour)}</td>
            <td>{h.orders.map(|o| o.to_string()).unwrap_or_else(|| "-".into())}</td>
            <td>{h.revenue.unwrap_or_else(|| "-".into())}</td>
            <td>{h.bronze_orders}</td>
            <td>{h.bronze_revenue}</td>
            <td><VerdictBadge verdict=h.verdict /></td>
            <td class="explanation">{h.explanation}</td>
            <td class="changes">{changes}</td>
        </tr>
    }
}

/// `2026-10-01 09:00`: an hour needs no seconds.
fn hour_label(hour: &str) -> String {
    let time = short_time(hour);
    time.strip_suffix(":00").map(str::to_string).unwrap_or(time)
}
