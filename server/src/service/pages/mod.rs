//! What each page shows, one file per page of `app/src/pages/`: read from the tables (truth),
//! Kafka and the history, into the shared types of `app::model`.

pub mod consumers;
pub mod cost;
pub mod freshness;
pub mod graph;
pub mod hours;
pub mod last_run;
pub mod late;
pub mod pipeline;
pub mod produce;
pub mod project_files;
pub mod project_freshness;
pub mod quality;
pub mod runs;
pub mod tables;
pub mod topic;
pub mod whatif;
mod window_freshness;

use app::api::ApiError;

use crate::service::lab::Lab;
use crate::store::History;

/// The lab's history; every lab the server serves keeps one.
pub(crate) fn history(lab: &Lab) -> Result<&History, ApiError> {
    lab.history()
        .ok_or_else(|| ApiError::Failed("this lab keeps no history".into()))
}
