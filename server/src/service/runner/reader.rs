//! The child's side of reading a project (`reckon worker --check-project DIR [--validate]`,
//! started by `child/check.rs`): it reads the project in `DIR` into a graph as a save does and,
//! asked to, analyses every flow against the lab's tables (`declared::validate`), on a thread
//! with a 512 MiB stack and no network. It says `ok <what it read, as JSON>` or `failed <what it
//! found, as JSON>` on stdout, and ends.

use app::model::{Unresolved, Validation};

use super::worker::{sandboxed, say};
use crate::config::Config;
use crate::engine::declarative::check;
use crate::engine::declarative::declared::validate;
use crate::engine::declarative::graph::Graph;
use crate::service::lab::Lab;
use crate::service::lab::workspace::{WorkspaceError, read_project};

/// What a child read: the project's graph and, when asked, what analysing its flows found, or
/// what checking its tables found.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Read {
    pub graph: Graph,
    pub validation: Option<Validation>,
    #[serde(default)]
    pub check: Option<app::model::ProjectCheck>,
}

/// What the parent asks of a child reading a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// The graph alone: no network, no tables.
    Graph,
    /// Its flows analysed over the lab's tables.
    Validate,
    /// Every table checked against its sources (the lab's broker reachable: a flow may read
    /// Kafka).
    Check,
}

/// What a child found reading a project, as it tells its parent: the error a save shows.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum Found {
    Code {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    Project {
        file: String,
        message: String,
    },
    Other(String),
}

impl From<WorkspaceError> for Found {
    fn from(error: WorkspaceError) -> Self {
        match error {
            WorkspaceError::Code {
                file,
                line,
                column,
                message,
            } => Found::Code {
                file,
                line,
                column,
                message,
            },
            WorkspaceError::Project { file, message } => Found::Project { file, message },
            other => Found::Other(other.to_string()),
        }
    }
}

impl From<Found> for WorkspaceError {
    fn from(found: Found) -> Self {
        match found {
            Found::Code {
                file,
                line,
                column,
                message,
            } => WorkspaceError::Code {
                file,
                line,
                column,
                message,
            },
            Found::Project { file, message } => WorkspaceError::Project { file, message },
            Found::Other(message) => WorkspaceError::Unreadable(message),
        }
    }
}

/// `reckon worker --check-project DIR`: reads the project in `dir` and, given the lab's
/// `validate_in`, analyses its flows over the lab's tables; says what it read or found.
pub fn check_project(
    dir: std::path::PathBuf,
    asked: Asked,
    config: Option<Config>,
) -> std::process::ExitCode {
    // Reading a project needs no network at all; its check, the lab's broker alone.
    match (asked, &config) {
        (Asked::Check, Some(config)) => sandboxed(&crate::process::sandbox::broker_ports(
            &config.bootstrap_servers(),
        )),
        _ => sandboxed(&[]),
    }
    let read = std::thread::Builder::new()
        .name("reckon-check".into())
        .stack_size(512 << 20)
        .spawn(move || read(&dir, asked, config));
    let read = match read {
        Ok(thread) => thread.join(),
        // Within limits too tight for its stack: said, not panicked (a panic's report may
        // need memory the limit refuses).
        Err(e) => Ok(Err(WorkspaceError::Unreadable(format!(
            "the process reading the project could not start its thread: {e}"
        )))),
    };
    let failed = |found: Found| {
        say(format_args!(
            "failed {}",
            serde_json::to_string(&found).unwrap_or_default()
        ))
    };
    match read {
        Ok(Ok(read)) => match serde_json::to_string(&read) {
            Ok(read) => say(format_args!("ok {read}")),
            Err(e) => failed(Found::Other(format!("what was read would not write: {e}"))),
        },
        Ok(Err(e)) => failed(Found::from(e)),
        Err(_) => failed(Found::Other("reading the project panicked".into())),
    }
    std::process::ExitCode::SUCCESS
}

fn read(
    dir: &std::path::Path,
    asked: Asked,
    config: Option<Config>,
) -> Result<Read, WorkspaceError> {
    let graph = read_project(dir)?;
    let mut read = Read {
        graph,
        validation: None,
        check: None,
    };
    let Some(config) = config.filter(|_| asked != Asked::Graph) else {
        return Ok(read);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| WorkspaceError::Unreadable(format!("the check's runtime: {e}")))?;
    let lab = Lab::new(config).sharing(Default::default());
    match asked {
        Asked::Validate => {
            let validation = runtime.block_on(validate::validate(&lab.flows(), &read.graph));
            read.validation = Some(described(validation));
        }
        Asked::Check => {
            let graph = &read.graph;
            let checked = runtime.block_on(async {
                let cx = lab.project_flows(graph).await.map_err(|e| e.to_string())?;
                check::report(&cx, graph, check::Scope::Every)
                    .await
                    .map_err(|e| e.to_string())
            });
            read.check = Some(checked.unwrap_or_else(|error| app::model::ProjectCheck {
                error: Some(error),
                ..Default::default()
            }));
        }
        Asked::Graph => {}
    }
    Ok(read)
}

/// What validating found, as pages show it.
pub(crate) fn described(
    validated: Result<validate::Validated, validate::Unresolved>,
) -> Validation {
    match validated {
        Ok(v) => Validation {
            resolved: v.resolved,
            by_name_only: v.by_name_only,
            unresolved: None,
        },
        Err(e) => Validation {
            unresolved: Some(Unresolved {
                flow: e.flow,
                file: e.place.file,
                line: e.place.line,
                column: e.place.column,
                message: e.message,
            }),
            ..Default::default()
        },
    }
}
