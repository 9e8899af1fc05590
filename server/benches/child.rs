//! What a run's own process costs (`make bench`; never part of the tests): 10-event course runs
//! (three streams and the check) in this process beside the same runs in a child, `reckon
//! worker`, as the server starts every run, in turns on one lab. The child is kept between runs
//! as the server keeps it (`child::Warm`); a cold child (started for the run) is measured too.
//! Prints the medians and `ratio small_run child/in-process` (the warm child's). Then the
//! incremental goal in the children: 1,000-event runs on a lab holding `--big` events and on one
//! holding 10 k, each in its own kept child, in turns: `ratio incremental_child big/small`.
//!
//!     cargo bench -p reckon --bench child -- [--runs N] [--big EVENTS]

use std::time::{Duration, Instant};

use reckon::bench::{self, Workload};
use reckon::config::RunLimits;
use reckon::service::runner::child;
use reckon::{Config, Lab};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut runs, mut big) = (10usize, 1_000_000usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().unwrap_or_default().parse()?,
            "--big" => big = args.next().unwrap_or_default().parse()?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    let dir = tempfile::Builder::new().prefix("reckon-child-").tempdir()?;
    let lab = lab(dir.path(), "small").await?;
    let workload = Workload::new(1_000, 1);
    lab.produce(&workload.sends[0], "bench").await?;
    bench::reckon_run(&lab).await?;
    let warm = child::Warm::default();
    let (mut inside, mut outside, mut cold) = (vec![], vec![], vec![]);
    for i in 0..runs {
        lab.produce(&workload.after(20 * i, 10), "bench").await?;
        let started = Instant::now();
        lab.pipeline_with(true, |_| {}).await?;
        inside.push(started.elapsed());
        lab.produce(&workload.after(20 * i + 10, 10), "bench")
            .await?;
        let (_cancel, never) = tokio::sync::watch::channel(false);
        let started = Instant::now();
        child::run(&lab, &warm, true, |_| {}, RunLimits::DEFAULT, never.clone())
            .await
            .map_err(|e| anyhow::anyhow!("the child's run failed: {e}"))?;
        outside.push(started.elapsed());
        // Every other round, a child started for the run (the warm one is kept aside).
        if i % 2 == 1 {
            lab.produce(&workload.after(20 * i + 15, 5), "bench")
                .await?;
            let started = Instant::now();
            child::run(
                &lab,
                &child::Warm::default(),
                true,
                |_| {},
                RunLimits::DEFAULT,
                never,
            )
            .await
            .map_err(|e| anyhow::anyhow!("the cold child's run failed: {e}"))?;
            cold.push(started.elapsed());
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let cold_runs = cold.len();
    let (inside, outside) = (bench::median(inside), bench::median(outside));
    println!(
        "10-event run, median of {runs}: in this process {:.0} ms, in the lab's warm child {:.0} \
         ms (target under 300 ms: {})",
        ms(inside),
        ms(outside),
        if outside < Duration::from_millis(300) {
            "met"
        } else {
            "MISSED"
        }
    );
    if cold_runs > 0 {
        println!(
            "5-event run in a child started for it, median of {cold_runs}: {:.0} ms",
            ms(bench::median(cold))
        );
    }
    let ratio = outside.as_secs_f64() / inside.as_secs_f64();
    println!(
        "ratio small_run child/in-process = {ratio:.2}  (target <= 1.5: {})",
        if ratio <= 1.5 { "met" } else { "MISSED" }
    );
    incremental(dir.path(), big, runs).await
}

/// A lab in `dir`, on its own topic.
async fn lab(dir: &std::path::Path, name: &str) -> anyhow::Result<Lab> {
    let mut config = Config::new(dir.join(name));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    config.topic = format!("bench.child.{name}.{}", nanos.as_nanos());
    let lab = Lab::open(config).await?.started_by("bench");
    lab.kafka().await?;
    Ok(lab)
}

/// 1,000-event runs in the kept children of a lab holding `big` events and of one holding 10 k,
/// `runs` of each in turns, so a slower minute of the machine weighs on both.
async fn incremental(dir: &std::path::Path, big: usize, runs: usize) -> anyhow::Result<()> {
    let mut medians = vec![];
    let mut labs = vec![];
    for (name, events) in [("big", big), ("ten-k", 10_000)] {
        let lab = lab(dir, name).await?;
        let workload = Workload::new(events, 1);
        lab.produce(&workload.sends[0], "bench").await?;
        bench::reckon_run(&lab).await?;
        labs.push((lab, workload, child::Warm::default(), vec![]));
    }
    for i in 0..runs {
        for (lab, workload, warm, took) in labs.iter_mut() {
            lab.produce(&workload.after(i * 1000, 1000), "bench")
                .await?;
            let (_cancel, never) = tokio::sync::watch::channel(false);
            let started = Instant::now();
            child::run(lab, warm, true, |_| {}, RunLimits::DEFAULT, never)
                .await
                .map_err(|e| anyhow::anyhow!("the child's run failed: {e}"))?;
            took.push(started.elapsed());
        }
    }
    for (_, _, _, took) in labs {
        medians.push(bench::median(took));
    }
    let ratio = medians[0].as_secs_f64() / medians[1].as_secs_f64();
    println!(
        "1,000-event run in the lab's kept child, median of {runs}: with {big} events held {:.0} \
         ms, with 10000 {:.0} ms",
        medians[0].as_secs_f64() * 1000.0,
        medians[1].as_secs_f64() * 1000.0,
    );
    println!(
        "ratio incremental_child big/small = {ratio:.2}  (target <= 1.2: {})",
        if ratio <= 1.2 { "met" } else { "MISSED" }
    );
    Ok(())
}
