//! The check (SPEC §4): recomputes silver and gold from bronze with batch queries and tells apart
//! an hour that is `ok`, `late` (the watermark dropped an event, as designed), a `PROBLEM` (counted
//! twice, or written from nothing) and `waiting` (the watermark has not passed it yet).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use chrono::{DateTime, Utc};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::engine::event::format_cents;
use crate::engine::flows::gold::GoldState;
use crate::engine::flows::{HOUR_MICROS, StreamError, bronze};
use crate::engine::tables::{self, TableError, TableName};
use crate::service::lab::Lab;

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Stream(#[from] StreamError),
}

/// A finding's verdict word, which starts its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Note,
    Late,
    Problem,
    Waiting,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Note => "note",
            Verdict::Late => "late",
            Verdict::Problem => "PROBLEM",
            Verdict::Waiting => "waiting",
        })
    }
}

/// One hour as gold wrote it and as bronze recounts it.
#[derive(Debug, Clone, Serialize)]
pub struct HourFigures {
    /// Window start, RFC 3339 UTC.
    pub hour: String,
    pub orders: Option<i64>,
    pub revenue: Option<String>,
    pub bronze_orders: i64,
    pub bronze_revenue: String,
}

/// One line of the check.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub verdict: Verdict,
    /// The line after the verdict word.
    pub text: String,
    /// Set on hour lines.
    pub figures: Option<HourFigures>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8}{}", self.verdict.to_string(), self.text)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Events in bronze_orders: what the check recounted.
    pub bronze_events: i64,
    /// Gold's watermark when the check ran, RFC 3339.
    pub watermark: Option<String>,
}

impl Report {
    pub fn has_problem(&self) -> bool {
        self.findings.iter().any(|f| f.verdict == Verdict::Problem)
    }

    /// The exit code `reckon check` ends with: 1 on a PROBLEM.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.has_problem())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.findings
            .iter()
            .try_for_each(|line| writeln!(f, "{line}"))
    }
}

fn orders(n: i64) -> String {
    if n == 1 {
        "1 order".into()
    } else {
        format!("{n} orders")
    }
}

pub async fn run(lab: &Lab) -> Result<Report, CheckError> {
    let ctx = SessionContext::new();
    for name in TableName::ALL {
        register(&ctx, lab, name).await?;
    }
    let mut findings = vec![];
    let line = |verdict, text: String| Finding {
        verdict,
        text,
        figures: None,
    };

    // 1. Bronze and rejects hold every offset read, each once, with no gaps.
    let events = scalar(&ctx, "SELECT count(*) FROM bronze_orders").await?;
    let offset_problems = offsets(&ctx, lab).await?;
    if offset_problems.is_empty() {
        findings.push(line(
            Verdict::Ok,
            format!("bronze_orders has {events} events, each offset once"),
        ));
    } else {
        findings.extend(
            offset_problems
                .into_iter()
                .map(|text| line(Verdict::Problem, text)),
        );
    }
    let distinct = scalar(
        &ctx,
        "SELECT count(*) FROM (SELECT DISTINCT order_id, status, event_time FROM bronze_orders)",
    )
    .await?;
    if events > distinct {
        findings.push(line(
            Verdict::Note,
            format!(
                "{} of them sent twice by the shop's system",
                events - distinct
            ),
        ));
    }
    let rejected = scalar(&ctx, "SELECT count(*) FROM bronze_rejects").await?;
    if rejected > 0 {
        let messages = if rejected == 1 {
            "message".to_string()
        } else {
            "messages".to_string()
        };
        findings.push(line(
            Verdict::Note,
            format!("{rejected} {messages} rejected, kept in bronze_rejects"),
        ));
    }

    // 2. Silver holds the newest event of each order.
    let differing = int_column(&query(&ctx, SILVER_DIFFERENCES).await?, 0);
    if differing.is_empty() {
        let n = scalar(&ctx, "SELECT count(*) FROM orders").await?;
        findings.push(line(
            Verdict::Ok,
            format!("orders has the newest state of all {n} orders"),
        ));
    } else {
        let ids: Vec<String> = differing.iter().take(5).map(i64::to_string).collect();
        let more = if differing.len() > 5 {
            format!(" and {} more", differing.len() - 5)
        } else {
            String::new()
        };
        findings.push(line(
            Verdict::Problem,
            format!(
                "orders differs from the newest events in bronze: order ids {}{more}",
                ids.join(", ")
            ),
        ));
    }

    // 3. Gold: each hour against a recount of the distinct placed events.
    let watermark = GoldState::committed(lab).await?.and_then(|s| s.watermark);
    findings.extend(hours(&query(&ctx, HOURS).await?, watermark));
    Ok(Report {
        findings,
        bronze_events: events,
        watermark: watermark.map(crate::engine::event::format_micros),
    })
}

/// Newest event per order (ties: first stored) against `orders`, both ways; order ids that differ.
const SILVER_DIFFERENCES: &str = r#"
    WITH newest AS (
        SELECT order_id, customer_id, status, amount, event_time FROM (
            SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY event_time DESC, "partition", "offset") AS rank
            FROM bronze_orders)
        WHERE rank = 1)
    SELECT order_id FROM (
        SELECT coalesce(n.order_id, o.order_id) AS order_id
        FROM newest n FULL OUTER JOIN orders o ON n.order_id = o.order_id
        WHERE n.order_id IS NULL OR o.order_id IS NULL OR n.customer_id <> o.customer_id
           OR n.status <> o.status OR n.amount <> o.amount OR n.event_time <> o.event_time
        UNION
        SELECT order_id FROM orders GROUP BY order_id HAVING count(*) > 1)
    ORDER BY order_id"#;

/// Each hour written or recounted: gold's figures beside bronze's distinct placed events.
const HOURS: &str = r#"
    WITH distinct_events AS (
        SELECT * FROM (
            SELECT *, row_number() OVER (PARTITION BY order_id, status, event_time ORDER BY "partition", "offset") AS copy
            FROM bronze_orders)
        WHERE copy = 1),
    recount AS (
        SELECT date_trunc('hour', event_time) AS hour, count(*) AS orders, sum(amount) AS revenue
        FROM distinct_events WHERE status = 'placed' GROUP BY 1),
    written AS (
        SELECT hour, sum(orders) AS orders, sum(revenue) AS revenue, count(*) AS writes
        FROM hourly_sales GROUP BY hour)
    SELECT coalesce(r.hour, w.hour) AS hour,
           w.orders AS counted, CAST(w.revenue AS DECIMAL(38, 2)) AS counted_revenue, w.writes,
           coalesce(r.orders, 0) AS known, CAST(coalesce(r.revenue, 0) AS DECIMAL(38, 2)) AS known_revenue
    FROM recount r FULL OUTER JOIN written w ON r.hour = w.hour
    ORDER BY 1"#;

fn hours(batches: &[RecordBatch], watermark: Option<i64>) -> Vec<Finding> {
    struct Row {
        hour: i64,
        counted: Option<(i64, i128, i64)>,
        known: (i64, i128),
    }
    let mut rows = vec![];
    for b in batches {
        let hour = b.column(0).as_primitive::<TimestampMicrosecondType>();
        let counted = b.column(1).as_primitive::<Int64Type>();
        let counted_revenue = b.column(2).as_primitive::<Decimal128Type>();
        let writes = b.column(3).as_primitive::<Int64Type>();
        let known = b.column(4).as_primitive::<Int64Type>();
        let known_revenue = b.column(5).as_primitive::<Decimal128Type>();
        for i in 0..b.num_rows() {
            rows.push(Row {
                hour: hour.value(i),
                counted: (!counted.is_null(i))
                    .then(|| (counted.value(i), counted_revenue.value(i), writes.value(i))),
                known: (known.value(i), known_revenue.value(i)),
            });
        }
    }
    let days: std::collections::BTreeSet<i64> = rows
        .iter()
        .map(|r| r.hour.div_euclid(24 * HOUR_MICROS))
        .collect();
    let label = |hour: i64| {
        let t = DateTime::<Utc>::from_timestamp_micros(hour).unwrap_or_default();
        if days.len() <= 1 {
            t.format("%H:%M").to_string()
        } else {
            t.format("%Y-%m-%d %H:%M").to_string()
        }
    };
    rows.into_iter()
        .map(|r| {
            let h = label(r.hour);
            let (known, known_revenue) = r.known;
            let (verdict, text) = match r.counted {
                Some((_, _, writes)) if writes > 1 => {
                    (Verdict::Problem, format!("{h} written {writes} times: an hour is written once"))
                }
                Some((n, revenue, _)) if known == 0 => (
                    Verdict::Problem,
                    format!("{h} counted {}, {}, but bronze has no placed event in that hour", orders(n), format_cents(revenue)),
                ),
                Some((n, revenue, _)) if n > known => (
                    Verdict::Problem,
                    format!("{h} counted {}, {}, but bronze has {}: an event counted twice", orders(n), format_cents(revenue), orders(known)),
                ),
                Some((n, revenue, _)) if n < known => (
                    Verdict::Late,
                    format!(
                        "{h} counted {}, {}; bronze has {}, {}: {} arrived after the hour was written",
                        orders(n),
                        format_cents(revenue),
                        orders(known),
                        format_cents(known_revenue),
                        known - n
                    ),
                ),
                Some((n, revenue, _)) if revenue != known_revenue => (
                    Verdict::Problem,
                    format!(
                        "{h} counted {}, {}, but bronze has {}, {}: the revenue differs",
                        orders(n),
                        format_cents(revenue),
                        orders(known),
                        format_cents(known_revenue)
                    ),
                ),
                Some((n, revenue, _)) => (Verdict::Ok, format!("{h} {}, {}", orders(n), format_cents(revenue))),
                None if watermark.is_some_and(|w| w >= r.hour + HOUR_MICROS) => (
                    Verdict::Late,
                    format!("{h} not written: {}, {} arrived after the watermark passed it", orders(known), format_cents(known_revenue)),
                ),
                None => (Verdict::Waiting, format!("{h} is not written yet: the watermark has not passed its end")),
            };
            let figures = HourFigures {
                hour: crate::engine::event::format_micros(r.hour),
                orders: r.counted.map(|c| c.0),
                revenue: r.counted.map(|c| format_cents(c.1)),
                bronze_orders: known,
                bronze_revenue: format_cents(known_revenue),
            };
            Finding { verdict, text, figures: Some(figures) }
        })
        .collect()
}

/// Offsets held twice, and gaps between the first offset held and the last bronze has read.
async fn offsets(ctx: &SessionContext, lab: &Lab) -> Result<Vec<String>, CheckError> {
    const LANDED: &str = r#"SELECT "partition", "offset" FROM bronze_orders UNION ALL SELECT "partition", "offset" FROM bronze_rejects"#;
    let mut problems = vec![];
    let twice = query(ctx, &format!(
        r#"SELECT "partition", "offset" FROM ({LANDED}) GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2"#
    ))
    .await?;
    for (p, o) in pairs(&twice) {
        problems.push(format!("partition {p}: offset {o} stored twice"));
    }
    let gaps = query(ctx, &format!(
        r#"SELECT "partition", "offset" + 1, next - 1 FROM (
               SELECT "partition", "offset", lead("offset") OVER (PARTITION BY "partition" ORDER BY "offset") AS next
               FROM (SELECT DISTINCT "partition", "offset" FROM ({LANDED})))
           WHERE next > "offset" + 1 ORDER BY 1, 2"#
    ))
    .await?;
    let mut missing: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for b in &gaps {
        let (p, first, last) = (
            b.column(0).as_primitive::<Int32Type>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_primitive::<Int64Type>(),
        );
        for i in 0..b.num_rows() {
            missing
                .entry(p.value(i))
                .or_default()
                .push((first.value(i), last.value(i)));
        }
    }
    // The tail: offsets bronze says it read but neither table holds.
    let highest = query(
        ctx,
        &format!(r#"SELECT "partition", max("offset") FROM ({LANDED}) GROUP BY 1"#),
    )
    .await?;
    let highest: BTreeMap<i32, i64> = pairs(&highest).into_iter().collect();
    if let Some(bronze) = lab.tables.open(TableName::BronzeOrders).await? {
        let known: std::collections::BTreeSet<i32> = highest
            .keys()
            .copied()
            .chain(0..lab.config.partitions)
            .collect();
        for p in known {
            let app_id = bronze::app_id(TableName::BronzeOrders, &lab.config.topic, p);
            if let Some(read) = tables::txn_version(&bronze, &app_id).await? {
                let held = highest.get(&p).copied().unwrap_or(-1);
                if read > held {
                    missing.entry(p).or_default().push((held + 1, read));
                }
            }
        }
    }
    for (p, ranges) in missing {
        for (first, last) in ranges {
            problems.push(format!("partition {p}: offsets {first}..{last} missing"));
        }
    }
    Ok(problems)
}

/// Registers a table for SQL, read once into memory: the check's queries scan bronze several
/// times, and decoding its Parquet files once instead of per query is most of the check's cost.
/// A table not created yet is an empty one with its schema.
async fn register(ctx: &SessionContext, lab: &Lab, name: TableName) -> Result<(), CheckError> {
    let query_err = |source| TableError::Query {
        table: name.to_string(),
        source,
    };
    let provider: Arc<dyn datafusion::catalog::TableProvider> = match lab.tables.open(name).await? {
        Some(table) => {
            let delta = |source| TableError::Delta {
                table: name.to_string(),
                source,
            };
            table
                .update_datafusion_session(&ctx.state())
                .map_err(delta)?;
            table.table_provider().await.map_err(|e| query_err(e))?
        }
        None => Arc::new(MemTable::try_new(name.schema(), vec![vec![]]).map_err(query_err)?),
    };
    let schema = provider.schema();
    let batches = ctx
        .read_table(provider)
        .map_err(query_err)?
        .collect()
        .await
        .map_err(query_err)?;
    // As many partitions as the session runs in parallel, batches dealt out in turn.
    let parallel = ctx.state().config().target_partitions().max(1);
    let mut partitions = vec![vec![]; parallel];
    for (i, batch) in batches.into_iter().enumerate() {
        partitions[i % parallel].push(batch);
    }
    let table = MemTable::try_new(schema, partitions).map_err(query_err)?;
    ctx.register_table(name.as_str(), Arc::new(table))
        .map_err(query_err)?;
    Ok(())
}

pub(crate) async fn query(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, CheckError> {
    let err = |source| {
        CheckError::Table(TableError::Query {
            table: "check".into(),
            source,
        })
    };
    ctx.sql(sql)
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)
}

async fn scalar(ctx: &SessionContext, sql: &str) -> Result<i64, CheckError> {
    Ok(int_column(&query(ctx, sql).await?, 0)
        .first()
        .copied()
        .unwrap_or(0))
}

fn int_column(batches: &[RecordBatch], column: usize) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column(column)
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .collect::<Vec<_>>()
        })
        .collect()
}

fn pairs(batches: &[RecordBatch]) -> Vec<(i32, i64)> {
    batches
        .iter()
        .flat_map(|b| {
            let p = b.column(0).as_primitive::<Int32Type>();
            let o = b.column(1).as_primitive::<Int64Type>();
            (0..b.num_rows())
                .map(|i| (p.value(i), o.value(i)))
                .collect::<Vec<_>>()
        })
        .collect()
}
