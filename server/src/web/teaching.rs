//! The teaching views' JSON API: the what-if watermark (`GET …/whatif?delay=2h`), a consumer in
//! one of the lab's groups (`POST …/consumers` with `{"group", "max", "from_beginning"}`), and
//! the topic with those groups beside bronze's offsets (`GET …/topic`).

use std::collections::HashMap;

use app::api::{Access, ApiError, Backend};
use app::model::{ConsumeRequest, GroupRead, WhatIf};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use serde_json::Value;

use super::AppState;
use super::api::{Failure, Params, object, open};

/// Messages a consumer reads when the request does not say.
const DEFAULT_MAX: usize = 10;

pub async fn whatif(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<WhatIf>, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let delay = query
        .get("delay")
        .ok_or_else(|| ApiError::field("delay", "required: 2h, 90m or 90 (minutes)"))?;
    Ok(Json(lab.whatif(delay).await?))
}

pub async fn consume(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<GroupRead>, Failure> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let body = object(&body)?;
    let group = match body.get("group") {
        Some(Value::String(g)) => g.clone(),
        _ => return Err(ApiError::field("group", "required, as text").into()),
    };
    let max = match body.get("max") {
        None | Some(Value::Null) => DEFAULT_MAX,
        Some(v) => v
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| ApiError::field("max", "a whole number of messages"))?,
    };
    let from_beginning = match body.get("from_beginning") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::field("from_beginning", "true or false").into()),
    };
    let request = ConsumeRequest {
        group,
        max,
        from_beginning,
    };
    Ok(Json(lab.consume(request).await?))
}

/// The topic page as JSON: partitions, bronze's offsets, the lab's consumer groups.
pub async fn topic(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
) -> Result<Json<app::model::TopicView>, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    Ok(Json(lab.topic().await?))
}
