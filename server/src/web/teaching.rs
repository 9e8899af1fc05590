//! The teaching views' JSON API: the what-if watermark (`GET …/whatif?delay=2h`), a consumer in
//! one of the lab's groups (`POST …/consumers` with `{"group", "max", "from_beginning"}`), and
//! the topic with those groups beside bronze's offsets (`GET …/topic`).

use std::collections::HashMap;

use app::api::{Access, Backend};
use app::model::{ConsumeRequest, GroupRead, WhatIf};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::HeaderMap;

use super::AppState;
use super::api::{Failure, Params, open};
use super::fields::{self, Body};

/// Messages a consumer reads when the request does not say.
const DEFAULT_MAX: usize = 10;

pub async fn whatif(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<WhatIf>, Failure> {
    let lab = open(&state, &headers, &params, Access::Read).await?;
    let delay = fields::required(&query, "delay", "2h, 90m or 90 (minutes)")?;
    Ok(Json(lab.whatif(delay).await?))
}

pub async fn consume(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<GroupRead>, Failure> {
    let lab = open(&state, &headers, &params, Access::Write).await?;
    let body = Body::parse(&body)?;
    let group = body.text("group")?;
    let max = body
        .count("max", "a whole number of messages")?
        .map_or(DEFAULT_MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let from_beginning = body.flag("from_beginning")?.unwrap_or(false);
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
