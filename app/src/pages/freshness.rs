//! Home: are the numbers final, up to when? In plain words, for people who are not engineers.

use leptos::prelude::*;

use crate::api::get_freshness;
use crate::components::{RunButton, current_lab};
use crate::model::{Freshness, GoldChart, Light};
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
                }
            })}
            <RunButton />
        </section>
    }
}

/// The gold numbers by period as bars: final ones solid, the others pale and labelled so.
fn chart_view(chart: GoldChart) -> impl IntoView {
    const HEIGHT: f64 = 120.0;
    const BAR: f64 = 18.0;
    let most = chart.bars.iter().map(|b| b.value).max().unwrap_or(1).max(1) as f64;
    let width = (chart.bars.len() as f64 * BAR).max(BAR);
    let bars = chart
        .bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let h = (b.value as f64 / most * HEIGHT).max(1.0);
            let class = if b.r#final { "final" } else { "not-final" };
            let state = if b.r#final { "final" } else { "not final yet" };
            view! {
                <rect x=format!("{:.1}", i as f64 * BAR + 2.0) y=format!("{:.1}", HEIGHT - h)
                      width=format!("{:.1}", BAR - 4.0) height=format!("{h:.1}") class=class
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
    let last = chart
        .bars
        .last()
        .map(|b| b.label.clone())
        .unwrap_or_default();
    view! {
        <figure class="gold-chart">
            <figcaption>{chart.title}</figcaption>
            <div class="scroll">
                <svg viewBox=format!("0 0 {width} {HEIGHT}") width=width height=HEIGHT role="img">
                    {bars}
                </svg>
            </div>
            <p class="axis-labels"><span>{first}</span><span>{last}</span></p>
            <p class="note"><span class="key final"></span>" final  "<span class="key not-final"></span>" not final yet. "{chart.final_rule}</p>
        </figure>
    }
}
