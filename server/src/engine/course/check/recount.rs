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
use crate::engine::course::HOUR_MICROS;
use crate::engine::tables::TableError;

/// An order event's columns, as bronze and `orders` both hold them (the incremental check reads
/// its new files through it too).
pub(super) struct Events<'a> {
    pub(super) order_id: &'a PrimitiveArray<Int64Type>,
    pub(super) customer_id: StringArray,
    pub(super) status: StringArray,
    pub(super) amount: &'a PrimitiveArray<Decimal128Type>,
    pub(super) event_time: &'a PrimitiveArray<TimestampMicrosecondType>,
}

impl<'a> Events<'a> {
    pub(super) fn of(batch: &'a RecordBatch, what: &'a str) -> Result<Self, TableError> {
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
/// then the first stored: by bronze run (its `ingested_at`), then partition and offset, the order
/// silver and gold read bronze's commits in.
#[derive(Clone, Copy)]
struct Place {
    event_time: i64,
    ingested: i64,
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
        (self.ingested, self.partition, self.offset)
            < (other.ingested, other.partition, other.offset)
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

/// Where each bronze row landed: its `ingested_at` (one per bronze run), `partition` and `offset`
/// columns, batch by batch.
type Landed<'a> = (
    &'a PrimitiveArray<TimestampMicrosecondType>,
    &'a PrimitiveArray<Int32Type>,
    &'a PrimitiveArray<Int64Type>,
);

/// Recounts `bronze` (its event columns, `partition` and `offset`) against `orders` and
/// `hourly_sales`. Each order's events are counted apart from every other order's, so the orders
/// are shared out by id between as many threads as the machine has cores.
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
    let landed = bronze
        .iter()
        .map(|b| {
            let c = Columns::of(b, WHAT);
            Ok((
                c.primitive("ingested_at")?,
                c.primitive("partition")?,
                c.primitive("offset")?,
            ))
        })
        .collect::<Result<Vec<Landed>, TableError>>()?;
    let silver = orders
        .iter()
        .map(|b| Events::of(b, "orders"))
        .collect::<Result<Vec<_>, _>>()?;
    let shares = std::thread::available_parallelism().map_or(1, |n| n.get().min(8)) as i64;
    let counted: Vec<Share> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..shares)
            .map(|k| {
                let (columns, landed, silver) = (&columns, &landed, &silver);
                scope.spawn(move || count(columns, landed, silver, (k, shares)))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a recount thread panicked"))
            .collect()
    });
    let mut known: BTreeMap<i64, (i64, i128)> = BTreeMap::new();
    let (mut distinct, mut differing) = (0, vec![]);
    for share in counted {
        distinct += share.distinct;
        differing.extend(share.differing);
        for (hour, (n, revenue)) in share.known {
            let k = known.entry(hour).or_default();
            k.0 += n;
            k.1 += revenue;
        }
    }
    differing.sort_unstable();
    Ok(Recounted {
        events: bronze.iter().map(RecordBatch::num_rows).sum::<usize>() as i64,
        distinct: distinct as i64,
        differing,
        hours: hours(known, hourly)?,
    })
}

/// What one thread counted of its share of the orders.
struct Share {
    distinct: usize,
    differing: Vec<i64>,
    known: BTreeMap<i64, (i64, i128)>,
}

/// Counts the orders whose id is `k` modulo `shares`, with `(k, shares)` as `share`.
fn count(
    bronze: &[Events<'_>],
    landed: &[Landed<'_>],
    orders: &[Events<'_>],
    share: (i64, i64),
) -> Share {
    let (k, shares) = share;
    let ours = |order_id: i64| order_id.rem_euclid(shares) == k;
    let rows: usize = bronze.iter().map(|e| e.order_id.len()).sum();
    let capacity = rows / shares as usize;
    let mut newest: HashMap<i64, Place> = HashMap::with_capacity(capacity / 2);
    let mut distinct: HashSet<(i64, &str, i64)> = HashSet::with_capacity(capacity);
    // Each distinct placed event (order, time): the first stored copy.
    let mut placed: HashMap<(i64, i64), Place> = HashMap::with_capacity(capacity / 2);
    for (batch, (e, (ingested, partition, offset))) in bronze.iter().zip(landed).enumerate() {
        for row in 0..e.order_id.len() {
            let order_id = e.order_id.value(row);
            if !ours(order_id) {
                continue;
            }
            let status = e.status.value(row);
            let place = Place {
                event_time: e.event_time.value(row),
                ingested: ingested.value(row),
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
        k.1 += bronze[p.batch].amount.value(p.row);
    }
    Share {
        distinct: distinct.len(),
        differing: differing(bronze, &newest, orders, ours),
        known,
    }
}

/// Order ids of `orders` (those `ours` picks) that are not their newest event in bronze, held
/// twice, or not in bronze; and of bronze's orders that `orders` lacks. A NULL on one side and a
/// value on the other differ.
fn differing(
    bronze: &[Events<'_>],
    newest: &HashMap<i64, Place>,
    orders: &[Events<'_>],
    ours: impl Fn(i64) -> bool,
) -> Vec<i64> {
    let mut out = BTreeSet::new();
    let mut seen: HashMap<i64, u32> = HashMap::with_capacity(newest.len());
    for o in orders {
        for i in 0..o.order_id.len() {
            // A row without an order id names no order: the SQL drops it the same way.
            if o.order_id.is_null(i) || !ours(o.order_id.value(i)) {
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
    out.into_iter().collect()
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
