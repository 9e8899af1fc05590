//! Table rows as people and scripts read them (SPEC §2): JSON lines sorted by the table's key,
//! timestamps as RFC 3339 UTC seconds, money as text with 2 places.

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Decimal128Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use datafusion::prelude::SessionContext;
use serde_json::{Map, Value};

use crate::event::{format_cents, format_micros};
use crate::lab::Lab;
use crate::tables::{TableError, TableName};

/// Every row of a table, sorted by its key; a table not created yet has none.
pub async fn rows(lab: &Lab, name: TableName) -> Result<Vec<RecordBatch>, TableError> {
    let Some(table) = lab.tables.open(name).await? else {
        return Ok(vec![]);
    };
    let query = |source| TableError::Query {
        table: name.to_string(),
        source,
    };
    let ctx = SessionContext::new();
    table
        .update_datafusion_session(&ctx.state())
        .map_err(|source| TableError::Delta {
            table: name.to_string(),
            source,
        })?;
    let provider = table.table_provider().await.map_err(query)?;
    ctx.register_table("t", Arc::clone(&provider))
        .map_err(query)?;
    let key: Vec<String> = name.key().iter().map(|k| format!("\"{k}\"")).collect();
    ctx.sql(&format!("SELECT * FROM t ORDER BY {}", key.join(", ")))
        .await
        .map_err(query)?
        .collect()
        .await
        .map_err(query)
}

/// Rows as JSON objects, columns in table order.
pub fn json_rows(batches: &[RecordBatch]) -> Vec<Map<String, Value>> {
    let mut out = vec![];
    for batch in batches {
        let schema = batch.schema();
        for i in 0..batch.num_rows() {
            let mut row = Map::new();
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                row.insert(field.name().clone(), value(column.as_ref(), i));
            }
            out.push(row);
        }
    }
    out
}

fn value(column: &dyn Array, i: usize) -> Value {
    if column.is_null(i) {
        return Value::Null;
    }
    match column.data_type() {
        DataType::Int32 => Value::from(column.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => Value::from(column.as_primitive::<Int64Type>().value(i)),
        DataType::Utf8 => Value::from(column.as_string::<i32>().value(i)),
        DataType::Utf8View => Value::from(column.as_string_view().value(i)),
        DataType::Decimal128(_, 2) => Value::from(format_cents(
            column.as_primitive::<Decimal128Type>().value(i),
        )),
        DataType::Timestamp(TimeUnit::Microsecond, _) => Value::from(format_micros(
            column.as_primitive::<TimestampMicrosecondType>().value(i),
        )),
        _ => Value::from(
            arrow::util::display::ArrayFormatter::try_new(column, &Default::default())
                .map(|f| f.value(i).to_string())
                .unwrap_or_default(),
        ),
    }
}
