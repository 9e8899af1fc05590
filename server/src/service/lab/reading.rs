//! How a lab reads its project into a graph. Alone (the command line, tests, a run's child
//! process) it reads in this process. The server's labs are given a reader that reads in a child
//! process ([`Lab::reading_projects_with`]): no learner SQL is parsed in the server. The graph
//! read is kept while the project's files stay the same, so pages ask a child only after a change.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::Lab;
use super::workspace::{WorkspaceError, code_error};
use crate::engine::declarative::graph::{self, Graph};

/// Reads the project in a folder (the lab's own, or a save's scratch copy) into its graph.
pub type ReadProject =
    Arc<dyn Fn(Lab, PathBuf) -> BoxFuture<'static, Result<Graph, WorkspaceError>> + Send + Sync>;

/// A lab's reader and the last graph it read. Every handle of a lab shares it.
#[derive(Default)]
pub struct Reading {
    read: Option<ReadProject>,
    /// The project's files' fingerprint and what they read into.
    kept: tokio::sync::Mutex<Option<(u64, Kept)>>,
}

/// What a project read into: its graph, or where its code does not read (the same files read
/// the same way again; a reader that stopped, past its time, is not kept).
enum Kept {
    Graph(Arc<Graph>),
    Code(WorkspaceError),
}

impl Kept {
    fn of(read: &Result<Arc<Graph>, WorkspaceError>) -> Option<Self> {
        match read {
            Ok(graph) => Some(Kept::Graph(graph.clone())),
            Err(e) => again(e).map(Kept::Code),
        }
    }

    fn get(&self) -> Result<Arc<Graph>, WorkspaceError> {
        match self {
            Kept::Graph(graph) => Ok(graph.clone()),
            Kept::Code(e) => Err(again(e).expect("only errors in the code are kept")),
        }
    }
}

/// The same error once more, for an error in the project's code.
fn again(e: &WorkspaceError) -> Option<WorkspaceError> {
    match e {
        WorkspaceError::Code {
            file,
            line,
            column,
            message,
        } => Some(WorkspaceError::Code {
            file: file.clone(),
            line: *line,
            column: *column,
            message: message.clone(),
        }),
        WorkspaceError::Project { file, message } => Some(WorkspaceError::Project {
            file: file.clone(),
            message: message.clone(),
        }),
        _ => None,
    }
}

impl Lab {
    /// The same lab, reading its project with `read` (the server's: in a child process).
    pub fn reading_projects_with(self, read: ReadProject) -> Self {
        Self {
            reading: Arc::new(Reading {
                read: Some(read),
                kept: Default::default(),
            }),
            ..self
        }
    }

    /// The lab's project as a graph, its errors at their file, line and column.
    pub async fn project_graph(&self) -> Result<Arc<Graph>, WorkspaceError> {
        let dir = self.project_dir();
        let Some(read) = self.reading.read.clone() else {
            return graph::load(&dir)
                .map(Arc::new)
                .map_err(|e| code_error(e, &dir));
        };
        // Unreadable files are the reader's to say.
        let Ok(files) = self.project_files() else {
            return read(self.clone(), dir).await.map(Arc::new);
        };
        let mut hasher = std::hash::DefaultHasher::new();
        for file in &files {
            (&file.path, &file.text).hash(&mut hasher);
        }
        let fingerprint = hasher.finish();
        // Held while reading: pages asking at once wait for one reader.
        let mut kept = self.reading.kept.lock().await;
        if let Some((_, kept)) = kept.as_ref().filter(|(f, _)| *f == fingerprint) {
            return kept.get();
        }
        let graph = read(self.clone(), dir).await.map(Arc::new);
        *kept = Kept::of(&graph).map(|k| (fingerprint, k));
        graph
    }
}
