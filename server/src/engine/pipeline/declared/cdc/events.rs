//! An AUTO CDC flow's committed state: every change event it has applied, one Parquet file per
//! commit of its target, named by the target's `txn` version and written before that commit (as
//! `engine/state.rs` does for JSON). Files beyond the committed version are a crashed run's and
//! are never read; the next run writes that version again.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, new_null_array};
use arrow::compute::{cast, concat_batches, filter_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::row::OwnedRow;
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::replay::by_key;
use crate::engine::flows::FlowError;

fn error(path: &Path, detail: impl ToString) -> FlowError {
    FlowError::State {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

fn file(dir: &Path, version: i64) -> PathBuf {
    dir.join(format!("{version:020}.parquet"))
}

/// Writes the events committed as `version`, durably.
pub fn save(dir: &Path, version: i64, events: &RecordBatch) -> Result<(), FlowError> {
    let path = file(dir, version);
    fs::create_dir_all(dir).map_err(|e| error(&path, e))?;
    let tmp = path.with_extension("parquet.tmp");
    let out = fs::File::create(&tmp).map_err(|e| error(&path, e))?;
    let mut writer =
        ArrowWriter::try_new(out, events.schema(), None).map_err(|e| error(&path, e))?;
    writer.write(events).map_err(|e| error(&path, e))?;
    let out = writer.into_inner().map_err(|e| error(&path, e))?;
    out.sync_all().map_err(|e| error(&path, e))?;
    fs::rename(&tmp, &path).map_err(|e| error(&path, e))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| error(&path, e))
}

/// The committed files, oldest first.
fn committed(dir: &Path, version: i64) -> Result<Vec<PathBuf>, FlowError> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(vec![]);
    };
    let mut files: Vec<(i64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let v = name.strip_suffix(".parquet")?.parse::<i64>().ok()?;
            (v <= version).then(|| (v, e.path()))
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

/// The columns of the newest committed events file, if there is one.
pub fn newest_schema(dir: &Path, version: i64) -> Result<Option<SchemaRef>, FlowError> {
    let Some(path) = committed(dir, version)?.pop() else {
        return Ok(None);
    };
    let opened = fs::File::open(&path).map_err(|e| error(&path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(opened).map_err(|e| error(&path, e))?;
    Ok(Some(builder.schema().clone()))
}

/// `batch` with `schema`'s columns: missing ones NULL, others cast to the type `schema` gives.
fn aligned(batch: &RecordBatch, schema: &SchemaRef, path: &Path) -> Result<RecordBatch, FlowError> {
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(c) => cast(c, f.data_type()).map_err(|e| error(path, e)),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<_, _>>()?;
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| error(path, e))
}

/// The committed events (through `version`) of the keys `wanted` holds (all keys when `None`),
/// with `schema`'s columns, in the order they were read.
pub fn load(
    dir: &Path,
    version: i64,
    schema: &SchemaRef,
    keys: &[String],
    wanted: Option<&BTreeSet<OwnedRow>>,
) -> Result<RecordBatch, FlowError> {
    let mut out = vec![];
    for path in committed(dir, version)? {
        let opened = fs::File::open(&path).map_err(|e| error(&path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(opened)
            .and_then(|b| b.with_batch_size(65_536).build())
            .map_err(|e| error(&path, e))?;
        for batch in reader {
            let batch = aligned(&batch.map_err(|e| error(&path, e))?, schema, &path)?;
            let Some(wanted) = wanted else {
                out.push(batch);
                continue;
            };
            let mut keep = vec![false; batch.num_rows()];
            for (key, rows) in by_key(&batch, keys).map_err(|e| error(&path, e))? {
                if wanted.contains(&key) {
                    rows.into_iter().for_each(|r| keep[r] = true);
                }
            }
            let kept = filter_record_batch(&batch, &BooleanArray::from(keep))
                .map_err(|e| error(&path, e))?;
            out.push(kept);
        }
    }
    concat_batches(schema, &out).map_err(|e| error(dir, e))
}

/// Forgets the events of versions after `version`: a crashed run's.
pub fn remove_after(dir: &Path, version: i64) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().to_string();
        let beyond = name
            .strip_suffix(".parquet")
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v > version);
        if beyond || name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}
