//! gold: `bronze_orders` -> `hourly_sales`, orders and revenue per event-time hour with a 1-hour
//! watermark and (by default) duplicates dropped within it: the semantics of SPEC §3's Spark query,
//! run by run. Its state (open hours, duplicate keys, the watermark, the dedup setting) is saved
//! for the bronze version it covers before the Delta commit that stores that version: the commit
//! decides which state is current, so a crash anywhere is invisible.

mod state;
mod whatif;

use std::sync::Arc;

use app::model::FlowRun;
use arrow::array::{
    ArrayRef, Decimal128Array, Int64Array, PrimitiveArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow::record_batch::RecordBatch;
use deltalake::DeltaTable;
use deltalake::kernel::Transaction;

pub use state::{GoldState, HourTotal};
pub use whatif::what_if;

use super::{
    DROPPED_LISTED, DropReason, DroppedEvent, SourceRange, bronze_changes, pending, query_changes,
    show_time,
};
use crate::engine::columns::Columns;
use crate::engine::event::format_micros;
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{self, TableError, TableName};

/// The `txn` app id under which gold stores the bronze version its output and state cover.
pub const APP_ID: &str = "hourly_sales/bronze_orders";

/// Placed events of the new bronze commits, in the order Spark would read them.
const PLACED_IN_ORDER: &str = r#"
    SELECT order_id, arrow_cast(status, 'Utf8') AS status, amount, event_time, "partition", "offset"
    FROM changes WHERE status = 'placed'
    ORDER BY _commit_version, "partition", "offset""#;

/// The gold flow; `dedup` is the setting asked for, which must match the state's once it exists.
pub struct Gold {
    pub dedup: bool,
}

/// The tables, the bronze version processed, and the state as of that version.
pub struct Restored {
    bronze: DeltaTable,
    hourly: DeltaTable,
    processed: Option<i64>,
    state: GoldState,
}

/// The placed events of bronze's new commits, up to `current`.
pub struct Placed {
    batches: Vec<RecordBatch>,
    current: i64,
}

/// The hours the watermark closed, to be written, and the bronze version they cover.
pub struct Closed {
    hours: Vec<(i64, HourTotal)>,
    current: i64,
}

#[async_trait::async_trait]
impl Flow for Gold {
    type State = Restored;
    type Input = Placed;
    type Output = Closed;
    type Done = ();

    fn name(&self) -> &str {
        "gold"
    }

    fn target(&self) -> Option<&str> {
        Some(TableName::HourlySales.as_str())
    }

    async fn restore(
        &mut self,
        cx: &FlowContext,
        event: &mut FlowRun,
    ) -> Result<Restored, FlowError> {
        let bronze = cx.tables.open_or_create(TableName::BronzeOrders).await?;
        let hourly = cx.tables.open_or_create(TableName::HourlySales).await?;
        let processed = cx.tables.txn_version(&hourly, APP_ID).await?;
        let state = match processed {
            Some(v) => GoldState::restore(&cx.tables, &cx.gold_state_dir(), v)?,
            None => GoldState::new(self.dedup),
        };
        if state.dedup() != self.dedup {
            let word = |on: bool| if on { "on" } else { "off" };
            return Err(FlowError::DedupSettingFixed {
                started: word(state.dedup()),
                asked: word(self.dedup),
            });
        }
        event.figures.watermark_before = show_time(state.watermark());
        event.figures.watermark_after = event.figures.watermark_before.clone();
        Ok(Restored {
            bronze,
            hourly,
            processed,
            state,
        })
    }

    async fn read(
        &mut self,
        _: &FlowContext,
        restored: &Restored,
        event: &mut FlowRun,
    ) -> Result<Option<Placed>, FlowError> {
        let Some((first, current)) = pending(&restored.bronze, restored.processed) else {
            return Ok(None);
        };
        event.figures.source = SourceRange::Versions {
            table: TableName::BronzeOrders.to_string(),
            first,
            last: current,
        };
        let ctx = bronze_changes(&restored.bronze, (first, current))?;
        let batches = query_changes(&ctx, PLACED_IN_ORDER).await?;
        Ok(Some(Placed { batches, current }))
    }

    async fn process(
        &mut self,
        restored: &mut Restored,
        placed: Placed,
        event: &mut FlowRun,
    ) -> Result<Closed, FlowError> {
        let state = &mut restored.state;
        let before = state.watermark();
        let mut latest: Option<i64> = None;
        for batch in &placed.batches {
            let PlacedColumns {
                order_id,
                status,
                amount,
                event_time,
                partition,
                offset,
            } = PlacedColumns::of(batch, "gold's placed events")?;
            for i in 0..batch.num_rows() {
                event.figures.rows_read += 1;
                let t = event_time.value(i);
                latest = Some(latest.map_or(t, |l| l.max(t)));
                let dropped = state.add(
                    order_id.value(i),
                    status.value(i),
                    amount.value(i),
                    t,
                    before,
                );
                let Some(reason) = dropped else { continue };
                match reason {
                    DropReason::Late => event.figures.rows_late += 1,
                    DropReason::Duplicate => event.figures.rows_duplicate += 1,
                }
                if event.dropped.len() < DROPPED_LISTED {
                    event.dropped.push(DroppedEvent {
                        order_id: order_id.value(i),
                        status: status.value(i).to_string(),
                        event_time: format_micros(t),
                        partition: partition.value(i),
                        offset: offset.value(i),
                        reason,
                    });
                }
            }
        }
        let hours = state.advance(latest);
        event.figures.watermark_after = show_time(state.watermark());
        event.figures.hours_closed = hours.iter().map(|(h, _)| format_micros(*h)).collect();
        event.figures.rows_written = hours.len() as u64;
        Ok(Closed {
            hours,
            current: placed.current,
        })
    }

    async fn commit(
        &mut self,
        cx: &FlowContext,
        restored: Restored,
        closed: Closed,
        event: &mut FlowRun,
    ) -> Result<(), FlowError> {
        let dir = cx.gold_state_dir();
        // The state first: it becomes current only with the commit below, which names it.
        restored.state.save(&dir, closed.current)?;
        let table = tables::append(
            restored.hourly,
            vec![hours_batch(&closed.hours)?],
            vec![Transaction::new(APP_ID, closed.current)],
        )
        .await?;
        cx.tables.keep_committed(&table);
        event.figures.table_version = Some(tables::version(&table));
        crate::engine::state::remove_old(&dir, closed.current);
        restored.state.kept_as(&cx.tables, &dir, closed.current);
        Ok(())
    }
}

/// The columns of gold's placed events (the rows of [`PLACED_IN_ORDER`]), looked up once a batch.
pub(super) struct PlacedColumns<'a> {
    pub order_id: &'a PrimitiveArray<Int64Type>,
    pub status: arrow::array::StringArray,
    pub amount: &'a PrimitiveArray<Decimal128Type>,
    pub event_time: &'a PrimitiveArray<TimestampMicrosecondType>,
    pub partition: &'a PrimitiveArray<Int32Type>,
    pub offset: &'a PrimitiveArray<Int64Type>,
}

impl<'a> PlacedColumns<'a> {
    pub(super) fn of(batch: &'a RecordBatch, what: &'a str) -> Result<Self, TableError> {
        let c = Columns::of(batch, what);
        Ok(Self {
            order_id: c.primitive("order_id")?,
            status: c.strings("status")?,
            amount: c.primitive("amount")?,
            event_time: c.primitive("event_time")?,
            partition: c.primitive("partition")?,
            offset: c.primitive("offset")?,
        })
    }
}

fn hours_batch(closed: &[(i64, HourTotal)]) -> Result<RecordBatch, TableError> {
    let arrow = |source| TableError::Arrow {
        table: TableName::HourlySales.to_string(),
        source,
    };
    let hours = TimestampMicrosecondArray::from_iter_values(closed.iter().map(|(h, _)| *h))
        .with_timezone("UTC");
    let orders = Int64Array::from_iter_values(closed.iter().map(|(_, t)| t.orders));
    let revenue = Decimal128Array::from_iter_values(closed.iter().map(|(_, t)| t.revenue_cents))
        .with_precision_and_scale(18, 2)
        .map_err(arrow)?;
    let columns: Vec<ArrayRef> = vec![Arc::new(hours), Arc::new(orders), Arc::new(revenue)];
    RecordBatch::try_new(TableName::HourlySales.schema(), columns).map_err(arrow)
}
