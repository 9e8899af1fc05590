//! Module 9 written in SQL (`reckon pipeline example shop`) beside the course's Rust pipeline and
//! Spark, on the same topic and the same sends: its `hourly_sales` must equal the course's, and
//! its gold, its small runs and its incremental runs are timed for the `shop_*` ratio lines.

use std::path::Path;
use std::time::{Duration, Instant};

use reckon::bench::{self, median};
use reckon::engine::declarative::example;
use reckon::engine::declarative::graph::Graph;
use reckon::{Config, Lab};

/// Rows a second.
pub fn rate(rows: u64, took: Duration) -> f64 {
    rows as f64 / took.as_secs_f64().max(1e-9)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A lab of its own in `dir/name`, on a topic of its own.
pub fn lab(dir: &Path, name: &str) -> Lab {
    let mut config = Config::new(dir.join(name));
    config.topic = format!(
        "bench.{name}.{}.{}",
        std::process::id(),
        chrono::Utc::now().timestamp()
    );
    Lab::new(config)
}

/// The shop project in a lab of its own, subscribed to another lab's topic.
pub struct Shop {
    lab: Lab,
    graph: Graph,
    /// The gold flow's time over every run so far.
    pub gold: Duration,
    /// Each run's whole time, in order.
    pub runs: Vec<Duration>,
}

impl Shop {
    pub fn new(dir: &Path, name: &str, topic: &str) -> anyhow::Result<Self> {
        let project = dir.join(format!("{name}-project"));
        example::shop::write_project(&project, topic)?;
        let lab = lab(dir, name);
        let graph = lab.project(&project)?;
        Ok(Self {
            lab,
            graph,
            gold: Duration::ZERO,
            runs: vec![],
        })
    }

    /// One run of the project: what is new on the topic, through gold and the project's check.
    pub async fn run(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let run = self.lab.run_project(&self.graph, &[]).await?;
        let took = started.elapsed();
        if let Some(failed) = run.events.iter().find(|e| e.error.is_some()) {
            anyhow::bail!("the shop's {} failed: {:?}", failed.flow, failed.error);
        }
        let gold = run
            .events
            .iter()
            .find(|e| e.target.as_deref() == Some("hourly_sales"));
        self.gold += gold.map_or(Duration::ZERO, |e| Duration::from_millis(e.duration_ms));
        self.runs.push(took);
        Ok(took)
    }

    /// Its hourly table equals the course's, or the bench stops.
    pub async fn same_hours_as(&self, course: &Lab) -> anyhow::Result<usize> {
        let (ours, theirs) = (
            bench::hourly_sales(&self.lab).await?,
            bench::hourly_sales(course).await?,
        );
        if ours != theirs {
            anyhow::bail!(
                "the shop's hourly_sales differ from the course's: shop\n{}\ncourse\n{}",
                bench::describe(&ours),
                bench::describe(&theirs)
            );
        }
        Ok(ours.len())
    }
}

/// The `shop_*` ratio lines: the shop's gold over the sends beside Spark's, a 10-event run beside
/// Spark's cold one (as the seed runs it), and a 1,000-event run with N events stored beside one
/// with 10 k.
pub fn ratio_lines(
    shop_gold: Duration,
    spark: Option<(Duration, Duration)>,
    small: &[Duration],
    (big, ten_k): (&[Duration], &[Duration]),
) -> Vec<String> {
    let mut lines = vec![];
    let mut say = |name: &str, value: f64, target: &str, met: bool| {
        let verdict = if met { "met" } else { "MISSED" };
        lines.push(format!(
            "ratio {name} = {value:.2}  (target {target}: {verdict})"
        ));
    };
    if let Some((gold, cold)) = spark {
        let gold_ratio = gold.as_secs_f64() / shop_gold.as_secs_f64().max(1e-9);
        say(
            "shop_gold spark/reckon",
            gold_ratio,
            ">= 50",
            gold_ratio >= 50.0,
        );
        let small_ratio = cold.as_secs_f64() / median(small.to_vec()).as_secs_f64().max(1e-9);
        say(
            "shop_small_run spark/reckon",
            small_ratio,
            ">= 100",
            small_ratio >= 100.0,
        );
    }
    let incremental =
        median(big.to_vec()).as_secs_f64() / median(ten_k.to_vec()).as_secs_f64().max(1e-9);
    say(
        "shop_incremental big/small",
        incremental,
        "<= 1.3",
        incremental <= 1.3,
    );
    lines
}
