//! The classroom's server functions (issue "The classroom"): a lab's milestones.

use leptos::prelude::*;

use crate::error::ApiError;
use crate::model::LabProgress;

#[cfg(feature = "ssr")]
use super::backend::Access;
#[cfg(feature = "ssr")]
use super::call::{guarded, open};

/// The lab's milestones, each proved from what the lab did.
#[server(prefix = "/fn", endpoint = "progress")]
pub async fn get_progress(lab: String) -> Result<LabProgress, ApiError> {
    guarded(async move { open(&lab, Access::Read, &None).await?.progress().await }).await
}
