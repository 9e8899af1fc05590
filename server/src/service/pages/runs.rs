//! The runs page (a timeline, newest first) and one run's page.

use app::api::ApiError;
use app::model::{RunDetail, RunsPage};

use super::history;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// A page of the lab's runs: `limit` of them (1 to 1000) older than `before`.
pub async fn page(lab: &Lab, before: Option<i64>, limit: i64) -> Result<RunsPage, ApiError> {
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::field("limit", "between 1 and 1000"));
    }
    history(lab)?
        .timeline(&lab.config.lab, limit, before)
        .await
        .map_err(failed)
}

/// One run of the lab, with its flows' events and the check's lines.
pub async fn run(lab: &Lab, id: i64) -> Result<RunDetail, ApiError> {
    history(lab)?
        .run(id)
        .await
        .map_err(failed)?
        .filter(|d| d.run.lab == lab.config.lab)
        .ok_or_else(|| ApiError::NotFound(format!("no run #{id}")))
}
