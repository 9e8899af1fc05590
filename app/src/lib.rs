//! Reckon's dashboard (Leptos, SSR with hydration): the pages, their components and the server
//! functions they call. Every page works without JavaScript; with it, pages refresh themselves
//! when the server announces a run, a send or a reset (server-sent events on `/api/live`).

pub mod api;
mod components;
pub mod error;
pub mod model;
mod pages;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::use_location;
use leptos_router::{SsrMode, path};

use crate::components::{Session, lab_href, lab_of_path};
use crate::model::{DEFAULT_LAB, Role};
pub use components::Live;

/// Routes of the dashboard's pages, in the order the navigation shows them.
pub const PAGES: [(&str, &str); 11] = [
    ("/", "Freshness"),
    ("/runs", "Runs"),
    ("/hours", "Reconciliation"),
    ("/produce", "Produce"),
    ("/topic", "Topic"),
    ("/tables", "Tables"),
    ("/pipeline", "Pipeline"),
    ("/code", "Code"),
    ("/landing", "Landing"),
    ("/quality", "Quality"),
    ("/events", "Events"),
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
    Session::provide();
    // Pages render their data on the server before answering (SsrMode::Async), so they read
    // whole without JavaScript. Each page exists for the lab `default` (`/runs`) and for every
    // lab (`/labs/ann/runs`).
    view! {
        <Stylesheet id="reckon" href="/pkg/reckon.css" />
        <Title text="Reckon" />
        <Router>
            <TopBar />
            <main>
                <Routes fallback=|| view! { <p class="error">"No such page."</p> }>
                    <Route path=path!("/login") view=pages::login::LoginPage />
                    <Route path=path!("/labs") view=pages::labs::LabsPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab") view=pages::freshness::FreshnessPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/runs") view=pages::runs::RunsPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/runs/:id") view=pages::run::RunPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/hours") view=pages::hours::HoursPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/produce") view=pages::produce::ProducePage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/topic") view=pages::topic::TopicPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/tables") view=pages::tables::TablesPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/pipeline") view=pages::pipeline::PipelinePage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/code") view=pages::code::CodePage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/landing") view=pages::landing::LandingPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/quality") view=pages::quality::QualityPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/events") view=pages::events::EventsPage ssr=SsrMode::Async />
                    <Route path=path!("/labs/:lab/history") view=pages::history::HistoryPage ssr=SsrMode::Async />
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
                    <Route path=path!("/code") view=pages::code::CodePage ssr=SsrMode::Async />
                    <Route path=path!("/landing") view=pages::landing::LandingPage ssr=SsrMode::Async />
                    <Route path=path!("/quality") view=pages::quality::QualityPage ssr=SsrMode::Async />
                    <Route path=path!("/events") view=pages::events::EventsPage ssr=SsrMode::Async />
                    <Route path=path!("/history") view=pages::history::HistoryPage ssr=SsrMode::Async />
                </Routes>
            </main>
        </Router>
    }
}

/// The bar on every page: the lab shown, its pages, the lab picker, and who is signed in.
#[component]
fn TopBar() -> impl IntoView {
    let path = use_location().pathname;
    let lab = move || lab_of_path(&path.get());
    let session = Session::resource();
    view! {
        <header class="top">
            <a class="brand" href=move || lab_href(&lab(), "/")>"Reckon"</a>
            {move || {
                // The overview and the sign-in page belong to no lab.
                let outside = matches!(path.get().as_str(), "/labs" | "/login");
                (!outside).then(|| view! { <span class="lab-name" data-lab=lab()>{format!("lab {}", lab())}</span> })
            }}
            <nav>
                {PAGES
                    .iter()
                    .map(|(page, label)| {
                        let target = move || lab_href(&lab(), page);
                        let current = move || (path.get() == target()).then_some("page");
                        view! { <a href=target aria-current=current>{*label}</a> }
                    })
                    .collect_view()}
            </nav>
            <Suspense>
                {move || Suspend::new(async move {
                    let session = match session {
                        Some(s) => s.await.unwrap_or_default(),
                        None => Default::default(),
                    };
                    view! { <LabPicker session current=lab() /> }
                })}
            </Suspense>
        </header>
    }
}

/// Other labs this person may open (full page loads: the live updates follow the lab), the
/// overview, and signing in or out.
#[component]
fn LabPicker(session: model::SessionView, current: String) -> impl IntoView {
    let others: Vec<String> = session
        .labs
        .iter()
        .filter(|l| **l != current)
        .cloned()
        .collect();
    let overview = matches!(session.role, Role::Local | Role::Instructor);
    let who = match (session.role, &session.lab) {
        (Role::Local, _) => None,
        (role, Some(lab)) => Some(format!("{role} of {lab}")),
        (role, None) => Some(role.to_string()),
    };
    view! {
        <div class="labs-menu">
            {(!others.is_empty() || overview).then(|| view! {
                <details class="lab-picker">
                    <summary>"Labs"</summary>
                    <ul>
                        {overview.then(|| view! { <li><a href="/labs" rel="external">"All labs"</a></li> })}
                        {others.into_iter().map(|l| {
                            let target = if l == DEFAULT_LAB { "/".to_string() } else { format!("/labs/{l}") };
                            view! { <li><a href=target rel="external" data-lab-link=l.clone()>{l.clone()}</a></li> }
                        }).collect_view()}
                    </ul>
                </details>
            })}
            {who.map(|w| view! { <span class="who" data-role=session.role.as_str()>{w}</span> })}
            {match (session.auth, session.role) {
                (false, _) => None,
                (true, Role::Anonymous) => Some(view! { <a class="sign-in" href="/login">"Sign in"</a> }.into_any()),
                (true, _) => Some(view! {
                    <form method="post" action="/logout" class="sign-out">
                        <button type="submit">"Sign out"</button>
                    </form>
                }.into_any()),
            }}
        </div>
    }
}

/// The browser's entry point: hydrates the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
