//! The check's hour lines: gold's figures for each hour beside a recount of bronze's distinct
//! placed events, and the verdict that tells them apart.

use app::model::{CheckLine, Verdict};
use chrono::{DateTime, Utc};

use crate::engine::course::HOUR_MICROS;
use crate::engine::event::{format_cents, format_micros};

/// Each hour written or recounted: gold's figures beside bronze's distinct placed events.
pub(super) const HOURS: &str = r#"
    WITH distinct_placed AS (
        SELECT order_id, event_time, first_value(amount ORDER BY ingested_at, "partition", "offset") AS amount
        FROM bronze_orders WHERE status = 'placed' GROUP BY order_id, event_time),
    recount AS (
        SELECT date_trunc('hour', event_time) AS hour, count(*) AS orders, sum(amount) AS revenue
        FROM distinct_placed GROUP BY 1),
    written AS (
        SELECT hour, sum(orders) AS orders, sum(revenue) AS revenue, count(*) AS writes
        FROM hourly_sales GROUP BY hour)
    SELECT coalesce(r.hour, w.hour) AS hour,
           w.orders AS counted, CAST(w.revenue AS DECIMAL(38, 2)) AS counted_revenue, w.writes,
           coalesce(r.orders, 0) AS known, CAST(coalesce(r.revenue, 0) AS DECIMAL(38, 2)) AS known_revenue
    FROM recount r FULL OUTER JOIN written w ON r.hour = w.hour
    ORDER BY 1"#;

fn orders(n: i64) -> String {
    if n == 1 {
        "1 order".into()
    } else {
        format!("{n} orders")
    }
}

/// One hour as the check compares it: what gold wrote, and the recount of bronze.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourFigures {
    pub hour: i64,
    /// Orders, revenue in cents, and how many rows gold wrote for the hour; `None`: not written.
    pub counted: Option<(i64, i128, i64)>,
    /// Bronze's distinct placed events in the hour: orders and revenue in cents.
    pub known: (i64, i128),
}

/// The check's lines for each hour, in hour order.
pub(super) fn lines(rows: &[HourFigures], watermark: Option<i64>) -> Vec<CheckLine> {
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
    rows.iter()
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
            CheckLine {
                verdict,
                text,
                hour: Some(format_micros(r.hour)),
                orders: r.counted.map(|c| c.0),
                revenue: r.counted.map(|c| format_cents(c.1)),
                bronze_orders: Some(known),
                bronze_revenue: Some(format_cents(known_revenue)),
            }
        })
        .collect()
}
