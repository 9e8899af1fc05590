//! The classroom's JSON API (issue "The classroom"): a lab's milestones, each proved from what
//! the lab did (`GET …/progress`).

use app::api::{Access, Backend};
use app::model::LabProgress;
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
