//! Table rows as people and scripts read them (SPEC §2): JSON lines sorted by the table's key,
//! timestamps as RFC 3339 UTC seconds, money as text with 2 places.

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Decimal128Type, Float64Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use deltalake::DeltaTable;
use serde_json::{Map, Value};

use crate::engine::columns::Columns;
use crate::engine::event::{format_cents, format_micros};
use crate::engine::tables::{self, TableError, TableName, Tables};

/// Every row of a table, sorted by its key; a table not created yet has none.
pub async fn rows(tables: &Tables, name: TableName) -> Result<Vec<RecordBatch>, TableError> {
    match tables.open(name).await? {
        Some(table) => sorted_rows(&table, name).await,
        None => Ok(vec![]),
    }
}

/// A table's rows sorted by its key.
pub async fn sorted_rows(
    table: &DeltaTable,
    name: TableName,
) -> Result<Vec<RecordBatch>, TableError> {
    let ctx = tables::session(table, "t").await?;
    let key: Vec<String> = name.key().iter().map(|k| format!("\"{k}\"")).collect();
    tables::query(
        &ctx,
        name.as_str(),
        &format!("SELECT * FROM t ORDER BY {}", key.join(", ")),
    )
    .await
}

/// Every row of a pipeline's table, sorted by all its columns.
pub async fn named_rows(tables: &Tables, name: &str) -> Result<Vec<RecordBatch>, TableError> {
    let Some(table) = tables.open_named(name).await? else {
        return Err(TableError::Unknown(name.to_string()));
    };
    rows_by_all_columns(&table, name).await
}

/// A table's rows sorted by all its columns.
async fn rows_by_all_columns(
    table: &DeltaTable,
    name: &str,
) -> Result<Vec<RecordBatch>, TableError> {
    let ctx = tables::session(table, "t").await?;
    let columns = tables::arrow_schema(table)?.fields().len();
    let order: Vec<String> = (1..=columns).map(|i| i.to_string()).collect();
    let sql = format!("SELECT * FROM t ORDER BY {}", order.join(", "));
    tables::query(&ctx, name, &sql).await
}

/// Rows a table holds (at the version it is loaded at).
pub async fn count_rows(table: &DeltaTable, name: &str) -> Result<i64, TableError> {
    let ctx = tables::session(table, "t").await?;
    let batches = tables::query(&ctx, name, "SELECT count(*) AS n FROM t").await?;
    match batches.first().filter(|b| b.num_rows() > 0) {
        Some(b) => Ok(Columns::of(b, name).primitive::<Int64Type>("n")?.value(0)),
        None => Ok(0),
    }
}

/// A session with `table` registered as `t`.
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
        DataType::Float64 => Value::from(column.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Value::from(column.as_boolean().value(i)),
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
