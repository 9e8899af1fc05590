//! Home: are the numbers final, up to when? In plain words, for people who are not engineers.

use leptos::prelude::*;

use crate::api::get_freshness;
use crate::components::{RunButton, current_lab};
use crate::model::{Freshness, FreshnessCost, GoldChart, Light};
use crate::pages::loaded;

#[component]
pub fn FreshnessPage() -> impl IntoView {
    view! {
        <section class="freshness">
            {loaded(current_lab, get_freshness, |f: Freshness| {
                let label = match f.light {
                    Light::Green => "All good",
                    Light::Red => "Needs attention",
                    Light::Amber => "Not checked yet",
                };
                view! {
                    <div class=format!("light {}", f.light) data-light=f.light.as_str()>
                        <span class="lamp" aria-hidden="true"></span>
                        <span class="label">{label}</span>
                    </div>
                    <div class="sentences">
                        {f.sentences.into_iter().map(|s| view! { <p>{s}</p> }).collect_view()}
                    </div>
                    {f.chart.map(chart_view)}
                    {f.cost.map(cost_view)}
                }
            })}
            <RunButton />
        </section>
    }
}

/// The gold numbers by period as bars: final ones solid, the others pale and labelled so. A few
/// bars are widened to fill [`MIN_WIDTH`]; many scroll. The first and last periods are named
/// under their bars, the axis as wide as the bars.
fn chart_view(chart: GoldChart) -> impl IntoView {
    const HEIGHT: f64 = 120.0;
    const MIN_BAR: f64 = 18.0;
    const MAX_BAR: f64 = 64.0;
    const MIN_WIDTH: f64 = 320.0;
    let most = chart.bars.iter().map(|b| b.value).max().unwrap_or(1).max(1) as f64;
    let n = chart.bars.len().max(1) as f64;
    let bar = (MIN_WIDTH / n).clamp(MIN_BAR, MAX_BAR);
    let width = n * bar;
    let bars = chart
        .bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let h = (b.value as f64 / most * HEIGHT).max(1.0);
            let class = if b.r#final { "final" } else { "not-final" };
            let state = if b.r#final { "final" } else { "not final yet" };
            view! {
                <rect x=format!("{:.1}", i as f64 * bar + 2.0) y=format!("{:.1}", HEIGHT - h)
                      width=format!("{:.1}", bar - 4.0) height=format!("{h:.1}") class=class
                      data-label=b.label.clone()>
                    <title>{format!("{}: {} ({state})", b.label, b.value)}</title>
                </rect>
            }
        })
        .collect_view();
    let first = chart
        .bars
        .first()
        .map(|b| b.label.clone())
        .unwrap_or_default();
    // One bar is named once.
    let last = match chart.bars.as_slice() {
        [_, .., b] => b.label.clone(),
        _ => String::new(),
    };
    view! {
        <figure class="gold-chart">
            <figcaption>{chart.title}</figcaption>
            <div class="scroll">
                <svg viewBox=format!("0 0 {width} {HEIGHT}") width=width height=HEIGHT role="img">
                    {bars}
                </svg>
                <p class="axis-labels" style=format!("width:{width:.0}px")>
                    <span>{first}</span><span>{last}</span>
                </p>
            </div>
            <p class="note"><span class="key final"></span>" final  "<span class="key not-final"></span>" not final yet. "{chart.final_rule}</p>
        </figure>
    }
}

/// What each schedule would cost in computing a day, and how old its numbers could get.
fn cost_view(cost: FreshnessCost) -> impl IntoView {
    let most = cost
        .options
        .iter()
        .map(|o| o.compute_s_per_day)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let time = |s: u64| match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", (s + 30) / 60),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    };
    view! {
        <section class="cost" data-median-ms=cost.median_ms.to_string()>
            <h2>"The cost of freshness"</h2>
            <p class="cost-sentence">{cost.sentence}</p>
            <table class="cost-table">
                <thead><tr><th>"runs"</th><th>"runs a day"</th><th>"computing a day"</th><th></th><th>"numbers at most this old"</th></tr></thead>
                <tbody>
                    {cost.options.into_iter().map(|o| {
                        let width = (o.compute_s_per_day as f64 / most * 100.0).max(0.5);
                        let option = o.label.clone();
                        view! {
                            <tr data-option=option>
                                <td>{o.label}</td>
                                <td class="n">{o.runs_per_day}</td>
                                <td class="n">{time(o.compute_s_per_day)}</td>
                                <td class="cost-bar"><span style=format!("width:{width:.1}%")></span></td>
                                <td class="n">{time(o.worst_stale_s)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            <p class="note">{format!("Based on {}.", cost.based_on)}</p>
        </section>
    }
}
