//! AUTO CDC (PIPELINES §5) on real landed files and real Delta tables: SCD 1 and SCD 2 on each
//! case of the contract, the same events in 1, 2 and 5 runs, and a crash before the commit.

mod checks;
#[path = "../common/mod.rs"]
mod common;
mod contract;
mod gold;

use std::collections::BTreeMap;

use common::TestLab;
use serde_json::Value;

const PROJECT: &str = "
CREATE OR REFRESH STREAMING TABLE changes
AS SELECT * FROM STREAM read_files('landing/changes', format => 'json',
                                   schema => 'id STRING, seq BIGINT, plan STRING, seats BIGINT, op STRING');

CREATE OR REFRESH STREAMING TABLE accounts;
CREATE FLOW accounts_cdc AS AUTO CDC INTO accounts
  FROM STREAM(changes) KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY seq
  COLUMNS * EXCEPT (op, _rescued_data)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON plan;

CREATE OR REFRESH STREAMING TABLE latest;
CREATE FLOW latest_cdc AS AUTO CDC INTO latest
  FROM STREAM changes KEYS (id)
  APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY seq
  COLUMNS id, seq, plan, seats;

CREATE OR REFRESH STREAMING TABLE kept;
CREATE FLOW kept_cdc AS AUTO CDC INTO kept
  FROM STREAM(changes) KEYS (id)
  IGNORE NULL UPDATES
  APPLY AS DELETE WHEN op = 'DELETE'
  SEQUENCE BY seq
  COLUMNS id, seq, plan, seats;
";

fn lab_with_project(name: &str) -> (TestLab, String) {
    let lab = TestLab::new(name);
    let dir = lab.data().join("project");
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: cdc\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    std::fs::write(dir.join("transformations/cdc.sql"), PROJECT).unwrap();
    std::fs::create_dir_all(lab.data().join("landing/changes")).unwrap();
    let project = dir.display().to_string();
    (lab, project)
}

/// The text with each run of spaces as one (the check pads its verdicts).
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One change: (id, seq, plan, seats, op).
type Change = (
    Option<&'static str>,
    Option<i64>,
    Option<&'static str>,
    i64,
    &'static str,
);

fn land(lab: &TestLab, file: &str, changes: &[Change]) {
    let text: String = changes
        .iter()
        .map(|(id, seq, plan, seats, op)| {
            serde_json::json!({"id": id, "seq": seq, "plan": plan, "seats": seats, "op": op})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(lab.data().join("landing/changes").join(file), text).unwrap();
}

/// Per id: its rows as "plan seats seq [start, end)" (SCD 2) or "plan seats seq" (SCD 1).
fn rows(lab: &TestLab, table: &str) -> BTreeMap<String, Vec<String>> {
    let text = |v: &Value| match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in lab.table(table) {
        let mut line = format!(
            "{} {} {}",
            text(&r["plan"]),
            text(&r["seats"]),
            text(&r["seq"])
        );
        if r.get("__START_AT").is_some() {
            line += &format!(" [{}, {})", text(&r["__START_AT"]), text(&r["__END_AT"]));
        }
        out.entry(text(&r["id"])).or_default().push(line);
    }
    out
}

fn key<'a>(table: &'a BTreeMap<String, Vec<String>>, id: &str) -> Vec<&'a str> {
    table
        .get(id)
        .map(|v| v.iter().map(String::as_str).collect())
        .unwrap_or_default()
}

const RUN_1: &[Change] = &[
    // in order
    (Some("a"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("a"), Some(2), Some("pro"), 1, "UPSERT"),
    // out of order within the run
    (Some("b"), Some(5), Some("pro"), 1, "UPSERT"),
    (Some("b"), Some(3), Some("free"), 1, "UPSERT"),
    // a late event comes in run 2
    (Some("c"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("c"), Some(5), Some("pro"), 1, "UPSERT"),
    // a delete, then a comeback with a higher sequence
    (Some("d"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("d"), Some(4), None, 0, "DELETE"),
    (Some("d"), Some(6), Some("pro"), 1, "UPSERT"),
    // a delete; in run 2 a comeback with a lower sequence
    (Some("e"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("e"), Some(4), None, 0, "DELETE"),
    // an upsert and a delete with the same sequence: the delete wins
    (Some("f"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("f"), Some(2), None, 0, "DELETE"),
    (Some("f"), Some(2), Some("pro"), 1, "UPSERT"),
    // an identical repeat, and the same values again later
    (Some("g"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("g"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("g"), Some(2), Some("free"), 1, "UPSERT"),
    // a change in an untracked column
    (Some("h"), Some(1), Some("free"), 1, "UPSERT"),
    (Some("h"), Some(2), Some("free"), 5, "UPSERT"),
    // a NULL plan: kept as NULL, or the value before with IGNORE NULL UPDATES
    (Some("i"), Some(1), Some("free"), 3, "UPSERT"),
    (Some("i"), Some(2), None, 4, "UPSERT"),
    // a NULL key and a NULL sequence go to the quarantine
    (None, Some(1), Some("free"), 1, "UPSERT"),
    (Some("j"), None, Some("free"), 1, "UPSERT"),
];

const RUN_2: &[Change] = &[
    (Some("c"), Some(3), Some("team"), 2, "UPSERT"),
    (Some("e"), Some(3), Some("pro"), 1, "UPSERT"),
];
