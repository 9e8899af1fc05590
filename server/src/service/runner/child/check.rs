//! A project read in a child process (`reckon worker --check-project DIR`, `reader.rs` is its
//! side): a save's check of the project as it would be, "Validate", and the graph the pages
//! draw. No learner SQL is parsed in the server.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::Process;
use crate::config::RunLimits;
use crate::service::lab::Lab;
use crate::service::lab::reading::ReadProject;
use crate::service::lab::workspace::WorkspaceError;
use crate::service::runner::reader::{Asked, Found, Read};

/// The most a project's check may take.
const CHECK_WALL: Duration = Duration::from_secs(60);

/// Reads the project in `dir` into a graph in a child process within `limits` ([`CHECK_WALL`]
/// at most) and, as `asked`, analyses its flows or checks its tables over the lab's tables: what
/// it read, or what it found wrong as a save answers it.
pub async fn check_project(
    lab: &Lab,
    dir: &Path,
    limits: &RunLimits,
    asked: Asked,
) -> Result<Read, WorkspaceError> {
    let unreadable = |why: String| WorkspaceError::Unreadable(why);
    let mut args = vec!["--check-project".as_ref(), dir.as_os_str()];
    match asked {
        Asked::Graph => {}
        Asked::Validate => args.push("--validate".as_ref()),
        Asked::Check => args.push("--full-check".as_ref()),
    }
    let mut process =
        Process::start_with(lab, limits, &args).map_err(|e| unreadable(e.to_string()))?;
    let wall = limits.wall.min(CHECK_WALL);
    let said = tokio::time::timeout(wall, async {
        while let Ok(Some(line)) = process.lines.next_line().await {
            if let Some(read) = line.strip_prefix("ok ") {
                return Some(serde_json::from_str(read).map_err(|e| {
                    unreadable(format!("the process reading the project said: {e}"))
                }));
            }
            if let Some(found) = line.strip_prefix("failed ") {
                let found: Found =
                    serde_json::from_str(found).unwrap_or_else(|_| Found::Other(found.to_string()));
                return Some(Err(WorkspaceError::from(found)));
            }
        }
        None
    })
    .await;
    match said {
        Ok(Some(said)) => said,
        Ok(None) => Err(unreadable(format!(
            "reading the project stopped its process: {}",
            process.ended().await
        ))),
        Err(_) => {
            process.kill();
            Err(unreadable(format!(
                "reading the project took over {} s and was stopped",
                wall.as_secs()
            )))
        }
    }
}

/// The server's labs read their projects for pages in a child process within `limits`.
pub fn reader(limits: RunLimits) -> ReadProject {
    Arc::new(move |lab, dir| {
        Box::pin(async move {
            check_project(&lab, &dir, &limits, Asked::Graph)
                .await
                .map(|read| read.graph)
        })
    })
}
