//! First benchmark (`make bench`): events per second for bronze, silver, gold and the check over
//! N events (default 1,000,000; `RECKON_BENCH_EVENTS` to change), and the latency of a full run on a
//! 10-event batch (median of 10). Uses the real local broker and a fresh topic and folder.

use std::time::{Duration, Instant};

use reckon::event::OrderEvent;
use reckon::lab::{Lab, Streams};
use reckon::{Config, streams::StreamRun};

const HOUR: i64 = 3_600_000_000;
/// 2026-10-01T00:00:00Z in microseconds.
const START: i64 = 1_790_812_800_000_000;

/// Course-shaped events: placed orders over 48 hours, some paid later, some sent twice.
fn events(n: usize, first_id: i64) -> Vec<OrderEvent> {
    (0..n)
        .map(|i| {
            let id = first_id + (i as i64) / 2;
            let status = if i % 2 == 0 { "placed" } else { "paid" };
            OrderEvent {
                order_id: id,
                customer_id: format!("C{:04}", id % 5000),
                status: status.into(),
                amount_cents: 500 + (id % 9000) as i128,
                event_time_micros: START
                    + (i as i64) * 48 * HOUR / n.max(1) as i64
                    + if i % 2 == 1 { 600_000_000 } else { 0 },
            }
        })
        .collect()
}

fn per_second(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::var("RECKON_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir()?;
    let mut config = Config::new(dir.path());
    config.topic = format!(
        "bench.{}.{}",
        std::process::id(),
        chrono::Utc::now().timestamp()
    );
    let lab = Lab::new(config);
    lab.reset(false).await?;

    let all = events(n, 1);
    let started = Instant::now();
    for chunk in all.chunks(50_000) {
        lab.produce(chunk, "bench").await?;
    }
    let produce = started.elapsed();
    println!(
        "produced {n} events in {:.1} s ({:.0} events/s)",
        produce.as_secs_f64(),
        per_second(n as u64, produce)
    );

    let mut figures = vec![];
    for which in [Streams::Bronze, Streams::Silver, Streams::Gold] {
        let started = Instant::now();
        let runs: Vec<StreamRun> = lab.run(which, true).await?;
        let took = started.elapsed();
        let run = &runs[0];
        figures.push((run.stream, run.rows_read, took));
    }
    let started = Instant::now();
    let report = lab.check().await?;
    let check = started.elapsed();
    assert!(
        !report.has_problem(),
        "the check found a problem:\n{report}"
    );
    figures.push(("check", n as u64, check));

    println!("\n| stage  | events    | seconds | events/s  |");
    println!("|--------|-----------|---------|-----------|");
    for (stage, rows, took) in &figures {
        println!(
            "| {stage:<6} | {rows:>9} | {:>7.2} | {:>9.0} |",
            took.as_secs_f64(),
            per_second(*rows, *took)
        );
    }

    let mut latencies = vec![];
    for i in 0..10 {
        let batch = events(10, 10_000_000 + i * 10);
        lab.produce(&batch, "bench").await?;
        let started = Instant::now();
        lab.run(Streams::All, true).await?;
        lab.check().await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    println!(
        "\nfull run (3 streams + check) on a 10-event batch, after {n} events: median {:.0} ms (min {:.0}, max {:.0})",
        median.as_secs_f64() * 1000.0,
        latencies[0].as_secs_f64() * 1000.0,
        latencies[latencies.len() - 1].as_secs_f64() * 1000.0
    );
    println!("peak RSS {:.0} MiB", rss_mib());
    Ok(())
}
