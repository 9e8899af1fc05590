//! `read_files`: the files landed under a path of the data folder, in path order, each with the
//! size and time that tell a changed file apart; and a set of them read as one batch of rows.

mod csv_files;
pub mod decode;
pub mod schema;

use std::path::{Component, Path};

use app::model::FileRead;
use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::sql::Format;
use crate::engine::flow::FlowError;
use decode::Rows;
use schema::{Column, Inferred, Type};

/// What tells a file apart from a changed copy of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub modified_ms: i64,
}

/// A landed file: its path relative to the data folder, and its stamp now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub path: String,
    pub stamp: Stamp,
}

/// The files of `landed` a reader of `format` reads: a file named as another format's
/// (`.json`, `.jsonl`, `.csv`, `.parquet`) is not one of its files (a folder read whole, as the
/// course's `/Volumes/.../landing/`, may hold both tickets in Parquet and accounts in JSON).
pub fn of_format(
    landed: Vec<Landed>,
    format: crate::engine::declarative::sql::Format,
) -> Vec<Landed> {
    use crate::engine::declarative::sql::Format;
    let own: &[&str] = match format {
        Format::Json => &["json", "jsonl"],
        Format::Csv => &["csv"],
        Format::Parquet => &["parquet"],
    };
    landed
        .into_iter()
        .filter(|file| {
            let extension = std::path::Path::new(&file.path)
                .extension()
                .map(|e| e.to_string_lossy().to_ascii_lowercase());
            match extension.as_deref() {
                Some(e @ ("json" | "jsonl" | "csv" | "parquet")) => own.contains(&e),
                _ => true,
            }
        })
        .collect()
}

fn refused(path: &str, detail: impl Into<String>) -> FlowError {
    FlowError::File {
        path: path.to_string(),
        detail: detail.into(),
    }
}

/// Writes a file into a landing folder whole: into a dot-file beside it (which [`list`] skips),
/// then renamed over it, so a run never reads half a file. Each write has a dot-file of its own
/// (two uploads of one path at once: the last rename wins, neither fails), removed if the write
/// fails.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial = folder.join(format!(".{name}.{}.{n}.partial", std::process::id()));
    let written = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// Every file under `path` (relative to `data_dir`), in path order. With `landing_only` (a lab on
/// the server), the path must stay inside `landing/`.
pub fn list(data_dir: &Path, path: &str, landing_only: bool) -> Result<Vec<Landed>, FlowError> {
    let relative = Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(refused(
            path,
            "read_files takes a path inside the data folder, without `..`",
        ));
    }
    if landing_only && relative.components().next() != Some(Component::Normal("landing".as_ref())) {
        return Err(refused(
            path,
            "in a lab, read_files reads only from the lab's landing/ folder",
        ));
    }
    let root = data_dir.join(relative);
    let mut found = vec![];
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && folder == root => {
                return Ok(vec![]);
            }
            Err(e) => return Err(refused(path, e.to_string())),
        };
        for entry in entries {
            let entry = entry.map_err(|e| refused(path, e.to_string()))?;
            let meta = entry.metadata().map_err(|e| refused(path, e.to_string()))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            if meta.is_dir() {
                folders.push(entry.path());
                continue;
            }
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            let shown = entry
                .path()
                .strip_prefix(data_dir)
                .unwrap_or(&entry.path())
                .display()
                .to_string();
            found.push(Landed {
                path: shown,
                stamp: Stamp {
                    size: meta.len(),
                    modified_ms,
                },
            });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// The lines of a JSON-lines file that hold something, numbered from 1: each as text, or as
/// its bytes when they are not UTF-8.
fn json_lines(bytes: &[u8]) -> impl Iterator<Item = (i64, Result<&str, &[u8]>)> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(n, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            (n as i64 + 1, std::str::from_utf8(line).map_err(|_| line))
        })
        .filter(|(_, line)| !matches!(line, Ok(text) if text.trim().is_empty()))
}

/// The columns of `files`, inferred from all of them (PIPELINES §3).
pub fn infer(data_dir: &Path, files: &[Landed], format: Format) -> Result<Vec<Column>, FlowError> {
    let mut inferred = Inferred::default();
    for file in files {
        let full = data_dir.join(&file.path);
        match format {
            Format::Json => {
                let bytes = std::fs::read(&full).map_err(|e| refused(&file.path, e.to_string()))?;
                // A line that is not UTF-8 is not JSON: it becomes a rescued row when read.
                for (_, line) in json_lines(&bytes) {
                    let record = line.ok().and_then(|l| serde_json::from_str(l).ok());
                    if let Some(record) = record {
                        inferred.see(&record);
                    }
                }
            }
            Format::Csv => {
                let bytes = std::fs::read(&full).map_err(|e| refused(&file.path, e.to_string()))?;
                csv_files::infer(&bytes, &mut inferred).map_err(|e| refused(&file.path, e))?;
            }
            Format::Parquet => {
                let handle =
                    std::fs::File::open(&full).map_err(|e| refused(&file.path, e.to_string()))?;
                let builder = ParquetRecordBatchReaderBuilder::try_new(handle)
                    .map_err(|e| refused(&file.path, e.to_string()))?;
                let names: Vec<(String, Type)> = builder
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| (f.name().clone(), parquet_type(f.data_type())))
                    .collect();
                let mut record = Map::new();
                for (name, kind) in &names {
                    record.insert(name.clone(), sample(*kind));
                }
                inferred.see(&record);
            }
        }
    }
    Ok(inferred.columns())
}

/// A JSON value of the kind inference widens to `kind` (Parquet's own types stand as they are).
fn sample(kind: Type) -> Value {
    match kind {
        Type::BigInt | Type::Int => Value::from(0),
        Type::Double => Value::from(0.5),
        Type::Boolean => Value::Bool(true),
        _ => Value::String(String::new()),
    }
}

fn parquet_type(data_type: &DataType) -> Type {
    match data_type {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Type::BigInt,
        DataType::Float32 | DataType::Float64 => Type::Double,
        DataType::Boolean => Type::Boolean,
        _ => Type::String,
    }
}

/// Reads `files` into one batch of `columns`, with what each file gave.
pub fn read(
    data_dir: &Path,
    files: &[Landed],
    format: Format,
    columns: &[Column],
) -> Result<(RecordBatch, Vec<FileRead>), FlowError> {
    let mut rows = Rows::new(columns);
    let mut reads = vec![];
    for file in files {
        let (before, rescued_before) = (rows.len(), rows.rescued_rows);
        let full = data_dir.join(&file.path);
        let error = |e: String| refused(&file.path, e);
        match format {
            Format::Json => {
                let bytes = std::fs::read(&full).map_err(|e| error(e.to_string()))?;
                for (n, line) in json_lines(&bytes) {
                    match line {
                        Ok(text) => rows.json_line(text, &file.path, n),
                        // Its bytes as text, U+FFFD for what is not UTF-8 (PIPELINES §3).
                        Err(bytes) => rows.corrupt(&String::from_utf8_lossy(bytes), &file.path, n),
                    }
                }
            }
            Format::Csv => {
                let bytes = std::fs::read(&full).map_err(|e| error(e.to_string()))?;
                csv_files::read(&bytes, &file.path, columns, &mut rows).map_err(error)?;
            }
            Format::Parquet => {
                let handle = std::fs::File::open(&full).map_err(|e| error(e.to_string()))?;
                let reader = ParquetRecordBatchReaderBuilder::try_new(handle)
                    .and_then(|b| b.build())
                    .map_err(|e| error(e.to_string()))?;
                let mut line = 0;
                for batch in reader {
                    let batch = batch.map_err(|e| error(e.to_string()))?;
                    for record in records(&batch).map_err(|e| error(e.to_string()))? {
                        line += 1;
                        rows.record(&record, &file.path, line);
                    }
                }
            }
        }
        reads.push(FileRead {
            path: file.path.clone(),
            rows: (rows.len() - before) as u64,
            rescued: rows.rescued_rows - rescued_before,
            changed: false,
        });
    }
    let batch = rows
        .finish()
        .map_err(|e| refused("read_files", e.to_string()))?;
    Ok((batch, reads))
}

/// A Parquet batch's rows as JSON records, for the same conversions as JSON lines.
fn records(batch: &RecordBatch) -> Result<Vec<Map<String, Value>>, arrow::error::ArrowError> {
    let mut writer = arrow::json::ArrayWriter::new(Vec::new());
    writer.write(batch)?;
    writer.finish()?;
    let text = writer.into_inner();
    let values: Vec<Map<String, Value>> = serde_json::from_slice(&text)
        .map_err(|e| arrow::error::ArrowError::JsonError(e.to_string()))?;
    // A column the JSON writer leaves out when NULL reads back as absent: NULL, as it was.
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_data_folder_or_landing_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("landing/t")).unwrap();
        std::fs::write(dir.path().join("landing/t/b.json"), "{}").unwrap();
        std::fs::write(dir.path().join("landing/t/a.json"), "{}").unwrap();
        let found = list(dir.path(), "landing/t", true).unwrap();
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["landing/t/a.json", "landing/t/b.json"]);
        for (path, landing_only) in [
            ("../x", false),
            ("/etc", false),
            ("tables", true),
            ("landing/../tables", true),
        ] {
            let error = list(dir.path(), path, landing_only)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(&format!("{path}: ")), "{error}");
        }
    }
}
