//! The JSON API of a lab's declarative pipeline (PIPELINES §6 in the browser): its project's
//! files, landing files (multipart uploads, the role checked before the body is read), the
//! graph, the event log, data quality. Each answers as the matching page shows it.

use std::collections::HashMap;

use app::api::{Access, ApiError, Backend};
use app::model::{
    EventLog, Example, KeyHistory, LandedFile, LateLedger, PipelineKind, ProjectCheck, ProjectCode,
    ProjectGraph, Quality, Validation,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::multipart::MultipartError;
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::AppState;
use super::api::{Failure, Params, open};
use super::fields::{self, Body};
use crate::access;
use crate::service::error::refused;
use crate::service::lab::workspace::{MAX_FILES, checked_path};

type Answer<T> = Result<Json<T>, Failure>;

pub async fn code(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<ProjectCode> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.code().await?))
}

/// One project file as its raw text.
pub async fn file(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let path = params.get("path");
    let code = lab.code().await?;
    match code.files.into_iter().find(|f| f.path == path) {
        Some(f) => Ok(([("content-type", "text/plain; charset=utf-8")], f.text).into_response()),
        None => Err(ApiError::NotFound(format!("the project has no file {path:?}")).into()),
    }
}

/// Saves a project file from the raw text body, if the project still reads into a graph.
pub async fn save_file(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Answer<ProjectCode> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let path = params.get("path");
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::field(path, "the file must be UTF-8 text"))?;
    Ok(Json(lab.save_file(path, &text).await?))
}

/// Switches the lab's pipeline to `to`: at once when the lab has no tables, else with
/// `?confirm=true` (409 without it).
async fn switch(
    state: &AppState,
    params: &Params,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    to: PipelineKind,
) -> Answer<ProjectCode> {
    let lab = open(state, headers, params, Access::Write).await?;
    let confirm = fields::flag(query, "confirm")?;
    let example = query.get("example").map_or("", String::as_str);
    let example = Example::parse(example).map_err(|e| ApiError::field("example", e))?;
    Ok(Json(match to {
        PipelineKind::Project => lab.start_example(example, confirm).await?,
        PipelineKind::Course => lab.use_course(confirm).await?,
    }))
}

/// Week 14's example project.
pub async fn example(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<ProjectCode> {
    switch(&state, &params, &headers, &query, PipelineKind::Project).await
}

/// Back to the course's streams.
pub async fn course(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<ProjectCode> {
    switch(&state, &params, &headers, &query, PipelineKind::Course).await
}

/// Every flow of the project analysed as a run does first, nothing read or written.
pub async fn validate(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<Validation> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    Ok(Json(lab.validate().await?))
}

pub async fn landing(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<Vec<LandedFile>> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.landing().await?))
}

/// `{"days": "1-30", "bad_rows": false}`.
pub async fn land_example(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Answer<Vec<LandedFile>> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let body = Body::parse(&body)?;
    let days = body.optional_text("days", "text such as \"1-30\"")?;
    let bad_rows = body.flag("bad_rows")?.unwrap_or(false);
    Ok(Json(lab.land_example(days.as_deref(), bad_rows).await?))
}

/// A multipart error: over the body limit (413), or a body that is not multipart (400).
fn unreadable(e: MultipartError) -> ApiError {
    match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(e.body_text()),
        _ => ApiError::field("file", e.body_text()),
    }
}

/// Files as multipart parts named `file`, each filename a path under `landing/` (after a part
/// named `folder`, under that folder). The role is
/// checked before the body is read; every path is checked before any file is written. A form
/// post from the landing page (it accepts HTML) is sent back to the page with the outcome; its
/// CSRF token comes in the query, as a form cannot set a header.
pub async fn upload(
    State(state): State<AppState>,
    params: Params,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Result<Response, Failure> {
    let mut headers = request.headers().clone();
    if let Some(csrf) = query.get("csrf")
        && access::csrf_header(&headers).is_none()
        && let Ok(value) = csrf.parse()
    {
        headers.insert(access::CSRF_HEADER, value);
    }
    let form = headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let outcome = receive(&state, &params, &headers, request).await;
    if !form {
        return Ok(Json(outcome?.1).into_response());
    }
    let page = match params.lab() {
        app::model::DEFAULT_LAB => "/landing".to_string(),
        lab => format!("/labs/{lab}/landing"),
    };
    let said = match outcome {
        // The files this upload sent, not the folder's count after it.
        Ok((sent, _)) => format!("uploaded={sent}"),
        Err(e) => format!(
            "error={}",
            percent_encoding::utf8_percent_encode(
                &e.to_string(),
                percent_encoding::NON_ALPHANUMERIC
            )
        ),
    };
    Ok(Redirect::to(&format!("{page}?{said}")).into_response())
}

async fn receive(
    state: &AppState,
    params: &Params,
    headers: &HeaderMap,
    request: Request,
) -> Result<(usize, Vec<LandedFile>), ApiError> {
    let lab = open(state, headers, params, Access::Write).await?;
    let mut multipart = Multipart::from_request(request, state)
        .await
        .map_err(|e| ApiError::field("file", e.body_text()))?;
    let mut files = vec![];
    // The landing page's form names a folder first; its files land in it.
    let mut folder = String::new();
    while let Some(part) = multipart.next_field().await.map_err(unreadable)? {
        if part.name() == Some("folder") {
            let text = part.text().await.map_err(unreadable)?;
            folder = text.trim().trim_matches('/').to_string();
            continue;
        }
        if part.name() != Some("file") {
            return Err(ApiError::field(
                "file",
                format!("parts are named file, not {:?}", part.name().unwrap_or("")),
            ));
        }
        let Some(name) =
            part.file_name()
                .filter(|n| !n.is_empty())
                .map(|n| match folder.as_str() {
                    "" => n.to_string(),
                    folder => format!("{folder}/{n}"),
                })
        else {
            return Err(ApiError::field(
                "file",
                "each part needs a filename: its path under landing/",
            ));
        };
        checked_path(&name).map_err(refused)?;
        if files.len() == MAX_FILES {
            return Err(ApiError::TooLarge(format!(
                "at most {MAX_FILES} files in one upload"
            )));
        }
        let bytes = part.bytes().await.map_err(unreadable)?;
        files.push((name, bytes.to_vec()));
    }
    if files.is_empty() {
        return Err(ApiError::field("file", "no file was sent"));
    }
    let sent = files.len();
    Ok((sent, lab.upload(files).await?))
}

pub async fn graph(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<Option<ProjectGraph>> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.graph().await?))
}

pub async fn events(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<EventLog> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.events(fields::whole(&query, "run")?).await?))
}

pub async fn quality(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<Quality> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let rule = query.get("rule").map(String::as_str);
    Ok(Json(
        lab.quality(fields::whole(&query, "run")?, rule).await?,
    ))
}

/// A project lab's check of every table, run in a child process (PIPELINES §9).
pub async fn project_check(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Answer<ProjectCheck> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.project_check().await?))
}

/// `?table=hourly_sales` (every windowed table's without it).
pub async fn late(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<LateLedger> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let table = query
        .get("table")
        .map(String::as_str)
        .filter(|t| !t.is_empty());
    Ok(Json(lab.late(table).await?))
}

/// `?table=accounts&key=acc-007`.
pub async fn key_history(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Answer<KeyHistory> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let table = fields::required(&query, "table", "a table's name")?;
    if !crate::engine::tables::is_table_name(table) {
        let why = "a table's name: letters, digits and _";
        return Err(ApiError::field("table", why).into());
    }
    Ok(Json(
        lab.key_history(table, fields::required(&query, "key", "a key")?)
            .await?,
    ))
}
