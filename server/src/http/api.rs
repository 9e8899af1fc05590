//! The JSON API, for scripts: the same data and actions as the pages, through the same backend.
//! Bad input answers 400 naming the field, and nothing is written.

use std::collections::HashMap;
use std::convert::Infallible;

use app::api::{ApiError, Backend};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::{Value, json};

use super::AppState;
use crate::views;

/// An API error as an HTTP answer: the status says what kind, the body says what to do.
pub struct Failure(ApiError);

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, field) = match &self.0 {
            ApiError::Field { field, .. } => (StatusCode::BAD_REQUEST, Some(field.clone())),
            ApiError::Busy(_) => (StatusCode::CONFLICT, None),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, None),
            ApiError::Failed(detail) => {
                tracing::error!("API call failed: {detail}");
                (StatusCode::INTERNAL_SERVER_ERROR, None)
            }
        };
        let mut body = json!({ "error": self.0.to_string() });
        if let Some(field) = field {
            body["field"] = Value::String(field);
        }
        (status, Json(body)).into_response()
    }
}

type Answer<T> = Result<Json<T>, Failure>;

/// A whole-number query parameter, or a 400 naming it.
fn int_param(query: &HashMap<String, String>, name: &str) -> Result<Option<i64>, ApiError> {
    query
        .get(name)
        .map(|v| {
            v.parse()
                .map_err(|_| ApiError::field(name, format!("must be a whole number, got {v:?}")))
        })
        .transpose()
}

/// A true/false query parameter, or a 400 naming it.
fn bool_param(query: &HashMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match query.get(name).map(String::as_str) {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") | Some("") => Ok(true),
        Some(other) => Err(ApiError::field(
            name,
            format!("must be true or false, got {other:?}"),
        )),
    }
}

/// A JSON object body, or a 400 saying what is wrong with it.
fn object(body: &Bytes) -> Result<serde_json::Map<String, Value>, ApiError> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::field("body", "must be a JSON object")),
        Err(e) => Err(ApiError::field("body", format!("not JSON: {e}"))),
    }
}

pub async fn freshness(State(state): State<AppState>) -> Answer<app::model::Freshness> {
    Ok(Json(state.dashboard.freshness().await?))
}

pub async fn runs(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<app::model::RunsPage> {
    let before = int_param(&query, "before")?;
    let limit = int_param(&query, "limit")?.unwrap_or(50);
    Ok(Json(state.dashboard.runs(before, limit).await?))
}

pub async fn start_run(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let wait = bool_param(&query, "wait")?;
    let run = state.dashboard.start_run("api", wait).await?;
    let status = if wait {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(run)).into_response())
}

pub async fn run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<app::model::RunDetail> {
    let id = id
        .parse()
        .map_err(|_| ApiError::field("id", format!("a run id is a whole number, not {id:?}")))?;
    Ok(Json(state.dashboard.run(id).await?))
}

pub async fn hours(State(state): State<AppState>) -> Answer<Vec<app::model::HourRow>> {
    Ok(Json(state.dashboard.hours().await?))
}

/// One event as SPEC §1, or `{"scenario": "course", "batch": "3"}`; `?and_run=true` runs after.
pub async fn produce(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Answer<app::model::Sent> {
    let and_run = bool_param(&query, "and_run")?;
    let body = object(&body)?;
    let sent = if body.contains_key("scenario") || body.contains_key("batch") {
        let text = |name: &str| match body.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            _ => Err(ApiError::field(name, "required, as text")),
        };
        let (scenario, batch) = (text("scenario")?, text("batch")?);
        state
            .dashboard
            .produce_batch(&scenario, &batch, and_run)
            .await?
    } else {
        let event = views::parse_event(&Value::Object(body))?;
        state
            .dashboard
            .produce_parsed(event, "api", and_run)
            .await?
    };
    Ok(Json(sent))
}

pub async fn settings(State(state): State<AppState>) -> Answer<app::model::Settings> {
    Ok(Json(state.dashboard.settings().await?))
}

/// `{"schedule_seconds": 60}` (null: no schedule) and/or `{"dedup": false}` (from the next reset).
pub async fn update_settings(
    State(state): State<AppState>,
    body: Bytes,
) -> Answer<app::model::Settings> {
    let body = object(&body)?;
    let mut schedule = None;
    let mut dedup = None;
    for (key, value) in &body {
        match (key.as_str(), value) {
            ("schedule_seconds", Value::Null) => schedule = Some(None),
            ("schedule_seconds", v) => {
                let seconds = v.as_u64().ok_or_else(|| {
                    ApiError::field(
                        "schedule_seconds",
                        "a whole number of seconds, or null for no schedule",
                    )
                })?;
                schedule = Some(Some(seconds));
            }
            ("dedup", Value::Bool(b)) => dedup = Some(*b),
            ("dedup", _) => return Err(ApiError::field("dedup", "true or false").into()),
            (other, _) => {
                return Err(ApiError::field(
                    other,
                    "not a setting; the settings are schedule_seconds and dedup",
                )
                .into());
            }
        }
    }
    Ok(Json(
        state.dashboard.update_settings(schedule, dedup).await?,
    ))
}

pub async fn reset(State(state): State<AppState>) -> Answer<app::model::Settings> {
    Ok(Json(state.dashboard.reset().await?))
}

/// Server-sent events: one message per announcement (run-started, run-finished, sent, reset,
/// settings), until the server stops.
pub async fn live(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = state.dashboard.subscribe();
    let stopping = state.stopping.clone();
    let stream = futures::stream::unfold(
        (receiver, stopping),
        |(mut receiver, mut stopping)| async move {
            loop {
                if *stopping.borrow() {
                    return None;
                }
                let message = tokio::select! {
                    message = receiver.recv() => message,
                    changed = stopping.changed() => {
                        if changed.is_err() {
                            return None;
                        }
                        continue;
                    }
                };
                let data = match message {
                    Ok(data) => data,
                    // Missed some: one message makes the page reload all the same.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        "{\"event\":\"lagged\"}".to_string()
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                };
                return Some((Ok(Event::default().data(data)), (receiver, stopping)));
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}
