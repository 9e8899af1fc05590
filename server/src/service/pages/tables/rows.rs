//! The rows the tables page shows: a filter built from its parts (a column of the table, one of
//! [`RowsWanted::OPS`], a value cast to the column's type) with DataFusion's expressions, never
//! from text read as SQL, then a page of the rows it keeps in the table's order.

use app::api::ApiError;
use app::model::RowsWanted;
use arrow::array::StringArray;
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::functions::expr_fn::strpos;
use datafusion::logical_expr::{Expr, Operator, binary_expr};
use datafusion::prelude::{cast, ident, lit};
use deltalake::DeltaTable;

use crate::engine::tables;
use crate::service::error::failed;

/// The longest value a filter compares with.
const MOST_VALUE: usize = 200;
/// The furthest row a page may start at.
pub const MOST_OFFSET: usize = 10_000_000;

/// The filter `wanted` asks for over a table of `schema`; `None` without a column.
pub fn filter(schema: &Schema, wanted: &RowsWanted) -> Result<Option<Expr>, ApiError> {
    let Some(column) = wanted.column.as_deref().filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let field = schema.field_with_name(column).map_err(|_| {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        // The name as given, cut: it is the caller's text.
        let given: String = column.chars().take(64).collect();
        ApiError::field(
            "column",
            format!("one of {}, not {given:?}", names.join(", ")),
        )
    })?;
    let op = wanted.op.as_deref().unwrap_or("=");
    let value = wanted.value.clone().unwrap_or_default();
    if value.chars().count() > MOST_VALUE {
        return Err(ApiError::field(
            "value",
            format!("at most {MOST_VALUE} characters"),
        ));
    }
    // A value its column's type cannot take is said now, not read as no match.
    let text_column = matches!(
        field.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    );
    if op != "contains" && !text_column {
        let strict = CastOptions {
            safe: false,
            ..Default::default()
        };
        cast_with_options(
            &StringArray::from(vec![value.as_str()]),
            field.data_type(),
            &strict,
        )
        .map_err(|_| {
            ApiError::field(
                "value",
                format!(
                    "{value:?} is not a value of {} ({})",
                    field.name(),
                    field.data_type()
                ),
            )
        })?;
    }
    let column = ident(field.name());
    let compared = |operator| {
        let value = match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => lit(value.clone()),
            other => cast(lit(value.clone()), other.clone()),
        };
        binary_expr(column.clone(), operator, value)
    };
    Ok(Some(match op {
        "=" => compared(Operator::Eq),
        "!=" => compared(Operator::NotEq),
        "<" => compared(Operator::Lt),
        "<=" => compared(Operator::LtEq),
        ">" => compared(Operator::Gt),
        ">=" => compared(Operator::GtEq),
        "contains" => strpos(cast(column, DataType::Utf8), lit(value)).gt(lit(0)),
        other => {
            return Err(ApiError::field(
                "op",
                format!("one of {}, not {other:?}", RowsWanted::OPS.join(" ")),
            ));
        }
    }))
}

/// Page `offset..offset + limit` of `table`'s rows that `filter` keeps, sorted by `order`, and
/// how many it keeps.
pub async fn page(
    table: &DeltaTable,
    name: &str,
    order: &[String],
    filter: Option<Expr>,
    offset: usize,
    limit: usize,
) -> Result<(Vec<RecordBatch>, usize), ApiError> {
    let ctx = tables::session(table, "t").await.map_err(failed)?;
    let read = |e: datafusion::error::DataFusionError| ApiError::Failed(format!("{name}: {e}"));
    let mut rows = ctx.table("t").await.map_err(read)?;
    let filtered = filter.is_some();
    if let Some(filter) = filter {
        rows = rows.filter(filter).map_err(read)?;
    }
    // A value the column's type cannot take fails here, when the rows are read.
    let value = |e: datafusion::error::DataFusionError| match filtered {
        true => ApiError::field("value", format!("cannot be compared with that column: {e}")),
        false => read(e),
    };
    let matching = rows.clone().count().await.map_err(value)?;
    let sorted = order
        .iter()
        .map(|c| ident(c).sort(true, true))
        .collect::<Vec<_>>();
    let batches = rows
        .sort(sorted)
        .map_err(read)?
        .limit(offset, Some(limit))
        .map_err(read)?
        .collect()
        .await
        .map_err(value)?;
    Ok((batches, matching))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    fn wanted(column: &str, op: &str, value: &str) -> RowsWanted {
        RowsWanted {
            column: Some(column.into()),
            op: Some(op.into()),
            value: Some(value.into()),
            page: 0,
        }
    }

    #[test]
    fn a_filter_is_refused_at_the_field_that_does_not_fit() {
        let schema = Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let field = |w: &RowsWanted| match filter(&schema, w) {
            Err(ApiError::Field { field, .. }) => field,
            other => panic!("{w:?}: {other:?}"),
        };
        assert_eq!(field(&wanted("x", "=", "1")), "column");
        assert_eq!(field(&wanted("n", "=", "abc")), "value");
        assert_eq!(field(&wanted("n", "; DROP", "1")), "op");
        assert_eq!(field(&wanted("s", "=", &"x".repeat(201))), "value");
        assert!(filter(&schema, &wanted("n", "<", "-3")).unwrap().is_some());
        assert!(
            filter(&schema, &wanted("n", "contains", "abc"))
                .unwrap()
                .is_some()
        );
        assert!(filter(&schema, &RowsWanted::default()).unwrap().is_none());
    }
}
