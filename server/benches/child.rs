//! What a run's own process costs (`make bench`; never part of the tests): 10-event course runs
//! (three streams and the check) in this process beside the same runs in a child, `reckon
//! worker`, as the server starts every run, in turns on one lab. The child is kept between runs
//! as the server keeps it (`child::Warm`); a cold child (started for the run) is measured too.
//! Prints the medians and `ratio small_run child/in-process` (the warm child's).
//!
//!     cargo bench -p reckon --bench child -- [--runs N]

use std::time::{Duration, Instant};

use reckon::bench::{self, Workload};
use reckon::service::dashboard::child::{self, Limits};
use reckon::{Config, Lab};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut runs = 10usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().unwrap_or_default().parse()?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    let dir = tempfile::Builder::new().prefix("reckon-child-").tempdir()?;
    let mut config = Config::new(dir.path());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    config.topic = format!("bench.child.{}", nanos.as_nanos());
    let lab = Lab::open(config).await?.started_by("bench");
    lab.kafka().await?;
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
        child::run(&lab, &warm, true, |_| {}, Limits::DEFAULT, never.clone())
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
                Limits::DEFAULT,
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
    Ok(())
}
