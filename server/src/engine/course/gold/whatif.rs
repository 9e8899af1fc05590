//! The what-if watermark: gold's logic replayed over bronze's placed events, in the very batches
//! gold's own commits read them (each `hourly_sales` commit names the bronze version it covers),
//! once with SPEC §3's delay and once with another. Both results live in memory: no table, state
//! file or log is written. The replay with today's delay must write exactly what `hourly_sales`
//! holds, and says whether it does. The words are the service's (`service/pages/whatif.rs`).

use std::collections::{BTreeMap, BTreeSet};

use app::model::{ChangedEvent, CountedHour, EventFate, ReplayedRun, WhatIf, WhatIfHour};
use arrow::datatypes::{Decimal128Type, Int64Type, TimestampMicrosecondType};
use arrow::record_batch::RecordBatch;

use super::{APP_ID, GoldState, HourTotal, PLACED_IN_ORDER, PlacedColumns};
use crate::engine::columns::Columns;
use crate::engine::course::{DELAY_MICROS, DropReason, bronze_changes, query_changes};
use crate::engine::event::{format_cents, format_micros};
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;
use crate::engine::tables::{self, TableName, commits};

/// Changed events listed; the rest are counted in the sentences.
const CHANGED_LISTED: usize = 200;

const MINUTE_MICROS: i64 = 60_000_000;

/// A placed event as gold reads it, and the replayed run that read it.
struct Placed {
    order_id: i64,
    status: String,
    amount_cents: i128,
    event_time: i64,
    partition: i32,
    offset: i64,
    run: usize,
}

/// Gold's state under one delay, run by run: what it wrote and when, and each event's fate.
struct Replay {
    state: GoldState,
    /// Hour -> its total and the run after which it was written.
    written: BTreeMap<i64, (HourTotal, usize)>,
    fates: Vec<EventFate>,
}

impl Replay {
    fn new(dedup: bool, delay: i64) -> Self {
        Self {
            state: GoldState::with_delay(dedup, delay),
            written: BTreeMap::new(),
            fates: vec![],
        }
    }

    /// One of gold's runs: the events it read, then the watermark moves (as `Gold::process`).
    fn run(&mut self, run: usize, events: &[Placed]) {
        let before = self.state.watermark();
        let latest = events.iter().map(|e| e.event_time).max();
        for e in events {
            let fate =
                match self
                    .state
                    .add(e.order_id, &e.status, e.amount_cents, e.event_time, before)
                {
                    None => EventFate::Counted,
                    Some(DropReason::Late) => EventFate::Late,
                    Some(DropReason::Duplicate) => EventFate::Duplicate,
                };
            self.fates.push(fate);
        }
        for (hour, total) in self.state.advance(latest) {
            self.written.insert(hour, (total, run));
        }
    }

    /// The hour as this delay counts it: written (and after which run), or still open.
    fn hour(&self, hour: i64) -> Option<CountedHour> {
        let counted = |t: &HourTotal, final_after| CountedHour {
            orders: t.orders,
            revenue: format_cents(t.revenue_cents),
            final_after,
        };
        match self.written.get(&hour) {
            Some((t, run)) => Some(counted(t, Some(*run))),
            None => self.state.open_hour(hour).map(|t| counted(t, None)),
        }
    }

    fn hours(&self) -> impl Iterator<Item = i64> + '_ {
        self.written
            .keys()
            .copied()
            .chain(self.state.open_hours().map(|(h, _)| h))
    }
}

/// Replays gold over the lab's bronze with a delay of `delay_minutes` beside today's.
pub async fn what_if(cx: &FlowContext, delay_minutes: i64) -> Result<WhatIf, FlowError> {
    let dedup = GoldState::committed(cx).await?.is_none_or(|s| s.dedup());
    let mut answer = WhatIf {
        delay_minutes,
        actual_delay_minutes: DELAY_MICROS / MINUTE_MICROS,
        dedup,
        runs: vec![],
        hours: vec![],
        changed: vec![],
        changed_total: 0,
        matches_table: true,
        bronze_not_read: 0,
        sentences: vec![],
    };
    let (Some(bronze), Some(hourly)) = (
        cx.tables.open(TableName::BronzeOrders).await?,
        cx.tables.open(TableName::HourlySales).await?,
    ) else {
        return Ok(answer);
    };
    let mut now = Replay::new(dedup, DELAY_MICROS);
    let mut asked = Replay::new(dedup, delay_minutes * MINUTE_MICROS);
    let mut events = vec![];
    let mut first = 0;
    for (i, commit) in commits::txn_commits(&hourly, APP_ID)
        .await?
        .iter()
        .enumerate()
    {
        let number = i + 1;
        let ctx = bronze_changes(&bronze, (first, commit.covers))?;
        let batch = placed(&query_changes(&ctx, PLACED_IN_ORDER).await?, number)?;
        now.run(number, &batch);
        asked.run(number, &batch);
        events.extend(batch);
        answer.runs.push(ReplayedRun {
            number,
            gold_version: commit.version,
            run_id: None,
            bronze_first: first,
            bronze_last: commit.covers,
            at: commit
                .timestamp_ms
                .map(|ms| format_micros(ms * 1000))
                .unwrap_or_default(),
        });
        first = commit.covers + 1;
    }
    answer.bronze_not_read = (tables::version(&bronze) + 1 - first).max(0);
    answer.matches_table = written_rows(&hourly).await? == written(&now);
    let hours: BTreeSet<i64> = now.hours().chain(asked.hours()).collect();
    answer.hours = hours
        .into_iter()
        .map(|h| WhatIfHour {
            hour: format_micros(h),
            now: now.hour(h),
            with_delay: asked.hour(h),
        })
        .collect();
    let changed = events
        .iter()
        .zip(now.fates.iter().zip(&asked.fates))
        .filter(|(_, (a, b))| a != b);
    answer.changed = changed
        .take(CHANGED_LISTED)
        .map(|(e, (a, b))| ChangedEvent {
            order_id: e.order_id,
            event_time: format_micros(e.event_time),
            partition: e.partition,
            offset: e.offset,
            run: e.run,
            now: *a,
            with_delay: *b,
        })
        .collect();
    answer.changed_total = now
        .fates
        .iter()
        .zip(&asked.fates)
        .filter(|(a, b)| a != b)
        .count();
    Ok(answer)
}

/// The placed events of one replayed run, in gold's order.
fn placed(batches: &[RecordBatch], run: usize) -> Result<Vec<Placed>, FlowError> {
    let mut out = vec![];
    for batch in batches {
        let c = PlacedColumns::of(batch, "the what-if's placed events")?;
        for i in 0..batch.num_rows() {
            out.push(Placed {
                order_id: c.order_id.value(i),
                status: c.status.value(i).to_string(),
                amount_cents: c.amount.value(i),
                event_time: c.event_time.value(i),
                partition: c.partition.value(i),
                offset: c.offset.value(i),
                run,
            });
        }
    }
    Ok(out)
}

/// (hour, orders, revenue in cents) of what a replay wrote, by hour.
fn written(replay: &Replay) -> Vec<(i64, i64, i128)> {
    replay
        .written
        .iter()
        .map(|(h, (t, _))| (*h, t.orders, t.revenue_cents))
        .collect()
}

/// (hour, orders, revenue in cents) of `hourly_sales` as committed, by hour.
async fn written_rows(hourly: &deltalake::DeltaTable) -> Result<Vec<(i64, i64, i128)>, FlowError> {
    let ctx = tables::session(hourly, "hourly_sales").await?;
    let batches = tables::query(
        &ctx,
        "hourly_sales",
        "SELECT hour, orders, revenue FROM hourly_sales ORDER BY hour",
    )
    .await?;
    let mut rows = vec![];
    for batch in &batches {
        let c = Columns::of(batch, "hourly_sales");
        let hour = c.primitive::<TimestampMicrosecondType>("hour")?;
        let orders = c.primitive::<Int64Type>("orders")?;
        let revenue = c.primitive::<Decimal128Type>("revenue")?;
        for i in 0..batch.num_rows() {
            rows.push((hour.value(i), orders.value(i), revenue.value(i)));
        }
    }
    Ok(rows)
}
