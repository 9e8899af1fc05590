//! The dashboard's HTTP side: Leptos pages (SSR + hydration), the server functions they call,
//! the JSON API for scripts, live announcements (server-sent events) and the static site.
//! [`app`] builds the router apart from binding a port, so tests call it with `oneshot`.

mod api;
mod guard;
mod session;

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use app::api::Server;
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRef, Request, State};
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{
    AxumRouteListing, LeptosRoutes, file_and_error_handler_with_context, generate_route_list,
};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::labs::Labs;
pub use guard::ProduceLimit;

/// Largest body a produce call or a form may send: one event is under 1 KiB.
const BODY_LIMIT: usize = 64 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub labs: Arc<Labs>,
    pub leptos: LeptosOptions,
    /// Sends per client and lab, over time.
    produce_limit: Arc<guard::RateLimiter>,
    /// Turns true when the server stops: live streams end so connections can close.
    stopping: watch::Receiver<bool>,
    stop: Arc<watch::Sender<bool>>,
}

impl AppState {
    /// State for a dashboard whose built site (wasm, JS, CSS) is in `site_root`.
    pub fn new(labs: Arc<Labs>, site_root: PathBuf) -> Self {
        let leptos = LeptosOptions::builder()
            .output_name("reckon")
            .site_root(site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .build();
        let (stop, stopping) = watch::channel(false);
        Self {
            labs,
            leptos,
            produce_limit: Arc::new(guard::RateLimiter::new(ProduceLimit::default())),
            stopping,
            stop: Arc::new(stop),
        }
    }

    /// The same state with another limit on sends.
    pub fn with_produce_limit(self, limit: ProduceLimit) -> Self {
        Self {
            produce_limit: Arc::new(guard::RateLimiter::new(limit)),
            ..self
        }
    }

    fn server(&self) -> Arc<dyn Server> {
        self.labs.clone()
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// The whole dashboard: pages, server functions, JSON API, live updates, static files.
pub fn app(state: AppState) -> Router {
    let server = state.server();
    let context = move || provide_context(server.clone());
    let shell = {
        let options = state.leptos.clone();
        move || app::shell(options.clone())
    };
    let limited = |router: Router<AppState>| {
        router
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                guard::limit_sends,
            ))
            .layer(tower_http::limit::RequestBodyLimitLayer::new(BODY_LIMIT))
    };
    Router::new()
        .route("/api/labs", get(api::labs).post(api::create_lab))
        .route("/api/labs/{lab}", delete(api::delete_lab))
        .nest("/api/labs/{lab}", lab_api(limited))
        .nest("/api", lab_api(limited))
        .route("/login", post(session::sign_in))
        .route("/logout", post(session::sign_out))
        .merge(limited(
            Router::new().route("/fn/{*name}", get(server_fn).post(server_fn)),
        ))
        .leptos_routes_with_context(&state, routes(), context.clone(), shell)
        .fallback(file_and_error_handler_with_context::<AppState, _>(
            context,
            app::shell,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::refuse_cross_site,
        ))
        .with_state(state)
}

/// A lab's API routes: under `/api/labs/{lab}`, and under `/api` for the lab `default`.
fn lab_api(limited: impl Fn(Router<AppState>) -> Router<AppState>) -> Router<AppState> {
    Router::new()
        .route("/freshness", get(api::freshness))
        .route("/runs", get(api::runs).post(api::start_run))
        .route("/runs/{id}", get(api::run))
        .route("/hours", get(api::hours))
        .merge(limited(Router::new().route("/produce", post(api::produce))))
        .route("/settings", get(api::settings).post(api::update_settings))
        .route("/reset", post(api::reset))
        .route("/viewer-token", post(api::viewer_token))
        .route("/live", get(api::live))
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
    let server = state.server();
    leptos_axum::handle_server_fns_with_context(move || provide_context(server.clone()), request)
        .await
}

/// Serves the dashboard on `listener` until `shutdown` resolves, with the schedule running;
/// then lets requests and the run in progress finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    state.labs.start_schedules();
    let stop = state.stop.clone();
    let labs = state.labs.clone();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.send_replace(true);
        })
        .await?;
    labs.finish().await;
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
