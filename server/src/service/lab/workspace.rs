//! A lab's own files, for a learner who has a browser and no shell: its declarative project
//! (`project/`, read into a graph before any change is kept) and its `landing/` folder. Every
//! path a person names is checked before anything is written, and files are written whole
//! (a dot-file first, then renamed), so a run never reads half a file.

use std::path::{Component, Path, PathBuf};

use app::model::{Example, PipelineKind, ProjectFile};

use super::{Lab, LabError};
use crate::engine::declarative::graph::{self, Graph, ProjectError};
use crate::engine::declarative::sql::Format;
use crate::engine::declarative::{example, files};

/// The project's folder and its file, inside the lab's data folder.
pub const PROJECT: &str = "project";
pub const SPEC_FILE: &str = "spark-pipeline.yml";
/// Where files land for `read_files`, inside the lab's data folder.
pub const LANDING: &str = "landing";

/// Uploads: the most files in one request, and the most bytes the landing folder may hold.
pub const MAX_FILES: usize = 100;
pub const MAX_LANDING_BYTES: u64 = 512 * 1024 * 1024;
/// The most files a lab's landing folder holds (each run lists them all).
pub const MAX_LANDING_FILES: usize = 10_000;
/// The most files and bytes a project holds (each save reads it all again).
pub const MAX_PROJECT_FILES: usize = 100;
pub const MAX_PROJECT_BYTES: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A path a person named that the lab will not write.
    #[error("{path:?}: {why}")]
    BadPath { path: String, why: String },
    /// The project would not read into a graph with this change.
    #[error("{file}:{line}:{column}: {message}")]
    Code {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Project { file: String, message: String },
    /// Over a limit: nothing was written.
    #[error("{0}")]
    TooLarge(String),
    /// Reading the project stopped the process that read it (past its time, or dead).
    #[error("{0}")]
    Unreadable(String),
    /// Switching pipelines would reset tables, and nobody confirmed it.
    #[error("the lab has tables; switching its pipeline resets them, so confirm it")]
    Unconfirmed,
    #[error(transparent)]
    Lab(#[from] LabError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |source| LabError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A relative path of plain names (`a/b.json`): no `..`, no absolute path, no dot-file, no `_`
/// name (the file source skips those, so the file would never be read).
pub fn checked_path(path: &str) -> Result<PathBuf, WorkspaceError> {
    let bad = |why: &str| WorkspaceError::BadPath {
        path: path.to_string(),
        why: why.to_string(),
    };
    if path.is_empty() || path.len() > 255 {
        return Err(bad("a path of 1 to 255 characters"));
    }
    if path.ends_with('/') {
        return Err(bad("a file's path, not a folder's (it ends with `/`)"));
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return Err(bad(
            "names separated by `/`, without `\\` or control characters",
        ));
    }
    let relative = Path::new(path);
    let mut parts = 0;
    for part in relative.components() {
        match part {
            Component::Normal(name) => {
                let name = name.to_string_lossy();
                if name.starts_with('.') {
                    return Err(bad("no part of the path may start with `.`"));
                }
                if name.starts_with('_') {
                    return Err(bad("names starting with `_` are never read by read_files"));
                }
                parts += 1;
            }
            Component::ParentDir => return Err(bad("`..` would leave the folder")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(bad("a path inside the folder, not an absolute one"));
            }
            Component::CurDir => return Err(bad("no part of the path may be `.`")),
        }
    }
    match parts {
        1..=5 => Ok(relative.to_path_buf()),
        _ => Err(bad("at most 5 folders deep")),
    }
}

/// Writes `bytes` to `path` whole (see [`files::write_whole`]).
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), LabError> {
    files::write_whole(path, bytes).map_err(io(path))
}

/// Every file under `root`, relative to it with `/`, skipping dot-files; in path order.
pub fn files_under(root: &Path) -> Result<Vec<(String, std::fs::Metadata)>, LabError> {
    let mut found = vec![];
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&folder)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&folder))?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let meta = entry.metadata().map_err(io(&entry.path()))?;
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                let path = entry.path();
                let shown = path.strip_prefix(root).unwrap_or(&path);
                let parts: Vec<String> = shown
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().to_string())
                    .collect();
                found.push((parts.join("/"), meta));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// A project error as the file, line and column a person can go to.
pub(super) fn code_error(error: ProjectError, project: &Path) -> WorkspaceError {
    match error {
        ProjectError::Parse(e) => WorkspaceError::Code {
            file: e.place.file,
            line: e.place.line,
            column: e.place.column,
            message: e.message,
        },
        ProjectError::Graph { place, message } => WorkspaceError::Code {
            file: place.file,
            line: place.line,
            column: place.column,
            message,
        },
        ProjectError::File { path, detail } => WorkspaceError::Project {
            file: path
                .strip_prefix(project)
                .unwrap_or(&path)
                .display()
                .to_string(),
            message: detail,
        },
    }
}

/// Reads the project in `dir` into a graph, its errors at their file, line and column.
pub fn read_project(dir: &Path) -> Result<Graph, WorkspaceError> {
    graph::load(dir).map_err(|e| code_error(e, dir))
}

/// The start of the name of a save's scratch folder, in the lab's folder.
const SCRATCH: &str = ".project-check";

/// A scratch folder this old is a crashed save's: a save takes well under a minute.
const SCRATCH_LEFT: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the scratch folders crashed saves left in the lab's folder `dir` (a save under way
/// keeps its own, younger than [`SCRATCH_LEFT`]).
fn sweep_scratch(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > SCRATCH_LEFT));
        if old && entry.file_name().to_string_lossy().starts_with(SCRATCH) {
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!("could not remove a crashed save's {:?}: {e}", entry.path());
            }
        }
    }
}

impl Lab {
    pub fn project_dir(&self) -> PathBuf {
        self.config.data_dir.join(PROJECT)
    }

    pub fn landing_dir(&self) -> PathBuf {
        self.config.data_dir.join(LANDING)
    }

    /// The lab runs its project when it has one; else the course's streams.
    pub fn kind(&self) -> PipelineKind {
        match self.project_dir().join(SPEC_FILE).is_file() {
            true => PipelineKind::Project,
            false => PipelineKind::Course,
        }
    }

    /// The project's files: `spark-pipeline.yml` first, then the others by path.
    pub fn project_files(&self) -> Result<Vec<ProjectFile>, LabError> {
        let dir = self.project_dir();
        let mut files = vec![];
        for (path, _) in files_under(&dir)? {
            let full = dir.join(&path);
            let text = std::fs::read_to_string(&full).map_err(io(&full))?;
            files.push(ProjectFile { path, text });
        }
        files.sort_by_key(|f| (f.path != SPEC_FILE, f.path.clone()));
        Ok(files)
    }

    /// Keeps `text` as the project's file `path` if the project then still reads into a graph
    /// (`read`, given the folder of the project as it would be: [`read_project`] in this process,
    /// or the same in a child process, as the server does); else says where it fails, and
    /// nothing is written.
    pub fn save_project_file<T>(
        &self,
        path: &str,
        text: &str,
        read: impl FnOnce(&Path) -> Result<T, WorkspaceError>,
    ) -> Result<T, WorkspaceError> {
        let relative = checked_path(path)?;
        if path != SPEC_FILE && relative.extension().is_none_or(|e| e != "sql" && e != "py") {
            return Err(WorkspaceError::BadPath {
                path: path.into(),
                why: format!("a project holds {SPEC_FILE}, .sql and .py files"),
            });
        }
        if self.kind() == PipelineKind::Course {
            return Err(WorkspaceError::BadPath {
                path: path.into(),
                why: "this lab runs the course's streams; start a project first".into(),
            });
        }
        if path == SPEC_FILE
            && let Err(e) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        {
            let at = e.location();
            return Err(WorkspaceError::Code {
                file: path.into(),
                line: at.as_ref().map_or(1, |l| l.line()),
                column: at.as_ref().map_or(1, |l| l.column()),
                message: e.to_string(),
            });
        }
        // The project as it would be, in a scratch folder beside it, read into a graph.
        let dir = self.project_dir();
        let held = files_under(&dir)?;
        let others = held.iter().filter(|(p, _)| Path::new(p) != relative);
        let (count, bytes) = others.fold((1, text.len() as u64), |(n, b), (_, m)| {
            (n + 1, b + m.len())
        });
        if count > MAX_PROJECT_FILES || bytes > MAX_PROJECT_BYTES {
            return Err(WorkspaceError::TooLarge(format!(
                "a project holds at most {MAX_PROJECT_FILES} files and {MAX_PROJECT_BYTES} bytes; \
                 with {path} it would hold {count} files and {bytes} bytes"
            )));
        }
        sweep_scratch(&self.config.data_dir);
        let scratch = tempfile::Builder::new()
            .prefix(SCRATCH)
            .tempdir_in(&self.config.data_dir)
            .map_err(io(&self.config.data_dir))?;
        for (existing, _) in held {
            let (from, to) = (dir.join(&existing), scratch.path().join(&existing));
            if let Some(folder) = to.parent() {
                std::fs::create_dir_all(folder).map_err(io(folder))?;
            }
            std::fs::copy(&from, &to).map_err(io(&from))?;
        }
        write_whole(&scratch.path().join(&relative), text.as_bytes())?;
        let read = read(scratch.path())?;
        write_whole(&dir.join(&relative), text.as_bytes())?;
        Ok(read)
    }

    /// Whether the lab has any table.
    pub fn has_tables(&self) -> bool {
        std::fs::read_dir(self.tables.root())
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(false)
    }

    /// Switches the lab's pipeline (to week 14's example project, or back to the course's
    /// streams), under its lock; its tables and their state go when it has any and `confirm`.
    /// Landed files and the history stay.
    pub fn switch(
        &self,
        to: PipelineKind,
        example: Example,
        confirm: bool,
    ) -> Result<(), WorkspaceError> {
        let _lock = self.lock()?;
        if self.has_tables() {
            if !confirm {
                return Err(WorkspaceError::Unconfirmed);
            }
            self.tables.remove_all().map_err(LabError::from)?;
            let state = self.flows().state_dir;
            match std::fs::remove_dir_all(&state) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io(&state)(e).into());
                }
                _ => {}
            }
        }
        let dir = self.project_dir();
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&dir)(e).into()),
            _ => {}
        }
        let written = match (to, example) {
            (PipelineKind::Course, _) => Ok(()),
            (PipelineKind::Project, Example::Support) => example::write_project(&dir, Format::Json),
            // Module 9 reads the lab's topic, as the learner names it.
            (PipelineKind::Project, Example::Shop) => {
                example::shop::write_project(&dir, &self.config.topic_named())
            }
            (PipelineKind::Project, Example::SupportPython) => example::python::write_project(&dir),
        };
        written.map_err(|e| WorkspaceError::Project {
            file: e.path,
            message: e.detail,
        })?;
        Ok(())
    }

    /// Keeps uploaded files under `landing/`. Every path and the folder's size limit are checked
    /// before the first file is written.
    pub fn upload(&self, files: &[(String, Vec<u8>)]) -> Result<(), WorkspaceError> {
        if files.len() > MAX_FILES {
            return Err(WorkspaceError::TooLarge(format!(
                "at most {MAX_FILES} files in one upload, not {}",
                files.len()
            )));
        }
        let checked: Vec<PathBuf> = files
            .iter()
            .map(|(path, _)| checked_path(path))
            .collect::<Result<_, _>>()?;
        let landing = self.landing_dir();
        let held_files = files_under(&landing)?;
        let held: u64 = held_files.iter().map(|(_, m)| m.len()).sum();
        let adding: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        if held + adding > MAX_LANDING_BYTES {
            return Err(WorkspaceError::TooLarge(format!(
                "the landing folder holds {held} bytes; {adding} more would pass its limit of \
                 {MAX_LANDING_BYTES}"
            )));
        }
        if held_files.len() + files.len() > MAX_LANDING_FILES {
            return Err(WorkspaceError::TooLarge(format!(
                "the landing folder holds {} files; {} more would pass its limit of \
                 {MAX_LANDING_FILES}",
                held_files.len(),
                files.len()
            )));
        }
        for (i, relative) in checked.iter().enumerate() {
            let clash = |why: String| WorkspaceError::BadPath {
                path: relative.display().to_string(),
                why,
            };
            if let Some(other) = checked[..i].iter().find(|o| *o == relative) {
                return Err(clash(format!("{} is in the upload twice", other.display())));
            }
            if let Some(inner) = checked
                .iter()
                .find(|o| *o != relative && o.starts_with(relative))
            {
                return Err(clash(format!(
                    "it would be a file and the folder of {}",
                    inner.display()
                )));
            }
            let path = landing.join(relative);
            if path.is_dir() {
                return Err(clash("a folder of that name is already there".into()));
            }
            if let Some(file) = relative
                .ancestors()
                .skip(1)
                .find(|a| landing.join(a).is_file())
            {
                return Err(clash(format!("{} is a file, not a folder", file.display())));
            }
        }
        for (relative, (_, bytes)) in checked.iter().zip(files) {
            write_whole(&landing.join(relative), bytes)?;
        }
        Ok(())
    }

    /// Lands days `first..=last` of week 14's example (and its bad rows) in `landing/`.
    pub fn land_example(
        &self,
        days: Option<(u32, u32)>,
        bad_rows: bool,
        format: Format,
    ) -> Result<usize, WorkspaceError> {
        let written = example::land(
            &self.config.data_dir,
            days.unwrap_or((1, 0)),
            bad_rows,
            format,
            example::TICKETS_PER_DAY,
        )
        .map_err(|e| WorkspaceError::Project {
            file: e.path,
            message: e.detail,
        })?;
        Ok(written.len())
    }
}
