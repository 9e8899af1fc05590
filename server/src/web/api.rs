//! The JSON API, for scripts: the same data and actions as the pages, through the same backend.
//! Bad input answers 400 naming the field, and nothing is written.

use std::collections::HashMap;

use app::api::{Access, ApiError, Backend, Server};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::AppState;
use super::fields::{self, Body};
use crate::access;
use crate::service::pages::produce;
use crate::service::runner::LabRunner;
use app::model::DEFAULT_LAB;

/// An API error as an HTTP answer: the status says what kind, the body says what to do.
pub struct Failure(ApiError);

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if let ApiError::Failed(detail) = &self.0 {
            tracing::error!("API call failed: {detail}");
        }
        (status, Json(self.0)).into_response()
    }
}

type Answer<T> = Result<Json<T>, Failure>;

/// The path's parameters: `lab` (the unscoped routes are lab `default`), and `id` on some.
pub struct Params(HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Failure> {
        type Raw = Path<HashMap<String, String>>;
        let params =
            <Raw as axum::extract::OptionalFromRequestParts<S>>::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::field("path", e.to_string()))?;
        Ok(Self(params.map(|Path(p)| p).unwrap_or_default()))
    }
}

impl Params {
    pub fn lab(&self) -> &str {
        self.0.get("lab").map_or(DEFAULT_LAB, String::as_str)
    }

    /// A path parameter, empty when the route has none of that name.
    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }
}

/// The lab of the request's path, if its caller may `access` it.
pub(super) async fn open(
    state: &AppState,
    headers: &HeaderMap,
    params: &Params,
    access: Access,
) -> Result<std::sync::Arc<LabRunner>, ApiError> {
    state.labs.open_lab(headers, params.lab(), access).await
}

pub async fn freshness(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<app::model::Freshness> {
    let lab = open(&state, &headers, &params, Access::Public).await?;
    Ok(Json(lab.freshness().await?))
}

pub async fn runs(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<app::model::RunsPage> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let before = fields::whole(&query, "before")?;
    let limit = fields::whole(&query, "limit")?.unwrap_or(50);
    Ok(Json(lab.runs(before, limit).await?))
}

pub async fn start_run(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let wait = fields::flag(&query, "wait")?;
    let run = lab.start_run("api", wait).await?;
    let status = if wait {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(run)).into_response())
}

/// Stops the lab's run in progress: `{"cancelled": true}`, or false when none was going on.
pub async fn cancel_run(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<serde_json::Value> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let cancelled = lab.cancel_run().await?;
    Ok(Json(serde_json::json!({ "cancelled": cancelled })))
}

pub async fn run(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<app::model::RunDetail> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let id = app::fields::run_id(params.get("id"))?;
    Ok(Json(lab.run(id).await?))
}

pub async fn hours(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<Vec<app::model::HourRow>> {
    let lab = open(&state, &headers, &params, Access::Public).await?;
    Ok(Json(lab.hours().await?))
}

/// One event as SPEC §1, or `{"scenario": "course", "batch": "3"}`; `?and_run=true` runs after.
pub async fn produce(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Answer<app::model::Sent> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let and_run = fields::flag(&query, "and_run")?;
    let fields = Body::parse(&body)?;
    let sent = if fields.has("scenario") || fields.has("batch") {
        let (scenario, batch) = (fields.text("scenario")?, fields.text("batch")?);
        lab.produce_batch(&scenario, &batch, and_run).await?
    } else {
        // The body's own text: an amount is read from its digits, never through a float.
        let event = produce::parse_event(&body)?;
        lab.produce_parsed(event, "api", and_run).await?
    };
    Ok(Json(sent))
}

pub async fn settings(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<app::model::Settings> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.settings().await?))
}

/// `{"schedule_seconds": 60}` (null: no schedule), `{"dedup": false}` (from the next reset),
/// `{"public": true}` (freshness and reconciliation readable without a token),
/// `{"run_on_arrival": true}` (files landing start a run).
pub async fn update_settings(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Answer<app::model::Settings> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let body = Body::parse(&body)?;
    // The cost of a cluster is the instructor's to set, for the class: asked before its
    // values are read.
    let lab = match body.has("cost") {
        true => open(&state, &headers, &params, Access::Manage).await?,
        false => lab,
    };
    let mut change = app::model::SettingsChange::default();
    for (key, value) in body.iter() {
        match (key, value) {
            ("schedule_seconds", Value::Null) => change.schedule_seconds = Some(None),
            ("schedule_seconds", v) => {
                let expected = "a whole number of seconds, or null for no schedule";
                change.schedule_seconds = Some(Some(fields::count_of(key, v, expected)?));
            }
            ("dedup", v) => change.dedup = Some(fields::flag_of(key, v)?),
            ("public", v) => change.public = Some(fields::flag_of(key, v)?),
            ("run_on_arrival", v) => change.run_on_arrival = Some(fields::flag_of(key, v)?),
            ("cost", Value::Object(cost)) => change.cost = Some(cost_model(cost)?),
            ("cost", _) => {
                return Err(ApiError::field(
                    "cost",
                    "{\"startup_s\": 300, \"minimum_s\": 60, \"price_per_hour\": \"1.00\"}",
                )
                .into());
            }
            (other, _) => {
                return Err(ApiError::field(
                    other,
                    "not a setting; the settings are schedule_seconds, dedup, public, \
                     run_on_arrival and cost",
                )
                .into());
            }
        }
    }
    Ok(Json(lab.update_settings(change).await?))
}

/// `{"startup_s": 300, "minimum_s": 60, "price_per_hour": "1.00"}`: each may be left out (its
/// default).
fn cost_model(fields: &serde_json::Map<String, Value>) -> Result<app::model::CostModel, ApiError> {
    let mut cost = app::model::CostModel::default();
    for (key, value) in fields {
        let seconds = || fields::count_of(key, value, "a whole number of seconds");
        match key.as_str() {
            "startup_s" => cost.startup_s = seconds()?,
            "minimum_s" => cost.minimum_s = seconds()?,
            "price_per_hour" => {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                cost.price_per_hour_cents = app::model::CostModel::cents(&text)
                    .map_err(|e| ApiError::field("price_per_hour", e))?;
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "not part of the cost; it has startup_s, minimum_s and price_per_hour",
                ));
            }
        }
    }
    Ok(cost)
}

pub async fn reset(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<app::model::Settings> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    Ok(Json(lab.reset().await?))
}

/// The labs the caller may open, each summed up.
pub async fn labs(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Answer<Vec<app::model::LabSummary>> {
    Ok(Json(state.labs.labs(&headers).await?))
}

/// `{"name": "ann"}` (instructor only): answers `{"lab": "ann", "token": "..."}`, shown once.
pub async fn create_lab(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    // Who asks is checked before what they ask: a refused caller learns nothing from the body.
    state
        .labs
        .open_lab(&headers, DEFAULT_LAB, Access::Manage)
        .await?;
    let name = Body::parse(&body)?.text("name")?;
    let created = state
        .labs
        .create_lab(&headers, &name, access::csrf_header(&headers))
        .await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// `{"class": "dp-2026", "list": "Ann Lee\nBob, bob@x.org\n..."}` (instructor only): a lab and a
/// learner token for each line not made into a lab before, shown once, with the sheet as CSV.
pub async fn create_class(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Failure> {
    state
        .labs
        .open_lab(&headers, DEFAULT_LAB, Access::Manage)
        .await?;
    let body = Body::parse(&body)?;
    let (class, list) = (body.text("class")?, body.text("list")?);
    let made = state
        .labs
        .create_class(&headers, &class, &list, access::csrf_header(&headers))
        .await?;
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

pub async fn delete_lab(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<StatusCode, Failure> {
    state
        .labs
        .delete_lab(&headers, params.lab(), access::csrf_header(&headers))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn viewer_token(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let token = state
        .labs
        .viewer_token(&headers, params.lab(), access::csrf_header(&headers))
        .await?;
    Ok((StatusCode::CREATED, Json(token)).into_response())
}
