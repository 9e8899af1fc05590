//! Where the figures go: `bench/side_by_side.json`, the chart, and `bench/results.md`'s
//! side-by-side section.

use std::path::Path;

use reckon::bench;

use super::args::Args;

/// Writes the figures, the chart and `bench/results.md`'s side-by-side section.
pub fn record(
    root: &Path,
    args: &Args,
    out: &str,
    figures: &serde_json::Value,
) -> anyhow::Result<()> {
    if bench::smoke() {
        println!(
            "smoke run: bench/results.md, side_by_side.json and side_by_side.svg left as they are"
        );
        return Ok(());
    }
    let bench = root.join("bench");
    std::fs::write(
        bench.join("side_by_side.json"),
        serde_json::to_string_pretty(figures)?,
    )?;
    let chart = std::process::Command::new("python3")
        .arg(bench.join("chart.py"))
        .arg(bench.join("side_by_side.json"))
        .arg(bench.join("side_by_side.svg"))
        .status()?;
    if !chart.success() {
        anyhow::bail!("bench/chart.py failed");
    }
    let command = if args.events == 1_000_000 {
        "make bench".to_string()
    } else {
        format!("make bench EVENTS={}", args.events)
    };
    let section = format!(
        "{START}\n## Side by side: Reckon, Spark, and the machine's limits\n\n\
         Measured on this machine (2 cores, 24 GiB) on {} with `{command}` (release build; the real \
         local Kafka broker; PySpark 4.0.1 `local[2]` with the Kafka and Delta connectors from \
         Maven Central). Reckon and Spark each run after every send, from the same topic.\n\n\
         ```text\n{}```\n\n![events per second and small-run latency](side_by_side.svg)\n{END}",
        chrono::Utc::now().format("%Y-%m-%d"),
        out.trim_start()
    );
    bench::replace_section(&bench.join("results.md"), START, END, &section)?;
    println!("\nrecorded in bench/results.md, bench/side_by_side.json and bench/side_by_side.svg");
    Ok(())
}

const START: &str = "<!-- side-by-side: written by `make bench` -->";
const END: &str = "<!-- end of side-by-side -->";
