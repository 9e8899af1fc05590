//! Data quality: per table and rule, rows that passed and failed in each run (the failed share
//! as a chart over the runs, and a table), and the rows rules set aside with their file and line.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::project::get_quality;
use crate::components::{current_lab, href};
use crate::model::{Quality, QuarantinedRow, RuleHistory, RuleRun};
use crate::pages::loaded;

#[component]
pub fn QualityPage() -> impl IntoView {
    let query = use_query_map();
    let lab = current_lab();
    let chosen = move || {
        let q = query.read();
        (lab.clone(), q.get("run"), q.get("rule"))
    };
    view! {
        <h1>"Data quality"</h1>
        <p class="lead">
            "A row passes a rule when its condition is true. A condition that is false or NULL (unknown, as when a column it compares is NULL) fails it: "
            <code>"status IN (...)"</code>" fails a row whose status is NULL. "
            "A warn rule keeps the row, a drop rule sets it aside in "<code>"_quarantine"</code>", a fail rule stops the flow."
        </p>
        <form method="get" class="filter">
            <label class="field"><span>"run"</span><input name="run" size="5" value=move || query.read().get("run").unwrap_or_default() /></label>
            <button type="submit">"Show"</button>
            <a href=href("/quality")>"all runs"</a>
        </form>
        {move || query.read().get("rule").map(|r| view! { <p class="note">{format!("Rows set aside by rule {r} only.")}</p> })}
        {loaded(chosen, |(lab, run, rule)| get_quality(lab, run, rule), quality_view)}
    }
}

fn quality_view(q: Quality) -> impl IntoView {
    let more = (q.more_quarantined > 0).then(|| {
        view! { <p>{format!("{} more rows set aside are not shown; pick a run to see its own.", q.more_quarantined)}</p> }
    });
    view! {
        <h2>"Rules"</h2>
        {q.rules.is_empty().then(|| view! { <p>"The project has no rules (CONSTRAINT ... EXPECT)."</p> })}
        <div class="rules">{q.rules.into_iter().map(rule_view).collect_view()}</div>
        <h2>"Rows set aside"</h2>
        {q.quarantined.is_empty().then(|| view! { <p>"No row was dropped by a rule."</p> })}
        <table class="quarantined">
            <thead><tr><th>"run"</th><th>"table"</th><th>"rules"</th><th>"file and line"</th><th>"why"</th><th>"row"</th></tr></thead>
            <tbody>{q.quarantined.into_iter().map(row_view).collect_view()}</tbody>
        </table>
        {more}
    }
}

/// One rule: what it says, the failed share of each run as bars on an axis from 0 to the
/// largest share (each bar's share above it when there is room), and the counts. A rule no row
/// failed says so instead of drawing empty bars.
fn rule_view(rule: RuleHistory) -> impl IntoView {
    const WIDTH: f64 = 320.0;
    const HEIGHT: f64 = 60.0;
    const TOP: f64 = 14.0;
    const LEFT: f64 = 44.0;
    let share = |r: &RuleRun| r.failed as f64 / (r.passed + r.failed).max(1) as f64;
    let most = rule.runs.iter().map(share).fold(0.0, f64::max);
    let runs = rule.runs.len().max(1) as f64;
    let step = (WIDTH - LEFT) / runs;
    let bars = rule
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let s = share(r);
            let h = (s / most.max(f64::MIN_POSITIVE) * HEIGHT).max(if r.failed > 0 { 2.0 } else { 0.0 });
            let x = LEFT + i as f64 * step;
            let value = (step >= 30.0 && r.failed > 0).then(|| view! {
                <text class="value" x=format!("{:.1}", x + step / 2.0) y=format!("{:.1}", TOP + HEIGHT - h - 3.0)
                      text-anchor="middle">{percent(s)}</text>
            });
            view! {
                <rect x=format!("{:.1}", x + 1.0) y=format!("{:.1}", TOP + HEIGHT - h)
                      width=format!("{:.1}", (step - 2.0).max(1.0)) height=format!("{h:.1}")>
                    <title>{format!("run #{}: {} of {} failed ({})", r.run, r.failed, r.passed + r.failed, percent(s))}</title>
                </rect>
                {value}
            }
        })
        .collect_view();
    let (first, last) = match rule.runs.as_slice() {
        [] => (String::new(), String::new()),
        [one] => (format!("run #{}", one.run), String::new()),
        [a, .., b] => (format!("run #{}", a.run), format!("run #{}", b.run)),
    };
    let base = TOP + HEIGHT;
    let chart = match most > 0.0 {
        true => view! {
            <svg class="share" viewBox=format!("0 0 {WIDTH} {}", base + 14.0) width=WIDTH height=base + 14.0 role="img">
                <title>"Share of rows failing the rule, per run"</title>
                <line x1=LEFT - 4.0 y1=TOP x2=LEFT - 4.0 y2=base class="axis" />
                <line x1=LEFT - 4.0 y1=base x2=WIDTH y2=base class="axis" />
                <text class="tick-label" x=LEFT - 8.0 y=TOP + 4.0 text-anchor="end">{percent(most)}</text>
                <text class="tick-label" x=LEFT - 8.0 y=base text-anchor="end">"0 %"</text>
                {bars}
                <text class="tick-label" x=LEFT y=base + 12.0>{first}</text>
                <text class="tick-label" x=WIDTH y=base + 12.0 text-anchor="end">{last}</text>
            </svg>
        }
        .into_any(),
        false => view! { <p class="note no-failures">"No row has failed this rule in any run."</p> }.into_any(),
    };
    let key = format!("{}.{}", rule.table, rule.rule);
    let section = key.clone();
    view! {
        <section class="rule" data-rule=section>
            <h3>{format!("{} · {}", rule.table, rule.rule)}</h3>
            <p><code>{rule.condition}</code>{format!(" — on violation: {}", rule.action)}</p>
            <p><a href=href(&format!("/quality?rule={key}"))>"The rows it set aside"</a></p>
            {chart}
            <table class="rule-runs">
                <thead><tr><th>"run"</th><th>"passed"</th><th>"failed"</th></tr></thead>
                <tbody>
                    {rule.runs.into_iter().rev().map(|r| view! {
                        <tr data-run=r.run.to_string()>
                            <td><a href=href(&format!("/runs/{}", r.run))>{format!("#{}", r.run)}</a></td>
                            <td class="n">{r.passed}</td>
                            <td class="n failed">{r.failed}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

fn row_view(r: QuarantinedRow) -> impl IntoView {
    let place = match (&r.file, r.line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.clone(),
        _ => r.source.clone().unwrap_or_else(|| "-".into()),
    };
    let (rules, shown) = (r.rules.clone(), place.clone());
    view! {
        <tr data-rules=rules data-place=shown>
            <td>{r.run.map(|id| format!("#{id}")).unwrap_or_default()}</td>
            <td>{r.table}</td>
            <td>{r.rules}</td>
            <td class="place">{place}</td>
            <td>{r.reason}</td>
            <td><code>{r.row}</code></td>
        </tr>
    }
}

/// A share as a percentage, with a decimal when it is small.
fn percent(share: f64) -> String {
    match share * 100.0 {
        p if p < 10.0 => format!("{p:.1} %"),
        p => format!("{p:.0} %"),
    }
}
