//! Reckon's dashboard (Leptos, SSR with hydration): the pages, their components and the server
//! functions they call. Every page works without JavaScript; with it, pages refresh themselves
//! when the server announces a run, a send or a reset (server-sent events on `/api/live`).

pub mod api;
mod components;
pub mod error;
pub mod fields;
pub mod model;
mod pages;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use std::sync::Arc;

use leptos::tachys::view::iterators::StaticVec;
use leptos_router::any_nested_route::{AnyNestedRoute, IntoAnyNestedRoute};
use leptos_router::components::{RouteChildren, Router, Routes, RoutesProps};
use leptos_router::hooks::use_location;
use leptos_router::{NestedRoute, ParamSegment, PossibleRouteMatch, SsrMode, StaticSegment};

use crate::components::{Session, lab_href, lab_of_path};
use crate::model::{DEFAULT_LAB, Role};
pub use components::Live;

/// One page of a lab: its path within the lab, its name in the navigation (`None`: reached
/// from another page), and its view. Every page is routed twice, from this one list: for the lab
/// `default` (`/runs`) and for every lab (`/labs/ann/runs`).
pub struct Page {
    pub path: &'static str,
    pub label: Option<&'static str>,
    view: fn() -> AnyView,
}

/// The dashboard's pages, in the order the navigation shows them.
pub const PAGES: [Page; 15] = [
    Page {
        path: "/",
        label: Some("Freshness"),
        view: || view! { <pages::freshness::FreshnessPage /> }.into_any(),
    },
    Page {
        path: "/runs",
        label: Some("Runs"),
        view: || view! { <pages::runs::RunsPage /> }.into_any(),
    },
    Page {
        path: "/hours",
        label: Some("Reconciliation"),
        view: || view! { <pages::hours::HoursPage /> }.into_any(),
    },
    Page {
        path: "/produce",
        label: Some("Produce"),
        view: || view! { <pages::produce::ProducePage /> }.into_any(),
    },
    Page {
        path: "/topic",
        label: Some("Topic"),
        view: || view! { <pages::topic::TopicPage /> }.into_any(),
    },
    Page {
        path: "/tables",
        label: Some("Tables"),
        view: || view! { <pages::tables::TablesPage /> }.into_any(),
    },
    Page {
        path: "/pipeline",
        label: Some("Pipeline"),
        view: || view! { <pages::pipeline::PipelinePage /> }.into_any(),
    },
    Page {
        path: "/code",
        label: Some("Code"),
        view: || view! { <pages::code::CodePage /> }.into_any(),
    },
    Page {
        path: "/landing",
        label: Some("Landing"),
        view: || view! { <pages::landing::LandingPage /> }.into_any(),
    },
    Page {
        path: "/quality",
        label: Some("Quality"),
        view: || view! { <pages::quality::QualityPage /> }.into_any(),
    },
    Page {
        path: "/late",
        label: Some("Late rows"),
        view: || view! { <pages::late::LatePage /> }.into_any(),
    },
    Page {
        path: "/events",
        label: Some("Events"),
        view: || view! { <pages::events::EventsPage /> }.into_any(),
    },
    Page {
        path: "/runs/:id",
        label: None,
        view: || view! { <pages::run::RunPage /> }.into_any(),
    },
    Page {
        path: "/writing",
        label: Some("Writing"),
        view: || view! { <pages::writing::WritingPage /> }.into_any(),
    },
    Page {
        path: "/history",
        label: None,
        view: || view! { <pages::history::HistoryPage /> }.into_any(),
    },
];

/// A page's path as route segments: under `/labs/:lab` when `in_lab`. A segment starting with
/// `:` is a parameter.
fn segments(path: &'static str, in_lab: bool) -> Arc<dyn PossibleRouteMatch + Send + Sync> {
    let parts: Vec<&'static str> = path.split('/').filter(|p| !p.is_empty()).collect();
    fn part(p: &'static str) -> Arc<dyn PossibleRouteMatch + Send + Sync> {
        match p.strip_prefix(':') {
            Some(name) => Arc::new(ParamSegment(name)),
            None => Arc::new(StaticSegment(p)),
        }
    }
    let mut all: Vec<Arc<dyn PossibleRouteMatch + Send + Sync>> = match in_lab {
        true => vec![part("labs"), part(":lab")],
        false => vec![],
    };
    all.extend(parts.into_iter().map(part));
    match all.as_slice() {
        [] => Arc::new(()),
        [a] => a.clone(),
        [a, b] => Arc::new((a.clone(), b.clone())),
        [a, b, c] => Arc::new((a.clone(), b.clone(), c.clone())),
        [a, b, c, d] => Arc::new((a.clone(), b.clone(), c.clone(), d.clone())),
        _ => unreachable!("a page's path has at most two segments: {path}"),
    }
}

/// Every route: the sign-in page, the overview of labs, and each page for every lab.
fn routes() -> StaticVec<AnyNestedRoute> {
    let mut all = vec![
        NestedRoute::new(StaticSegment("login"), pages::login::LoginPage).into_any_nested_route(),
        NestedRoute::new(StaticSegment("labs"), pages::labs::LabsPage)
            .ssr_mode(SsrMode::Async)
            .into_any_nested_route(),
        NestedRoute::new(
            (StaticSegment("classes"), ParamSegment("class")),
            pages::board::BoardPage,
        )
        .ssr_mode(SsrMode::Async)
        .into_any_nested_route(),
    ];
    for in_lab in [true, false] {
        for page in &PAGES {
            let route =
                NestedRoute::new(segments(page.path, in_lab), page.view).ssr_mode(SsrMode::Async);
            all.push(route.into_any_nested_route());
        }
    }
    all.into()
}

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
                {Routes(
                    RoutesProps::builder()
                        .fallback(|| view! { <p class="error">"No such page."</p> })
                        .children(RouteChildren::to_children(routes))
                        .build(),
                )}
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
                let outside = matches!(path.get().as_str(), "/labs" | "/login")
                    || path.get().starts_with("/classes/");
                (!outside).then(|| view! { <span class="lab-name" data-lab=lab()>{format!("lab {}", lab())}</span> })
            }}
            <nav>
                {PAGES
                    .iter()
                    .filter_map(|page| Some((page.path, page.label?)))
                    .map(|(page, label)| {
                        let target = move || lab_href(&lab(), page);
                        let current = move || (path.get() == target()).then_some("page");
                        view! { <a href=target aria-current=current>{label}</a> }
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
