//! The Arrow batches a run commits: its rows for `bronze_orders` (built as they are decoded), its
//! new rejects for `bronze_rejects`.

use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, Decimal128Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow::record_batch::RecordBatch;

use crate::engine::event::EventRef;
use crate::engine::tables::{TableError, TableName};

/// A landed message that did not parse.
pub(super) struct Rejected {
    pub(super) partition: i32,
    pub(super) offset: i64,
    pub(super) kafka_timestamp: Option<i64>,
    pub(super) value: String,
    pub(super) reason: String,
}

/// The columns every landed message has in both bronze tables (SPEC §2).
struct LandedColumns {
    partition: Int32Builder,
    offset: Int64Builder,
    kafka_timestamp: TimestampMicrosecondBuilder,
    ingested_at: TimestampMicrosecondBuilder,
}

impl LandedColumns {
    fn with_capacity(n: usize) -> Self {
        Self {
            partition: Int32Builder::with_capacity(n),
            offset: Int64Builder::with_capacity(n),
            kafka_timestamp: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
            ingested_at: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
        }
    }

    fn append(
        &mut self,
        partition: i32,
        offset: i64,
        kafka_timestamp: Option<i64>,
        ingested_at: i64,
    ) {
        self.partition.append_value(partition);
        self.offset.append_value(offset);
        self.kafka_timestamp.append_option(kafka_timestamp);
        self.ingested_at.append_value(ingested_at);
    }

    /// The four columns, followed by the table's own.
    fn finish(mut self, rest: Vec<ArrayRef>) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.partition.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.kafka_timestamp.finish()),
            Arc::new(self.ingested_at.finish()),
        ];
        columns.extend(rest);
        columns
    }
}

/// One partition's rows of `bronze_orders`, appended as they are decoded.
pub(super) struct OrderRows {
    landed: LandedColumns,
    order_id: Int64Builder,
    customer: StringBuilder,
    status: StringBuilder,
    amount: Decimal128Builder,
    event_time: TimestampMicrosecondBuilder,
}

impl OrderRows {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self {
            landed: LandedColumns::with_capacity(n),
            order_id: Int64Builder::with_capacity(n),
            customer: StringBuilder::with_capacity(n, n * 4),
            status: StringBuilder::with_capacity(n, n * 6),
            amount: Decimal128Builder::with_capacity(n),
            event_time: TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
        }
    }

    pub(super) fn append(
        &mut self,
        partition: i32,
        offset: i64,
        kafka_timestamp: Option<i64>,
        ingested_at: i64,
        event: &EventRef<'_>,
    ) {
        self.landed
            .append(partition, offset, kafka_timestamp, ingested_at);
        self.order_id.append_value(event.order_id);
        self.customer.append_value(&event.customer_id);
        self.status.append_value(event.status);
        self.amount.append_value(event.amount_cents);
        self.event_time.append_value(event.event_time_micros);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.order_id.is_empty()
    }

    pub(super) fn finish(mut self) -> Result<RecordBatch, TableError> {
        let amount = self
            .amount
            .finish()
            .with_precision_and_scale(18, 2)
            .map_err(arrow_err)?;
        let columns = self.landed.finish(vec![
            Arc::new(self.order_id.finish()),
            Arc::new(self.customer.finish()),
            Arc::new(self.status.finish()),
            Arc::new(amount),
            Arc::new(self.event_time.finish()),
        ]);
        RecordBatch::try_new(TableName::BronzeOrders.schema(), columns).map_err(arrow_err)
    }
}

/// Rejects as a batch of `bronze_rejects`, in partition and offset order.
pub(super) fn rejects_batch(
    rejects: &[Rejected],
    ingested_at: i64,
) -> Result<RecordBatch, TableError> {
    let mut landed = LandedColumns::with_capacity(rejects.len());
    let mut value = StringBuilder::new();
    let mut reason = StringBuilder::new();
    let mut sorted: Vec<&Rejected> = rejects.iter().collect();
    sorted.sort_by_key(|r| (r.partition, r.offset));
    for r in sorted {
        landed.append(r.partition, r.offset, r.kafka_timestamp, ingested_at);
        value.append_value(&r.value);
        reason.append_value(&r.reason);
    }
    let columns = landed.finish(vec![Arc::new(value.finish()), Arc::new(reason.finish())]);
    RecordBatch::try_new(TableName::BronzeRejects.schema(), columns).map_err(arrow_err)
}

fn arrow_err(source: arrow::error::ArrowError) -> TableError {
    TableError::Arrow {
        table: "bronze_orders".into(),
        source,
    }
}
