//! A lab's errors as the person who clicked reads them.

use app::api::ApiError;

use crate::engine::flow::FlowError;
use crate::service::lab::LabError;
use crate::service::lab::workspace::WorkspaceError;

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

/// A change to a lab's files as an answer: the path or the line at fault (400), a limit (413),
/// a switch not confirmed (409).
pub fn refused(e: WorkspaceError) -> ApiError {
    match e {
        WorkspaceError::BadPath { .. } => ApiError::field("path", e.to_string()),
        WorkspaceError::Code {
            file,
            line,
            column,
            message,
        } => ApiError::AtLine {
            field: file,
            line,
            column,
            message,
        },
        WorkspaceError::Project { file, message } => ApiError::field(file, message),
        WorkspaceError::TooLarge(m) => ApiError::TooLarge(m),
        WorkspaceError::Unreadable(m) => ApiError::field("file", m),
        WorkspaceError::Unconfirmed => ApiError::Busy(e.to_string()),
        WorkspaceError::Lab(e) => failed(e),
    }
}
