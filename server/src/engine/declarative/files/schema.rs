//! The columns `read_files` gives: from a `schema =>` in Spark's DDL, or inferred from the files
//! of a flow's first run (PIPELINES §3), then kept as text (DDL) in the flow's committed state.

use arrow::datatypes::{DataType, Field, TimeUnit};
use serde_json::Value;

/// One column of a file source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: Type,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Int,
    BigInt,
    Double,
    Boolean,
    Date,
    Decimal(u8, i8),
    Timestamp,
    TimestampNtz,
}

impl Type {
    pub fn arrow(self) -> DataType {
        match self {
            Type::String => DataType::Utf8,
            Type::Int => DataType::Int32,
            Type::BigInt => DataType::Int64,
            Type::Double => DataType::Float64,
            Type::Boolean => DataType::Boolean,
            Type::Date => DataType::Date32,
            Type::Decimal(p, s) => DataType::Decimal128(p, s),
            Type::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Type::TimestampNtz => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }

    fn ddl(self) -> String {
        match self {
            Type::String => "STRING".into(),
            Type::Int => "INT".into(),
            Type::BigInt => "BIGINT".into(),
            Type::Double => "DOUBLE".into(),
            Type::Boolean => "BOOLEAN".into(),
            Type::Date => "DATE".into(),
            Type::Decimal(p, s) => format!("DECIMAL({p},{s})"),
            Type::Timestamp => "TIMESTAMP".into(),
            Type::TimestampNtz => "TIMESTAMP_NTZ".into(),
        }
    }
}

impl Column {
    pub fn field(&self) -> Field {
        Field::new(&self.name, self.kind.arrow(), true)
    }
}

/// Columns as Spark DDL: `a STRING, b INT`.
pub fn to_ddl(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| format!("{} {}", c.name, c.kind.ddl()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads Spark DDL (`a STRING, b DECIMAL(10, 2)`); an error names the column.
pub fn from_ddl(ddl: &str) -> Result<Vec<Column>, String> {
    let mut columns = vec![];
    let (mut depth, mut start) = (0, 0);
    let mut parts = vec![];
    for (i, c) in ddl.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&ddl[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&ddl[start..]);
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (name, kind) = part
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("schema: `{part}` needs a name and a type"))?;
        let kind = kind.trim().to_uppercase().replace(' ', "");
        let kind = match kind.as_str() {
            "STRING" => Type::String,
            "INT" | "INTEGER" => Type::Int,
            "BIGINT" | "LONG" => Type::BigInt,
            "DOUBLE" => Type::Double,
            "BOOLEAN" => Type::Boolean,
            "DATE" => Type::Date,
            "TIMESTAMP" => Type::Timestamp,
            "TIMESTAMP_NTZ" => Type::TimestampNtz,
            d if d.starts_with("DECIMAL(") && d.ends_with(')') => {
                let (p, s) = d[8..d.len() - 1]
                    .split_once(',')
                    .ok_or_else(|| format!("schema: column {name}: DECIMAL(precision, scale)"))?;
                let p: u8 = p
                    .parse()
                    .map_err(|_| format!("schema: column {name}: precision {p}"))?;
                let s: i8 = s
                    .parse()
                    .map_err(|_| format!("schema: column {name}: scale {s}"))?;
                // Spark's bounds: up to 38 digits, of which 0 to all after the point.
                if !(1..=38).contains(&p) || s < 0 || s as u8 > p {
                    return Err(format!(
                        "schema: column {name}: DECIMAL({p},{s}) needs a precision of 1 to 38 \
                         and a scale from 0 to the precision"
                    ));
                }
                Type::Decimal(p, s)
            }
            other => {
                return Err(format!(
                    "schema: column {name}: type {other} is not one of STRING, INT, BIGINT, DOUBLE, \
                     BOOLEAN, DATE, DECIMAL(p,s), TIMESTAMP, TIMESTAMP_NTZ"
                ));
            }
        };
        let name = name.trim_matches('`');
        if is_reserved(name) {
            return Err(format!(
                "schema: column {name} has a name Reckon keeps for itself (_rescued_data, \
                 _change_type, _commit_version, _commit_timestamp, and names starting __); a \
                 field so named is kept in _rescued_data"
            ));
        }
        columns.push(Column {
            name: name.to_string(),
            kind,
        });
    }
    if columns.is_empty() {
        return Err("schema: no columns".into());
    }
    Ok(columns)
}

/// Whether a column's name is one Reckon keeps for itself: `_rescued_data`, a change feed's
/// `_change_type`, `_commit_version` and `_commit_timestamp`, and every name starting `__` (a
/// row's file and line, a change's version). A field so named in a landed file is no column: it
/// is kept in `_rescued_data` under its name, as Auto Loader rescues a field its schema cannot
/// hold (PIPELINES §3); a declared schema may not name one.
pub fn is_reserved(name: &str) -> bool {
    name.starts_with("__")
        || matches!(
            name,
            "_rescued_data" | "_change_type" | "_commit_version" | "_commit_timestamp"
        )
}

/// Columns seen so far in JSON records, widened as more are seen: integers BIGINT, other
/// numbers DOUBLE, booleans BOOLEAN, the rest STRING; a column seen only as null is STRING.
#[derive(Debug, Default)]
pub struct Inferred {
    columns: Vec<(String, Option<Type>)>,
}

impl Inferred {
    pub fn see(&mut self, record: &serde_json::Map<String, Value>) {
        for (name, value) in record.iter().filter(|(name, _)| !is_reserved(name)) {
            let seen = match value {
                Value::Null => None,
                Value::Bool(_) => Some(Type::Boolean),
                Value::Number(n) if n.is_i64() => Some(Type::BigInt),
                Value::Number(_) => Some(Type::Double),
                _ => Some(Type::String),
            };
            match self.columns.iter_mut().find(|(n, _)| n == name) {
                Some((_, kind)) => *kind = widen(*kind, seen),
                None => self.columns.push((name.clone(), seen)),
            }
        }
    }

    /// Columns of a CSV header, in its order: their types come from the values seen after.
    pub fn see_header(&mut self, names: &[String]) {
        for name in names.iter().filter(|name| !is_reserved(name)) {
            if !self.columns.iter().any(|(n, _)| n == name) {
                self.columns.push((name.clone(), None));
            }
        }
    }

    pub fn columns(self) -> Vec<Column> {
        self.columns
            .into_iter()
            .map(|(name, kind)| Column {
                name,
                kind: kind.unwrap_or(Type::String),
            })
            .collect()
    }
}

fn widen(a: Option<Type>, b: Option<Type>) -> Option<Type> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(x), Some(y)) if x == y => Some(x),
        (Some(Type::BigInt | Type::Double), Some(Type::BigInt | Type::Double)) => {
            Some(Type::Double)
        }
        _ => Some(Type::String),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_reads_and_writes_back() {
        let columns = from_ddl("ticket_id BIGINT, amount DECIMAL(10, 2), at TIMESTAMP").unwrap();
        assert_eq!(columns[1].kind, Type::Decimal(10, 2));
        assert_eq!(
            to_ddl(&columns),
            "ticket_id BIGINT, amount DECIMAL(10,2), at TIMESTAMP"
        );
        assert!(from_ddl("a VARCHAR").unwrap_err().contains("column a"));
        for bad in [
            "DECIMAL(40,2)",
            "DECIMAL(5,7)",
            "DECIMAL(0,0)",
            "DECIMAL(5,-1)",
        ] {
            let error = from_ddl(&format!("amount {bad}")).unwrap_err();
            assert!(
                error.contains("column amount") && error.contains("precision of 1 to 38"),
                "{error}"
            );
        }
    }

    #[test]
    fn inferred_types_widen() {
        let mut inferred = Inferred::default();
        for line in [
            r#"{"a": 1, "b": 1, "c": null}"#,
            r#"{"a": 2.5, "b": "x", "d": true}"#,
        ] {
            inferred.see(&serde_json::from_str(line).unwrap());
        }
        let kinds: Vec<(String, Type)> = inferred
            .columns()
            .into_iter()
            .map(|c| (c.name, c.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("a".into(), Type::Double),
                ("b".into(), Type::String),
                ("c".into(), Type::String),
                ("d".into(), Type::Boolean)
            ]
        );
    }
}
