//! The classroom's server functions (issue "The classroom"): a lab's milestones, a class's
//! board.

use leptos::prelude::*;

use crate::error::ApiError;
use crate::model::{ClassProgress, LabProgress, Writing};

#[cfg(feature = "ssr")]
use super::backend::Access;
#[cfg(feature = "ssr")]
use super::call::{guarded, open, server};

/// The lab's milestones, each proved from what the lab did.
#[server(prefix = "/fn", endpoint = "progress")]
pub async fn get_progress(lab: String) -> Result<LabProgress, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.progress().await }).await
}

/// Class `class`'s board: each lab's milestones (the instructor only).
#[server(prefix = "/fn", endpoint = "class_progress")]
pub async fn get_class_progress(class: String) -> Result<ClassProgress, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        server.class_progress(&headers, &class).await
    })
    .await
}

/// The lab's writing tasks, each with its newest text.
#[server(prefix = "/fn", endpoint = "writings")]
pub async fn get_writings(lab: String) -> Result<Vec<Writing>, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.writings().await }).await
}

/// Saves a writing task's text.
#[server(prefix = "/fn", endpoint = "save_writing")]
pub async fn save_writing(
    lab: String,
    csrf: Option<String>,
    task: String,
    text: String,
) -> Result<Writing, ApiError> {
    guarded(async move {
        let text = text.replace("\r\n", "\n");
        open(&lab, Access::Write, &csrf)
            .await?
            .save_writing(&task, &text)
            .await
    })
    .await
}

/// A new learner token for lab `lab`, replacing a lost one (the instructor only).
#[server(prefix = "/fn", endpoint = "replace_token")]
pub async fn replace_token(
    lab: String,
    csrf: Option<String>,
) -> Result<crate::model::NewToken, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        server.replace_token(&headers, &lab, csrf.as_deref()).await
    })
    .await
}

/// Deletes every lab of class `class` and the class, once confirmed (the instructor only).
#[server(prefix = "/fn", endpoint = "delete_class")]
pub async fn delete_class(
    class: String,
    confirm: Option<String>,
    csrf: Option<String>,
) -> Result<Vec<String>, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let confirm = confirm.is_some_and(|c| c == "true");
        server
            .delete_class(&headers, &class, confirm, csrf.as_deref())
            .await
    })
    .await
}

/// Marks a milestone of lab `lab` accepted by hand, with why (the instructor only).
#[server(prefix = "/fn", endpoint = "accept_milestone")]
pub async fn accept_milestone(
    lab: String,
    csrf: Option<String>,
    milestone: String,
    note: String,
) -> Result<LabProgress, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let at = (lab.as_str(), milestone.as_str());
        server
            .accept_milestone(&headers, at, &note, csrf.as_deref())
            .await
    })
    .await
}

/// A token that opens class `class`'s board and no lab (the instructor only).
#[server(prefix = "/fn", endpoint = "class_viewer_token")]
pub async fn class_viewer_token(
    class: String,
    hide_names: Option<String>,
    csrf: Option<String>,
) -> Result<crate::model::NewToken, ApiError> {
    guarded(async move {
        let (server, headers) = server()?;
        let hide = hide_names.is_some_and(|h| h == "true");
        server
            .class_viewer_token(&headers, &class, hide, csrf.as_deref())
            .await
    })
    .await
}
