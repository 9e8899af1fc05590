//! Declarative pipelines end to end (PIPELINES.md, week 14's guided lab): the support example's
//! project run on real landed files into real Delta tables, with the history in SQLite. Each
//! test has its own folder.

mod accounting;
mod batching;
#[path = "../common/mod.rs"]
mod common;
mod definitions;
mod kafka;
mod loading;
mod python;
mod python_chains;
mod reruns;
mod shop;
mod windows;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{TestLab, stderr, stdout};
use serde_json::Value;

const VALID: [&str; 5] = ["open", "pending", "resolved", "escalated", "closed"];

fn project(lab: &TestLab) -> String {
    let dir = lab.data().join("project");
    lab.ok(&["pipeline", "example", "support", dir.to_str().unwrap()]);
    dir.display().to_string()
}

/// A project of its own in `<data>/<name>`: its `spark-pipeline.yml` and `sql` as `sql/p.sql`.
/// Its folder.
fn sql_project(lab: &TestLab, name: &str, sql: &str) -> std::path::PathBuf {
    let dir = lab.data().join(name);
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        format!("name: {name}\nlibraries:\n  - glob:\n      include: sql/**\n"),
    )
    .unwrap();
    std::fs::write(dir.join("sql/p.sql"), sql).unwrap();
    dir
}

fn events(lab: &TestLab, run: &str) -> Vec<Value> {
    lab.ok(&["pipeline", "events", "--run", run, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn event<'a>(events: &'a [Value], flow: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["flow"] == flow)
        .unwrap_or_else(|| panic!("no event of {flow} in {events:?}"))
}

/// Every landed line, in path then line order: (file, line, text).
fn landed_lines(data: &Path) -> Vec<(String, usize, String)> {
    let dir = data.join("landing/tickets");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut out = vec![];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            out.push((file.display().to_string(), n + 1, line.to_string()));
        }
    }
    out
}

/// The gold view recounted from the raw lines in plain Rust: the first line of each ticket id
/// (path, then line order) that has a valid status, counted per day, account and status.
fn recount(data: &Path) -> BTreeMap<(String, String, String), i64> {
    let mut seen = BTreeSet::new();
    let mut counts = BTreeMap::new();
    for (_, _, line) in landed_lines(data) {
        let record: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let id = record["ticket_id"].to_string();
        if !seen.insert(id) {
            continue;
        }
        let status = record["status"].as_str().unwrap_or("");
        if !VALID.contains(&status) {
            continue;
        }
        let day = record["created_at"].as_str().unwrap()[..10].to_string();
        let account = record["account_id"].as_str().unwrap().to_string();
        *counts
            .entry((day, account, status.to_string()))
            .or_insert(0) += 1;
    }
    counts
}

fn gold(lab: &TestLab) -> BTreeMap<(String, String, String), i64> {
    lab.table("gold_daily_account_status")
        .iter()
        .map(|r| {
            let key = (
                r["ticket_date"].as_str().unwrap().to_string(),
                r["account_id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            );
            (key, r["count"].as_i64().unwrap())
        })
        .collect()
}
