//! An AUTO CDC flow's committed state: every change event it has applied, one Parquet file per
//! commit of its target, named by the target's `txn` version and written before that commit (as
//! `engine/state.rs` does for JSON). Files beyond the committed version are a crashed run's and
//! are never read; the next run writes that version again.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::{cast, concat_batches};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, SortField};
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::arrow::ProjectionMask;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake::parquet::arrow::arrow_reader::RowSelection;
use deltalake::parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use std::ops::Bound;

use crate::engine::flow::FlowError;

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

/// The events committed as `version` alone, with `schema`'s columns.
pub fn load_version(
    dir: &Path,
    version: i64,
    schema: &SchemaRef,
) -> Result<RecordBatch, FlowError> {
    let path = file(dir, version);
    if !path.exists() {
        return Ok(RecordBatch::new_empty(schema.clone()));
    }
    let opened = fs::File::open(&path).map_err(|e| error(&path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(opened)
        .and_then(|b| b.build())
        .map_err(|e| error(&path, e))?;
    let mut out = vec![];
    for batch in reader {
        out.push(aligned(
            &batch.map_err(|e| error(&path, e))?,
            schema,
            &path,
        )?);
    }
    concat_batches(schema, &out).map_err(|e| error(&path, e))
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
/// with `schema`'s columns, in the order they were read. With `wanted`, each file is read twice:
/// its key columns, then only the rows of those keys.
pub fn load(
    dir: &Path,
    version: i64,
    schema: &SchemaRef,
    keys: &[String],
    wanted: Option<&BTreeSet<OwnedRow>>,
) -> Result<RecordBatch, FlowError> {
    // Without it (a key of a type it does not order, or a key it cannot read back), every file
    // is read.
    let first = wanted.and_then(|w| FirstKeys::of(w, schema, keys).ok().flatten());
    let wanted: Option<HashSet<Box<[u8]>>> =
        wanted.map(|w| w.iter().map(|r| r.row().as_ref().into()).collect());
    let mut out = vec![];
    for path in committed(dir, version)? {
        let open = || {
            let opened = fs::File::open(&path).map_err(|e| error(&path, e))?;
            ParquetRecordBatchReaderBuilder::try_new(opened).map_err(|e| error(&path, e))
        };
        let mut builder = open()?.with_batch_size(65_536);
        if let Some(first) = &first
            && !first.may_be_in(&builder)
        {
            continue;
        }
        if let Some(wanted) = &wanted {
            let Some(selection) = matching(open()?, schema, keys, wanted, &path)? else {
                continue;
            };
            builder = builder.with_row_selection(selection);
        }
        for batch in builder.build().map_err(|e| error(&path, e))? {
            out.push(aligned(
                &batch.map_err(|e| error(&path, e))?,
                schema,
                &path,
            )?);
        }
    }
    concat_batches(schema, &out).map_err(|e| error(dir, e))
}

/// The first key column's values of the wanted keys, to pass over a file whose statistics say
/// none of them is in it: a run's keys are mostly new, and most files hold older ones only.
struct FirstKeys {
    column: String,
    kind: arrow::datatypes::DataType,
    converter: RowConverter,
    /// The values, as `converter` writes them: their byte order is the values' order.
    values: BTreeSet<Box<[u8]>>,
}

impl FirstKeys {
    fn of(
        wanted: &BTreeSet<OwnedRow>,
        schema: &SchemaRef,
        keys: &[String],
    ) -> Result<Option<Self>, arrow::error::ArrowError> {
        let (Some(column), types) = (keys.first(), converter_types(schema, keys)) else {
            return Ok(None);
        };
        // Types whose statistics order as their values do: no NaN (left out of a float
        // column's statistics), no dictionary (read back as its values' type).
        let ordered = |t: &arrow::datatypes::DataType| {
            use arrow::datatypes::DataType::*;
            t.is_integer()
                || matches!(
                    t,
                    Utf8 | LargeUtf8 | Date32 | Date64 | Timestamp(..) | Decimal128(..)
                )
        };
        if types.len() != keys.len() || !ordered(&types[0]) {
            return Ok(None);
        }
        let whole = RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
        // The rows were written by another converter of the same types: read again as its bytes.
        let parser = whole.parser();
        let columns = whole.convert_rows(wanted.iter().map(|r| parser.parse(r.row().data())))?;
        let kind = types[0].clone();
        let converter = RowConverter::new(vec![SortField::new(kind.clone())])?;
        let rows = converter.convert_columns(&columns[..1])?;
        let values = rows.iter().map(|r| r.as_ref().into()).collect();
        Ok(Some(Self {
            column: column.clone(),
            kind,
            converter,
            values,
        }))
    }

    /// Whether a row group of the file may hold one of the values: its statistics' min and max
    /// enclose one, or it has no statistics to say.
    fn may_be_in(&self, builder: &ParquetRecordBatchReaderBuilder<fs::File>) -> bool {
        let bounds = || -> Option<Vec<(Box<[u8]>, Box<[u8]>)>> {
            let stats = StatisticsConverter::try_new(
                &self.column,
                builder.schema(),
                builder.parquet_schema(),
            )
            .ok()?;
            let groups = builder.metadata().row_groups();
            // Statistics of another type (the key's type changed since the file was written)
            // say nothing of this type's order.
            let as_rows = |array: ArrayRef| {
                (array.data_type() == &self.kind && array.null_count() == 0).then_some(())?;
                self.converter.convert_columns(&[array]).ok()
            };
            let mins = as_rows(stats.row_group_mins(groups.iter()).ok()?)?;
            let maxes = as_rows(stats.row_group_maxes(groups.iter()).ok()?)?;
            Some(
                mins.iter()
                    .zip(maxes.iter())
                    .map(|(a, b)| (a.as_ref().into(), b.as_ref().into()))
                    .collect(),
            )
        };
        match bounds() {
            Some(groups) => groups.iter().any(|(min, max)| {
                self.values
                    .range::<[u8], _>((Bound::Included(&**min), Bound::Included(&**max)))
                    .next()
                    .is_some()
            }),
            None => true,
        }
    }
}

/// The rows of one file whose key is in `wanted` (key bytes as `RowConverter` writes them for
/// `schema`'s key types), read from its key columns alone; `None` when there are none.
fn matching(
    builder: ParquetRecordBatchReaderBuilder<fs::File>,
    schema: &SchemaRef,
    keys: &[String],
    wanted: &HashSet<Box<[u8]>>,
    path: &Path,
) -> Result<Option<RowSelection>, FlowError> {
    let fields: Vec<SortField> = keys
        .iter()
        .map(|k| {
            let field = schema.field_with_name(k).map_err(|e| error(path, e))?;
            Ok(SortField::new(field.data_type().clone()))
        })
        .collect::<Result<_, FlowError>>()?;
    let converter = RowConverter::new(fields).map_err(|e| error(path, e))?;
    let total = builder.metadata().file_metadata().num_rows() as usize;
    let mask = ProjectionMask::columns(builder.parquet_schema(), keys.iter().map(String::as_str));
    let reader = builder
        .with_projection(mask)
        .with_batch_size(65_536)
        .build()
        .map_err(|e| error(path, e))?;
    let mut ranges: Vec<std::ops::Range<usize>> = vec![];
    let mut offset = 0;
    for batch in reader {
        let batch = batch.map_err(|e| error(path, e))?;
        let columns: Vec<ArrayRef> = keys
            .iter()
            .zip(converter_types(schema, keys))
            .map(|(k, t)| match batch.column_by_name(k) {
                Some(c) if c.data_type() == &t => Ok(c.clone()),
                Some(c) => cast(c, &t).map_err(|e| error(path, e)),
                None => Err(error(path, format!("the change events have no column {k}"))),
            })
            .collect::<Result<_, _>>()?;
        let rows = converter
            .convert_columns(&columns)
            .map_err(|e| error(path, e))?;
        for (i, row) in rows.iter().enumerate() {
            if wanted.contains(row.as_ref()) {
                let at = offset + i;
                match ranges.last_mut() {
                    Some(r) if r.end == at => r.end = at + 1,
                    _ => ranges.push(at..at + 1),
                }
            }
        }
        offset += batch.num_rows();
    }
    Ok((!ranges.is_empty())
        .then(|| RowSelection::from_consecutive_ranges(ranges.into_iter(), total)))
}

fn converter_types(schema: &SchemaRef, keys: &[String]) -> Vec<arrow::datatypes::DataType> {
    keys.iter()
        .filter_map(|k| schema.field_with_name(k).ok())
        .map(|f| f.data_type().clone())
        .collect()
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
