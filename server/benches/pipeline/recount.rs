//! After the last send: the check kept run by run must print what a recount of everything from
//! scratch prints, and DuckDB's two queries on the same Parquet files must find the same. Each
//! side's best of [`TRIES`]: one pass of either varied 2x here.

use std::path::Path;
use std::time::{Duration, Instant};

use reckon::Lab;
use reckon::bench;

use super::TRIES;

/// The full recount's best time, and DuckDB's best recount (`None` when DuckDB is not installed).
pub async fn after_the_sends(
    main_lab: &Lab,
    dir: &Path,
) -> anyhow::Result<(Duration, Option<bench::duckdb::DuckCheck>)> {
    let kept = main_lab.check().await?;
    let (mut full, mut full_took) = (None, Duration::MAX);
    for _ in 0..TRIES {
        let started = Instant::now();
        full = Some(main_lab.check_full().await?);
        full_took = full_took.min(started.elapsed());
    }
    let full = full.expect("the full recount ran");
    if kept.findings != full.findings {
        anyhow::bail!("the incremental check and the full recount differ:\n{kept}\n---\n{full}");
    }
    println!(
        "the incremental check and the full recount agree after the last send ({} lines); the full recount took {:.2} s (best of 3)",
        full.findings.len(),
        full_took.as_secs_f64()
    );
    // The same two queries in DuckDB, on the same Parquet files.
    let python = bench::duckdb::venv_python();
    let mut duck: Option<bench::duckdb::DuckCheck> = None;
    for _ in 0..TRIES * usize::from(python.exists()) {
        let d = bench::duckdb::check(main_lab, &python, dir).await?;
        if duck.as_ref().is_none_or(|best| d.seconds < best.seconds) {
            duck = Some(d);
        }
    }
    if let Some(d) = &duck
        && !d.agrees_with(&full)
    {
        anyhow::bail!(
            "DuckDB's recount differs from Reckon's: {} hours, orders differing {:?}\n{full}",
            d.hours,
            d.differing
        );
    }
    Ok((full_took, duck))
}
