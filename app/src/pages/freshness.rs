//! Home: are the numbers final, up to when? In plain words, for people who are not engineers.

use leptos::prelude::*;

use crate::api::{SaveCost, get_freshness};
use crate::components::{ErrorLine, FormScope, IfInstructor, Live, RunButton, current_lab};
use crate::model::{CostModel, Freshness, FreshnessCost, GoldChart, Light};
use crate::pages::loaded;
use crate::pages::milestones::Checklist;

#[component]
pub fn FreshnessPage() -> impl IntoView {
    view! {
        <section class="freshness">
            {loaded(current_lab, get_freshness, |f: Freshness| {
                let label = match f.light {
                    Light::Green if f.late_hours > 0 => "All good; late events left out",
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
        <Checklist />
    }
}

/// The gold numbers by period as bars: final ones solid, the others pale and labelled so, each
/// with its value above it when there is room (always in its tooltip), on an axis from 0 to the
/// largest value. A few bars are widened to fill [`MIN_WIDTH`]; many scroll. The first and last
/// periods are named under their bars.
fn chart_view(chart: GoldChart) -> impl IntoView {
    const HEIGHT: f64 = 120.0;
    const TOP: f64 = 16.0;
    const LEFT: f64 = 48.0;
    const MIN_BAR: f64 = 18.0;
    const MAX_BAR: f64 = 64.0;
    const MIN_WIDTH: f64 = 320.0;
    let most = chart.bars.iter().map(|b| b.value).max().unwrap_or(1).max(1);
    let n = chart.bars.len().max(1) as f64;
    let bar = (MIN_WIDTH / n).clamp(MIN_BAR, MAX_BAR);
    let width = LEFT + n * bar;
    let labelled = bar >= 28.0;
    let bars = chart
        .bars
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let h = (b.value as f64 / most as f64 * HEIGHT).max(1.0);
            let class = if b.r#final { "final" } else { "not-final" };
            let state = if b.r#final { "final" } else { "not final yet" };
            let x = LEFT + i as f64 * bar;
            let value = labelled.then(|| {
                view! {
                    <text class="value" x=format!("{:.1}", x + bar / 2.0) y=format!("{:.1}", TOP + HEIGHT - h - 3.0)
                          text-anchor="middle">{b.value}</text>
                }
            });
            view! {
                <rect x=format!("{:.1}", x + 2.0) y=format!("{:.1}", TOP + HEIGHT - h)
                      width=format!("{:.1}", bar - 4.0) height=format!("{h:.1}") class=class
                      data-label=b.label.clone() data-value=b.value.to_string()>
                    <title>{format!("{}: {} ({state})", b.label, b.value)}</title>
                </rect>
                {value}
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
    let base = TOP + HEIGHT;
    view! {
        <figure class="gold-chart">
            <figcaption>{chart.title}</figcaption>
            <div class="scroll">
                <svg viewBox=format!("0 0 {width} {}", base + 2.0) width=width height=base + 2.0 role="img">
                    <line class="axis-line" x1=LEFT - 4.0 y1=TOP x2=LEFT - 4.0 y2=base />
                    <line class="axis-line" x1=LEFT - 4.0 y1=base x2=width y2=base />
                    <text class="tick-label" x=LEFT - 8.0 y=TOP + 4.0 text-anchor="end">{most}</text>
                    <text class="tick-label" x=LEFT - 8.0 y=base text-anchor="end">"0"</text>
                    {bars}
                </svg>
                <p class="axis-labels" style=format!("width:{:.0}px;margin-left:{LEFT}px", width - LEFT)>
                    <span>{first}</span><span>{last}</span>
                </p>
            </div>
            <p class="note"><span class="key final"></span>" final  "<span class="key not-final"></span>" not final yet. "{chart.final_rule}</p>
        </figure>
    }
}

/// What each schedule would cost a day, with its range when there are enough runs, and how old
/// its numbers could get; the price model below, which the instructor may change.
fn cost_view(cost: FreshnessCost) -> impl IntoView {
    let most = cost
        .options
        .iter()
        .map(|o| o.cents_per_day)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let time = |s: u64| match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", (s + 30) / 60),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    };
    let money = CostModel::price;
    let model = cost.model;
    view! {
        <section class="cost" data-median-ms=cost.median_ms.to_string()>
            <h2>"The cost of freshness"</h2>
            <p class="cost-sentence">{cost.sentence}</p>
            <table class="cost-table">
                <thead><tr><th>"runs"</th><th>"runs a day"</th><th>"cluster billed a day"</th><th>"cost a day"</th><th></th><th>"numbers at most this old"</th></tr></thead>
                <tbody>
                    {cost.options.into_iter().map(|o| {
                        let width = (o.cents_per_day as f64 / most * 100.0).max(0.5);
                        let option = o.label.clone();
                        let range = o.cents_range.map(|(low, high)| format!(" ({} to {})", money(low), money(high)));
                        view! {
                            <tr data-option=option data-cents=o.cents_per_day.to_string()>
                                <td>{o.label}</td>
                                <td class="n">{o.runs_per_day}</td>
                                <td class="n">{time(o.billed_s_per_day)}</td>
                                <td class="n">{money(o.cents_per_day)}{range}</td>
                                <td class="cost-bar"><span style=format!("width:{width:.1}%")></span></td>
                                <td class="n">{time(o.worst_stale_s)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            <p class="note">{format!("Based on {}.", cost.based_on)}</p>
            <IfInstructor><CostForm model /></IfInstructor>
        </section>
    }
}

/// The instructor's price model: start-up, minimum bill, price an hour.
#[component]
fn CostForm(model: CostModel) -> impl IntoView {
    let save = ServerAction::<SaveCost>::new();
    Effect::new(move |_| {
        if save.value().get().is_some_and(|r| r.is_ok()) {
            Live::bump();
        }
    });
    let error = move || {
        save.value()
            .get()
            .and_then(Result::err)
            .map(|error| view! { <ErrorLine error /> })
    };
    view! {
        <details class="cost-model">
            <summary>"Change the price of a cluster (instructor)"</summary>
            <ActionForm action=save attr:class="cost-form">
                <FormScope />
                <label class="field"><span>"start-up, minutes"</span>
                    <input name="startup_minutes" inputmode="numeric" value=(model.startup_s / 60).to_string() /></label>
                <label class="field"><span>"billed at least, minutes"</span>
                    <input name="minimum_minutes" inputmode="numeric" value=(model.minimum_s / 60).to_string() /></label>
                <label class="field"><span>"price an hour, units"</span>
                    <input name="price_per_hour" inputmode="decimal" value=CostModel::price(model.price_per_hour_cents) /></label>
                <button type="submit">"Save"</button>
            </ActionForm>
            {error}
        </details>
    }
}
