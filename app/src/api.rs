//! The server functions the pages call, and the [`Backend`] the server provides them as context.
//! Each function only forwards to the backend: the JSON API calls the same backend, so pages and
//! scripts see the same figures.

use std::fmt;

use leptos::prelude::*;
use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

use crate::model::*;

/// What can go wrong behind a page or an API call, in words the person who clicked can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApiError {
    /// Bad input: which field, and what is wrong with it. Nothing was written.
    Field {
        field: String,
        message: String,
    },
    /// Another run of the lab is going on.
    Busy(String),
    NotFound(String),
    /// Anything else (Kafka down, a table unreadable, ...).
    Failed(String),
}

impl ApiError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The field this error is about, if it is about one.
    pub fn field_name(&self) -> Option<&str> {
        match self {
            Self::Field { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field { field, message } => write!(f, "{field}: {message}"),
            Self::Busy(m) | Self::NotFound(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ApiError {}

impl FromServerFnError for ApiError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        Self::Failed(value.to_string())
    }
}

/// An event as the produce form sends it: every field as typed, checked by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventForm {
    pub order_id: String,
    pub customer_id: String,
    pub status: String,
    pub amount: String,
    pub event_time: String,
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
    ) -> Result<Settings, ApiError>;
    async fn reset(&self) -> Result<Settings, ApiError>;
}

#[cfg(feature = "ssr")]
fn backend() -> Result<std::sync::Arc<dyn Backend>, ApiError> {
    use_context::<std::sync::Arc<dyn Backend>>()
        .ok_or_else(|| ApiError::Failed("the server provided no backend".into()))
}

/// A checkbox's value: present (any value) when ticked.
#[cfg(feature = "ssr")]
fn ticked(value: &Option<String>) -> bool {
    value.as_deref().is_some_and(|v| v != "false")
}

#[server(prefix = "/fn", endpoint = "freshness")]
pub async fn get_freshness() -> Result<Freshness, ApiError> {
    backend()?.freshness().await
}

#[server(prefix = "/fn", endpoint = "runs")]
pub async fn get_runs(before: Option<i64>, limit: Option<i64>) -> Result<RunsPage, ApiError> {
    backend()?.runs(before, limit.unwrap_or(50)).await
}

#[server(prefix = "/fn", endpoint = "run")]
pub async fn get_run(id: i64) -> Result<RunDetail, ApiError> {
    backend()?.run(id).await
}

#[server(prefix = "/fn", endpoint = "start_run")]
pub async fn start_run() -> Result<RunStarted, ApiError> {
    backend()?.start_run("button", false).await
}

#[server(prefix = "/fn", endpoint = "hours")]
pub async fn get_hours() -> Result<Vec<HourRow>, ApiError> {
    backend()?.hours().await
}

#[server(prefix = "/fn", endpoint = "produce")]
pub async fn produce_event(event: EventForm, and_run: Option<String>) -> Result<Sent, ApiError> {
    backend()?
        .produce_event(event, "form", ticked(&and_run))
        .await
}

#[server(prefix = "/fn", endpoint = "send_batch")]
pub async fn send_batch(batch: String, and_run: Option<String>) -> Result<Sent, ApiError> {
    backend()?
        .produce_batch("course", &batch, ticked(&and_run))
        .await
}

#[server(prefix = "/fn", endpoint = "send_again")]
pub async fn send_again(id: i64, and_run: Option<String>) -> Result<Sent, ApiError> {
    backend()?.send_again(id, ticked(&and_run)).await
}

#[server(prefix = "/fn", endpoint = "produce_page")]
pub async fn get_produce_page() -> Result<ProducePage, ApiError> {
    backend()?.produce_page().await
}

#[server(prefix = "/fn", endpoint = "topic")]
pub async fn get_topic() -> Result<TopicView, ApiError> {
    backend()?.topic().await
}

#[server(prefix = "/fn", endpoint = "table")]
pub async fn get_table(name: String, version: Option<i64>) -> Result<TableView, ApiError> {
    backend()?.table(&name, version).await
}

#[server(prefix = "/fn", endpoint = "pipeline")]
pub async fn get_pipeline() -> Result<PipelineView, ApiError> {
    backend()?.pipeline().await
}

#[server(prefix = "/fn", endpoint = "settings")]
pub async fn get_settings() -> Result<Settings, ApiError> {
    backend()?.settings().await
}

/// The settings form: an empty schedule turns the schedule off.
#[server(prefix = "/fn", endpoint = "save_settings")]
pub async fn save_settings(
    schedule_seconds: String,
    dedup: Option<String>,
) -> Result<Settings, ApiError> {
    let schedule = match schedule_seconds.trim() {
        "" | "0" => None,
        text => Some(text.parse::<u64>().map_err(|_| {
            ApiError::field(
                "schedule_seconds",
                "a whole number of seconds, or empty for no schedule",
            )
        })?),
    };
    backend()?
        .update_settings(Some(schedule), Some(ticked(&dedup)))
        .await
}

#[server(prefix = "/fn", endpoint = "reset")]
pub async fn reset_lab(confirm: Option<String>) -> Result<Settings, ApiError> {
    if !ticked(&confirm) {
        return Err(ApiError::field(
            "confirm",
            "tick the box to confirm: a reset deletes the topic and the tables",
        ));
    }
    backend()?.reset().await
}
