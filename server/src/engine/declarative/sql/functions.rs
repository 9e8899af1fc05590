//! Functions a project's SQL may call that DataFusion lacks, with Spark's meaning (PIPELINES §8):
//! `from_json(text, 'DDL')`, a struct in Spark's permissive mode (a field that does not fit is
//! NULL, text that is not JSON gives every field NULL, a NULL text a NULL struct); and the cast to
//! a string that Spark's `CAST(x AS STRING)` and `x::string` are (bytes that are not UTF-8 become
//! U+FFFD instead of failing the query), which `spark.rs` puts in their place.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::{Expr, SessionContext};

use crate::engine::declarative::files::decode::Rows;
use crate::engine::declarative::files::schema::{self, Column};

/// The name `spark.rs` gives Spark's cast to a string.
pub const SPARK_STRING: &str = "spark_string";

/// Registers the functions in a flow's session.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(FromJson::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(SparkString::default()));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FromJson {
    signature: Signature,
}

impl Default for FromJson {
    fn default() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

/// The schema of a `from_json` call, from its second argument.
fn ddl_of(value: Option<&ScalarValue>) -> Result<Vec<Column>> {
    let text = match value {
        Some(ScalarValue::Utf8(Some(s)))
        | Some(ScalarValue::Utf8View(Some(s)))
        | Some(ScalarValue::LargeUtf8(Some(s))) => s,
        _ => {
            return plan_err!(
                "from_json takes its schema as a quoted text: from_json(text, 'id BIGINT, name STRING')"
            );
        }
    };
    match schema::from_ddl(text) {
        Ok(columns) if !columns.is_empty() => Ok(columns),
        Ok(_) => plan_err!("from_json: the schema names no column"),
        Err(e) => plan_err!("from_json: {e}"),
    }
}

fn struct_type(columns: &[Column]) -> DataType {
    DataType::Struct(Fields::from(
        columns.iter().map(Column::field).collect::<Vec<_>>(),
    ))
}

impl ScalarUDFImpl for FromJson {
    fn name(&self) -> &str {
        "from_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("from_json's type comes from its schema argument")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let columns = ddl_of(args.scalar_arguments.get(1).copied().flatten())?;
        Ok(Arc::new(Field::new(
            "from_json",
            struct_type(&columns),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ddl = match &args.args[1] {
            ColumnarValue::Scalar(value) => value.clone(),
            ColumnarValue::Array(_) => return exec_err!("from_json's schema must be a constant"),
        };
        let columns = ddl_of(Some(&ddl))?;
        let texts = strings(&args.args[0].to_array(args.number_rows)?)?;
        let mut rows = Rows::new(&columns);
        for i in 0..texts.len() {
            match texts.is_null(i) {
                true => rows.corrupt("", "", i as i64),
                false => rows.json_line(texts.value(i), "", i as i64),
            }
        }
        let decoded = rows.finish()?;
        let fields = match struct_type(&columns) {
            DataType::Struct(fields) => fields,
            _ => unreachable!("struct_type gives a struct"),
        };
        let arrays: Vec<ArrayRef> = decoded.columns()[..columns.len()].to_vec();
        let valid = NullBuffer::from(
            (0..texts.len())
                .map(|i| !texts.is_null(i))
                .collect::<Vec<_>>(),
        );
        let parsed = StructArray::try_new(fields, arrays, Some(valid))?;
        Ok(ColumnarValue::Array(Arc::new(parsed)))
    }
}

/// Any column as text: bytes read as UTF-8 with U+FFFD for what is not, others cast as Arrow
/// casts them.
fn strings(array: &ArrayRef) -> Result<StringArray> {
    let text: StringArray = match array.data_type() {
        DataType::Binary => lossy(array.as_binary::<i32>().iter()),
        DataType::LargeBinary => lossy(array.as_binary::<i64>().iter()),
        DataType::BinaryView => lossy(array.as_binary_view().iter()),
        _ => {
            let cast = arrow::compute::cast(array, &DataType::Utf8)?;
            cast.as_string::<i32>().clone()
        }
    };
    Ok(text)
}

fn lossy<'a>(bytes: impl Iterator<Item = Option<&'a [u8]>>) -> StringArray {
    bytes
        .map(|b| b.map(|b| String::from_utf8_lossy(b).into_owned()))
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkString {
    signature: Signature,
}

impl Default for SparkString {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for SparkString {
    fn name(&self) -> &str {
        SPARK_STRING
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// Named as the cast it stands for is: by what it casts (`CAST(value AS STRING)` is a column
    /// named `value`).
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        match args {
            [only] => Ok(only.schema_name().to_string()),
            _ => plan_err!("{SPARK_STRING} takes one argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = strings(&args.args[0].to_array(args.number_rows)?)?;
        Ok(ColumnarValue::Array(Arc::new(text)))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::BinaryArray;
    use arrow::datatypes::Schema;
    use datafusion::datasource::MemTable;

    use super::*;
    use crate::engine::declarative::parse::{Place, QueryText};
    use crate::engine::declarative::sql::flow_query;

    /// Runs `sql` (rewritten as a flow's query is) over `t(value BINARY)` holding `values`.
    async fn run(sql: &str, values: Vec<Option<&[u8]>>) -> String {
        let ctx = SessionContext::new();
        register(&ctx);
        let schema = Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Binary,
            true,
        )]));
        let column: ArrayRef = Arc::new(BinaryArray::from(values));
        let batch = arrow::array::RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let text = QueryText {
            sql: sql.into(),
            at: Place {
                file: "t.sql".into(),
                line: 1,
                column: 1,
            },
        };
        let query = flow_query(&text, "__read").unwrap();
        let rows = ctx.sql(&query.sql).await.unwrap().collect().await.unwrap();
        arrow::util::pretty::pretty_format_batches(&rows)
            .unwrap()
            .to_string()
    }

    #[tokio::test]
    async fn from_json_reads_what_fits_and_leaves_the_rest_null_as_spark_permissive_mode() {
        let good: &[u8] = br#"{"order_id": 7, "status": "placed", "amount": "12.50"}"#;
        let misfit: &[u8] = br#"{"order_id": "seven", "status": "placed"}"#;
        let not_json: &[u8] = b"{oops";
        let bad_utf8: &[u8] = b"{\"status\": \"pl\xffced\"}";
        let sql = "SELECT e.*, raw FROM (SELECT CAST(value AS STRING) AS raw, \
                   from_json(value::string, 'order_id BIGINT, status STRING, amount DECIMAL(10,2)') AS e \
                   FROM t)";
        let text = run(
            sql,
            vec![
                Some(good),
                Some(misfit),
                Some(not_json),
                Some(bad_utf8),
                None,
            ],
        )
        .await;
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].contains("order_id")
                && lines[1].contains("amount")
                && lines[1].contains("raw"),
            "{text}"
        );
        assert!(text.contains("| 7        | placed | 12.50  |"), "{text}");
        // The misfit keeps what fits; the text that is not JSON gives NULLs and keeps its raw.
        assert!(text.contains("|          | placed |        |"), "{text}");
        assert!(text.contains("{oops"), "{text}");
        assert!(text.contains("pl\u{fffd}ced"), "{text}");
        // A field of the struct by name.
        let text = run(
            "SELECT e.status FROM (SELECT from_json(CAST(value AS STRING), 'status STRING') AS e FROM t)",
            vec![Some(good)],
        )
        .await;
        assert!(text.contains("| placed |"), "{text}");
    }

    #[tokio::test]
    async fn from_json_without_a_schema_it_can_read_is_refused_at_planning() {
        let ctx = SessionContext::new();
        register(&ctx);
        for (sql, says) in [
            ("SELECT from_json('{}', 'a WHATEVER')", "type WHATEVER"),
            ("SELECT from_json('{}', concat('a ', 'INT'))", "quoted text"),
        ] {
            let refused = match ctx.sql(sql).await {
                Ok(df) => df.collect().await.unwrap_err().to_string(),
                Err(e) => e.to_string(),
            };
            assert!(refused.contains(says), "{sql}: {refused}");
        }
    }
}
