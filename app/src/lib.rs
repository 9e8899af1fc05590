//! Reckon's dashboard (Leptos, SSR with hydration): the pages, their components and the server
//! functions they call. Every page works without JavaScript; with it, pages refresh themselves
//! when the server announces a run, a send or a reset (server-sent events on `/api/live`).

pub mod api;
mod components;
pub mod model;
mod pages;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{A, Route, Router, Routes};
use leptos_router::{SsrMode, path};

pub use components::Live;

/// Routes of the dashboard's pages, in the order the navigation shows them.
pub const PAGES: [(&str, &str); 7] = [
    ("/", "Freshness"),
    ("/runs", "Runs"),
    ("/hours", "Reconciliation"),
    ("/produce", "Produce"),
    ("/topic", "Topic"),
    ("/tables", "Tables"),
    ("/pipeline", "Pipeline"),
];

/// The HTML document around the app; the server renders it for every page.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    Live::provide();
    // Pages render their data on the server before answering (SsrMode::Async), so they read
    // whole without JavaScript.
    view! {
        <Stylesheet id="reckon" href="/pkg/reckon.css" />
        <Title text="Reckon" />
        <Router>
            <header class="top">
                <a class="brand" href="/">"Reckon"</a>
                <nav>
                    {PAGES
                        .iter()
                        .map(|(href, label)| view! { <A href=*href exact=true>{*label}</A> })
                        .collect_view()}
                </nav>
            </header>
            <main>
                <Routes fallback=|| view! { <p class="error">"No such page."</p> }>
                    <Route path=path!("/") view=pages::freshness::FreshnessPage ssr=SsrMode::Async />
                    <Route path=path!("/runs") view=pages::runs::RunsPage ssr=SsrMode::Async />
                    <Route path=path!("/runs/:id") view=pages::run::RunPage ssr=SsrMode::Async />
                    <Route path=path!("/hours") view=pages::hours::HoursPage ssr=SsrMode::Async />
                    <Route
                        path=path!("/produce")
                        view=pages::produce::ProducePage
                        ssr=SsrMode::Async
                    />
                    <Route path=path!("/topic") view=pages::topic::TopicPage ssr=SsrMode::Async />
                    <Route path=path!("/tables") view=pages::tables::TablesPage ssr=SsrMode::Async />
                    <Route
                        path=path!("/pipeline")
                        view=pages::pipeline::PipelinePage
                        ssr=SsrMode::Async
                    />
                </Routes>
            </main>
        </Router>
    }
}

/// The browser's entry point: hydrates the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
