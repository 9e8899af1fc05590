//! AUTO CDC at scale (`make bench`; never part of the tests): SCD 2 over 1 M changes on 100 k
//! keys, then a 1,000-change incremental run; the same incremental run on a table of 10 k
//! changes on 1 k keys beside it. Prints where each run's time goes (the flow's stages as the
//! event log has them) and the `ratio cdc_incremental big/small` line.
//!
//!     cargo bench -p reckon --bench cdc -- [--changes N] [--keys K]

use std::path::Path;
use std::time::{Duration, Instant};

use reckon::bench;
use reckon::engine::rng::Rng;
use reckon::{Config, Lab};

const PROJECT: &str = "
CREATE TEMPORARY VIEW changes AS SELECT * FROM read_files('landing/changes', format => 'json',
    schema => 'id BIGINT, seq BIGINT, plan STRING, seats BIGINT, op STRING');
CREATE OR REFRESH STREAMING TABLE accounts;
CREATE FLOW accounts_cdc AS AUTO CDC INTO accounts
  FROM STREAM(changes) KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY seq
  COLUMNS * EXCEPT (op, _rescued_data)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON plan;
";

const PLANS: [&str; 4] = ["free", "team", "pro", "enterprise"];

/// `count` changes on `keys` keys, sequences from `first_seq` on, into one file.
fn land(
    dir: &Path,
    file: &str,
    rng: &mut Rng,
    count: u64,
    keys: u64,
    first_seq: u64,
) -> anyhow::Result<()> {
    let landing = dir.join("landing/changes");
    std::fs::create_dir_all(&landing)?;
    let mut text = String::with_capacity(count as usize * 80);
    for i in 0..count {
        // One change in twenty is late: its sequence falls among those already applied.
        let seq = if first_seq > 0 && rng.below(20) == 0 {
            rng.below(first_seq)
        } else {
            first_seq + i
        };
        let op = if rng.below(50) == 0 {
            "DELETE"
        } else {
            "UPSERT"
        };
        text.push_str(&format!(
            "{{\"id\": {}, \"seq\": {seq}, \"plan\": \"{}\", \"seats\": {}, \"op\": \"{op}\"}}\n",
            rng.below(keys),
            PLANS[rng.below(4) as usize],
            1 + rng.below(50),
        ));
    }
    std::fs::write(landing.join(file), text)?;
    Ok(())
}

struct Measured {
    first: Duration,
    /// The process's peak resident memory after the first run (the big input is measured first).
    first_peak_mib: f64,
    incremental: Duration,
    stages: String,
    rows: u64,
}

async fn measure(dir: &Path, changes: u64, keys: u64) -> anyhow::Result<Measured> {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("transformations"))?;
    std::fs::write(
        project.join("spark-pipeline.yml"),
        "name: cdc\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )?;
    std::fs::write(project.join("transformations/cdc.sql"), PROJECT)?;
    let lab = Lab::new(Config::new(dir));
    let graph = lab.project(&project)?;
    let mut rng = Rng(0x5eed_cdc0);
    land(dir, "0001.json", &mut rng, changes, keys, 0)?;
    let start = Instant::now();
    let first = lab.run_project(&graph, &[]).await?;
    let first_took = start.elapsed();
    let first_peak_mib = bench::peak_rss_mib();
    land(dir, "0002.json", &mut rng, 1_000, keys, changes)?;
    let start = Instant::now();
    let run = lab.run_project(&graph, &[]).await?;
    let incremental = start.elapsed();
    for r in [&first, &run] {
        if r.failed() || r.has_problem() {
            anyhow::bail!("a run failed: {:?} {:?}", r.events, r.findings);
        }
    }
    let cdc = run
        .events
        .iter()
        .find(|e| e.flow == "accounts_cdc")
        .ok_or_else(|| anyhow::anyhow!("no AUTO CDC event"))?;
    let stages: Vec<String> = cdc
        .figures
        .stages_ms
        .iter()
        .map(|(stage, ms)| format!("{stage} {ms} ms"))
        .collect();
    Ok(Measured {
        first: first_took,
        first_peak_mib,
        incremental,
        stages: format!("{}; the check {} ms", stages.join(", "), run.check_ms),
        rows: cdc.figures.rows_upserted + cdc.figures.rows_deleted,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut changes, mut keys) = (1_000_000u64, 100_000u64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--changes" => changes = args.next().unwrap_or_default().parse()?,
            "--keys" => keys = args.next().unwrap_or_default().parse()?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    let work = tempfile::Builder::new().prefix("reckon-cdc-").tempdir()?;
    let big = measure(&work.path().join("big"), changes, keys).await?;
    let small = measure(&work.path().join("small"), changes / 100, keys / 100).await?;
    let mut lines = vec![];
    for (name, m, n, k) in [
        ("big", &big, changes, keys),
        ("small", &small, changes / 100, keys / 100),
    ] {
        lines.push(format!(
            "{name}: {n} changes on {k} keys: first run {:.2} s{}; 1,000-change run {:.3} s \
             ({} target rows written; {})",
            m.first.as_secs_f64(),
            match name {
                "big" => format!(" (peak resident memory {:.0} MiB)", m.first_peak_mib),
                _ => String::new(),
            },
            m.incremental.as_secs_f64(),
            m.rows,
            m.stages
        ));
    }
    let ratio = big.incremental.as_secs_f64() / small.incremental.as_secs_f64();
    lines.push(String::new());
    lines.push(format!(
        "ratio cdc_incremental big/small = {ratio:.2}  (target <= 3: {})",
        if ratio <= 3.0 { "met" } else { "MISSED" }
    ));
    lines.iter().for_each(|l| println!("{l}"));
    let section = format!(
        "{START}\n## AUTO CDC: SCD 2 at 1 M changes\n\n\
         Measured on this machine (2 cores, 24 GiB) on {} with `make bench` (release build): \
         SCD 2 on history of `plan`, one change in twenty late and one in fifty a delete.\n\n\
         ```text\n{}\n```\n{END}",
        chrono::Utc::now().format("%Y-%m-%d"),
        lines.join("\n")
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    bench::replace_section(&root.join("bench/results.md"), START, END, &section)?;
    Ok(())
}

const START: &str = "<!-- cdc: written by `make bench` -->";
const END: &str = "<!-- end of cdc -->";
