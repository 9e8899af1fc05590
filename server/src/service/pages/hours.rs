//! The reconciliation page: each hour line of the check with a sentence saying why, and how its
//! verdict changed across the runs since the last reset.

use std::collections::HashMap;

use app::api::ApiError;
use app::model::{CheckLine, DropReason, FlowRun, HourRow, Verdict};
use arrow::datatypes::{Int32Type, Int64Type, TimestampMicrosecondType};
use chrono::DateTime;

use super::history;
use super::produce::clock;
use crate::engine::columns::Columns;
use crate::engine::course::check::Report;
use crate::engine::course::gold::GoldState;
use crate::engine::course::{DELAY_MICROS, HOUR_MICROS};
use crate::engine::render;
use crate::engine::tables::TableName;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// The reconciliation: each hour line of the check with a sentence saying why, and how its
/// verdict changed across the runs since the last reset.
pub async fn page(lab: &Lab, report: &Report) -> Result<Vec<HourRow>, ApiError> {
    let history = history(lab)?;
    let mut verdicts = history
        .hour_verdicts(&lab.config.lab)
        .await
        .map_err(failed)?;
    let late_drops = late_drops(
        history
            .gold_runs_with_late(&lab.config.lab)
            .await
            .map_err(failed)?,
    );
    let needs_duplicates = report.has_problem();
    let duplicates = if needs_duplicates {
        bronze_duplicates(lab).await?
    } else {
        vec![]
    };
    let gold = GoldState::committed(&lab.flows()).await.map_err(failed)?;
    let dedup = gold.as_ref().map(|s| s.dedup());
    let watermark = gold.and_then(|s| s.watermark());

    Ok(report
        .findings
        .iter()
        .filter_map(|finding| {
            let hour = finding.hour.as_ref()?;
            let start = DateTime::parse_from_rfc3339(hour).ok()?.timestamp_micros();
            let explanation = match finding.verdict {
                Verdict::Ok => format!(
                    "Gold counted {}, {}, and bronze's distinct placed events agree.",
                    placed_orders(finding.orders.unwrap_or(0)),
                    finding.revenue.clone().unwrap_or_default()
                ),
                Verdict::Late => explain_late(finding, start, &late_drops),
                Verdict::Problem => explain_problem(finding, start, &duplicates, dedup),
                Verdict::Waiting => explain_waiting(start, watermark),
                Verdict::Note => finding.text.clone(),
            };
            Some(HourRow {
                hour: hour.clone(),
                orders: finding.orders,
                revenue: finding.revenue.clone(),
                bronze_orders: finding.bronze_orders.unwrap_or_default(),
                bronze_revenue: finding.bronze_revenue.clone().unwrap_or_default(),
                verdict: finding.verdict,
                explanation,
                history: verdicts.remove(hour).unwrap_or_default(),
            })
        })
        .collect())
}

fn placed_orders(n: i64) -> String {
    if n == 1 {
        "1 placed order".into()
    } else {
        format!("{n} placed orders")
    }
}

/// A placed event gold dropped as late: which run, and the watermark it was compared with.
struct LateDrop {
    run_id: i64,
    order_id: i64,
    event_time: i64,
    partition: i32,
    offset: i64,
    watermark: Option<String>,
}

fn late_drops(gold_runs: Vec<(i64, FlowRun)>) -> Vec<LateDrop> {
    let mut drops = vec![];
    for (run_id, event) in gold_runs {
        let watermark = event.figures.watermark_before;
        for d in event.dropped {
            let Ok(event_time) = DateTime::parse_from_rfc3339(&d.event_time) else {
                continue;
            };
            if d.reason == DropReason::Late && d.status == "placed" {
                drops.push(LateDrop {
                    run_id,
                    order_id: d.order_id,
                    event_time: event_time.timestamp_micros(),
                    partition: d.partition,
                    offset: d.offset,
                    watermark: watermark.clone(),
                });
            }
        }
    }
    drops
}

fn explain_late(finding: &CheckLine, hour: i64, drops: &[LateDrop]) -> String {
    let in_hour: Vec<String> = drops
        .iter()
        .filter(|d| (hour..hour + HOUR_MICROS).contains(&d.event_time))
        .map(|d| {
            format!(
                "order {} (placed {}, partition {} offset {}) in run #{}, when the watermark was {}",
                d.order_id,
                clock(d.event_time),
                d.partition,
                d.offset,
                d.run_id,
                d.watermark.as_deref().and_then(|w| DateTime::parse_from_rfc3339(w).ok())
                    .map(|w| clock(w.timestamp_micros()))
                    .unwrap_or_else(|| "not set".into())
            )
        })
        .collect();
    let which = if in_hour.is_empty() {
        "An event arrived after the watermark had passed this hour".to_string()
    } else {
        format!("The watermark dropped {}", in_hour.join("; "))
    };
    format!(
        "{which}. That is the watermark working as designed: the hour was final before the event came, \
         so gold did not change it. The check: {}.",
        finding.text
    )
}

/// A placed event bronze holds more than once.
struct Duplicate {
    order_id: i64,
    event_time: i64,
    copies: i64,
    offsets: String,
}

async fn bronze_duplicates(lab: &Lab) -> Result<Vec<Duplicate>, ApiError> {
    let Some(table) = lab
        .tables
        .open(TableName::BronzeOrders)
        .await
        .map_err(failed)?
    else {
        return Ok(vec![]);
    };
    let batches = render::sorted_rows(&table, TableName::BronzeOrders)
        .await
        .map_err(failed)?;
    let mut copies: HashMap<(i64, i64), Vec<String>> = HashMap::new();
    for batch in &batches {
        let c = Columns::of(batch, "bronze_orders");
        let column = |e| failed(e);
        let status = c.strings("status").map_err(column)?;
        let order_id = c.primitive::<Int64Type>("order_id").map_err(column)?;
        let event_time = c
            .primitive::<TimestampMicrosecondType>("event_time")
            .map_err(column)?;
        let partition = c.primitive::<Int32Type>("partition").map_err(column)?;
        let offset = c.primitive::<Int64Type>("offset").map_err(column)?;
        for i in (0..batch.num_rows()).filter(|&i| status.value(i) == "placed") {
            copies
                .entry((order_id.value(i), event_time.value(i)))
                .or_default()
                .push(format!(
                    "partition {} offset {}",
                    partition.value(i),
                    offset.value(i)
                ));
        }
    }
    Ok(copies
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|((order_id, event_time), places)| Duplicate {
            order_id,
            event_time,
            copies: places.len() as i64,
            offsets: places.join(" and "),
        })
        .collect())
}

fn explain_problem(
    finding: &CheckLine,
    hour: i64,
    duplicates: &[Duplicate],
    dedup: Option<bool>,
) -> String {
    let in_hour: Vec<String> = duplicates
        .iter()
        .filter(|d| (hour..hour + HOUR_MICROS).contains(&d.event_time))
        .map(|d| {
            format!(
                "order {} (placed {}) is in bronze {} times ({})",
                d.order_id,
                clock(d.event_time),
                d.copies,
                d.offsets
            )
        })
        .collect();
    let cause = match dedup {
        Some(false) => {
            " Deduplication was off when gold's state started, so gold counted every copy."
        }
        _ => "",
    };
    if in_hour.is_empty() {
        format!("{}.{cause}", finding.text)
    } else {
        format!(
            "Counted twice: {}; the shop's system sent it again, and gold counted both.{cause} The check: {}.",
            in_hour.join("; "),
            finding.text
        )
    }
}

fn explain_waiting(hour: i64, watermark: Option<i64>) -> String {
    let end = hour + HOUR_MICROS;
    format!(
        "Not final yet: the watermark ({}) has not passed {}. It closes once an order placed at {} or later arrives.",
        watermark.map(clock).unwrap_or_else(|| "not set".into()),
        clock(end),
        clock(end + DELAY_MICROS)
    )
}
