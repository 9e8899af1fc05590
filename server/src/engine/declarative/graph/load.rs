//! A project's folder read: `spark-pipeline.yml`, then the `.sql` files its libraries' globs
//! name inside the folder, parsed into statements and built into the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use super::super::parse;
use super::{Graph, ProjectError, build};

/// `spark-pipeline.yml`: Spark's own shape; other keys are accepted and ignored.
#[derive(Debug, Deserialize)]
struct Spec {
    name: String,
    #[serde(default)]
    libraries: Vec<Library>,
    /// Settings by name, as Spark takes them; Reckon reads `reckon.finalAfterDays`.
    #[serde(default)]
    configuration: BTreeMap<String, serde_yaml_ng::Value>,
}

/// The most days a project may wait before a day is final.
const MOST_FINAL_AFTER_DAYS: u32 = 31;

#[derive(Debug, Deserialize)]
struct Library {
    glob: Glob,
}

#[derive(Debug, Deserialize)]
struct Glob {
    include: String,
}

/// Reads a project folder into its graph; nothing is run or written.
pub fn load(dir: &Path) -> Result<Graph, ProjectError> {
    let yml = dir.join("spark-pipeline.yml");
    let file_error = |path: &Path, detail: String| ProjectError::File {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(&yml).map_err(|e| file_error(&yml, e.to_string()))?;
    let spec: Spec = serde_yaml_ng::from_str(&text).map_err(|e| file_error(&yml, e.to_string()))?;
    let mut files = BTreeSet::new();
    for library in &spec.libraries {
        let include = library.glob.include.trim_end_matches('/');
        // The project's own files only: a glob that climbs out of its folder could read another
        // lab's SQL.
        let inside = Path::new(include)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside {
            return Err(file_error(
                &yml,
                format!(
                    "glob {include}: a library's glob names files inside the project's folder (no `..`, not absolute)"
                ),
            ));
        }
        // `dir/**` names the folder and everything in it, as Spark reads it.
        let roots: Vec<PathBuf> = match include.strip_suffix("/**") {
            Some(folder) => vec![dir.join(folder)],
            None => glob::glob(&dir.join(include).to_string_lossy())
                .map_err(|e| file_error(&yml, format!("glob {include}: {e}")))?
                .collect::<Result<_, _>>()
                .map_err(|e| file_error(&yml, e.to_string()))?,
        };
        let mut folders = roots;
        while let Some(path) = folders.pop() {
            if path.is_dir() {
                let entries =
                    std::fs::read_dir(&path).map_err(|e| file_error(&path, e.to_string()))?;
                folders.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
            } else if path.extension().is_some_and(|e| e == "sql" || e == "py") {
                files.insert(path);
            }
        }
    }
    if files.is_empty() {
        return Err(file_error(
            &yml,
            "its libraries name no .sql or .py file".into(),
        ));
    }
    let mut statements = vec![];
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| file_error(&path, e.to_string()))?;
        let shown = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        match path.extension().is_some_and(|e| e == "py") {
            true => statements.extend(crate::engine::declarative::python::statements(
                &shown, &text,
            )?),
            false => statements.extend(parse::statements(&shown, &text)?),
        }
    }
    let final_after_days = match spec.configuration.get("reckon.finalAfterDays") {
        None => None,
        Some(value) => {
            let days = match value {
                serde_yaml_ng::Value::Number(n) => n.as_u64(),
                serde_yaml_ng::Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            match days.filter(|d| (1..=MOST_FINAL_AFTER_DAYS as u64).contains(d)) {
                Some(days) => Some(days as u32),
                None => {
                    return Err(file_error(
                        &yml,
                        format!(
                            "configuration reckon.finalAfterDays: a whole number of days from 1 \
                             to {MOST_FINAL_AFTER_DAYS}, not {}",
                            serde_yaml_ng::to_string(value).unwrap_or_default().trim()
                        ),
                    ));
                }
            }
        }
    };
    let mut graph = build(spec.name, statements)?;
    if let Some(days) = final_after_days {
        graph.final_after_days = days;
    }
    Ok(graph)
}
