//! The what-if on the reconciliation page: gold replayed with another watermark delay, per hour
//! beside today's counts, the events that change side, and when each hour would be final.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_whatif;
use crate::components::{current_lab, short_time};
use crate::model::{CountedHour, ReplayedRun, WhatIf};
use crate::pages::loaded;

#[component]
pub fn WhatIfSection() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let asked = move || (lab.clone(), query.read().get("delay"));
    let fetch = |(lab, delay): (String, Option<String>)| async move {
        match delay {
            None => Ok(None),
            Some(delay) => get_whatif(lab, delay).await.map(Some),
        }
    };
    view! {
        <section class="whatif">
            <h2>"What if the watermark waited longer?"</h2>
            <p>
                "Gold waits an hour behind the latest event time before it writes an hour, and drops what arrives later. "
                "Replay gold over bronze's events, in the runs that read them, with another delay: what each hour would count, "
                "and when it would be final. The replay is kept in memory; the tables stay as they are."
            </p>
            <form method="get" class="filter whatif-form">
                <label class="field">
                    <span>"delay"</span>
                    <input name="delay" size="6" value=move || query.read().get("delay").unwrap_or_else(|| "2h".into()) />
                </label>
                <button type="submit">"Replay gold with this delay"</button>
                <span class="hint">" 2h, 90m or 90 (minutes)"</span>
            </form>
            {loaded(asked, fetch, |w: Option<WhatIf>| w.map(whatif_view))}
        </section>
    }
}

fn whatif_view(w: WhatIf) -> impl IntoView {
    let labels = w.clone();
    let final_cell = move |h: &Option<CountedHour>| match h {
        None => "-".to_string(),
        Some(h) => match h.final_after {
            None => "still open".into(),
            Some(n) => format!("after {}{}", labels.run_label(n), run_time(&labels.runs, n)),
        },
    };
    let count = |h: &Option<CountedHour>| {
        h.as_ref()
            .map(|h| (h.orders.to_string(), h.revenue.clone()))
            .unwrap_or_else(|| ("-".into(), "-".into()))
    };
    let rows = w
        .hours
        .iter()
        .map(|h| {
            let (now_orders, now_revenue) = count(&h.now);
            let (with_orders, with_revenue) = count(&h.with_delay);
            let differs = h.now != h.with_delay;
            view! {
                <tr class:differs=differs data-hour=h.hour.clone() data-differs=differs.to_string()>
                    <td class="when">{short_time(&h.hour)}</td>
                    <td class="n">{now_orders}</td><td class="n">{now_revenue}</td><td>{final_cell(&h.now)}</td>
                    <td class="n with">{with_orders}</td><td class="n with">{with_revenue}</td><td class="with">{final_cell(&h.with_delay)}</td>
                </tr>
            }
        })
        .collect_view();
    let changed = (!w.changed.is_empty()).then(|| {
        view! {
            <h3>"Events that change side"</h3>
            <table class="changed">
                <thead><tr><th>"order"</th><th>"event time"</th><th>"partition / offset"</th><th>"read in run"</th><th>"today"</th><th>{format!("with {} min", w.delay_minutes)}</th></tr></thead>
                <tbody>
                    {w.changed.iter().map(|c| view! {
                        <tr data-order=c.order_id.to_string()>
                            <td>{c.order_id}</td><td>{short_time(&c.event_time)}</td>
                            <td>{format!("{} / {}", c.partition, c.offset)}</td><td>{w.run_label(c.run)}</td>
                            <td>{c.now.as_str()}</td><td>{c.with_delay.as_str()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }
    });
    view! {
        <div class="whatif-result" data-delay=w.delay_minutes.to_string() data-matches=w.matches_table.to_string()>
            {w.sentences.iter().map(|s| view! { <p class="said">{s.clone()}</p> }).collect_view()}
            {(!w.hours.is_empty()).then(|| view! {
                <table class="whatif-hours">
                    <thead>
                        <tr><th></th><th colspan="3">{format!("today: delay {} min", w.actual_delay_minutes)}</th><th colspan="3" class="with">{format!("with a delay of {} min", w.delay_minutes)}</th></tr>
                        <tr><th>"hour"</th><th>"orders"</th><th>"revenue"</th><th>"final"</th><th>"orders"</th><th>"revenue"</th><th>"final"</th></tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            })}
            {changed}
        </div>
    }
}

/// " (10:32:05)": when gold's replayed run `n` committed.
fn run_time(runs: &[ReplayedRun], n: usize) -> String {
    runs.get(n.wrapping_sub(1))
        .filter(|r| !r.at.is_empty())
        .map(|r| format!(" ({})", short_time(&r.at)))
        .unwrap_or_default()
}
