//! The data each dashboard page shows, read from the tables (truth), Kafka and the history: the
//! reconciliation with its explanations, the topic, a table at a version, the pipeline graph.

use std::collections::HashMap;

use app::api::{ApiError, EventForm};
use app::model::*;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::check::{Finding, Report, Verdict};
use crate::engine::event::OrderEvent;
use crate::engine::flows::gold::GoldState;
use crate::engine::flows::{HOUR_MICROS, bronze, pending, silver};
use crate::engine::render;
use crate::engine::tables::{self, TableName};
use crate::kafka::Kafka;
use crate::service::dashboard::{failed, verdict_word};
use crate::service::lab::Lab;

/// Rows the tables page shows of a table.
const TABLE_ROWS_SHOWN: usize = 200;
/// Commits the tables page lists.
const VERSIONS_SHOWN: usize = 50;
/// Messages the topic page shows per partition.
const MESSAGES_SHOWN: i64 = 5;

/// An engine record as the page type with the same JSON shape.
pub fn convert<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, ApiError> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| ApiError::Failed(format!("internal: a record did not convert: {e}")))
}

/// `HH:MM` of a time in microseconds, as the check prints hours.
pub fn clock(micros: i64) -> String {
    crate::service::freshness::clock(micros, false)
}

/// The produce form's fields as an event (SPEC §1), or the first field that is wrong.
pub fn parse_form(form: &EventForm) -> Result<OrderEvent, ApiError> {
    let order_id: i64 = form.order_id.trim().parse().map_err(|_| {
        ApiError::field(
            "order_id",
            format!("must be a whole number, got {:?}", form.order_id),
        )
    })?;
    let json = serde_json::json!({
        "order_id": order_id,
        "customer_id": form.customer_id.trim(),
        "status": form.status.trim(),
        "amount": form.amount.trim(),
        "event_time": form.event_time.trim(),
    });
    parse_event(&json)
}

/// An event as the API receives it; errors name the field.
pub fn parse_event(json: &Value) -> Result<OrderEvent, ApiError> {
    OrderEvent::parse(json.to_string().as_bytes()).map_err(|e| match e.field {
        Some(field) => ApiError::field(field, e.reason),
        None => ApiError::Failed(e.reason),
    })
}

/// The reconciliation: each hour line of the check with a sentence saying why, and how its
/// verdict changed across the runs since the last reset.
pub async fn hours(lab: &Lab, report: &Report) -> Result<Vec<HourRow>, ApiError> {
    let history = lab
        .history()
        .ok_or_else(|| ApiError::Failed("this lab keeps no history".into()))?;
    let mut verdicts = history
        .hour_verdicts(&lab.config.lab)
        .await
        .map_err(failed)?;
    let late_drops = late_drops(
        &history
            .gold_runs_with_late(&lab.config.lab)
            .await
            .map_err(failed)?,
    );
    let needs_duplicates = report
        .findings
        .iter()
        .any(|f| f.verdict == Verdict::Problem);
    let duplicates = if needs_duplicates {
        bronze_duplicates(lab).await?
    } else {
        vec![]
    };
    let gold = GoldState::committed(lab).await.map_err(failed)?;
    let dedup = gold.as_ref().map(|s| s.dedup);
    let watermark = gold.and_then(|s| s.watermark);

    Ok(report
        .findings
        .iter()
        .filter_map(|finding| {
            let figures = finding.figures.as_ref()?;
            let start = DateTime::parse_from_rfc3339(&figures.hour)
                .ok()?
                .timestamp_micros();
            let explanation = match finding.verdict {
                Verdict::Ok => format!(
                    "Gold counted {}, {}, and bronze's distinct placed events agree.",
                    placed_orders(figures.orders.unwrap_or(0)),
                    figures.revenue.clone().unwrap_or_default()
                ),
                Verdict::Late => explain_late(finding, start, &late_drops),
                Verdict::Problem => explain_problem(finding, start, &duplicates, dedup),
                Verdict::Waiting => explain_waiting(start, watermark),
                Verdict::Note => finding.text.clone(),
            };
            Some(HourRow {
                hour: figures.hour.clone(),
                orders: figures.orders,
                revenue: figures.revenue.clone(),
                bronze_orders: figures.bronze_orders,
                bronze_revenue: figures.bronze_revenue.clone(),
                verdict: verdict_word(finding.verdict).into(),
                explanation,
                history: verdicts.remove(&figures.hour).unwrap_or_default(),
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
    partition: i64,
    offset: i64,
    watermark: Option<String>,
}

fn late_drops(gold_runs: &[(i64, Value)]) -> Vec<LateDrop> {
    let mut drops = vec![];
    for (run_id, record) in gold_runs {
        let watermark = record["watermark_before"].as_str().map(str::to_string);
        for d in record["dropped"].as_array().into_iter().flatten() {
            let Some(event_time) = d["event_time"]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            else {
                continue;
            };
            if d["reason"] == "late" && d["status"] == "placed" {
                drops.push(LateDrop {
                    run_id: *run_id,
                    order_id: d["order_id"].as_i64().unwrap_or_default(),
                    event_time: event_time.timestamp_micros(),
                    partition: d["partition"].as_i64().unwrap_or_default(),
                    offset: d["offset"].as_i64().unwrap_or_default(),
                    watermark: watermark.clone(),
                });
            }
        }
    }
    drops
}

fn explain_late(finding: &Finding, hour: i64, drops: &[LateDrop]) -> String {
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
    let batches = render::sorted_rows(&table, TableName::BronzeOrders, None)
        .await
        .map_err(failed)?;
    let mut copies: HashMap<(i64, String), Vec<String>> = HashMap::new();
    for row in render::json_rows(&batches) {
        if row["status"] != "placed" {
            continue;
        }
        let key = (
            row["order_id"].as_i64().unwrap_or_default(),
            row["event_time"].as_str().unwrap_or_default().to_string(),
        );
        copies.entry(key).or_default().push(format!(
            "partition {} offset {}",
            row["partition"], row["offset"]
        ));
    }
    Ok(copies
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .filter_map(|((order_id, time), places)| {
            Some(Duplicate {
                order_id,
                event_time: DateTime::parse_from_rfc3339(&time).ok()?.timestamp_micros(),
                copies: places.len() as i64,
                offsets: places.join(" and "),
            })
        })
        .collect())
}

fn explain_problem(
    finding: &Finding,
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
        clock(end + crate::engine::flows::DELAY_MICROS)
    )
}

/// The topic's partitions, the offsets bronze stored, the lag, the last messages.
pub async fn topic(lab: &Lab) -> Result<TopicView, ApiError> {
    let kafka = lab.kafka().await.map_err(failed)?;
    let topic = lab.config.topic.clone();
    let mut view = TopicView {
        topic: topic.clone(),
        brokers: kafka.brokers().to_string(),
        partitions: None,
    };
    let Some(offsets) = partition_offsets(lab, &kafka).await? else {
        return Ok(view);
    };
    let mut shown = vec![];
    for p in offsets {
        let last_messages = kafka
            .last_messages(
                &topic,
                p.partition,
                (p.log_start, p.log_end),
                MESSAGES_SHOWN,
            )
            .map_err(failed)?
            .into_iter()
            .map(|(offset, key, value)| TopicMessage { offset, key, value })
            .collect();
        shown.push(PartitionView {
            partition: p.partition,
            log_start: p.log_start,
            log_end: p.log_end,
            bronze_offset: p.bronze_offset,
            lag: p.lag(),
            last_messages,
        });
    }
    view.partitions = Some(shown);
    Ok(view)
}

/// One partition of the lab's topic: its log and how far bronze has read it.
struct PartitionOffsets {
    partition: i32,
    log_start: i64,
    log_end: i64,
    /// The last offset bronze stored (rows or rejects), `None` before it read any.
    bronze_offset: Option<i64>,
}

impl PartitionOffsets {
    /// Messages the log holds that bronze has not read yet.
    fn lag(&self) -> i64 {
        let next = self
            .bronze_offset
            .map_or(self.log_start, |o| (o + 1).max(self.log_start));
        (self.log_end - next).max(0)
    }
}

/// Every partition of the lab's topic with its log and bronze's offset; `None` without a topic.
async fn partition_offsets(
    lab: &Lab,
    kafka: &Kafka,
) -> Result<Option<Vec<PartitionOffsets>>, ApiError> {
    let topic = &lab.config.topic;
    let Some(partitions) = kafka.partitions(topic).map_err(failed)? else {
        return Ok(None);
    };
    let stored = stored_offsets(lab, &partitions).await?;
    let mut out = vec![];
    for partition in partitions {
        let (log_start, log_end) = kafka.log_offsets(topic, partition).map_err(failed)?;
        out.push(PartitionOffsets {
            partition,
            log_start,
            log_end,
            bronze_offset: stored.get(&partition).copied().flatten(),
        });
    }
    Ok(Some(out))
}

/// The last offset bronze stored per partition (rows or rejects, whichever is further).
async fn stored_offsets(
    lab: &Lab,
    partitions: &[i32],
) -> Result<HashMap<i32, Option<i64>>, ApiError> {
    let mut stored: HashMap<i32, Option<i64>> = partitions.iter().map(|p| (*p, None)).collect();
    for name in [TableName::BronzeOrders, TableName::BronzeRejects] {
        let Some(table) = lab.tables.open(name).await.map_err(failed)? else {
            continue;
        };
        for p in partitions {
            let app_id = bronze::app_id(name, &lab.config.topic, *p);
            if let Some(offset) = tables::txn_version(&table, &app_id).await.map_err(failed)? {
                let entry = stored.entry(*p).or_default();
                *entry = Some(entry.map_or(offset, |o| o.max(offset)));
            }
        }
    }
    Ok(stored)
}

/// A table's rows at `version` (the latest when `None`) and its commits.
pub async fn table(
    lab: &Lab,
    name: TableName,
    version: Option<i64>,
) -> Result<TableView, ApiError> {
    let mut view = TableView {
        name: name.to_string(),
        version: None,
        latest_version: None,
        columns: name
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
        rows: vec![],
        total_rows: 0,
        versions: vec![],
    };
    let Some(mut table) = lab.tables.open(name).await.map_err(failed)? else {
        return Ok(view);
    };
    let latest = tables::version(&table);
    view.latest_version = Some(latest);
    let mut commits = vec![];
    {
        let mut history = table.history(Some(VERSIONS_SHOWN));
        let mut at = latest;
        while let Some(commit) = history.next().await {
            let commit =
                commit.map_err(|e| ApiError::Failed(format!("{name}: reading its log: {e}")))?;
            commits.push(TableVersion {
                version: at,
                timestamp: commit
                    .timestamp
                    .and_then(DateTime::<Utc>::from_timestamp_millis)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                operation: commit.operation,
            });
            at -= 1;
        }
    }
    view.versions = commits;
    if let Some(v) = version {
        if !(0..=latest).contains(&v) {
            return Err(ApiError::field(
                "version",
                format!("{name} has versions 0 to {latest}, not {v}"),
            ));
        }
        table
            .load_version(v as u64)
            .await
            .map_err(|e| ApiError::Failed(format!("{name} at version {v}: {e}")))?;
    }
    view.version = Some(tables::version(&table));
    view.total_rows = render::count_rows(&table, name).await.map_err(failed)? as usize;
    let batches = render::sorted_rows(&table, name, Some(TABLE_ROWS_SHOWN))
        .await
        .map_err(failed)?;
    view.rows = render::json_rows(&batches)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(_, v)| match v {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    Ok(view)
}

/// The pipeline graph: topic -> bronze -> orders / hourly_sales -> check.
pub async fn pipeline(lab: &Lab) -> Result<PipelineView, ApiError> {
    let history = lab
        .history()
        .ok_or_else(|| ApiError::Failed("this lab keeps no history".into()))?;
    let last = history.last_runs(&lab.config.lab).await.map_err(failed)?;
    let at = |stream: &str| last.get(stream).cloned();

    let topic = topic_counts(lab).await?;
    let last_send = history
        .produced(&lab.config.lab, 1)
        .await
        .map_err(failed)?
        .pop()
        .map(|e| e.produced_at);
    let mut nodes = vec![PipelineNode {
        name: "Kafka topic".into(),
        role: format!("{}: the shop's order events", lab.config.topic),
        rows: topic.map(|(messages, _)| messages),
        unit: Some("messages".into()),
        last_run_at: last_send,
        last_label: "last send".into(),
        freshness: match topic {
            None => "not created yet".into(),
            Some((_, 0)) => "bronze has read every message".into(),
            Some((_, lag)) => format!("{lag} message(s) not read by bronze yet"),
        },
    }];

    let bronze = lab
        .tables
        .open(TableName::BronzeOrders)
        .await
        .map_err(failed)?;
    let bronze_version = bronze.as_ref().map(tables::version);
    nodes.push(PipelineNode {
        name: "bronze_orders".into(),
        role: "every event, as it came".into(),
        rows: count(lab, TableName::BronzeOrders).await?,
        unit: Some("rows".into()),
        last_run_at: at("bronze"),
        last_label: "last run".into(),
        freshness: match topic {
            Some((_, lag)) if lag > 0 => format!("{lag} message(s) behind the topic"),
            _ => "up to date with the topic".into(),
        },
    });
    for (name, stream, app_id, role) in [
        (
            TableName::Orders,
            "silver",
            silver::APP_ID,
            "the newest state of each order",
        ),
        (
            TableName::HourlySales,
            "gold",
            crate::engine::flows::gold::APP_ID,
            "orders and revenue per hour",
        ),
    ] {
        let processed = match lab.tables.open(name).await.map_err(failed)? {
            Some(t) => tables::txn_version(&t, app_id).await.map_err(failed)?,
            None => None,
        };
        let freshness = match (&bronze, bronze_version) {
            (Some(b), Some(_)) => match pending(b, processed) {
                Some((first, last)) => format!("bronze versions {first} to {last} not read yet"),
                None => "up to date with bronze".into(),
            },
            _ => "nothing to read yet".into(),
        };
        nodes.push(PipelineNode {
            name: name.to_string(),
            role: role.into(),
            rows: count(lab, name).await?,
            unit: Some("rows".into()),
            last_run_at: at(stream),
            last_label: "last run".into(),
            freshness,
        });
    }
    let last_check = history
        .last_check_found_problem(&lab.config.lab)
        .await
        .map_err(failed)?;
    nodes.push(PipelineNode {
        name: "check".into(),
        role: "recounts silver and gold from bronze".into(),
        rows: None,
        unit: None,
        last_run_at: at("check"),
        last_label: "last check".into(),
        freshness: match last_check {
            None => "not run yet".into(),
            Some(false) => "the last check passed".into(),
            Some(true) => "the last check found a PROBLEM".into(),
        },
    });
    Ok(PipelineView { nodes })
}

async fn count(lab: &Lab, name: TableName) -> Result<Option<i64>, ApiError> {
    match lab.tables.open(name).await.map_err(failed)? {
        Some(table) => Ok(Some(
            render::count_rows(&table, name).await.map_err(failed)?,
        )),
        None => Ok(None),
    }
}

/// Messages the topic holds and how many bronze has not read; `None` without a topic.
async fn topic_counts(lab: &Lab) -> Result<Option<(i64, i64)>, ApiError> {
    let kafka = lab.kafka().await.map_err(failed)?;
    let Some(offsets) = partition_offsets(lab, &kafka).await? else {
        return Ok(None);
    };
    let messages = offsets.iter().map(|p| p.log_end - p.log_start).sum();
    let lag = offsets.iter().map(PartitionOffsets::lag).sum();
    Ok(Some((messages, lag)))
}
