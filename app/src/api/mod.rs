//! The server functions the pages call, and the [`Backend`] the server provides them as context.
//! Each function only forwards to the backend: the JSON API calls the same backend, so pages and
//! scripts see the same figures.

mod backend;
#[cfg(feature = "ssr")]
mod call;
pub mod classroom;
pub mod project;

use leptos::prelude::*;

pub use crate::error::ApiError;
#[cfg(feature = "ssr")]
use crate::fields::{self, whole_number};

pub use backend::{Access, EventForm};
#[cfg(feature = "ssr")]
pub use backend::{Backend, Server};
#[cfg(feature = "ssr")]
use call::{guarded, open, refused_with_status, server, ticked};

use crate::model::*;

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

/// Makes a lab and a learner token for each line of `list` new to class `class`.
#[server(prefix = "/fn", endpoint = "create_class")]
pub async fn create_class(
    class: String,
    list: String,
    csrf: Option<String>,
) -> Result<ClassMade, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let answer = server
            .create_class(&headers, &class, &list, csrf.as_deref())
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
        let id = fields::run_id(&id)?;
        open(&lab, Access::Read, &None).await?.run(id).await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "cancel_run")]
pub async fn cancel_run(lab: String, csrf: Option<String>) -> Result<bool, ApiError> {
    guarded(async move { open(&lab, Access::Write, &csrf).await?.cancel_run().await }).await
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
    column: Option<String>,
    op: Option<String>,
    value: Option<String>,
    page: Option<String>,
) -> Result<TableView, ApiError> {
    guarded(async move {
        let version = version.map(|v| whole_number("version", &v)).transpose()?;
        let page = fields::page(page.as_deref())?;
        let wanted = RowsWanted {
            column: column.filter(|c| !c.is_empty()),
            op,
            value,
            page,
        };
        open(&lab, Access::Read, &None)
            .await?
            .table(&name, version, &wanted)
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
        let schedule = fields::schedule_seconds(&schedule_seconds)?;
        lab.update_settings(SettingsChange {
            schedule_seconds: Some(schedule),
            dedup: Some(ticked(&dedup)),
            public: Some(ticked(&public)),
            ..Default::default()
        })
        .await
    })
    .await
}

/// The instructor's price model for the cost of freshness: start-up and minimum bill in whole
/// minutes, a price an hour such as `1` or `0.25`.
#[server(prefix = "/fn", endpoint = "save_cost")]
pub async fn save_cost(
    lab: String,
    csrf: Option<String>,
    startup_minutes: String,
    minimum_minutes: String,
    price_per_hour: String,
) -> Result<Settings, ApiError> {
    guarded(async move {
        let minutes = |field: &str, text: &str| {
            text.trim()
                .parse::<u64>()
                .ok()
                .filter(|m| *m <= 24 * 60)
                .map(|m| m * 60)
                .ok_or_else(|| ApiError::field(field, "a whole number of minutes, at most a day"))
        };
        let cost = CostModel {
            startup_s: minutes("startup_minutes", &startup_minutes)?,
            minimum_s: minutes("minimum_minutes", &minimum_minutes)?,
            price_per_hour_cents: CostModel::cents(&price_per_hour)
                .map_err(|e| ApiError::field("price_per_hour", e))?,
        };
        open(&lab, Access::Manage, &csrf)
            .await?
            .update_settings(SettingsChange {
                cost: Some(cost),
                ..Default::default()
            })
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

/// The what-if on the reconciliation page: `delay` as typed (`2h`, `90m`, `90`).
#[server(prefix = "/fn", endpoint = "whatif")]
pub async fn get_whatif(lab: String, delay: String) -> Result<WhatIf, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.whatif(&delay).await }).await
}

/// The topic page's consumer: reads `max` messages in the lab's group `group` and stops.
#[server(prefix = "/fn", endpoint = "consume")]
pub async fn start_consumer(
    lab: String,
    csrf: Option<String>,
    group: String,
    max: String,
    from_beginning: Option<String>,
) -> Result<GroupRead, ApiError> {
    guarded(async move {
        let max = whole_number("max", &max)?;
        let request = ConsumeRequest {
            group: group.trim().to_string(),
            max: usize::try_from(max)
                .map_err(|_| ApiError::field("max", "a whole number of messages"))?,
            from_beginning: ticked(&from_beginning),
        };
        let answer = open(&lab, Access::Write, &csrf)
            .await?
            .consume(request)
            .await;
        refused_with_status(answer)
    })
    .await
}
