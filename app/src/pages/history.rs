//! History of a key (AUTO CDC targets): the key's versions as bars on one time axis (its
//! sequence), each with the change events that made it, the late ones marked, and where each
//! event came from (file and line).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::project::get_key_history;
use crate::components::current_lab;
use crate::model::{KeyHistory, KeyVersion};
use crate::pages::loaded;

#[component]
pub fn HistoryPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let field = move |name: &str| query.read().get(name).unwrap_or_default();
    let chosen = move || {
        let q = query.read();
        (
            lab.clone(),
            q.get("table").unwrap_or_default(),
            q.get("key").unwrap_or_default(),
        )
    };
    let shown = {
        let chosen = chosen.clone();
        move || {
            let (_, table, key) = chosen();
            !table.is_empty() && !key.is_empty()
        }
    };
    let results = move || {
        loaded(
            chosen.clone(),
            |(lab, table, key)| get_key_history(lab, table, key),
            history_view,
        )
    };
    view! {
        <h1>"History of a key"</h1>
        <p class="lead">"An AUTO CDC target keeps each key's versions (SCD type 2). A late change, one that arrived after a change with a greater sequence, splits the version it falls in."</p>
        <form method="get" class="filter history-form">
            <label class="field"><span>"table"</span><input name="table" value=move || field("table") placeholder="accounts" /></label>
            <label class="field"><span>"key"</span><input name="key" value=move || field("key") placeholder="acc-007" /></label>
            <button type="submit">"Show"</button>
        </form>
        {move || shown().then(&results)}
    }
}

fn history_view(h: KeyHistory) -> impl IntoView {
    // One axis for every version and event: from the earliest to the latest sequence.
    let points: Vec<i64> = h
        .versions
        .iter()
        .flat_map(|v| {
            [v.start_n, v.end_n]
                .into_iter()
                .flatten()
                .chain(v.events.iter().filter_map(|e| e.sequence_n))
        })
        .collect();
    let (low, high) = match (points.iter().min(), points.iter().max()) {
        (Some(&a), Some(&b)) => (a, b.max(a + 1)),
        _ => (0, 1),
    };
    let at = move |n: i64| (n - low) as f64 / (high - low) as f64 * 90.0;
    let count = h.versions.len();
    // The axis's ends named by their sequences (a timestamp reads as a date and time).
    let named = |n: i64| {
        h.versions.iter().find_map(|v| {
            v.events
                .iter()
                .find(|e| e.sequence_n == Some(n))
                .map(|e| e.sequence.clone())
                .or_else(|| (v.start_n == Some(n)).then(|| v.start.clone()).flatten())
                .or_else(|| (v.end_n == Some(n)).then(|| v.end.clone()).flatten())
        })
    };
    let (first, last) = match points.is_empty() {
        true => (String::new(), String::new()),
        false => (
            named(low).unwrap_or_default(),
            named(high).unwrap_or_default(),
        ),
    };
    view! {
        <h2>{format!("{} {}: {count} version(s)", h.table, h.key)}</h2>
        <div class="lanes key-lanes">
            {h.versions.iter().cloned().enumerate().map(|(i, v)| version_lane(i, v, at)).collect_view()}
            <p class="axis-labels key-axis"><span>{first}</span><span>{last}</span></p>
        </div>
        {h.versions.into_iter().enumerate().map(|(i, v)| version_table(i, v)).collect_view()}
    }
}

fn version_lane(i: usize, v: KeyVersion, at: impl Fn(i64) -> f64) -> impl IntoView {
    let left = v.start_n.map_or(0.0, &at);
    let right = v.end_n.map_or(100.0, &at);
    let current = if v.end.is_none() { " current" } else { "" };
    let ticks = v
        .events
        .iter()
        .filter_map(|e| {
            let x = at(e.sequence_n?);
            let late = e.late_after.is_some();
            let class = if late { "tick late" } else { "tick" };
            let title = format!(
                "{} {} from {}{}",
                e.op,
                e.sequence,
                e.source,
                if late { " (late)" } else { "" }
            );
            Some(view! { <span class=class style=format!("left:{x:.2}%") title=title></span> })
        })
        .collect_view();
    view! {
        <div class="lane" data-version=i.to_string()>
            <span class="lane-name">{format!("version {}", i + 1)}</span>
            <span class="lane-track">
                <span class=format!("bar completed{current}") style=format!("left:{left:.2}%;width:{:.2}%", (right - left).max(0.5))></span>
                {ticks}
            </span>
        </div>
    }
}

fn version_table(i: usize, v: KeyVersion) -> impl IntoView {
    let span = match (&v.start, &v.end) {
        (Some(s), Some(e)) => format!("[{s}, {e})"),
        (Some(s), None) => format!("[{s}, current)"),
        _ => "no SCD 2 period".into(),
    };
    let values: Vec<String> = v.values.iter().map(|(c, x)| format!("{c}={x}")).collect();
    view! {
        <section class="version" data-version=i.to_string()>
            <h3>{format!("Version {}: {span}", i + 1)}</h3>
            <p><code>{values.join("  ")}</code></p>
            <table class="events">
                <thead><tr><th>"sequence"</th><th>"op"</th><th>"from"</th><th>"commit"</th><th></th></tr></thead>
                <tbody>
                    {v.events.into_iter().map(|e| {
                        let late = e.late_after.clone().map(|s| format!("late: arrived after {s}"));
                        let is_late = late.is_some();
                        view! {
                            <tr class:late=is_late>
                                <td>{e.sequence}</td><td>{e.op}</td><td>{e.source}</td><td class="n">{e.commit}</td>
                                <td>{late}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
