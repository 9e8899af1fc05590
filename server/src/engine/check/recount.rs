//! The full check's recount of bronze, in one pass over its columns in memory: each order's
//! newest event (set against `orders`), the events told apart by order, status and time, and the
//! distinct placed events per hour (set against `hourly_sales`). [`super::RECOUNT_QUERIES`] say
//! the same in SQL, for a peer engine on the same files (`make bench` runs them in DuckDB and
//! stops if the answers differ); the unit tests hold both to the same answers.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use arrow::array::{Array, PrimitiveArray, RecordBatch, StringArray};
use arrow::datatypes::{Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::hours::HourFigures;
use crate::engine::columns::Columns;
use crate::engine::flows::HOUR_MICROS;
use crate::engine::tables::TableError;

/// An order event's columns, as bronze and `orders` both hold them.
struct Events<'a> {
    order_id: &'a PrimitiveArray<Int64Type>,
    customer_id: StringArray,
    status: StringArray,
    amount: &'a PrimitiveArray<Decimal128Type>,
    event_time: &'a PrimitiveArray<TimestampMicrosecondType>,
}

impl<'a> Events<'a> {
    fn of(batch: &'a RecordBatch, what: &'a str) -> Result<Self, TableError> {
        let c = Columns::of(batch, what);
        Ok(Self {
            order_id: c.primitive("order_id")?,
            customer_id: c.strings("customer_id")?,
            status: c.strings("status")?,
            amount: c.primitive("amount")?,
            event_time: c.primitive("event_time")?,
        })
    }

    /// Row `i`'s values, `None` where NULL: (customer, status, amount, event time).
    fn values(&self, i: usize) -> Values<'_> {
        fn text(a: &StringArray, i: usize) -> Option<&str> {
            (!a.is_null(i)).then(|| a.value(i))
        }
        (
            text(&self.customer_id, i),
            text(&self.status, i),
            (!self.amount.is_null(i)).then(|| self.amount.value(i)),
            (!self.event_time.is_null(i)).then(|| self.event_time.value(i)),
        )
    }
}

type Values<'a> = (Option<&'a str>, Option<&'a str>, Option<i128>, Option<i64>);

/// Where a bronze row is, and what orders it among an order's events: later `event_time` first,
/// then the first stored (partition, offset).
#[derive(Clone, Copy)]
struct Place {
    event_time: i64,
    partition: i32,
    offset: i64,
    batch: usize,
    row: usize,
}

impl Place {
    fn newer_than(&self, other: &Place) -> bool {
        match self.event_time.cmp(&other.event_time) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.stored_before(other),
        }
    }

    fn stored_before(&self, other: &Place) -> bool {
        (self.partition, self.offset) < (other.partition, other.offset)
    }
}

/// What the recount found in bronze.
pub(super) struct Recounted {
    pub events: i64,
    pub distinct: i64,
    /// Order ids whose newest event `orders` does not hold exactly once, sorted.
    pub differing: Vec<i64>,
    pub hours: Vec<HourFigures>,
}

/// Recounts `bronze` (its event columns, `partition` and `offset`) against `orders` and
/// `hourly_sales`.
pub(super) fn recount(
    bronze: &[RecordBatch],
    orders: &[RecordBatch],
    hourly: &[RecordBatch],
) -> Result<Recounted, TableError> {
    const WHAT: &str = "bronze_orders";
    let columns = bronze
        .iter()
        .map(|b| Events::of(b, WHAT))
        .collect::<Result<Vec<_>, _>>()?;
    let events: usize = bronze.iter().map(RecordBatch::num_rows).sum();
    let mut newest: HashMap<i64, Place> = HashMap::with_capacity(events / 2);
    let mut distinct: HashSet<(i64, &str, i64)> = HashSet::with_capacity(events);
    // Each distinct placed event (order, time): the first stored copy.
    let mut placed: HashMap<(i64, i64), Place> = HashMap::with_capacity(events / 2);
    for (batch, (b, e)) in bronze.iter().zip(&columns).enumerate() {
        let c = Columns::of(b, WHAT);
        let partition = c.primitive::<Int32Type>("partition")?;
        let offset = c.primitive::<Int64Type>("offset")?;
        for row in 0..b.num_rows() {
            let (order_id, status) = (e.order_id.value(row), e.status.value(row));
            let place = Place {
                event_time: e.event_time.value(row),
                partition: partition.value(row),
                offset: offset.value(row),
                batch,
                row,
            };
            newest
                .entry(order_id)
                .and_modify(|held| {
                    if place.newer_than(held) {
                        *held = place;
                    }
                })
                .or_insert(place);
            distinct.insert((order_id, status, place.event_time));
            if status == "placed" {
                placed
                    .entry((order_id, place.event_time))
                    .and_modify(|held| {
                        if place.stored_before(held) {
                            *held = place;
                        }
                    })
                    .or_insert(place);
            }
        }
    }
    let mut known: BTreeMap<i64, (i64, i128)> = BTreeMap::new();
    for p in placed.values() {
        let hour = p.event_time.div_euclid(HOUR_MICROS) * HOUR_MICROS;
        let k = known.entry(hour).or_default();
        k.0 += 1;
        k.1 += columns[p.batch].amount.value(p.row);
    }
    Ok(Recounted {
        events: events as i64,
        distinct: distinct.len() as i64,
        differing: differing(&columns, &newest, orders)?,
        hours: hours(known, hourly)?,
    })
}

/// Order ids of `orders` that are not their newest event in bronze, held twice, or not in bronze;
/// and of bronze's orders that `orders` lacks. A NULL on one side and a value on the other differ.
fn differing(
    bronze: &[Events<'_>],
    newest: &HashMap<i64, Place>,
    orders: &[RecordBatch],
) -> Result<Vec<i64>, TableError> {
    let mut out = BTreeSet::new();
    let mut seen: HashMap<i64, u32> = HashMap::with_capacity(newest.len());
    for b in orders {
        let o = Events::of(b, "orders")?;
        for i in 0..b.num_rows() {
            // A row without an order id names no order: the SQL drops it the same way.
            if o.order_id.is_null(i) {
                continue;
            }
            let id = o.order_id.value(i);
            *seen.entry(id).or_default() += 1;
            let same = newest
                .get(&id)
                .is_some_and(|p| bronze[p.batch].values(p.row) == o.values(i));
            if !same {
                out.insert(id);
            }
        }
    }
    out.extend(seen.iter().filter(|(_, n)| **n > 1).map(|(id, _)| *id));
    out.extend(newest.keys().filter(|id| !seen.contains_key(id)));
    Ok(out.into_iter().collect())
}

/// Each hour recounted or written: gold's figures (summed over its writes) beside the recount.
fn hours(
    known: BTreeMap<i64, (i64, i128)>,
    hourly: &[RecordBatch],
) -> Result<Vec<HourFigures>, TableError> {
    const WHAT: &str = "hourly_sales";
    let mut written: BTreeMap<i64, (i64, i128, i64)> = BTreeMap::new();
    for b in hourly {
        let c = Columns::of(b, WHAT);
        let hour = c.primitive::<TimestampMicrosecondType>("hour")?;
        let orders = c.primitive::<Int64Type>("orders")?;
        let revenue = c.primitive::<Decimal128Type>("revenue")?;
        for i in 0..b.num_rows() {
            let w = written.entry(hour.value(i)).or_default();
            w.0 += orders.value(i);
            w.1 += revenue.value(i);
            w.2 += 1;
        }
    }
    let every: BTreeSet<i64> = known.keys().chain(written.keys()).copied().collect();
    Ok(every
        .into_iter()
        .map(|hour| HourFigures {
            hour,
            counted: written.get(&hour).copied(),
            known: known.get(&hour).copied().unwrap_or_default(),
        })
        .collect())
}
