//! One landed file as rows of the source's columns, losing nothing (PIPELINES §3): a value that
//! does not fit its column, or a field the columns lack, goes to `_rescued_data` as JSON with the
//! file's path; a line that does not parse becomes a row of NULLs whose `_rescued_data` holds it.
//! Every row also carries its file and line, for the quarantine.

use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, Date32Builder, Decimal128Builder, Float64Builder,
    Int32Builder, Int64Builder, RecordBatch, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use chrono::{NaiveDate, NaiveDateTime};
use serde_json::{Map, Value};

use super::schema::{Column, Type};

/// The column where what did not fit is kept.
pub const RESCUED: &str = "_rescued_data";
/// Hidden columns: the file and line a row came from (never written to a dataset).
pub const FILE: &str = "__file";
pub const LINE: &str = "__line";

/// The schema of a file source's rows: its columns, `_rescued_data`, then the hidden two.
pub fn schema(columns: &[Column]) -> SchemaRef {
    let mut fields: Vec<Field> = columns.iter().map(Column::field).collect();
    fields.push(Field::new(RESCUED, DataType::Utf8, true));
    fields.push(Field::new(FILE, DataType::Utf8, false));
    fields.push(Field::new(LINE, DataType::Int64, false));
    Arc::new(Schema::new(fields))
}

/// Rows being built for one source.
pub struct Rows {
    columns: Vec<Column>,
    builders: Vec<Box<dyn ArrayBuilder>>,
    rescued: StringBuilder,
    file: StringBuilder,
    line: Int64Builder,
    /// Rows with something in `_rescued_data`.
    pub rescued_rows: u64,
}

impl Rows {
    pub fn new(columns: &[Column]) -> Self {
        Self {
            columns: columns.to_vec(),
            builders: columns.iter().map(|c| builder(c.kind)).collect(),
            rescued: StringBuilder::new(),
            file: StringBuilder::new(),
            line: Int64Builder::new(),
            rescued_rows: 0,
        }
    }

    /// A line of a JSON-lines file.
    pub fn json_line(&mut self, text: &str, path: &str, line: i64) {
        match serde_json::from_str::<Map<String, Value>>(text) {
            Ok(record) => self.record(&record, path, line),
            Err(_) => self.corrupt(text, path, line),
        }
    }

    /// A record whose values are JSON (a JSON line, or a CSV row as text values).
    pub fn record(&mut self, record: &Map<String, Value>, path: &str, line: i64) {
        let mut rescued = Map::new();
        for (column, builder) in self.columns.iter().zip(&mut self.builders) {
            let value = record.get(&column.name).unwrap_or(&Value::Null);
            if !append(builder.as_mut(), column.kind, value) {
                append(builder.as_mut(), column.kind, &Value::Null);
                rescued.insert(column.name.clone(), value.clone());
            }
        }
        for (name, value) in record {
            if !self.columns.iter().any(|c| &c.name == name) {
                rescued.insert(name.clone(), value.clone());
            }
        }
        if rescued.is_empty() {
            self.rescued.append_null();
        } else {
            rescued.insert("_file_path".into(), Value::String(path.into()));
            self.rescued
                .append_value(Value::Object(rescued).to_string());
            self.rescued_rows += 1;
        }
        self.file.append_value(path);
        self.line.append_value(line);
    }

    /// A line that does not parse: every column NULL, the line kept whole.
    pub fn corrupt(&mut self, text: &str, path: &str, line: i64) {
        for (column, builder) in self.columns.iter().zip(&mut self.builders) {
            append(builder.as_mut(), column.kind, &Value::Null);
        }
        let kept = serde_json::json!({"_corrupt_record": text, "_file_path": path});
        self.rescued.append_value(kept.to_string());
        self.rescued_rows += 1;
        self.file.append_value(path);
        self.line.append_value(line);
    }

    pub fn len(&self) -> usize {
        self.line.len()
    }

    pub fn finish(mut self) -> Result<RecordBatch, arrow::error::ArrowError> {
        let mut arrays: Vec<ArrayRef> = self.builders.iter_mut().map(|b| b.finish()).collect();
        arrays.push(Arc::new(self.rescued.finish()));
        arrays.push(Arc::new(self.file.finish()));
        arrays.push(Arc::new(self.line.finish()));
        RecordBatch::try_new(schema(&self.columns), arrays)
    }
}

fn builder(kind: Type) -> Box<dyn ArrayBuilder> {
    match kind {
        Type::String => Box::new(StringBuilder::new()),
        Type::Int => Box::new(Int32Builder::new()),
        Type::BigInt => Box::new(Int64Builder::new()),
        Type::Double => Box::new(Float64Builder::new()),
        Type::Boolean => Box::new(BooleanBuilder::new()),
        Type::Date => Box::new(Date32Builder::new()),
        Type::Decimal(p, s) => Box::new(
            Decimal128Builder::new()
                .with_precision_and_scale(p, s)
                .expect("a DDL precision and scale"),
        ),
        Type::Timestamp => Box::new(TimestampMicrosecondBuilder::new().with_timezone("UTC")),
        Type::TimestampNtz => Box::new(TimestampMicrosecondBuilder::new()),
    }
}

/// Appends `value` if it fits the column (NULL always does); `false` if it does not.
fn append(builder: &mut dyn ArrayBuilder, kind: Type, value: &Value) -> bool {
    let any = builder.as_any_mut();
    macro_rules! put {
        ($b:ty, $v:expr) => {{
            let b = any.downcast_mut::<$b>().expect("the column's builder");
            match (value, $v) {
                (Value::Null, _) => {
                    b.append_null();
                    true
                }
                (_, Some(v)) => {
                    b.append_value(v);
                    true
                }
                (_, None) => false,
            }
        }};
    }
    match kind {
        Type::String => put!(
            StringBuilder,
            match value {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            }
        ),
        Type::Int => put!(
            Int32Builder,
            value.as_i64().and_then(|v| i32::try_from(v).ok())
        ),
        Type::BigInt => put!(Int64Builder, value.as_i64()),
        Type::Double => put!(Float64Builder, value.as_f64()),
        Type::Boolean => put!(BooleanBuilder, value.as_bool()),
        Type::Date => put!(Date32Builder, value.as_str().and_then(date)),
        Type::Decimal(p, s) => put!(Decimal128Builder, decimal(value, p, s)),
        Type::Timestamp | Type::TimestampNtz => {
            put!(
                TimestampMicrosecondBuilder,
                value.as_str().and_then(timestamp)
            )
        }
    }
}

/// Days since 1970-01-01 of `YYYY-MM-DD`.
fn date(text: &str) -> Option<i32> {
    let day = NaiveDate::parse_from_str(text.get(..10)?, "%Y-%m-%d").ok()?;
    Some((day - NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as i32)
}

/// Microseconds since the epoch of an RFC 3339 time, or of `YYYY-MM-DD[ T]HH:MM:SS[.f]` as UTC.
fn timestamp(text: &str) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_micros());
    }
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc().timestamp_micros())
}

/// A number (or its text) at `scale` places, when it has no more places than that and no more
/// than `precision` digits in all.
fn decimal(value: &Value, precision: u8, scale: i8) -> Option<i128> {
    let text = match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let (whole, places) = text.split_once('.').unwrap_or((&text, ""));
    if places.len() > scale.max(0) as usize || !places.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{places:0<width$}", width = scale.max(0) as usize);
    let unscaled: i128 = digits.parse().ok()?;
    let limit = 10u128.checked_pow(u32::from(precision))?;
    (unscaled.unsigned_abs() < limit).then_some(unscaled)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    use super::*;

    #[test]
    fn what_does_not_fit_is_rescued_and_nothing_is_lost() {
        let columns = vec![
            Column {
                name: "id".into(),
                kind: Type::BigInt,
            },
            Column {
                name: "status".into(),
                kind: Type::String,
            },
        ];
        let mut rows = Rows::new(&columns);
        rows.json_line(r#"{"id": 1, "status": "open"}"#, "landing/a.json", 1);
        rows.json_line(
            r#"{"id": "two", "status": "open", "extra": 3}"#,
            "landing/a.json",
            2,
        );
        rows.json_line("not json", "landing/a.json", 3);
        assert_eq!(rows.rescued_rows, 2);
        let batch = rows.finish().unwrap();
        let id = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!((id.value(0), id.is_null(1), id.is_null(2)), (1, true, true));
        let rescued = batch.column(2).as_string::<i32>();
        assert!(rescued.is_null(0));
        let second: Value = serde_json::from_str(rescued.value(1)).unwrap();
        assert_eq!(
            second,
            serde_json::json!({"id": "two", "extra": 3, "_file_path": "landing/a.json"})
        );
        assert!(rescued.value(2).contains(r#""_corrupt_record":"not json""#));
        assert_eq!(batch.column(4).as_primitive::<Int64Type>().value(2), 3);
    }

    #[test]
    fn a_decimal_too_wide_for_its_column_is_rescued() {
        let columns = vec![Column {
            name: "amount".into(),
            kind: Type::Decimal(5, 2),
        }];
        let mut rows = Rows::new(&columns);
        for (line, amount) in ["123.45", "-999.99", "1000.00", "123456.78", "1.234"]
            .iter()
            .enumerate()
        {
            let text = format!(r#"{{"amount": {amount}}}"#);
            rows.json_line(&text, "landing/a.json", line as i64 + 1);
        }
        assert_eq!(rows.rescued_rows, 3);
        let batch = rows.finish().unwrap();
        let amount = batch
            .column(0)
            .as_primitive::<arrow::datatypes::Decimal128Type>();
        assert_eq!((amount.value(0), amount.value(1)), (12345, -99999));
        assert!((2..5).all(|i| amount.is_null(i)));
        let rescued = batch.column(1).as_string::<i32>();
        assert!(
            rescued.value(3).contains("123456.78"),
            "{}",
            rescued.value(3)
        );
    }
}
