//! The server functions the pages call, and the [`Backend`] the server provides them as context.
//! Each function only forwards to the backend: the JSON API calls the same backend, so pages and
//! scripts see the same figures.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

pub use crate::error::ApiError;
#[cfg(feature = "ssr")]
use crate::error::whole_number;

use crate::model::*;

/// An event as the produce form sends it: every field as typed, checked by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventForm {
    pub order_id: String,
    pub customer_id: String,
    pub status: String,
    pub amount: String,
    pub event_time: String,
}

/// What a request asks of a lab; the server allows it or answers 401/403.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The freshness and reconciliation pages and live updates: anyone, if the lab is public.
    Public,
    /// Every other page and read of the lab.
    Read,
    /// Produce, run, reset, settings, viewer tokens: the lab's learner or the instructor.
    Write,
    /// Create and delete labs: the instructor.
    Manage,
}

/// The server's labs, and who may open which: what every server function goes through first.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait Server: Send + Sync {
    /// Lab `lab`, if the request with these headers may `access` it. A signed-in browser's
    /// writes must carry its session's CSRF token as `csrf`.
    async fn open(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        access: Access,
        csrf: Option<&str>,
    ) -> Result<std::sync::Arc<dyn Backend>, ApiError>;
    /// Who is asking, and which labs they may open.
    async fn session(&self, headers: &http::HeaderMap) -> SessionView;
    /// The labs this person may open, each summed up (the instructor's overview).
    async fn labs(&self, headers: &http::HeaderMap) -> Result<Vec<LabSummary>, ApiError>;
    /// Makes a lab; answers its learner token, shown once.
    async fn create_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
    /// Deletes a lab: its topic, its folder and its history.
    async fn delete_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<(), ApiError>;
    /// A new read-only token for a lab, shown once.
    async fn viewer_token(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
}

/// What the pages need from the engine. Declared here, implemented by the server, provided as
/// Leptos context; the wasm build never sees it.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    async fn freshness(&self) -> Result<Freshness, ApiError>;
    async fn runs(&self, before: Option<i64>, limit: i64) -> Result<RunsPage, ApiError>;
    async fn run(&self, id: i64) -> Result<RunDetail, ApiError>;
    /// Starts a pipeline run; with `wait`, answers when it ends.
    async fn start_run(&self, started_by: &'static str, wait: bool)
    -> Result<RunStarted, ApiError>;
    async fn hours(&self) -> Result<Vec<HourRow>, ApiError>;
    async fn produce_event(
        &self,
        event: EventForm,
        source: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError>;
    async fn produce_batch(
        &self,
        scenario: &str,
        batch: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError>;
    /// Sends an event sent before (by its history id) again, as the shop's system would.
    async fn send_again(&self, id: i64, and_run: bool) -> Result<Sent, ApiError>;
    async fn produce_page(&self) -> Result<ProducePage, ApiError>;
    async fn topic(&self) -> Result<TopicView, ApiError>;
    async fn table(&self, name: &str, version: Option<i64>) -> Result<TableView, ApiError>;
    async fn pipeline(&self) -> Result<PipelineView, ApiError>;
    async fn settings(&self) -> Result<Settings, ApiError>;
    async fn update_settings(
        &self,
        schedule_seconds: Option<Option<u64>>,
        dedup: Option<bool>,
        public: Option<bool>,
    ) -> Result<Settings, ApiError>;
    async fn reset(&self) -> Result<Settings, ApiError>;
}

#[cfg(feature = "ssr")]
fn server() -> Result<(std::sync::Arc<dyn Server>, http::HeaderMap), ApiError> {
    let server = use_context::<std::sync::Arc<dyn Server>>()
        .ok_or_else(|| ApiError::Failed("the server provided no labs".into()))?;
    let headers = use_context::<http::request::Parts>()
        .map(|parts| parts.headers)
        .unwrap_or_default();
    Ok((server, headers))
}

/// The lab a page or form works on, if this request may `access` it.
#[cfg(feature = "ssr")]
async fn open(
    lab: &str,
    access: Access,
    csrf: &Option<String>,
) -> Result<std::sync::Arc<dyn Backend>, ApiError> {
    let (server, headers) = server()?;
    refused_with_status(server.open(&headers, lab, access, csrf.as_deref()).await)
}

/// A refusal answers with its status (401, 403, 404), for scripts calling a server function.
/// A plain form post (it accepts HTML) keeps Leptos's redirect back to the page, which shows it.
#[cfg(feature = "ssr")]
fn refused_with_status<T>(answer: Result<T, ApiError>) -> Result<T, ApiError> {
    if let Err(e) = &answer {
        let accepts_html = use_context::<http::request::Parts>().is_some_and(|parts| {
            parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"))
        });
        let options = use_context::<leptos_axum::ResponseOptions>();
        if let (false, Some(options), Ok(status)) = (
            accepts_html,
            options,
            http::StatusCode::from_u16(e.status()),
        ) {
            options.set_status(status);
        }
    }
    answer
}

/// Runs a server function's work, a panic in it becoming an error: the page rendering it shows
/// that error instead of waiting forever for a value that never comes.
#[cfg(feature = "ssr")]
async fn guarded<T>(
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            Err(ApiError::Failed(
                "the server failed to answer (an internal error, logged); other pages work".into(),
            ))
        })
}

/// A checkbox's value: present (any value) when ticked.
#[cfg(feature = "ssr")]
fn ticked(value: &Option<String>) -> bool {
    value.as_deref().is_some_and(|v| v != "false")
}

#[server(prefix = "/fn", endpoint = "session")]
pub async fn get_session() -> Result<SessionView, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        Ok(server.session(&headers).await)
    })
    .await
}

#[server(prefix = "/fn", endpoint = "labs")]
pub async fn get_labs() -> Result<Vec<LabSummary>, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        server.labs(&headers).await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "create_lab")]
pub async fn create_lab(name: String, csrf: Option<String>) -> Result<NewToken, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let answer = server
            .create_lab(&headers, name.trim(), csrf.as_deref())
            .await;
        refused_with_status(answer)
    })
    .await
}

#[server(prefix = "/fn", endpoint = "viewer_token")]
pub async fn make_viewer_token(lab: String, csrf: Option<String>) -> Result<NewToken, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let answer = server.viewer_token(&headers, &lab, csrf.as_deref()).await;
        refused_with_status(answer)
    })
    .await
}

#[server(prefix = "/fn", endpoint = "freshness")]
pub async fn get_freshness(lab: String) -> Result<Freshness, ApiError> {
    guarded(async move { open(&lab, Access::Public, &None).await?.freshness().await }).await
}

/// Number arguments come as text (a page's query, a form's field) and are read here, so a bad
/// one answers 400 naming it.
#[server(prefix = "/fn", endpoint = "runs")]
pub async fn get_runs(
    lab: String,
    before: Option<String>,
    limit: Option<String>,
) -> Result<RunsPage, ApiError> {
    guarded(async move {
        let before = before.map(|b| whole_number("before", &b)).transpose()?;
        let limit = limit.map(|l| whole_number("limit", &l)).transpose()?;
        open(&lab, Access::Read, &None)
            .await?
            .runs(before, limit.unwrap_or(50))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "run")]
pub async fn get_run(lab: String, id: String) -> Result<RunDetail, ApiError> {
    guarded(async move {
        let id = whole_number("id", &id)?;
        open(&lab, Access::Read, &None).await?.run(id).await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "start_run")]
pub async fn start_run(lab: String, csrf: Option<String>) -> Result<RunStarted, ApiError> {
    guarded(async move {
        open(&lab, Access::Write, &csrf)
            .await?
            .start_run("button", false)
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "hours")]
pub async fn get_hours(lab: String) -> Result<Vec<HourRow>, ApiError> {
    guarded(async move { open(&lab, Access::Public, &None).await?.hours().await }).await
}

#[server(prefix = "/fn", endpoint = "produce")]
pub async fn produce_event(
    lab: String,
    csrf: Option<String>,
    event: EventForm,
    and_run: Option<String>,
) -> Result<Sent, ApiError> {
    guarded(async move {
        open(&lab, Access::Write, &csrf)
            .await?
            .produce_event(event, "form", ticked(&and_run))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "send_batch")]
pub async fn send_batch(
    lab: String,
    csrf: Option<String>,
    batch: String,
    and_run: Option<String>,
) -> Result<Sent, ApiError> {
    guarded(async move {
        open(&lab, Access::Write, &csrf)
            .await?
            .produce_batch("course", &batch, ticked(&and_run))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "send_again")]
pub async fn send_again(
    lab: String,
    csrf: Option<String>,
    id: String,
    and_run: Option<String>,
) -> Result<Sent, ApiError> {
    guarded(async move {
        let id = whole_number("id", &id)?;
        open(&lab, Access::Write, &csrf)
            .await?
            .send_again(id, ticked(&and_run))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "produce_page")]
pub async fn get_produce_page(lab: String) -> Result<ProducePage, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.produce_page().await }).await
}

#[server(prefix = "/fn", endpoint = "topic")]
pub async fn get_topic(lab: String) -> Result<TopicView, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.topic().await }).await
}

#[server(prefix = "/fn", endpoint = "table")]
pub async fn get_table(
    lab: String,
    name: String,
    version: Option<String>,
) -> Result<TableView, ApiError> {
    guarded(async move {
        let version = version.map(|v| whole_number("version", &v)).transpose()?;
        open(&lab, Access::Read, &None)
            .await?
            .table(&name, version)
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "pipeline")]
pub async fn get_pipeline(lab: String) -> Result<PipelineView, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.pipeline().await }).await
}

#[server(prefix = "/fn", endpoint = "settings")]
pub async fn get_settings(lab: String) -> Result<Settings, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.settings().await }).await
}

/// The settings form: an empty schedule turns the schedule off.
#[server(prefix = "/fn", endpoint = "save_settings")]
pub async fn save_settings(
    lab: String,
    csrf: Option<String>,
    schedule_seconds: String,
    dedup: Option<String>,
    public: Option<String>,
) -> Result<Settings, ApiError> {
    guarded(async move {
        let lab = open(&lab, Access::Write, &csrf).await?;
        let schedule = match schedule_seconds.trim() {
            "" | "0" => None,
            text => Some(text.parse::<u64>().map_err(|_| {
                ApiError::field(
                    "schedule_seconds",
                    "a whole number of seconds, or empty for no schedule",
                )
            })?),
        };
        lab.update_settings(Some(schedule), Some(ticked(&dedup)), Some(ticked(&public)))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "reset")]
pub async fn reset_lab(
    lab: String,
    csrf: Option<String>,
    confirm: Option<String>,
) -> Result<Settings, ApiError> {
    guarded(async move {
        let lab = open(&lab, Access::Write, &csrf).await?;
        if !ticked(&confirm) {
            return Err(ApiError::field(
                "confirm",
                "tick the box to confirm: a reset deletes the topic and the tables",
            ));
        }
        lab.reset().await
    })
    .await
}
