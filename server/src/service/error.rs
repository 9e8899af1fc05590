//! A lab's errors as the person who clicked reads them.

use app::api::ApiError;

use crate::engine::flows::FlowError;
use crate::service::lab::LabError;

/// An engine or history error as an answer: busy, gone, or failed with its reason.
pub fn failed(e: impl Into<LabError>) -> ApiError {
    match e.into() {
        busy @ LabError::Busy { .. } => ApiError::Busy(busy.to_string()),
        gone @ LabError::Deleted { .. } => ApiError::NotFound(gone.to_string()),
        LabError::Flow(FlowError::DedupSettingFixed { .. }) => ApiError::Failed(
            "gold's state keeps the deduplication setting it started with; reset the lab to change it".into(),
        ),
        other => ApiError::Failed(other.to_string()),
    }
}
