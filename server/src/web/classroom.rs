//! The classroom's JSON API (issue "The classroom"): a lab's milestones, each proved from what
//! the lab did (`GET …/progress`), and a class's board (`GET /api/classes/{class}/progress`).

use app::api::{Access, Backend, Server};
use app::model::{ClassProgress, LabProgress};
use axum::Json;
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
