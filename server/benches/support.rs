//! Week 14's support pipeline on about 1 M tickets in 35 daily files (`make bench`; never part of
//! the tests): Reckon's first run (days 1-30) and incremental run (days 31-35) beside Apache
//! Spark Declarative Pipelines running the same pipeline (`bench/spark/sdp/`), and DuckDB
//! computing the gold view from the same files (the limit). The three golds must be identical.
//!
//!     cargo bench -p reckon --bench support -- [--tickets-per-day N] [--no-spark]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use reckon::bench;
use reckon::engine::declarative::example;
use reckon::engine::declarative::sql::Format;
use reckon::{Config, Lab};
use serde_json::Value;

type Gold = Vec<(String, String, String, i64)>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A lab in `dir` with the tickets part of the support project; returns it and the project.
async fn lab(dir: &Path) -> anyhow::Result<(Lab, PathBuf)> {
    let lab = Lab::new(Config::new(dir));
    let project = dir.join("project");
    example::write_sql(&project, &example::sql(Format::Json, false))?;
    Ok((lab, project))
}

/// A run's time, its check included, and the check's share in seconds.
async fn run(lab: &Lab, project: &Path) -> anyhow::Result<(Duration, f64)> {
    let graph = lab.project(project)?;
    let start = Instant::now();
    let run = lab.run_project(&graph, &[]).await?;
    let took = start.elapsed();
    if run.failed() || run.has_problem() {
        anyhow::bail!(
            "a flow failed or the check found a problem: {:?} {:?}",
            run.events,
            run.findings
        );
    }
    Ok((took, run.check_ms as f64 / 1000.0))
}

async fn reckon_gold(lab: &Lab) -> anyhow::Result<Gold> {
    let tables = lab.flows().tables;
    let table = tables
        .open_named("gold_daily_account_status")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no gold table"))?;
    let ctx = datafusion::prelude::SessionContext::new();
    ctx.register_table("gold", table.table_provider().await?)?;
    let batches = reckon::engine::tables::query(
        &ctx,
        "gold",
        "SELECT CAST(ticket_date AS VARCHAR), account_id, status, count FROM gold ORDER BY 1, 2, 3",
    )
    .await?;
    let mut out = vec![];
    for b in batches {
        let text = |i: usize| cast(b.column(i), &DataType::Utf8);
        let (d, a, s) = (text(0)?, text(1)?, text(2)?);
        let n = cast(b.column(3), &DataType::Int64)?;
        let n = n.as_primitive::<arrow::datatypes::Int64Type>();
        for r in 0..b.num_rows() {
            let t = |c: &dyn Array| c.as_string::<i32>().value(r).to_string();
            out.push((t(&d), t(&a), t(&s), n.value(r)));
        }
    }
    Ok(out)
}

/// The JSON line a peer script prints, its rows read from the gold file it wrote.
fn peer(command: &mut Command, gold_file: &Path) -> anyhow::Result<(f64, Gold)> {
    let out = command.output()?;
    if !out.status.success() {
        anyhow::bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let line: Value = serde_json::from_slice(&out.stdout)?;
    let seconds = line["seconds"]
        .as_f64()
        .ok_or_else(|| anyhow::anyhow!("no seconds in {line}"))?;
    let rows: Vec<(String, String, String, i64)> =
        serde_json::from_str(&std::fs::read_to_string(gold_file)?)?;
    Ok((seconds, rows))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut per_day = 28_600u32;
    let mut spark = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tickets-per-day" => per_day = args.next().unwrap_or_default().parse()?,
            "--no-spark" => spark = false,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    spark = spark && reckon::bench::peer("spark", reckon::bench::spark_installed());
    let work = tempfile::Builder::new()
        .prefix("reckon-support-")
        .tempdir()?;
    let sdp = root().join("bench/spark/sdp");
    let mut lines = vec![];
    let mut say = |line: String| {
        println!("{line}");
        lines.push(line);
    };

    let (lab, project) = lab(&work.path().join("reckon")).await?;
    let data = lab.config.data_dir.clone();
    example::land(&data, (1, 30), false, Format::Json, per_day)?;
    let landing = data.join("landing/tickets");
    let (first, first_check) = run(&lab, &project).await?;
    example::land(&data, (31, 35), false, Format::Json, per_day)?;
    let count = |dir: &Path| -> anyhow::Result<usize> {
        let mut n = 0;
        for f in std::fs::read_dir(dir)? {
            n += std::fs::read_to_string(f?.path())?.lines().count();
        }
        Ok(n)
    };
    let tickets = count(&landing)?;
    say(format!(
        "{tickets} ticket lines in 35 daily files ({per_day} a day on average), {:.0} MiB",
        dir_size(&landing)? as f64 / 1048576.0
    ));
    let (incremental, incremental_check) = run(&lab, &project).await?;
    let gold = reckon_gold(&lab).await?;
    say(format!(
        "reckon: first run (days 1-30) {:.2} s, incremental run (days 31-35) {:.2} s; of which \
         the check (silver's one row per key, recounted from all of bronze) {first_check:.2} s \
         and {incremental_check:.2} s",
        first.as_secs_f64(),
        incremental.as_secs_f64()
    ));

    // The limit: every file to the gold view in one run, against DuckDB on the same files.
    let (whole, whole_project) = lab_copy(work.path(), &landing).await?;
    let (all_at_once, whole_check) = run(&whole, &whole_project).await?;
    let flows_only = all_at_once.as_secs_f64() - whole_check;
    let duck_python = reckon::bench::duckdb::venv_python();
    let mut ratios = vec![];
    if reckon::bench::peer("duckdb", duck_python.exists()) {
        let duck_file = work.path().join("duckdb_gold.json");
        let (duck, duck_gold) = peer(
            Command::new(&duck_python)
                .arg(sdp.join("duckdb_gold.py"))
                .arg(&landing)
                .arg(&duck_file),
            &duck_file,
        )?;
        say(format!(
            "gold view from all 35 files: reckon {flows_only:.2} s (bronze, silver and gold written as \
             Delta tables; {whole_check:.2} s more for its check), duckdb {duck:.2} s (the query \
             alone); golds identical: {}",
            duck_gold == gold
        ));
        if duck_gold != gold {
            anyhow::bail!(
                "DuckDB's gold differs from Reckon's ({} vs {} rows)",
                duck_gold.len(),
                gold.len()
            );
        }
        ratios.push(format!(
            "ratio gold_view reckon/duckdb = {:.2}  (target <= 1.5: {})",
            flows_only / duck,
            met(flows_only / duck <= 1.5)
        ));
    } else {
        say(format!(
            "gold view from all 35 files: reckon {flows_only:.2} s (bronze, silver and gold \
             written as Delta tables; {whole_check:.2} s more for its check)"
        ));
    }

    if spark {
        let storage = work.path().join("spark");
        let spark_landing = work.path().join("spark-landing");
        std::fs::create_dir_all(&spark_landing)?;
        let mut days: Vec<PathBuf> = std::fs::read_dir(&landing)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        days.sort();
        for day in &days[..30] {
            std::fs::copy(day, spark_landing.join(day.file_name().unwrap_or_default()))?;
        }
        let spark_file = work.path().join("spark_gold.json");
        let spark_run = || {
            peer(
                Command::new(sdp.join("run.sh"))
                    .arg(&spark_landing)
                    .arg(&storage)
                    .arg(&spark_file),
                &spark_file,
            )
        };
        let (spark_first, _) = spark_run()?;
        for day in &days[30..] {
            std::fs::copy(day, spark_landing.join(day.file_name().unwrap_or_default()))?;
        }
        let (spark_incremental, spark_gold) = spark_run()?;
        say(format!(
            "spark declarative pipelines: first run {spark_first:.2} s, incremental run \
             {spark_incremental:.2} s (each a `spark-pipelines run` process); golds identical: {}",
            spark_gold == gold
        ));
        if spark_gold != gold {
            anyhow::bail!("Spark's gold differs from Reckon's");
        }
        let first_ratio = spark_first / first.as_secs_f64();
        let incremental_ratio = spark_incremental / incremental.as_secs_f64();
        ratios.insert(
            0,
            format!(
                "ratio pipeline_first spark/reckon = {first_ratio:.2}  (target >= 5: {})",
                met(first_ratio >= 5.0)
            ),
        );
        ratios.insert(
            1,
            format!(
                "ratio pipeline_incremental spark/reckon = {incremental_ratio:.2}  (target >= 20: {})",
                met(incremental_ratio >= 20.0)
            ),
        );
    }
    say(String::new());
    ratios.into_iter().for_each(&mut say);
    let section = format!(
        "{START}\n## Declarative pipelines: week 14's support pipeline\n\n\
         Measured on this machine (2 cores, 24 GiB) on {} with `make bench` (release build). \
         Reckon runs the support project's tickets part (`reckon pipeline example support`, \
         without the accounts); Spark runs the same pipeline with `spark-pipelines run` \
         (PySpark 4.2.0, Delta 4.4.0, `local[2]`; `bench/spark/sdp/README.md` says what had to \
         change for open-source Spark); DuckDB {} computes the gold view from the same files.\n\n\
         ```text\n{}\n```\n{END}",
        chrono::Utc::now().format("%Y-%m-%d"),
        "2.0.1",
        lines.join("\n")
    );
    bench::replace_section(&root().join("bench/results.md"), START, END, &section)?;
    println!("\nrecorded in bench/results.md");
    Ok(())
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn dir_size(dir: &Path) -> anyhow::Result<u64> {
    let mut n = 0;
    for f in std::fs::read_dir(dir)? {
        n += f?.metadata()?.len();
    }
    Ok(n)
}

/// A second lab whose landing folder holds the same 35 files.
async fn lab_copy(work: &Path, landing: &Path) -> anyhow::Result<(Lab, PathBuf)> {
    let (lab, project) = lab(&work.join("reckon-whole")).await?;
    let to = lab.config.data_dir.join("landing/tickets");
    std::fs::create_dir_all(&to)?;
    for f in std::fs::read_dir(landing)? {
        let f = f?.path();
        std::fs::copy(&f, to.join(f.file_name().unwrap_or_default()))?;
    }
    Ok((lab, project))
}

const START: &str = "<!-- support: written by `make bench` -->";
const END: &str = "<!-- end of support -->";
