//! Home: are the numbers final, up to when? In plain words, for people who are not engineers.

use leptos::prelude::*;

use crate::api::get_freshness;
use crate::components::{RunButton, current_lab};
use crate::model::{Freshness, Light};
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
                }
            })}
            <RunButton />
        </section>
    }
}
