//! The check (SPEC §4): recomputes silver and gold from bronze with batch queries and tells apart
//! an hour that is `ok`, `late` (the watermark dropped an event, as designed), a `PROBLEM` (counted
//! twice, or written from nothing) and `waiting` (the watermark has not passed it yet). It runs as
//! the last flow of a pipeline run; its lines are what it hands back.

mod full;
mod hours;
mod incremental;
mod offsets;
mod recount;

pub use full::FullCheck;
pub use incremental::{Check, committed_report, state_path};

use app::model::{CheckLine, Verdict};

use crate::engine::event::format_micros;

/// The full recount's two queries over bronze, by name: each order's newest event against
/// `orders`, and the distinct placed events per hour against `hourly_sales`. A peer engine runs
/// them on the same files (`make bench`'s DuckDB baseline).
pub const RECOUNT_QUERIES: [(&str, &str); 2] =
    [("silver", SILVER_DIFFERENCES), ("hours", hours::HOURS)];

/// What a check found: its lines, in the order it prints them.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub findings: Vec<CheckLine>,
    /// Events in bronze_orders: what the check recounted.
    pub bronze_events: i64,
    /// Gold's watermark when the check ran, RFC 3339.
    pub watermark: Option<String>,
}

impl Report {
    /// The report of a lab not checked yet: no finding.
    pub fn not_yet() -> Self {
        Self {
            findings: vec![],
            bronze_events: 0,
            watermark: None,
        }
    }

    pub fn has_problem(&self) -> bool {
        self.findings.iter().any(|f| f.verdict == Verdict::Problem)
    }

    /// The exit code `reckon check` ends with: 1 on a PROBLEM.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.has_problem())
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.findings
            .iter()
            .try_for_each(|line| writeln!(f, "{line}"))
    }
}

/// What the check's queries counted.
pub struct Recount {
    events: i64,
    offset_problems: Vec<String>,
    distinct: i64,
    rejected: i64,
    orders: i64,
    differing: Vec<i64>,
    hours: Vec<hours::HourFigures>,
}

/// The check's lines from what it counted, and gold's watermark: the same whichever way the
/// figures were counted (recounted from scratch, or kept up to date run by run).
fn report(recount: Recount, watermark: Option<i64>) -> Report {
    let mut findings = vec![];
    let line = CheckLine::says;
    // 1. Bronze and rejects hold every offset read, each once, with no gaps.
    let Recount { events, .. } = recount;
    if recount.offset_problems.is_empty() {
        findings.push(line(
            Verdict::Ok,
            format!("bronze_orders has {events} events, each offset once"),
        ));
    }
    findings.extend(
        recount
            .offset_problems
            .into_iter()
            .map(|text| line(Verdict::Problem, text)),
    );
    if events > recount.distinct {
        let twice = events - recount.distinct;
        findings.push(line(
            Verdict::Note,
            format!("{twice} of them sent twice by the shop's system"),
        ));
    }
    if recount.rejected > 0 {
        let messages = if recount.rejected == 1 {
            "message"
        } else {
            "messages"
        };
        findings.push(line(
            Verdict::Note,
            format!(
                "{} {messages} rejected, kept in bronze_rejects",
                recount.rejected
            ),
        ));
    }
    // 2. Silver holds the newest event of each order.
    findings.push(silver_line(recount.orders, &recount.differing));
    // 3. Gold: each hour against a recount of the distinct placed events.
    findings.extend(hours::lines(&recount.hours, watermark));
    Report {
        findings,
        bronze_events: events,
        watermark: watermark.map(format_micros),
    }
}

fn silver_line(orders: i64, differing: &[i64]) -> CheckLine {
    if differing.is_empty() {
        return CheckLine::says(
            Verdict::Ok,
            format!("orders has the newest state of all {orders} orders"),
        );
    }
    let ids: Vec<String> = differing.iter().take(5).map(i64::to_string).collect();
    let more = if differing.len() > 5 {
        format!(" and {} more", differing.len() - 5)
    } else {
        String::new()
    };
    CheckLine::says(
        Verdict::Problem,
        format!(
            "orders differs from the newest events in bronze: order ids {}{more}",
            ids.join(", ")
        ),
    )
}

/// Newest event per order (ties: the first stored, by run, partition and offset, as silver keeps it)
/// against `orders`, both ways; order ids that differ. The newest event's columns are taken with
/// `first_value` in one grouping, not a window's sort. Values are compared with `IS DISTINCT
/// FROM` (each in parentheses: the parser binds `IS DISTINCT FROM` looser than `OR`), so a NULL on
/// one side and a value on the other differ (as the seed's `exceptAll` has it).
const SILVER_DIFFERENCES: &str = r#"
    WITH newest AS (
        SELECT order_id,
               first_value(customer_id ORDER BY event_time DESC, ingested_at, "partition", "offset") AS customer_id,
               first_value(status ORDER BY event_time DESC, ingested_at, "partition", "offset") AS status,
               first_value(amount ORDER BY event_time DESC, ingested_at, "partition", "offset") AS amount,
               max(event_time) AS event_time
        FROM bronze_orders GROUP BY order_id)
    SELECT order_id FROM (
        SELECT coalesce(n.order_id, o.order_id) AS order_id
        FROM newest n FULL OUTER JOIN orders o ON n.order_id = o.order_id
        WHERE n.order_id IS NULL OR o.order_id IS NULL
           OR (n.customer_id IS DISTINCT FROM o.customer_id) OR (n.status IS DISTINCT FROM o.status)
           OR (n.amount IS DISTINCT FROM o.amount) OR (n.event_time IS DISTINCT FROM o.event_time)
        UNION
        SELECT order_id FROM orders GROUP BY order_id HAVING count(*) > 1)
    ORDER BY order_id"#;

/// Awaits one of the check's steps, logging its milliseconds (`RECKON_LOG=reckon=debug`).
async fn timed<T>(what: &str, step: impl std::future::Future<Output = T>) -> T {
    let started = std::time::Instant::now();
    let out = step.await;
    tracing::debug!(
        step = what,
        ms = started.elapsed().as_millis() as u64,
        "check"
    );
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, RecordBatch};
    use arrow::datatypes::{Decimal128Type, Int64Type, TimestampMicrosecondType};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    use super::*;
    use crate::engine::columns::Columns;
    use crate::engine::tables::{self, TableError};
    use hours::HourFigures;

    async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
        tables::query(ctx, "check", sql).await.unwrap()
    }

    /// The rows of [`hours::HOURS`] as figures.
    fn figures(batches: &[RecordBatch]) -> Result<Vec<HourFigures>, TableError> {
        let mut rows = vec![];
        for b in batches {
            let c = Columns::of(b, "the check's hours");
            let hour = c.primitive::<TimestampMicrosecondType>("hour")?;
            let counted = c.primitive::<Int64Type>("counted")?;
            let counted_revenue = c.primitive::<Decimal128Type>("counted_revenue")?;
            let writes = c.primitive::<Int64Type>("writes")?;
            let known = c.primitive::<Int64Type>("known")?;
            let known_revenue = c.primitive::<Decimal128Type>("known_revenue")?;
            for i in 0..b.num_rows() {
                rows.push(HourFigures {
                    hour: hour.value(i),
                    counted: (!counted.is_null(i))
                        .then(|| (counted.value(i), counted_revenue.value(i), writes.value(i))),
                    known: (known.value(i), known_revenue.value(i)),
                });
            }
        }
        Ok(rows)
    }

    /// The non-null values of an integer column of a query's rows.
    fn ints(batches: &[RecordBatch], column: &str) -> Result<Vec<i64>, TableError> {
        let mut out = vec![];
        for b in batches {
            let values = Columns::of(b, "the check").primitive::<Int64Type>(column)?;
            out.extend(values.iter().flatten());
        }
        Ok(out)
    }
    use arrow::array::TimestampMicrosecondArray;
    use arrow::array::{ArrayRef, Decimal128Array, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    /// A table of the events' columns (and bronze's run, partition and offset: one run,
    /// partition 0, offsets from 0), every column nullable: what another writer could leave in
    /// `orders`.
    fn table(rows: &[(i64, Option<&str>, i64)], landed: bool) -> RecordBatch {
        let at: Vec<(i64, i32, i64)> = (0..rows.len() as i64).map(|o| (1, 0, o)).collect();
        stored(rows, landed.then_some(&at))
    }

    /// [`table`] with each row's bronze run (its `ingested_at`), partition and offset.
    fn stored(rows: &[(i64, Option<&str>, i64)], at: Option<&[(i64, i32, i64)]>) -> RecordBatch {
        let mut fields = vec![];
        let mut columns: Vec<ArrayRef> = vec![];
        let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
        if let Some(at) = at {
            fields.push(Field::new("ingested_at", ts.clone(), true));
            fields.push(Field::new("partition", DataType::Int32, true));
            fields.push(Field::new("offset", DataType::Int64, true));
            let ingested = TimestampMicrosecondArray::from_iter_values(at.iter().map(|a| a.0));
            columns.push(Arc::new(ingested.with_timezone("UTC")));
            columns.push(Arc::new(Int32Array::from_iter_values(
                at.iter().map(|a| a.1),
            )));
            columns.push(Arc::new(Int64Array::from_iter_values(
                at.iter().map(|a| a.2),
            )));
        }
        fields.extend([
            Field::new("order_id", DataType::Int64, true),
            Field::new("customer_id", DataType::Utf8, true),
            Field::new("status", DataType::Utf8, true),
            Field::new("amount", DataType::Decimal128(18, 2), true),
            Field::new("event_time", ts, true),
        ]);
        columns.extend([
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
            Arc::new(StringArray::from(vec![Some("c-1"); rows.len()])),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(
                Decimal128Array::from(vec![1850; rows.len()])
                    .with_precision_and_scale(18, 2)
                    .unwrap(),
            ),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.2))
                    .with_timezone("UTC"),
            ),
        ]);
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    fn session(tables: &[(&str, &RecordBatch)]) -> SessionContext {
        let ctx = SessionContext::new();
        for (name, batch) in tables {
            let table = MemTable::try_new(batch.schema(), vec![vec![(*batch).clone()]]).unwrap();
            ctx.register_table(*name, Arc::new(table)).unwrap();
        }
        ctx
    }

    /// The orders that differ, by the recount; the SQL peers run must say the same.
    async fn differing(bronze: RecordBatch, orders: RecordBatch) -> Vec<i64> {
        let ctx = session(&[("bronze_orders", &bronze), ("orders", &orders)]);
        let by_sql = ints(&query(&ctx, SILVER_DIFFERENCES).await, "order_id").unwrap();
        let recounted = recount::recount(&[bronze], &[orders], &[]).unwrap();
        assert_eq!(
            recounted.differing, by_sql,
            "the recount and the SQL disagree"
        );
        recounted.differing
    }

    #[tokio::test]
    async fn hours_count_each_placed_event_once_as_the_sql_does() {
        let h = |hour: i64, minute: i64| (hour * 60 + minute) * 60_000_000;
        // Order 1 placed twice at one time (one event, sent twice), order 2 placed at two times
        // (two events), order 3 only paid; an hour written twice, and one with no event.
        let bronze = table(
            &[
                (1, Some("placed"), h(9, 5)),
                (1, Some("placed"), h(9, 5)),
                (2, Some("placed"), h(9, 10)),
                (2, Some("placed"), h(10, 1)),
                (3, Some("paid"), h(10, 2)),
            ],
            true,
        );
        let ts = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
        let written = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("hour", ts, false),
                Field::new("orders", DataType::Int64, false),
                Field::new("revenue", DataType::Decimal128(18, 2), false),
            ])),
            vec![
                Arc::new(
                    TimestampMicrosecondArray::from(vec![h(9, 0), h(10, 0), h(10, 0), h(12, 0)])
                        .with_timezone("UTC"),
                ),
                Arc::new(Int64Array::from(vec![2, 1, 1, 4])),
                Arc::new(
                    Decimal128Array::from(vec![3700, 1850, 1850, 100])
                        .with_precision_and_scale(18, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap();
        let ctx = session(&[("bronze_orders", &bronze), ("hourly_sales", &written)]);
        let by_sql = figures(&query(&ctx, hours::HOURS).await).unwrap();
        let recounted = recount::recount(&[bronze], &[], &[written]).unwrap();
        assert_eq!(recounted.hours, by_sql);
        assert_eq!(
            recounted
                .hours
                .iter()
                .map(|r| (r.counted, r.known))
                .collect::<Vec<_>>(),
            [
                (Some((2, 3700, 1)), (2, 3700)),
                (Some((2, 3700, 2)), (1, 1850)),
                (Some((4, 100, 1)), (0, 0)),
            ]
        );
        assert_eq!(recounted.distinct, 4);
    }

    #[tokio::test]
    async fn a_null_in_orders_where_bronze_has_a_value_differs() {
        let bronze = || table(&[(1, Some("paid"), 10), (2, Some("placed"), 20)], true);
        let same = table(&[(1, Some("paid"), 10), (2, Some("placed"), 20)], false);
        assert!(differing(bronze(), same).await.is_empty());
        let nulled = table(&[(1, None, 10), (2, Some("placed"), 20)], false);
        assert_eq!(differing(bronze(), nulled).await, [1]);
    }

    #[tokio::test]
    async fn of_events_tied_on_time_the_first_stored_is_the_newest() {
        // Order 1: "placed" then "paid" at the same time; the first stored wins.
        let bronze = || table(&[(1, Some("placed"), 10), (1, Some("paid"), 10)], true);
        let first = table(&[(1, Some("placed"), 10)], false);
        assert!(differing(bronze(), first).await.is_empty());
        let second = table(&[(1, Some("paid"), 10)], false);
        assert_eq!(differing(bronze(), second).await, [1]);
    }

    #[tokio::test]
    async fn of_events_tied_on_time_an_earlier_run_wins_over_a_lower_partition() {
        // Order 1: "placed" in run 1 at partition 2, "paid" at the same time in run 2 at
        // partition 0 (a producer without keys). Silver kept "placed": it was stored first.
        let rows = [(1, Some("placed"), 10), (1, Some("paid"), 10)];
        let bronze = || stored(&rows, Some(&[(1, 2, 0), (2, 0, 5)]));
        let first = table(&[(1, Some("placed"), 10)], false);
        assert!(differing(bronze(), first).await.is_empty());
        let second = table(&[(1, Some("paid"), 10)], false);
        assert_eq!(differing(bronze(), second).await, [1]);
    }
}
