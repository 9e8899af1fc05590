//! State that is not rows, kept beside the tables: one JSON file per committed version, written
//! (durably) before the Delta commit that names that version in a `txn` action. The commit decides
//! which file is current, so a crash between the two leaves only a file nobody reads.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::engine::flow::FlowError;
use crate::engine::tables::Tables;

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

/// A state parsed from its file, held in memory with the lab's tables: a big state (a window's
/// duplicate keys, gold's open hours) would otherwise be parsed whole by every run. The file stays
/// the truth: the parsed state is used only while its file is the same writing of that version.
struct Kept<T> {
    version: i64,
    file: (u64, SystemTime),
    state: Arc<T>,
}

/// The name a state in `dir` is held under.
fn kept_name(dir: &Path) -> String {
    format!("state {}", dir.display())
}

/// The state committed as `version` in `dir`, from memory when it is held there and is still
/// that file's, else parsed from the file by `load` (such as [`load`]).
pub fn committed<T>(
    tables: &Tables,
    dir: &Path,
    version: i64,
    load: impl FnOnce(&Path, i64) -> Result<T, FlowError>,
) -> Result<Arc<T>, FlowError>
where
    T: Send + Sync + 'static,
{
    if let Some(held) = held::<T>(tables, dir, version, false) {
        return Ok(held.state.clone());
    }
    let state = Arc::new(load(dir, version)?);
    keep(tables, dir, version, state.clone());
    Ok(state)
}

/// The state committed as `version`, to be changed by a run: moved out of memory when it is held
/// there (no copy unless a reader still shares it), else parsed from the file. Once the run
/// commits, [`keep`] holds the new one.
pub fn restore<T>(
    tables: &Tables,
    dir: &Path,
    version: i64,
    load: impl FnOnce(&Path, i64) -> Result<T, FlowError>,
) -> Result<T, FlowError>
where
    T: Clone + Send + Sync + 'static,
{
    match held::<T>(tables, dir, version, true) {
        Some(kept) => {
            let kept =
                Arc::try_unwrap(kept).map_or_else(|shared| shared.state.clone(), |k| k.state);
            Ok(Arc::try_unwrap(kept).unwrap_or_else(|shared| (*shared).clone()))
        }
        None => load(dir, version),
    }
}

/// Holds `state` as the one committed in `dir` as `version`: call it only once the commit naming
/// that version is made.
pub fn keep<T: Send + Sync + 'static>(tables: &Tables, dir: &Path, version: i64, state: Arc<T>) {
    if let Some(file) = stamp(dir, version) {
        let kept = Kept {
            version,
            file,
            state,
        };
        tables.keep_state(&kept_name(dir), Arc::new(kept));
    }
}

fn held<T: Send + Sync + 'static>(
    tables: &Tables,
    dir: &Path,
    version: i64,
    take: bool,
) -> Option<Arc<Kept<T>>> {
    let now = stamp(dir, version)?;
    let name = kept_name(dir);
    let held = tables.kept_state::<Kept<T>>(&name, false)?;
    if held.version != version || held.file != now {
        return None;
    }
    match take {
        false => Some(held),
        true => {
            drop(held);
            tables.kept_state::<Kept<T>>(&name, true)
        }
    }
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
