//! A flow's rows against the columns its table already has: matched by name, what the flow lacks
//! NULL, what it adds appended (the table's schema grows), a type that differs refused.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use deltalake::DeltaTable;

use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

fn text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// `rows` with the table's columns first, in the table's order and types, then the new ones.
pub fn align(
    table: &DeltaTable,
    rows: RecordBatch,
    target: &str,
    flow: &str,
) -> Result<RecordBatch, FlowError> {
    let arrow = |source| TableError::Arrow {
        table: target.to_string(),
        source,
    };
    let existing = tables::arrow_schema(table)?;
    let mut fields: Vec<Field> = vec![];
    let mut columns: Vec<ArrayRef> = vec![];
    for field in existing.fields() {
        let column = match rows.column_by_name(field.name()) {
            Some(c) if c.data_type() == field.data_type() => c.clone(),
            Some(c) if text(c.data_type()) && text(field.data_type()) => {
                cast(c, field.data_type()).map_err(arrow)?
            }
            Some(c) => {
                return Err(FlowError::from(Refusal::SchemaClash(format!(
                    "{target}: flow {flow} gives column {} as {}, but the table holds it as {}",
                    field.name(),
                    c.data_type(),
                    field.data_type()
                ))));
            }
            None => new_null_array(field.data_type(), rows.num_rows()),
        };
        fields.push(Field::new(field.name(), field.data_type().clone(), true));
        columns.push(column);
    }
    for (i, field) in rows.schema().fields().iter().enumerate() {
        if existing.field_with_name(field.name()).is_err() {
            fields.push(Field::new(field.name(), field.data_type().clone(), true));
            columns.push(rows.column(i).clone());
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| FlowError::Table(arrow(e)))
}

/// `parts` as one batch whose columns are every part's, by name in the order first met; a
/// part's missing column NULL. The parts give a column the same type (each was aligned to its
/// table first).
pub fn meet(parts: &[RecordBatch]) -> Result<RecordBatch, arrow::error::ArrowError> {
    if let [one] = parts {
        return Ok(one.clone());
    }
    let mut fields: Vec<Field> = vec![];
    for part in parts {
        for field in part.schema().fields() {
            if !fields.iter().any(|f| f.name() == field.name()) {
                fields.push(Field::new(field.name(), field.data_type().clone(), true));
            }
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let mut met = vec![];
    for part in parts {
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| match part.column_by_name(f.name()) {
                Some(c) => c.clone(),
                None => new_null_array(f.data_type(), part.num_rows()),
            })
            .collect();
        met.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    arrow::compute::concat_batches(&schema, &met)
}
