//! The server functions of a lab's declarative pipeline (week 14): its code, its landed files,
//! its event log and its data quality. Uploads go to the JSON API's multipart route, which the
//! landing page's form posts to.

use leptos::prelude::*;

use crate::error::ApiError;
#[cfg(feature = "ssr")]
use crate::fields::whole_number;
use crate::model::*;

#[cfg(feature = "ssr")]
use super::backend::Access;
#[cfg(feature = "ssr")]
use super::call::{guarded, open, ticked};

/// Which pipeline the lab runs, without its files.
#[server(prefix = "/fn", endpoint = "kind")]
pub async fn get_kind(lab: String) -> Result<PipelineKind, ApiError> {
    guarded(async move { Ok(open(&lab, Access::Read, &None).await?.kind().await) }).await
}

#[server(prefix = "/fn", endpoint = "code")]
pub async fn get_code(lab: String) -> Result<ProjectCode, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.code().await }).await
}

#[server(prefix = "/fn", endpoint = "save_file")]
pub async fn save_file(
    lab: String,
    csrf: Option<String>,
    path: String,
    text: String,
) -> Result<ProjectCode, ApiError> {
    guarded(async move {
        // A browser's textarea sends CRLF line ends; the project keeps the file's own.
        let text = text.replace("\r\n", "\n");
        open(&lab, Access::Write, &csrf)
            .await?
            .save_file(&path, &text)
            .await
    })
    .await
}

/// Analyses every flow of the lab's project, as a run does first: what resolves, what waits for
/// its files, and the first flow that does not resolve.
#[server(prefix = "/fn", endpoint = "validate")]
pub async fn validate_project(lab: String, csrf: Option<String>) -> Result<Validation, ApiError> {
    guarded(async move { open(&lab, Access::Write, &csrf).await?.validate().await }).await
}

/// Switches the lab's pipeline: `to` is `project` (week 14's example), `python` (week 14 in the
/// course's Python), `shop` (module 9 in SQL) or `course`.
#[server(prefix = "/fn", endpoint = "switch_pipeline")]
pub async fn switch_pipeline(
    lab: String,
    csrf: Option<String>,
    to: String,
    confirm: Option<String>,
) -> Result<ProjectCode, ApiError> {
    guarded(async move {
        let lab = open(&lab, Access::Write, &csrf).await?;
        match to.as_str() {
            "project" => lab.start_example(Example::Support, ticked(&confirm)).await,
            "shop" => lab.start_example(Example::Shop, ticked(&confirm)).await,
            "python" => {
                lab.start_example(Example::SupportPython, ticked(&confirm))
                    .await
            }
            "course" => lab.use_course(ticked(&confirm)).await,
            other => Err(ApiError::field(
                "to",
                format!("project, python, shop or course, not {other:?}"),
            )),
        }
    })
    .await
}

#[server(prefix = "/fn", endpoint = "landing")]
pub async fn get_landing(lab: String) -> Result<Vec<LandedFile>, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.landing().await }).await
}

#[server(prefix = "/fn", endpoint = "land_example")]
pub async fn land_example(
    lab: String,
    csrf: Option<String>,
    days: Option<String>,
    bad_rows: Option<String>,
) -> Result<Vec<LandedFile>, ApiError> {
    guarded(async move {
        let days = days.filter(|d| !d.trim().is_empty());
        open(&lab, Access::Write, &csrf)
            .await?
            .land_example(days.as_deref(), ticked(&bad_rows))
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "events")]
pub async fn get_events(lab: String, run: Option<String>) -> Result<EventLog, ApiError> {
    guarded(async move {
        let run = run
            .filter(|r| !r.is_empty())
            .map(|r| whole_number("run", &r))
            .transpose()?;
        open(&lab, Access::Read, &None).await?.events(run).await
    })
    .await
}

/// The Reconciliation page's data: the course's hours, or the project's check.
#[server(prefix = "/fn", endpoint = "reconciliation")]
pub async fn get_reconciliation(lab: String) -> Result<Reconciliation, ApiError> {
    guarded(async move {
        let backend = open(&lab, Access::Public, &None).await?;
        match backend.kind().await {
            PipelineKind::Project => Ok(Reconciliation::Project(backend.project_check().await?)),
            PipelineKind::Course => Ok(Reconciliation::Course(backend.hours().await?)),
        }
    })
    .await
}

/// The late ledger: every row a windowed table read after its window had closed.
#[server(prefix = "/fn", endpoint = "late")]
pub async fn get_late(lab: String, table: Option<String>) -> Result<LateLedger, ApiError> {
    guarded(async move {
        let table = table.filter(|t| !t.is_empty());
        open(&lab, Access::Read, &None)
            .await?
            .late(table.as_deref())
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "quality")]
pub async fn get_quality(
    lab: String,
    run: Option<String>,
    rule: Option<String>,
) -> Result<Quality, ApiError> {
    guarded(async move {
        let run = run
            .filter(|r| !r.is_empty())
            .map(|r| whole_number("run", &r))
            .transpose()?;
        let rule = rule.filter(|r| !r.is_empty());
        open(&lab, Access::Read, &None)
            .await?
            .quality(run, rule.as_deref())
            .await
    })
    .await
}

#[server(prefix = "/fn", endpoint = "key_history")]
pub async fn get_key_history(
    lab: String,
    table: String,
    key: String,
) -> Result<KeyHistory, ApiError> {
    guarded(async move {
        open(&lab, Access::Read, &None)
            .await?
            .key_history(&table, &key)
            .await
    })
    .await
}

/// The landing page's "run when new files land" setting.
#[server(prefix = "/fn", endpoint = "run_on_arrival")]
pub async fn set_run_on_arrival(
    lab: String,
    csrf: Option<String>,
    on: Option<String>,
) -> Result<Settings, ApiError> {
    guarded(async move {
        let change = SettingsChange {
            run_on_arrival: Some(ticked(&on)),
            ..Default::default()
        };
        open(&lab, Access::Write, &csrf)
            .await?
            .update_settings(change)
            .await
    })
    .await
}
