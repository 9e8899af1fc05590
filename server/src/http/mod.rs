//! The dashboard's HTTP side: Leptos pages (SSR + hydration), the server functions they call,
//! the JSON API for scripts, live announcements (server-sent events) and the static site.
//! [`app`] builds the router apart from binding a port, so tests call it with `oneshot`.

mod api;

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use app::api::Backend;
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRef, Request, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{
    AxumRouteListing, LeptosRoutes, file_and_error_handler_with_context, generate_route_list,
};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::dashboard::Dashboard;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub dashboard: Arc<Dashboard>,
    pub leptos: LeptosOptions,
    /// Turns true when the server stops: live streams end so connections can close.
    stopping: watch::Receiver<bool>,
    stop: Arc<watch::Sender<bool>>,
}

impl AppState {
    /// State for a dashboard whose built site (wasm, JS, CSS) is in `site_root`.
    pub fn new(dashboard: Arc<Dashboard>, site_root: PathBuf) -> Self {
        let leptos = LeptosOptions::builder()
            .output_name("reckon")
            .site_root(site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .build();
        let (stop, stopping) = watch::channel(false);
        Self {
            dashboard,
            leptos,
            stopping,
            stop: Arc::new(stop),
        }
    }

    fn backend(&self) -> Arc<dyn Backend> {
        self.dashboard.clone()
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// The whole dashboard: pages, server functions, JSON API, live updates, static files.
pub fn app(state: AppState) -> Router {
    let backend = state.backend();
    let context = move || provide_context(backend.clone());
    let shell = {
        let options = state.leptos.clone();
        move || app::shell(options.clone())
    };
    Router::new()
        .route("/api/freshness", get(api::freshness))
        .route("/api/runs", get(api::runs).post(api::start_run))
        .route("/api/runs/{id}", get(api::run))
        .route("/api/hours", get(api::hours))
        .route("/api/produce", post(api::produce))
        .route(
            "/api/settings",
            get(api::settings).post(api::update_settings),
        )
        .route("/api/reset", post(api::reset))
        .route("/api/live", get(api::live))
        .route("/fn/{*name}", get(server_fn).post(server_fn))
        .leptos_routes_with_context(&state, routes(), context.clone(), shell)
        .fallback(file_and_error_handler_with_context::<AppState, _>(
            context,
            app::shell,
        ))
        .with_state(state)
}

/// The pages' routes, generated once per process. While Leptos generates them it sets a
/// process-wide flag under which a resource first polled by any other render never loads
/// (leptos-rs/leptos#4773): a page rendering meanwhile would hang. Once, inside the first
/// [`app`], no render can be running yet (renders need a router, and later routers reuse this).
fn routes() -> Vec<AxumRouteListing> {
    static ROUTES: OnceLock<Vec<AxumRouteListing>> = OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(app::App)).clone()
}

/// Server functions (the pages' reads and writes), with the backend as their context.
async fn server_fn(State(state): State<AppState>, request: Request<Body>) -> impl IntoResponse {
    let backend = state.backend();
    leptos_axum::handle_server_fns_with_context(move || provide_context(backend.clone()), request)
        .await
}

/// Serves the dashboard on `listener` until `shutdown` resolves, with the schedule running;
/// then lets requests and the run in progress finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let schedule = state.dashboard.start_schedule();
    let stop = state.stop.clone();
    let dashboard = state.dashboard.clone();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.send_replace(true);
        })
        .await?;
    schedule.abort();
    dashboard.finish_running().await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
