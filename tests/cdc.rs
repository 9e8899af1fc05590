//! AUTO CDC (PIPELINES §5) on real landed files and real Delta tables: SCD 1 and SCD 2 on each
//! case of the contract, the same events in 1, 2 and 5 runs, and a crash before the commit.

mod common;

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

#[test]
fn each_case_of_the_contract_gives_its_exact_rows() {
    let (lab, project) = lab_with_project("cdc-cases");
    land(&lab, "1.json", RUN_1);
    lab.ok(&["pipeline", "run", &project]);
    land(&lab, "2.json", RUN_2);
    let out = lab.ok(&["pipeline", "run", &project]);
    assert!(out.contains("accounts_cdc"), "{out}");
    let scd2 = rows(&lab, "accounts");
    assert_eq!(key(&scd2, "a"), ["free 1 1 [1, 2)", "pro 1 2 [2, -)"]);
    assert_eq!(key(&scd2, "b"), ["free 1 3 [3, 5)", "pro 1 5 [5, -)"]);
    assert_eq!(
        key(&scd2, "c"),
        ["free 1 1 [1, 3)", "team 2 3 [3, 5)", "pro 1 5 [5, -)"]
    );
    assert_eq!(key(&scd2, "d"), ["free 1 1 [1, 4)", "pro 1 6 [6, -)"]);
    assert_eq!(key(&scd2, "e"), ["free 1 1 [1, 3)", "pro 1 3 [3, 4)"]);
    assert_eq!(key(&scd2, "f"), ["free 1 1 [1, 2)"]);
    assert_eq!(key(&scd2, "g"), ["free 1 2 [1, -)"]);
    assert_eq!(key(&scd2, "h"), ["free 5 2 [1, -)"]);
    assert_eq!(key(&scd2, "i"), ["free 3 1 [1, 2)", "- 4 2 [2, -)"]);
    assert!(
        !scd2.contains_key("j") && !scd2.contains_key("-"),
        "{scd2:?}"
    );

    let scd1 = rows(&lab, "latest");
    let expected: BTreeMap<String, Vec<String>> = [
        ("a", "pro 1 2"),
        ("b", "pro 1 5"),
        ("c", "pro 1 5"),
        ("d", "pro 1 6"),
        ("g", "free 1 2"),
        ("h", "free 5 2"),
        ("i", "- 4 2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
    .collect();
    assert_eq!(scd1, expected);
    let kept = rows(&lab, "kept");
    assert_eq!(key(&kept, "i"), ["free 4 2"]);

    let quarantine = lab.table("_quarantine");
    let reasons: Vec<(String, String)> = quarantine
        .iter()
        .filter(|r| r["table"] == "accounts")
        .map(|r| {
            (
                r["reason"].as_str().unwrap().to_string(),
                format!("{}:{}", r["source_table"], r["source_version"]),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{quarantine:?}");
    assert!(
        reasons.iter().any(|(r, _)| r == "key id is NULL"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|(r, _)| r == "SEQUENCE BY seq is NULL"),
        "{reasons:?}"
    );

    let check = words(&lab.ok(&["pipeline", "check", &project]));
    for table in ["accounts", "latest", "kept"] {
        assert!(
            check.contains(&format!("ok {table} has the history of all 9 keys")),
            "{check}"
        );
    }
    let history: Value =
        serde_json::from_str(&lab.ok(&["pipeline", "history", "accounts", "c", "--json"])).unwrap();
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3, "{history}");
    let team = &versions[1];
    assert_eq!(
        (team["start"].as_str(), team["end"].as_str()),
        (Some("3"), Some("5"))
    );
    let late = &team["events"][0];
    assert_eq!(late["sequence"], "3");
    assert_eq!(late["late_after"], "5", "{history}");
    assert_eq!(late["source"], "changes version 2", "{history}");
    assert!(versions[0]["events"][0]["late_after"].is_null());

    let events: Vec<Value> = lab
        .ok(&["pipeline", "events", "--run", "2", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cdc = events.iter().find(|e| e["flow"] == "accounts_cdc").unwrap();
    assert!(cdc["upserted"].as_u64().unwrap() >= 3, "{cdc}");
    assert_eq!(
        cdc["output_rows"].as_u64(),
        Some(cdc["upserted"].as_u64().unwrap() + cdc["deleted"].as_u64().unwrap())
    );
}

#[test]
fn the_same_changes_in_one_two_or_five_runs_give_the_same_tables() {
    let all: Vec<Change> = RUN_1.iter().chain(RUN_2).copied().collect();
    let mut results = vec![];
    for runs in [1usize, 2, 5] {
        let (lab, project) = lab_with_project(&format!("cdc-split-{runs}"));
        let per_run = all.len().div_ceil(runs);
        for (n, chunk) in all.chunks(per_run).enumerate() {
            land(&lab, &format!("{n:02}.json"), chunk);
            lab.ok(&["pipeline", "run", &project]);
        }
        results.push((
            runs,
            rows(&lab, "accounts"),
            rows(&lab, "latest"),
            rows(&lab, "kept"),
        ));
    }
    for (runs, scd2, scd1, kept) in &results[1..] {
        assert_eq!(scd2, &results[0].1, "SCD 2 in {runs} runs");
        assert_eq!(scd1, &results[0].2, "SCD 1 in {runs} runs");
        assert_eq!(kept, &results[0].3, "IGNORE NULL UPDATES in {runs} runs");
    }
}

#[test]
fn a_crash_before_the_commit_then_a_rerun_gives_the_uninterrupted_tables() {
    let (clean, project) = lab_with_project("cdc-clean");
    land(&clean, "1.json", RUN_1);
    clean.ok(&["pipeline", "run", &project]);
    land(&clean, "2.json", RUN_2);
    clean.ok(&["pipeline", "run", &project]);

    let (lab, project) = lab_with_project("cdc-crash");
    land(&lab, "1.json", RUN_1);
    lab.ok(&["pipeline", "run", &project]);
    land(&lab, "2.json", RUN_2);
    for point in ["accounts_cdc:after-write", "latest_cdc:after-commit"] {
        let crashed = lab.reckon(&["--crash-at", point, "pipeline", "run", &project]);
        assert!(!crashed.status.success(), "{point} did not fire");
    }
    lab.ok(&["pipeline", "run", &project]);
    for table in ["accounts", "latest", "kept"] {
        assert_eq!(rows(&lab, table), rows(&clean, table), "{table}");
    }
}

/// The plan of `account` at `time` looked up in the raw change lines: the change with the
/// greatest `updated_at` at or before `time` (on a tie the delete, else the line read last).
fn plan_at(changes: &[Value], account: &str, time: &str) -> Option<String> {
    let mut best: Option<&Value> = None;
    for c in changes
        .iter()
        .filter(|c| c["account_id"] == account && c["updated_at"].as_str().unwrap() <= time)
    {
        let newer = |b: &Value| c["updated_at"].as_str() > b["updated_at"].as_str();
        let tie = |b: &Value| c["updated_at"] == b["updated_at"];
        best = match best {
            None => Some(c),
            Some(b) if newer(b) => Some(c),
            Some(b) if tie(b) && b["op"] != "DELETE" => Some(c),
            Some(b) => Some(b),
        };
    }
    best.filter(|c| c["op"] != "DELETE")
        .map(|c| c["plan"].as_str().unwrap().to_string())
}

fn lines(dir: &std::path::Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_escalation_rate_by_plan_equals_a_recount_from_the_raw_files() {
    let lab = TestLab::new("cdc-support");
    let project = lab.data().join("project");
    let project = project.to_str().unwrap();
    lab.ok(&["pipeline", "example", "support", project]);
    lab.ok(&["pipeline", "land", "support", "--days", "1-30"]);
    lab.ok(&["pipeline", "run", project]);
    lab.ok(&[
        "pipeline",
        "land",
        "support",
        "--days",
        "31-35",
        "--bad-rows",
    ]);
    lab.ok(&["pipeline", "run", project]);

    let changes = lines(&lab.data().join("landing/accounts"));
    let mut seen = std::collections::BTreeSet::new();
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for t in lines(&lab.data().join("landing/tickets")) {
        if t.is_null() || !seen.insert(t["ticket_id"].to_string()) {
            continue;
        }
        let status = t["status"].as_str().unwrap_or("");
        if !["open", "pending", "resolved", "escalated", "closed"].contains(&status) {
            continue;
        }
        let account = t["account_id"].as_str().unwrap();
        let plan = plan_at(&changes, account, t["created_at"].as_str().unwrap())
            .unwrap_or_else(|| "none".into());
        let entry = expected.entry(plan).or_default();
        entry.0 += 1;
        entry.1 += i64::from(status == "escalated");
    }
    assert!(
        expected.contains_key("none"),
        "acc-007's deleted days have no plan"
    );
    let view: BTreeMap<String, (i64, i64)> = lab
        .table("gold_escalation_rate_by_plan")
        .iter()
        .map(|r| {
            (
                r["plan"].as_str().unwrap().to_string(),
                (
                    r["tickets"].as_i64().unwrap(),
                    r["escalated"].as_i64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(view, expected);
    common::same_rows_in_python(&lab, "accounts");

    // acc-007: deleted on day 10, back on day 14; each event named by its file and line.
    let history: Value =
        serde_json::from_str(&lab.ok(&["pipeline", "history", "accounts", "acc-007", "--json"]))
            .unwrap();
    let events: Vec<&Value> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|v| v["events"].as_array().unwrap())
        .collect();
    let delete = events
        .iter()
        .find(|e| e["op"] == "DELETE")
        .expect("the delete");
    assert!(
        delete["source"]
            .as_str()
            .unwrap()
            .starts_with("landing/accounts/2026-10-10.json:"),
        "{delete}"
    );
    let comeback = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["start"].as_str() == Some("2026-10-14T09:00:00Z"))
        .expect("a version from the comeback");
    assert_eq!(
        comeback["values"][1],
        serde_json::json!(["plan", "free"]),
        "{comeback}"
    );
}

/// A small deterministic generator for the property test.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random change streams (few keys, sequences with ties and late arrivals, deletes, NULL plans)
/// split into random runs: after every run the check's own recomputation equals each target,
/// and the final tables equal those of the same changes in one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_changes_in_random_runs_match_the_checks_recomputation() {
    const PLANS: [Option<&str>; 4] = [Some("free"), Some("pro"), Some("team"), None];
    for case in 0..12u64 {
        let mut rng = Lcg(case + 1);
        let changes: Vec<String> = (0..(5 + rng.below(40)))
            .map(|_| {
                let plan = PLANS[rng.below(4) as usize];
                serde_json::json!({
                    "id": format!("k{}", rng.below(4)),
                    "seq": rng.below(12),
                    "plan": plan,
                    "seats": rng.below(3),
                    "op": if rng.below(5) == 0 { "DELETE" } else { "UPSERT" },
                })
                .to_string()
            })
            .collect();
        let mut tables = vec![];
        for split in [true, false] {
            let dir = tempfile::Builder::new()
                .prefix("reckon-cdc-prop-")
                .tempdir()
                .unwrap();
            let project = dir.path().join("project");
            std::fs::create_dir_all(project.join("transformations")).unwrap();
            std::fs::write(
                project.join("spark-pipeline.yml"),
                "name: p\nlibraries:\n  - glob:\n      include: transformations/**\n",
            )
            .unwrap();
            std::fs::write(project.join("transformations/cdc.sql"), PROJECT).unwrap();
            let landing = dir.path().join("landing/changes");
            std::fs::create_dir_all(&landing).unwrap();
            let lab = reckon::Lab::new(reckon::Config::new(dir.path()));
            let graph = lab.project(&project).unwrap();
            let mut rest: &[String] = &changes;
            let mut n = 0;
            while !rest.is_empty() {
                let take = if split {
                    1 + rng.below(rest.len() as u64) as usize
                } else {
                    rest.len()
                };
                let (now, later) = rest.split_at(take);
                rest = later;
                std::fs::write(landing.join(format!("{n:03}.json")), now.join("\n") + "\n")
                    .unwrap();
                n += 1;
                let run = lab.run_project(&graph, &[]).await.unwrap();
                assert!(!run.failed(), "case {case}: {:?}", run.events);
                for line in &run.findings {
                    assert_eq!(
                        line.verdict,
                        app::model::Verdict::Ok,
                        "case {case}, run {n}: {line}\nchanges: {changes:#?}"
                    );
                }
                assert_eq!(
                    run.findings.len(),
                    3,
                    "case {case}: one line per AUTO CDC target"
                );
            }
            let mut rows = vec![];
            for table in ["accounts", "latest", "kept"] {
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
                    .arg("--data")
                    .arg(dir.path())
                    .args(["table", table, "--json"])
                    .output()
                    .unwrap();
                rows.push(String::from_utf8(out.stdout).unwrap());
            }
            tables.push(rows);
        }
        assert_eq!(
            tables[0], tables[1],
            "case {case}: split runs differ from one run"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_changed_behind_the_flows_back_is_a_problem_naming_the_key() {
    let (lab, project) = lab_with_project("cdc-problem");
    land(&lab, "1.json", RUN_1);
    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let graph = engine.project(std::path::Path::new(&project)).unwrap();
    let run = engine.run_project(&graph, &[]).await.unwrap();
    assert!(
        run.findings
            .iter()
            .all(|l| l.verdict == app::model::Verdict::Ok),
        "{:?}",
        run.findings
    );
    let latest = engine
        .flows()
        .tables
        .open_named("latest")
        .await
        .unwrap()
        .unwrap();
    latest.delete().with_predicate("id = 'd'").await.unwrap();
    let out = lab.reckon(&["pipeline", "check", &project]);
    let text = words(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("PROBLEM latest differs from its change events for 1 key(s): d"),
        "{text}"
    );
    assert!(
        text.contains("ok accounts has the history of all 9 keys"),
        "{text}"
    );
}

/// Many keys at once: 30,000 accounts, then a run that deletes every one and brings back a
/// third: the MERGE deletes what is gone without naming the keys in a predicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_deletes_thirty_thousand_keys_closes_every_version() {
    let (lab, project) = lab_with_project("cdc-many");
    let line = |id: u32, seq: u32, op: &str| {
        format!(r#"{{"id": "k{id}", "seq": {seq}, "plan": "free", "seats": 1, "op": "{op}"}}"#)
    };
    let first: Vec<String> = (0..30_000).map(|i| line(i, 1, "UPSERT")).collect();
    let dir = lab.data().join("landing/changes");
    std::fs::write(dir.join("1.json"), first.join("\n") + "\n").unwrap();
    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let graph = engine.project(std::path::Path::new(&project)).unwrap();
    engine.run_project(&graph, &[]).await.unwrap();
    let second: Vec<String> = (0..30_000)
        .map(|i| line(i, 2, "DELETE"))
        .chain((0..10_000).map(|i| line(i, 3, "UPSERT")))
        .collect();
    std::fs::write(dir.join("2.json"), second.join("\n") + "\n").unwrap();
    let run = engine.run_project(&graph, &[]).await.unwrap();
    assert!(!run.failed(), "{:?}", run.events);
    assert!(
        run.findings
            .iter()
            .all(|l| l.verdict == app::model::Verdict::Ok),
        "{:?}",
        run.findings
    );
    let latest = run.events.iter().find(|e| e.flow == "latest_cdc").unwrap();
    assert_eq!(latest.figures.rows_deleted, 20_000, "{latest:?}");
    let every = reckon::engine::pipeline::check::Scope::Every;
    let lines = reckon::engine::pipeline::check::check(&engine.flows(), &graph, every)
        .await
        .unwrap();
    assert!(
        lines.iter().all(|l| l.verdict == app::model::Verdict::Ok),
        "{lines:?}"
    );
    assert_eq!(rows(&lab, "latest").len(), 10_000);
}
