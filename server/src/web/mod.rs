//! The dashboard's HTTP side: Leptos pages (SSR + hydration), the server functions they call,
//! the JSON API for scripts, live announcements (server-sent events) and the static site.
//! [`app`] builds the router apart from binding a port, so tests call it with `oneshot`.

mod api;
mod classroom;
mod fields;
mod guard;
mod live;
mod pipeline;
mod serve;
mod session;
mod teaching;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use app::api::Server;
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRef, Request, State};
use axum::handler::Handler;
use axum::http::Method;
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter, on};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{
    AxumRouteListing, LeptosRoutes, file_and_error_handler_with_context, generate_route_list,
};
use tokio::sync::watch;

use crate::service::labs::Labs;
pub use live::{PER_ADDRESS as LIVE_PER_ADDRESS, PER_CLIENT as LIVE_PER_CLIENT};
pub use serve::{Timeouts, serve, serve_with, shutdown_signal};

/// Largest body any request but an upload may send: one event is under 1 KiB, a form a few,
/// a project's SQL file a few dozen.
pub const BODY_LIMIT: usize = 64 * 1024;
/// Largest upload of files into a lab's landing folder, in one request.
pub const UPLOAD_LIMIT: usize = 64 * 1024 * 1024;
/// How long a request's body may take to arrive once its headers have.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub labs: Arc<Labs>,
    pub leptos: LeptosOptions,
    /// The limits every write is held to.
    limits: Arc<guard::Limits>,
    /// Turns true when the server stops: live streams end so connections can close.
    stopping: watch::Receiver<bool>,
    stop: Arc<watch::Sender<bool>>,
    /// The live streams open, by client.
    live: Arc<live::Shares>,
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
        let rates = labs.serving().rates;
        Self {
            labs,
            leptos,
            limits: Arc::new(guard::Limits::new(rates)),
            stopping,
            stop: Arc::new(stop),
            live: Arc::default(),
        }
    }

    /// The same state with other rates for writes, sends, sign-ins and token guesses.
    /// The live streams open now, all clients together.
    pub fn live_streams(&self) -> usize {
        self.live.held()
    }

    pub fn with_rates(self, rates: crate::config::Rates) -> Self {
        Self {
            limits: Arc::new(guard::Limits::new(rates)),
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

/// Routes as they are registered, remembering which methods of which paths write.
struct Routes {
    router: Router<AppState>,
    writes: Vec<(Method, String)>,
}

impl Routes {
    fn new() -> Self {
        Self {
            router: Router::new(),
            writes: vec![],
        }
    }

    fn route<H, T>(mut self, method: Method, path: &str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).unwrap_or(MethodFilter::GET);
        let route: MethodRouter<AppState> = on(filter, handler);
        if guard::is_write(&method) {
            self.writes.push((method, path.to_string()));
        }
        self.router = self.router.route(path, route);
        self
    }

    fn get<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.route(Method::GET, path, handler)
    }

    fn post<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.route(Method::POST, path, handler)
    }
}

/// The server's own routes: the JSON API (every lab's under `/api/labs/{lab}`, lab `default`'s
/// also under `/api`), signing in and out.
fn own_routes() -> Routes {
    let mut routes = Routes::new()
        .get("/api/labs", api::labs)
        .post("/api/labs", api::create_lab)
        .post("/api/classes", api::create_class)
        .get("/api/classes/{class}/progress", classroom::class_progress)
        .post(
            "/api/classes/{class}/viewer-token",
            classroom::class_viewer_token,
        )
        .route(
            Method::DELETE,
            "/api/classes/{class}",
            classroom::delete_class,
        )
        .route(Method::DELETE, "/api/labs/{lab}", api::delete_lab)
        .post("/api/labs/{lab}/learner-token", classroom::replace_token)
        .post(
            "/api/labs/{lab}/progress/{milestone}/accept",
            classroom::accept_milestone,
        )
        .post("/login", session::sign_in)
        .post("/logout", session::sign_out);
    for prefix in ["/api/labs/{lab}", "/api"] {
        let at = |path: &str| format!("{prefix}{path}");
        routes = routes
            .get(&at("/freshness"), api::freshness)
            .get(&at("/runs"), api::runs)
            .post(&at("/runs"), api::start_run)
            .post(&at("/runs/cancel"), api::cancel_run)
            .get(&at("/runs/{id}"), api::run)
            .get(&at("/hours"), api::hours)
            .post(&at("/produce"), api::produce)
            .get(&at("/settings"), api::settings)
            .post(&at("/settings"), api::update_settings)
            .post(&at("/reset"), api::reset)
            .post(&at("/viewer-token"), api::viewer_token)
            .get(&at("/live"), live::live)
            .get(&at("/pipeline/files"), pipeline::code)
            .get(&at("/pipeline/files/{*path}"), pipeline::file)
            .route(
                Method::PUT,
                &at("/pipeline/files/{*path}"),
                pipeline::save_file,
            )
            .post(&at("/pipeline/example"), pipeline::example)
            .post(&at("/pipeline/course"), pipeline::course)
            .post(&at("/pipeline/validate"), pipeline::validate)
            .get(&at("/pipeline/graph"), pipeline::graph)
            .get(&at("/pipeline/events"), pipeline::events)
            .get(&at("/pipeline/history"), pipeline::key_history)
            .get(&at("/landing"), pipeline::landing)
            .post(&at("/landing"), pipeline::upload)
            .post(&at("/landing/example"), pipeline::land_example)
            .get(&at("/quality"), pipeline::quality)
            .get(&at("/late"), pipeline::late)
            .get(&at("/pipeline/check"), pipeline::project_check)
            .get(&at("/topic"), teaching::topic)
            .get(&at("/whatif"), teaching::whatif)
            .post(&at("/consumers"), teaching::consume)
            .get(&at("/progress"), classroom::progress)
            .get(&at("/writing"), classroom::writings)
            .route(Method::PUT, &at("/writing/{task}"), classroom::save_writing);
    }
    routes
}

/// Every write route the server answers, as (method, path pattern): its own, and the server
/// functions Leptos registers at their own paths.
pub fn write_routes() -> Vec<(Method, String)> {
    let mut writes = own_routes().writes;
    for (path, method) in leptos::server_fn::axum::server_fn_paths() {
        if guard::is_write(&method) {
            writes.push((method, path.to_string()));
        }
    }
    writes
}

/// The whole dashboard: pages, server functions, JSON API, live updates, static files. Every
/// request, whichever router registered its route, passes the same guards: a panic answers 500,
/// a body over [`BODY_LIMIT`] ([`UPLOAD_LIMIT`] for an upload) 413, a write from another site 403, too many writes 429.
pub fn app(state: AppState) -> Router {
    let server = state.server();
    let context = move || provide_context(server.clone());
    let shell = {
        let options = state.leptos.clone();
        move || app::shell(options.clone())
    };
    own_routes()
        .router
        .route("/fn/{*name}", axum::routing::any(server_fn))
        .leptos_routes_with_context(&state, routes(), context.clone(), shell)
        .fallback(file_and_error_handler_with_context::<AppState, _>(
            context,
            app::shell,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::limit_requests,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::refuse_cross_site,
        ))
        // The limit inside the timeout: a body over the limit then fails as too large (413),
        // not as an unreadable body. It is the one limit (axum's own default is off).
        .layer(axum::middleware::from_fn(guard::limit_body))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            BODY_TIMEOUT,
        ))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            guard::panicked,
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
    let server = state.server();
    leptos_axum::handle_server_fns_with_context(move || provide_context(server.clone()), request)
        .await
}
