//! DuckDB beside the full recount: the check's two queries ([`RECOUNT_QUERIES`]) run by DuckDB
//! on the Parquet files the lab's tables hold now (`bench/duckdb_check.py`, in the Python
//! `bench/spark/sdp/setup.sh` installs DuckDB into). The limit a user would otherwise pick.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::engine::course::check::{RECOUNT_QUERIES, Report};
use crate::engine::tables::TableName;
use crate::service::lab::Lab;

/// The Python that `bench/spark/sdp/setup.sh` installs DuckDB (and Spark Declarative Pipelines)
/// into.
pub fn venv_python() -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_default();
    Path::new(&home).join(".cache/reckon/sdp-venv/bin/python")
}

/// What DuckDB answered, and how long its two queries took (Parquet reads included).
pub struct DuckCheck {
    pub seconds: f64,
    pub differing: Vec<i64>,
    pub hours: usize,
}

impl DuckCheck {
    /// Whether DuckDB found what Reckon's report says: the same orders differing (the report
    /// names none, else the benchmark has stopped) and a line for each hour it recounted.
    pub fn agrees_with(&self, report: &Report) -> bool {
        let hour_lines = report.findings.iter().filter(|l| l.hour.is_some()).count();
        !report.has_problem() && self.differing.is_empty() && self.hours == hour_lines
    }
}

/// Runs the two queries in DuckDB with `python` (which can import duckdb) on `lab`'s tables;
/// `work` holds the file list handed over.
pub async fn check(lab: &Lab, python: &Path, work: &Path) -> anyhow::Result<DuckCheck> {
    let mut tables = serde_json::Map::new();
    for name in [
        TableName::BronzeOrders,
        TableName::Orders,
        TableName::HourlySales,
    ] {
        let table = lab
            .tables
            .open(name)
            .await?
            .ok_or_else(|| anyhow::anyhow!("{name} was never written"))?;
        let files = table
            .get_file_uris()?
            .map(|uri| {
                url::Url::parse(&uri)
                    .ok()
                    .and_then(|u| u.to_file_path().ok())
                    .map_or(uri, |p| p.display().to_string())
            })
            .collect::<Vec<_>>();
        tables.insert(name.to_string(), json!(files));
    }
    let queries: serde_json::Map<String, Value> = RECOUNT_QUERIES
        .iter()
        .map(|(name, sql)| (name.to_string(), json!(sql)))
        .collect();
    let input = work.join("duckdb_check.json");
    std::fs::write(
        &input,
        json!({"tables": tables, "queries": queries}).to_string(),
    )?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/duckdb_check.py");
    let out = Command::new(python).arg(&script).arg(&input).output()?;
    if !out.status.success() {
        anyhow::bail!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let answer: Value = serde_json::from_slice(&out.stdout)?;
    Ok(DuckCheck {
        seconds: answer["seconds"].as_f64().unwrap_or(f64::NAN),
        differing: answer["differing"]
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default(),
        hours: answer["hours"].as_array().map_or(0, Vec::len),
    })
}
