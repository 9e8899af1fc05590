//! The columns a windowed flow writes, with Spark's result types.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::engine::declarative::sql::window::{Output, WindowPlan};
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::streaming::window::Aggregate;

/// The columns a windowed flow writes, from its input's.
pub fn output_schema(plan: &WindowPlan, input: &Schema) -> Result<SchemaRef, FlowError> {
    let mut fields = vec![];
    for (name, output) in &plan.outputs {
        let kind = match output {
            Output::Start | Output::End => timestamp(),
            Output::Key(i) => normal(&input_type(input, &format!("__k{i}"))?),
            Output::Aggregate(i) => {
                let of = input_type(input, &format!("__a{i}"))?;
                aggregate_type(plan.aggregates[*i].0, &of)
            }
        };
        fields.push(Field::new(name, kind, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn input_type(input: &Schema, name: &str) -> Result<DataType, FlowError> {
    input
        .field_with_name(name)
        .map(|f| f.data_type().clone())
        .map_err(|_| FlowError::from(Refusal::SchemaClash(format!("no column {name}"))))
}

/// Spark's result types: counts are BIGINT; a sum of whole numbers BIGINT, of decimals ten
/// digits wider; an average DOUBLE, or of decimals four more digits after the point.
fn aggregate_type(aggregate: Aggregate, of: &DataType) -> DataType {
    match (aggregate, of) {
        (Aggregate::CountAll | Aggregate::Count | Aggregate::CountIf, _) => DataType::Int64,
        (Aggregate::Sum, DataType::Decimal128(p, s)) => DataType::Decimal128((p + 10).min(38), *s),
        (Aggregate::Avg, DataType::Decimal128(p, s)) => {
            DataType::Decimal128((p + 4).min(38), (*s + 4).min(38))
        }
        (Aggregate::Sum, t) if t.is_integer() => DataType::Int64,
        (Aggregate::Sum | Aggregate::Avg, _) => DataType::Float64,
        (Aggregate::Min | Aggregate::Max, t) => normal(t),
    }
}

/// The type a cell of `t` is written back as.
fn normal(t: &DataType) -> DataType {
    match t {
        t if t.is_integer() => DataType::Int64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Timestamp(_, zone) => DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
        other => other.clone(),
    }
}
