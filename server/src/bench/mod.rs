//! The side-by-side benchmark (`make bench`): Reckon against the seed's pipeline on Spark and
//! against this machine's limits, on the same events. Here: the events, Reckon's side and the
//! limits; the Spark peer is `bench/spark/pipeline.py`, driven through [`spark::SparkPeer`]. The bench
//! binary (`benches/pipeline.rs`) prints and records the figures; a test plays a small workload
//! through Reckon's side.

pub mod duckdb;
mod results;
pub mod spark;

pub use results::{peer, replace_section, smoke, spark_installed};

use std::path::Path;
use std::time::{Duration, Instant};

use arrow::array::{
    ArrayRef, Decimal128Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::record_batch::RecordBatch;
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;

use crate::engine::course::HOUR_MICROS as HOUR;
use crate::engine::event::OrderEvent;
use crate::engine::rng::Rng;
use crate::engine::tables::TableName;
use crate::process::cpu::{self, Clock};
use crate::service::lab::{Lab, Streams};

const MINUTE: i64 = HOUR / 60;
/// 2026-10-01T00:00:00Z in microseconds: the course's day.
pub const START: i64 = 1_790_812_800_000_000;
/// The events' event times span this long.
pub const SPAN: i64 = 48 * HOUR;
/// Of every 100 events sent, this many are second copies of an event sent before.
pub const DUPLICATE_PERCENT: u64 = 9;
/// Of every 100 distinct events, this many are older than the watermark when they arrive.
pub const LATE_PERCENT: u64 = 5;

/// Course-shaped events in sends: orders placed then paid, in event-time order over [`SPAN`];
/// [`LATE_PERCENT`] of them older than the watermark when they arrive (more than the 1-hour
/// delay behind the newest event of the sends before), [`DUPLICATE_PERCENT`] of all sent events
/// second copies of one in the same send (as the shop's system sends again after a timeout).
#[derive(Debug, Clone)]
pub struct Workload {
    pub sends: Vec<Vec<OrderEvent>>,
    pub duplicates: usize,
    pub late: usize,
    /// The first order id after this workload's, and an event time after all of it.
    pub next_order_id: i64,
    pub end_micros: i64,
}

impl Workload {
    pub fn new(events: usize, sends: usize) -> Self {
        let sends = sends.max(1);
        let distinct = (events as u64 * (100 - DUPLICATE_PERCENT) / 100) as usize;
        let mut rng = Rng(0x5eed_0f_0bde_75);
        let mut out = Vec::with_capacity(sends);
        let (mut duplicates, mut late) = (0, 0);
        for s in 0..sends {
            let (first, last) = (distinct * s / sends, distinct * (s + 1) / sends);
            let send_start = START + SPAN * s as i64 / sends as i64;
            let mut send: Vec<OrderEvent> = (first..last)
                .map(|k| {
                    let mut event = event(k as i64, START + SPAN * k as i64 / distinct as i64);
                    // The first send has no watermark yet: nothing can be late in it.
                    if s > 0 && rng.percent(LATE_PERCENT) {
                        event.event_time_micros =
                            send_start - HOUR - 5 * MINUTE - rng.below(115) as i64 * MINUTE;
                        late += 1;
                    }
                    event
                })
                .collect();
            let copies = events * (s + 1) / sends - events * s / sends - send.len();
            for _ in 0..copies {
                let again = send[rng.below(send.len() as u64) as usize].clone();
                send.push(again);
            }
            duplicates += copies;
            out.push(send);
        }
        Self {
            sends: out,
            duplicates,
            late,
            next_order_id: order_id(distinct as i64) + 1,
            end_micros: START + SPAN,
        }
    }

    pub fn events(&self) -> usize {
        self.sends.iter().map(Vec::len).sum()
    }

    /// `count` new on-time events after the workload, numbered from `first` (0 for the first
    /// event after it): a small run's batch. Batches that follow each other start where the
    /// one before ended.
    pub fn after(&self, first: usize, count: usize) -> Vec<OrderEvent> {
        (0..count)
            .map(|i| {
                let k = (first + i) as i64;
                // Placed, then paid, as the workload's orders; 10 seconds apart.
                let mut e = event(k, self.end_micros + k * 10_000_000);
                e.order_id = self.next_order_id + k / 2;
                e.event_time_micros = self.end_micros + k * 10_000_000;
                e
            })
            .collect()
    }
}

fn order_id(k: i64) -> i64 {
    1 + k / 2
}

/// The k-th distinct event: order `k / 2`, placed (even k) or paid (odd k).
fn event(k: i64, event_time_micros: i64) -> OrderEvent {
    let id = order_id(k);
    OrderEvent {
        order_id: id,
        customer_id: format!("C{:04}", id % 5000),
        status: if k % 2 == 0 { "placed" } else { "paid" }.into(),
        amount_cents: 500 + (id % 9000) as i128,
        event_time_micros: event_time_micros + if k % 2 == 1 { 10 * MINUTE } else { 0 },
    }
}

/// Time per stage, summed over runs, and the rows each stage went through.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    pub bronze: Duration,
    pub silver: Duration,
    pub gold: Duration,
    pub check: Duration,
    /// Events read by bronze (= sent).
    pub events: u64,
    /// Bronze rows the checks recounted, summed over checks (each check reads all of bronze).
    pub checked: u64,
    /// The last check's PROBLEM lines (Spark's side; Reckon's fails the run instead).
    pub problems: Vec<String>,
    /// The CPU time of the JVMs' JIT compilers meanwhile (Reckon's side): cores not left to it.
    pub jit: Duration,
}

impl Stages {
    pub fn add(&mut self, other: &Stages) {
        self.bronze += other.bronze;
        self.silver += other.silver;
        self.gold += other.gold;
        self.check += other.check;
        self.events += other.events;
        self.checked += other.checked;
        self.problems = other.problems.clone();
        self.jit += other.jit;
    }
}

/// One pipeline run of Reckon (3 streams, then the check), timed per stage. Fails on a check
/// that finds a problem: the benchmark compares correct work only.
pub async fn reckon_run(lab: &Lab) -> anyhow::Result<Stages> {
    // The JIT clock scans every thread of the broker's JVM in /proc (a few ms): read it before
    // the timer starts, so the scan is not counted as bronze's time.
    let jit = cpu::used(Clock::JitCompilers);
    let started = Instant::now();
    let runs = lab.run(Streams::All, true).await?;
    let streams = started.elapsed();
    let ms = |name: &str| {
        runs.iter()
            .find(|r| r.flow == name)
            .map_or(Duration::ZERO, |r| Duration::from_millis(r.duration_ms))
    };
    let started = Instant::now();
    let report = lab.check().await?;
    let check = started.elapsed();
    if report.has_problem() {
        anyhow::bail!("the check found a problem:\n{report}");
    }
    let bronze = runs.iter().find(|r| r.flow == "bronze");
    // The stream's own figures leave out opening the lab; the rest of the wall time is bronze's
    // (it connects to Kafka), so the three add up to what the run took.
    let (silver, gold) = (ms("silver"), ms("gold"));
    Ok(Stages {
        bronze: streams.saturating_sub(silver + gold),
        silver,
        gold,
        check,
        events: bronze.map_or(0, |r| r.figures.rows_read),
        checked: report.bronze_events as u64,
        problems: vec![],
        jit: cpu::used(Clock::JitCompilers).saturating_sub(jit),
    })
}

/// A full run (3 streams and the check) after sending `events`: its wall time and its stages.
pub async fn timed_run(lab: &Lab, events: &[OrderEvent]) -> anyhow::Result<(Duration, Stages)> {
    lab.produce(events, "bench").await?;
    let started = Instant::now();
    let stages = reckon_run(lab).await?;
    Ok((started.elapsed(), stages))
}

/// The files each table of `lab` holds now, e.g. "bronze_orders 4, orders 6, hourly_sales 3":
/// what every open and commit of a table pays for in delta-rs.
pub async fn files_held(lab: &Lab) -> anyhow::Result<String> {
    let mut held = vec![];
    for name in [
        TableName::BronzeOrders,
        TableName::Orders,
        TableName::HourlySales,
    ] {
        let files = match lab.tables.open(name).await? {
            Some(table) => table.get_file_uris()?.count(),
            None => 0,
        };
        held.push(format!("{name} {files}"));
    }
    Ok(held.join(", "))
}

/// Each stage's median over some runs, in milliseconds: where a run's time goes.
pub fn stage_medians(runs: &[Stages]) -> String {
    let of =
        |f: fn(&Stages) -> Duration| median(runs.iter().map(f).collect()).as_secs_f64() * 1000.0;
    format!(
        "bronze {:.0} ms, silver {:.0} ms, gold {:.0} ms, check {:.0} ms",
        of(|s| s.bronze),
        of(|s| s.silver),
        of(|s| s.gold),
        of(|s| s.check)
    )
}

/// The median of some durations (the upper one of an even count).
pub fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d.get(d.len() / 2).copied().unwrap_or_default()
}

/// One pass of [`raw_consume`].
#[derive(Debug, Clone, Copy)]
pub struct Consumed {
    pub messages: u64,
    pub took: Duration,
    /// The busy time of every core during the pass, the broker's among it: how much of the
    /// machine reading alone takes, and so how much is left beside it for bronze's own work.
    pub machine_cpu: Duration,
    /// The CPU time of the JVMs' JIT compilers during the pass.
    pub jit: Duration,
}

/// The machine's limit for bronze's input: every message of `topic` consumed with rdkafka as
/// bronze's reader is configured, nothing parsed.
pub async fn raw_consume(lab: &Lab) -> anyhow::Result<Consumed> {
    let kafka = lab.kafka().await?;
    let topic = &lab.config.topic;
    let partitions = kafka.partitions(topic)?.unwrap_or_default();
    let mut assignment = TopicPartitionList::new();
    let mut total = 0;
    for (&p, (start, end)) in partitions.iter().zip(kafka.log_ranges(topic, &partitions)?) {
        total += (end - start).max(0) as u64;
        assignment
            .add_partition_offset(topic, p, Offset::Beginning)
            .map_err(crate::kafka::KafkaError::from)?;
    }
    let reader = kafka.reader()?;
    // Both clocks are read before the timer starts (the JIT one scans /proc for a few ms) and
    // after it stops, so neither read is counted as the pass's time.
    let (jit, machine) = (cpu::used(Clock::JitCompilers), cpu::used(Clock::Machine));
    let started = Instant::now();
    reader
        .assign(&assignment)
        .map_err(crate::kafka::KafkaError::from)?;
    let mut seen = 0u64;
    let mut bytes = 0usize;
    // As bronze's loop: the clock is read only while waiting, never per message.
    let mut idle_since = None;
    crate::kafka::blocking(|| {
        while seen < total {
            if let Some(message) = reader.poll(Duration::from_millis(500)) {
                let message = message.map_err(crate::kafka::KafkaError::from)?;
                bytes += message.payload_len();
                seen += 1;
                idle_since = None;
            } else if idle_since.get_or_insert_with(Instant::now).elapsed()
                > Duration::from_secs(30)
            {
                anyhow::bail!("raw consume: stalled after {seen} of {total} messages of {topic}");
            }
        }
        Ok(())
    })?;
    std::hint::black_box(bytes);
    let took = started.elapsed();
    Ok(Consumed {
        messages: seen,
        took,
        machine_cpu: cpu::used(Clock::Machine).saturating_sub(machine),
        jit: cpu::used(Clock::JitCompilers).saturating_sub(jit),
    })
}

/// The machine's limit for bronze's output: `events` as bronze rows (Arrow, in batches of the
/// size bronze writes) written to one Parquet file with delta-rs's default compression.
pub fn parquet_write(events: &[OrderEvent], dir: &Path) -> anyhow::Result<Duration> {
    let batches: Vec<RecordBatch> = events
        .chunks(100_000)
        .enumerate()
        .map(|(c, chunk)| bronze_batch(chunk, c * 100_000))
        .collect::<Result<_, _>>()?;
    let path = dir.join("bronze-limit.parquet");
    let started = Instant::now();
    let file = std::fs::File::create(&path)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer =
        ArrowWriter::try_new(file, TableName::BronzeOrders.schema(), Some(properties))?;
    for batch in &batches {
        writer.write(batch)?;
    }
    writer.close()?;
    let took = started.elapsed();
    std::fs::remove_file(path)?;
    Ok(took)
}

fn bronze_batch(events: &[OrderEvent], first_offset: usize) -> arrow::error::Result<RecordBatch> {
    let now = START + SPAN;
    let ts = |v: Vec<i64>| Box::new(TimestampMicrosecondArray::from(v).with_timezone("UTC"));
    let columns: Vec<ArrayRef> = vec![
        std::sync::Arc::new(Int32Array::from(vec![0; events.len()])),
        std::sync::Arc::new(Int64Array::from_iter_values(
            (0..events.len()).map(|i| (first_offset + i) as i64),
        )),
        std::sync::Arc::from(ts(vec![now; events.len()]) as Box<dyn arrow::array::Array>),
        std::sync::Arc::from(ts(vec![now; events.len()]) as Box<dyn arrow::array::Array>),
        std::sync::Arc::new(Int64Array::from_iter_values(
            events.iter().map(|e| e.order_id),
        )),
        std::sync::Arc::new(StringArray::from_iter_values(
            events.iter().map(|e| e.customer_id.as_str()),
        )),
        std::sync::Arc::new(StringArray::from_iter_values(
            events.iter().map(|e| e.status.as_str()),
        )),
        std::sync::Arc::new(
            Decimal128Array::from_iter_values(events.iter().map(|e| e.amount_cents))
                .with_precision_and_scale(18, 2)?,
        ),
        std::sync::Arc::from(ts(events.iter().map(|e| e.event_time_micros).collect())
            as Box<dyn arrow::array::Array>),
    ];
    RecordBatch::try_new(TableName::BronzeOrders.schema(), columns)
}

/// The peak resident memory of this process, in MiB.
pub fn peak_rss_mib() -> f64 {
    status_mib("VmHWM:")
}

/// The resident memory of this process now, in MiB.
pub fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

/// This process's resident memory split as the kernel counts it, in MiB, and its threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resident {
    pub total: f64,
    /// Heap, stacks and anonymous maps: what the process itself made.
    pub anonymous: f64,
    /// Pages of mapped files (the program's own code among them), shared and given back first.
    pub files: f64,
    pub threads: u64,
}

/// This process's [`Resident`] memory now, from one read of `/proc/self/status`.
pub fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mib = |field| status_value(&status, field).map_or(0.0, |kb| kb / 1024.0);
    Resident {
        total: mib("VmRSS:"),
        anonymous: mib("RssAnon:"),
        files: mib("RssFile:") + mib("RssShmem:"),
        threads: status_value(&status, "Threads:").map_or(0, |n| n as u64),
    }
}

/// A memory figure of `/proc/self/status` (`field` with its colon), in MiB; 0 where unknown.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status_value(&status, field).map_or(0.0, |kb| kb / 1024.0)
}

/// The number after `field` (with its colon) in `/proc/self/status`'s text.
fn status_value(status: &str, field: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `hourly_sales` as (hour, orders, revenue) text, sorted: what both sides must agree on.
pub async fn hourly_sales(lab: &Lab) -> anyhow::Result<Vec<(String, i64, String)>> {
    let rows = crate::engine::render::rows(&lab.tables, TableName::HourlySales).await?;
    Ok(crate::engine::render::json_rows(&rows)
        .into_iter()
        .map(|r| hour_row(&Value::Object(r)))
        .collect())
}

/// One `hourly_sales` row, as JSON from either side, as (hour, orders, revenue) text.
pub(crate) fn hour_row(r: &Value) -> (String, i64, String) {
    (
        r["hour"].as_str().unwrap_or_default().to_string(),
        r["orders"].as_i64().unwrap_or_default(),
        r["revenue"].as_str().unwrap_or_default().to_string(),
    )
}

/// Hours as the two sides print them, for a readable difference.
pub fn describe(rows: &[(String, i64, String)]) -> String {
    rows.iter()
        .map(|(h, o, r)| format!("{h} {o} {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}
