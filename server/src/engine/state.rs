//! State that is not rows, kept beside the tables: one JSON file per committed version, written
//! (durably) before the Delta commit that names that version in a `txn` action. The commit decides
//! which file is current, so a crash between the two leaves only a file nobody reads.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::engine::flow::FlowError;

fn path(dir: &Path, version: i64) -> PathBuf {
    dir.join(format!("{version:020}.json"))
}

fn error(path: &Path, detail: impl ToString) -> FlowError {
    FlowError::State {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Writes the state for `version` durably; it becomes current only with the commit that names it.
pub fn save<T: Serialize>(dir: &Path, version: i64, state: &T) -> Result<(), FlowError> {
    let path = path(dir, version);
    let json = serde_json::to_vec(state).map_err(|e| error(&path, e))?;
    fs::create_dir_all(dir).map_err(|e| error(&path, e))?;
    let tmp = path.with_extension("json.tmp");
    let mut out = fs::File::create(&tmp).map_err(|e| error(&path, e))?;
    out.write_all(&json).map_err(|e| error(&path, e))?;
    out.sync_all().map_err(|e| error(&path, e))?;
    fs::rename(&tmp, &path).map_err(|e| error(&path, e))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| error(&path, e))
}

/// Which writing of the state file for `version` is there: its size and modification time, or
/// `None` when there is none. A state parsed from a file is the file's as long as this is equal.
pub fn stamp(dir: &Path, version: i64) -> Option<(u64, std::time::SystemTime)> {
    let meta = fs::metadata(path(dir, version)).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// The state committed as `version`.
pub fn load<T: DeserializeOwned>(dir: &Path, version: i64) -> Result<T, FlowError> {
    let path = path(dir, version);
    let bytes = fs::read(&path).map_err(|e| {
        error(
            &path,
            format!("{e} (the state committed with version {version} is gone)"),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|e| error(&path, e))
}

/// Keeps the current state and the one before it; older ones, and any a crashed run wrote
/// beyond the current one, go.
pub fn remove_old(dir: &Path, current: i64) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(version) = name
            .strip_suffix(".json")
            .and_then(|v| v.parse::<i64>().ok())
        else {
            continue;
        };
        if version < current - 1 || version > current {
            let _ = fs::remove_file(entry.path());
        }
    }
}
