//! Home: are the numbers final, up to when? In plain words, for people who are not engineers.

use leptos::prelude::*;

use crate::api::get_freshness;
use crate::components::{RunButton, current_lab};
use crate::model::Freshness;
use crate::pages::loaded;

#[component]
pub fn FreshnessPage() -> impl IntoView {
    view! {
        <section class="freshness">
            {loaded(current_lab, get_freshness, |f: Freshness| {
                let light = f.light.clone();
                let label = match light.as_str() {
                    "green" => "All good",
                    "red" => "Needs attention",
                    _ => "Not checked yet",
                };
                view! {
                    <div class=format!("light {light}") data-light=light.clone()>
                        <span class="lamp" aria-hidden="true"></span>
                        <span class="label">{label}</span>
                    </div>
                    <div class="sentences">
                        {f.sentences.into_iter().map(|s| view! { <p>{s}</p> }).collect_view()}
                    </div>
                }
            })}
            <RunButton />
        </section>
    }
}
