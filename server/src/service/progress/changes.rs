//! Whether a lab reached its milestones with an example as given or with changes of its own
//! (issue "The classroom"): its project's files against each example's, line by line, the
//! nearest example named with the lines that differ. The project as it stands now.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::engine::declarative::example::{self, ExampleError};
use crate::engine::declarative::sql::Format;
use crate::service::lab::Lab;
use crate::service::lab::workspace::files_under;

type Write = Box<dyn Fn(&std::path::Path) -> Result<(), ExampleError>>;

/// Each example's name and files (path, text).
type Examples = Vec<(&'static str, Vec<(String, String)>)>;

/// "the week-14 example as given", "module 9 in SQL with 12 line(s) changed"; `None` for a lab
/// that runs the course's own streams or has no project.
pub fn against_examples(lab: &Lab) -> Option<String> {
    let files = lab.project_files().ok()?;
    if files.is_empty() || lab.kind() != app::model::PipelineKind::Project {
        return None;
    }
    let ours: Vec<(String, String)> = files.into_iter().map(|f| (f.path, f.text)).collect();
    let examples = examples(&lab.config.topic_named());
    let nearest = (examples.iter())
        .map(|(name, theirs)| (changed(&ours, theirs), *name))
        .min()?;
    Some(match nearest {
        (0, name) => format!("{name} as given"),
        (n, name) => format!("{name} with {n} line(s) changed"),
    })
}

/// The examples' files for a lab whose topic is `topic` (module 9's name it): written once a
/// topic and kept, as they never change.
fn examples(topic: &str) -> Arc<Examples> {
    static KEPT: OnceLock<Mutex<HashMap<String, Arc<Examples>>>> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    if let Some(found) = kept.lock().unwrap_or_else(|e| e.into_inner()).get(topic) {
        return found.clone();
    }
    let (sql_topic, python_topic) = (topic.to_string(), topic.to_string());
    let writers: [(&str, Write); 5] = [
        (
            "the week-14 example",
            Box::new(|d| example::write_project(d, Format::Json)),
        ),
        (
            "the week-14 example (Parquet)",
            Box::new(|d| example::write_project(d, Format::Parquet)),
        ),
        (
            "the week-14 example in Python",
            Box::new(example::python::write_project),
        ),
        (
            "module 9 in SQL",
            Box::new(move |d| example::shop::write_project(d, &sql_topic)),
        ),
        (
            "module 9 in Python",
            Box::new(move |d| example::python::write_shop(d, &python_topic)),
        ),
    ];
    let written: Examples = writers
        .iter()
        .filter_map(|(name, write)| {
            let dir = tempfile::tempdir().ok()?;
            write(dir.path()).ok()?;
            let files = files_under(dir.path()).ok()?;
            let files = (files.into_iter())
                .filter_map(|(path, _)| {
                    let text = std::fs::read_to_string(dir.path().join(&path)).ok()?;
                    Some((path, text))
                })
                .collect();
            Some((*name, files))
        })
        .collect();
    let written = Arc::new(written);
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    kept.insert(topic.to_string(), written.clone());
    written
}

/// The newest change time of the lab's project files (nanoseconds; 0 without a project), with
/// how many there are: a file saved, added or removed changes it.
pub fn project_stamp(lab: &Lab) -> u128 {
    let files = files_under(&lab.project_dir()).unwrap_or_default();
    let newest = (files.iter())
        .filter_map(|(_, meta)| meta.modified().ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .max()
        .unwrap_or(0);
    newest ^ files.len() as u128
}

/// Lines that differ between two projects: per file, the larger of the lines only one side has
/// (as multisets, so moving a line costs nothing); a file only one side has counts whole.
fn changed(ours: &[(String, String)], theirs: &[(String, String)]) -> usize {
    let text = |files: &[(String, String)], path: &str| {
        (files.iter().find(|(p, _)| p == path)).map_or(String::new(), |(_, t)| t.clone())
    };
    let mut paths: Vec<&str> = ours.iter().chain(theirs).map(|(p, _)| p.as_str()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .map(|path| {
            let (a, b) = (text(ours, path), text(theirs, path));
            let mut counts: HashMap<&str, i64> = HashMap::new();
            for line in a.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
                *counts.entry(line).or_default() += 1;
            }
            for line in b.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
                *counts.entry(line).or_default() -= 1;
            }
            let only_ours: i64 = counts.values().filter(|n| **n > 0).sum();
            let only_theirs: i64 = -counts.values().filter(|n| **n < 0).sum::<i64>();
            only_ours.max(only_theirs) as usize
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_moved_line_costs_nothing_and_an_edited_one_costs_one() {
        let file = |t: &str| vec![("a.sql".to_string(), t.to_string())];
        assert_eq!(super::changed(&file("x\ny\n"), &file("y\nx\n")), 0);
        assert_eq!(super::changed(&file("x\ny\n"), &file("x\nz\n")), 1);
        assert_eq!(super::changed(&file("x\n"), &[]), 1);
    }
}
