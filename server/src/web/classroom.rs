//! The classroom's JSON API (issue "The classroom"): a lab's milestones, each proved from what
//! the lab did (`GET …/progress`), its writing tasks (`GET …/writing`, `PUT …/writing/{task}`
//! with the text as the body), and a class's board (`GET /api/classes/{class}/progress`).

use app::api::{Access, ApiError, Backend, Server};
use app::model::{ClassProgress, LabProgress, NewToken, Writing};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;

use super::AppState;
use super::api::{Failure, Params, open};

pub async fn progress(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Json<LabProgress>, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.progress().await?))
}

/// A class's board (the instructor only): each lab's milestones.
pub async fn class_progress(
    State(state): State<AppState>,
    axum::extract::Path(class): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Result<Json<ClassProgress>, Failure> {
    Ok(Json(state.labs.class_progress(&headers, &class).await?))
}

/// The lab's writing tasks, each with its newest text.
pub async fn writings(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Json<Vec<Writing>>, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.writings().await?))
}

/// Saves a writing task from the raw text body (`PUT …/writing/{task}`).
pub async fn save_writing(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Writing>, Failure> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::field("text", "the text must be UTF-8"))?;
    Ok(Json(lab.save_writing(params.get("task"), &text).await?))
}

/// A new learner token for the lab, replacing a lost one (the instructor only): the old one
/// opens nothing from now on.
pub async fn replace_token(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Json<NewToken>, Failure> {
    let csrf = crate::access::csrf_header(&headers);
    Ok(Json(
        state
            .labs
            .replace_token(&headers, params.lab(), csrf)
            .await?,
    ))
}

/// Deletes every lab of a class, and the class (the instructor only); without
/// `?confirm=true`, 409 saying what it would delete.
pub async fn delete_class(
    State(state): State<AppState>,
    axum::extract::Path(class): axum::extract::Path<String>,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Json<Vec<String>>, Failure> {
    let confirm = super::fields::flag(&query, "confirm")?;
    let csrf = crate::access::csrf_header(&headers);
    Ok(Json(
        state
            .labs
            .delete_class(&headers, &class, confirm, csrf)
            .await?,
    ))
}

/// `{"note": "why"}`: marks a milestone of the lab accepted by hand (the instructor only).
pub async fn accept_milestone(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<LabProgress>, Failure> {
    let body = super::fields::Body::parse(&body)?;
    let note = body.text("note")?;
    let csrf = crate::access::csrf_header(&headers);
    let at = (params.lab(), params.get("milestone"));
    Ok(Json(
        state
            .labs
            .accept_milestone(&headers, at, &note, csrf)
            .await?,
    ))
}

/// `{"hide_names": true|false}`: a token that opens the class's board and no lab (the
/// instructor only), shown once.
pub async fn class_viewer_token(
    State(state): State<AppState>,
    axum::extract::Path(class): axum::extract::Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<NewToken>, Failure> {
    let body = super::fields::Body::parse(&body)?;
    let hide = body.flag("hide_names")?.unwrap_or(false);
    let csrf = crate::access::csrf_header(&headers);
    Ok(Json(
        state
            .labs
            .class_viewer_token(&headers, &class, hide, csrf)
            .await?,
    ))
}
