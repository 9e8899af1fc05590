//! Declarative pipelines end to end (PIPELINES.md, week 14's guided lab): the support example's
//! project run on real landed files into real Delta tables, with the history in SQLite. Each
//! test has its own folder.

mod common;

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

#[test]
fn the_support_lab_loads_only_new_files_and_drops_and_counts_bad_rows() {
    let lab = TestLab::new("support");
    let project = project(&lab);

    // Days 1-30, run.
    lab.ok(&["pipeline", "land", "support", "--days", "1-30"]);
    let first = lab.ok(&["pipeline", "run", &project]);
    assert!(first.contains("run #1: COMPLETED, 6 flows"), "{first}");
    let after_first = lab.table("bronze_tickets").len();
    assert_eq!(after_first, landed_lines(lab.data()).len());

    // Days 31-35, run: exactly the 5 new files, and bronze grew by their rows only.
    lab.ok(&["pipeline", "land", "support", "--days", "31-35"]);
    lab.ok(&["pipeline", "run", &project]);
    let second = events(&lab, "2");
    let bronze = event(&second, "bronze_tickets");
    let files: Vec<&str> = bronze["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "landing/tickets/2026-10-31.json",
            "landing/tickets/2026-11-01.json",
            "landing/tickets/2026-11-02.json",
            "landing/tickets/2026-11-03.json",
            "landing/tickets/2026-11-04.json"
        ]
    );
    let new_lines = landed_lines(lab.data()).len() - after_first;
    assert_eq!(bronze["output_rows"], new_lines as u64);
    assert_eq!(lab.table("bronze_tickets").len(), after_first + new_lines);
    assert_eq!(
        event(&second, "silver_tickets")["source_versions"]["bronze_tickets"],
        serde_json::json!([2, 2])
    );

    // The bad rows: each dropped or counted under its rule, nothing lost.
    lab.ok(&["pipeline", "land", "support", "--bad-rows"]);
    lab.ok(&["pipeline", "run", &project]);
    let third = events(&lab, "3");
    let silver = event(&third, "silver_tickets");
    let rules: BTreeMap<&str, (u64, u64)> = silver["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                (r["passed"].as_u64().unwrap(), r["failed"].as_u64().unwrap()),
            )
        })
        .collect();
    // Unknown status and the line that is not JSON (NULL status) break valid_status; the two
    // negative times and the two NULL times (a wrong type, the line that is not JSON) break
    // non_negative_response, which only counts.
    assert_eq!(rules["valid_status"], (3, 2));
    assert_eq!(rules["non_negative_response"], (1, 4));
    assert_eq!(
        (
            silver["dropped_rows"].as_u64(),
            silver["output_rows"].as_u64()
        ),
        (Some(2), Some(3))
    );
    let quarantine = lab.table("_quarantine");
    assert_eq!(quarantine.len(), 2);
    assert!(
        quarantine
            .iter()
            .all(|q| q["rules"] == "valid_status" && q["table"] == "silver_tickets")
    );
    assert!(
        quarantine
            .iter()
            .all(|q| q["source_table"] == "bronze_tickets" && q["source_version"] == 3)
    );
    let bronze_rows = lab.table("bronze_tickets");
    assert_eq!(
        bronze_rows.len(),
        landed_lines(lab.data()).len(),
        "every landed line is in bronze"
    );
    let rescued: Vec<&str> = bronze_rows
        .iter()
        .filter_map(|r| r["_rescued_data"].as_str())
        .collect();
    assert_eq!(rescued.len(), 2, "{rescued:?}");
    assert!(
        rescued
            .iter()
            .any(|r| r.contains("_corrupt_record") && r.contains("bad-rows.json"))
    );
    assert!(
        rescued
            .iter()
            .any(|r| r.contains(r#""first_response_s":"fast""#))
    );

    // The gold view equals a recount of the raw lines.
    assert_eq!(gold(&lab), recount(lab.data()));

    // Nothing new: every flow is idle.
    lab.ok(&["pipeline", "run", &project]);
    assert!(events(&lab, "4").iter().all(|e| e["status"] == "IDLE"));
}

#[test]
fn a_file_changed_after_loading_is_flagged_and_not_read_again() {
    let lab = TestLab::new("changed");
    let project = project(&lab);
    lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
    lab.ok(&["pipeline", "run", &project]);
    let rows = lab.table("bronze_tickets").len();
    let day = lab.data().join("landing/tickets/2026-10-01.json");
    let mut text = std::fs::read_to_string(&day).unwrap();
    text.push_str(r#"{"ticket_id": 777, "account_id": "acc-001", "created_at": "2026-10-01T10:00:00Z", "status": "open", "first_response_s": 5}"#);
    text.push('\n');
    std::fs::write(&day, text).unwrap();
    let out = lab.ok(&["pipeline", "run", &project]);
    assert!(
        out.contains("2026-10-01.json changed after it was loaded: not read again"),
        "{out}"
    );
    assert_eq!(lab.table("bronze_tickets").len(), rows);
    let second = events(&lab, "2");
    assert_eq!(
        event(&second, "bronze_tickets")["files"][0]["changed"],
        true
    );
}

#[test]
fn a_bad_project_is_refused_by_place_or_name_and_writes_nothing() {
    let lab = TestLab::new("refused");
    let dir = lab.data().join("bad");
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: bad\nlibraries:\n  - glob:\n      include: sql/**\n",
    )
    .unwrap();
    let write = |sql: &str| std::fs::write(dir.join("sql/p.sql"), sql).unwrap();
    let run = || lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);

    write("CREATE STREAMING TABLE t\n  (CONSTRAINT ok EXPECT x > 0)\nAS SELECT 1;");
    let out = run();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("sql/p.sql:2:25: expected `(` and the rule's condition, found `x`"),
        "{}",
        stderr(&out)
    );

    write(
        "CREATE STREAMING TABLE a AS SELECT * FROM STREAM b;\nCREATE STREAMING TABLE b AS SELECT * FROM STREAM a;",
    );
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a cycle: a reads b"),
        "{}",
        stderr(&out)
    );

    write("CREATE MATERIALIZED VIEW g AS SELECT * FROM nowhere;");
    let out = run();
    assert!(
        stderr(&out).contains("flow g reads nowhere, which no statement creates"),
        "{}",
        stderr(&out)
    );
    assert!(!lab.data().join("tables").exists(), "nothing was written");
}

#[test]
fn a_fail_update_rule_stops_the_flow_naming_the_rule_row_and_file_and_writes_nothing() {
    let lab = TestLab::new("fail-update");
    let dir = lab.data().join("strict");
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: strict\nlibraries:\n  - glob:\n      include: sql/**\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sql/p.sql"),
        "CREATE STREAMING TABLE tickets (\n  CONSTRAINT known EXPECT (status IN ('open', 'closed')) ON VIOLATION FAIL UPDATE\n)\n\
         AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');\n\
         CREATE MATERIALIZED VIEW counts AS SELECT status, count(*) AS n FROM tickets GROUP BY status;",
    )
    .unwrap();
    lab.ok(&["pipeline", "land", "support", "--bad-rows"]);
    let out = lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("tickets: rule known (ON VIOLATION FAIL UPDATE) failed on row"),
        "{text}"
    );
    assert!(text.contains("landing/tickets/bad-rows.json:2"), "{text}");
    assert!(
        text.contains("counts                      SKIPPED"),
        "{text}"
    );
    assert!(
        !lab.data().join("tables/tickets").exists(),
        "nothing was written"
    );
}

/// Days 1-2 run, then day 3 and the bad rows landed and run, cut at `crash_at` first when given
/// (the process aborts), then run again: the tables, quarantine included.
fn support_run(name: &str, crash_at: Option<&str>) -> Vec<(String, Vec<Value>)> {
    let lab = TestLab::new(name);
    let project = project(&lab);
    lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
    lab.ok(&["pipeline", "run", &project]);
    lab.ok(&["pipeline", "land", "support", "--days", "3-3", "--bad-rows"]);
    if let Some(point) = crash_at {
        let out = lab.reckon(&["--crash-at", point, "pipeline", "run", &project]);
        assert!(
            !out.status.success(),
            "{point} did not crash: {}",
            stdout(&out)
        );
        assert!(stderr(&out).contains("crash point"), "{}", stderr(&out));
    }
    lab.ok(&["pipeline", "run", &project]);
    [
        "bronze_tickets",
        "silver_tickets",
        "gold_daily_account_status",
        "_quarantine",
    ]
    .iter()
    .map(|t| {
        let rows = lab
            .table(t)
            .into_iter()
            .map(|mut r| {
                // Run ids differ when a run crashed; the rest must not.
                r.as_object_mut().unwrap().remove("run");
                r
            })
            .collect();
        (t.to_string(), rows)
    })
    .collect()
}

#[test]
fn a_crash_in_any_flow_then_a_rerun_leaves_the_tables_of_an_uninterrupted_run() {
    let uninterrupted = support_run("uncut", None);
    for point in [
        "bronze_tickets:after-read",
        "bronze_tickets:after-write",
        "silver_tickets:after-write",
        "silver_tickets:after-commit",
        "gold_daily_account_status:after-write",
    ] {
        let tables = support_run("cut", Some(point));
        for ((name, rows), (_, expected)) in tables.iter().zip(&uninterrupted) {
            assert_eq!(rows, expected, "{point}: table {name}");
        }
    }
}

#[test]
fn another_delta_reader_sees_the_pipelines_tables_as_reckon_shows_them() {
    let lab = TestLab::new("delta-read");
    let project = project(&lab);
    lab.ok(&["pipeline", "land", "support", "--days", "1-3", "--bad-rows"]);
    lab.ok(&["pipeline", "run", &project]);
    for table in ["silver_tickets", "gold_daily_account_status"] {
        assert!(
            common::same_rows_in_python(&lab, table) > 0,
            "{table} is empty"
        );
    }
}

#[test]
fn a_full_refresh_reads_every_source_again_and_refuses_half_a_refresh() {
    let lab = TestLab::new("refresh");
    let project = lab.data().join("project").display().to_string();
    lab.ok(&[
        "pipeline", "example", "support", &project, "--format", "parquet",
    ]);
    lab.ok(&[
        "pipeline",
        "land",
        "support",
        "--days",
        "1-3",
        "--bad-rows",
        "--format",
        "parquet",
    ]);
    lab.ok(&["pipeline", "run", &project]);
    let silver = lab.table("silver_tickets");
    let gold_before = gold(&lab);
    // In Parquet the bad rows are the typed ones: one unknown status among them.
    assert_eq!(lab.table("_quarantine").len(), 1);

    let out = lab.reckon(&[
        "pipeline",
        "run",
        &project,
        "--full-refresh",
        "bronze_tickets",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("silver_tickets streams from bronze_tickets; refresh silver_tickets too"),
        "{}",
        stderr(&out)
    );

    lab.ok(&[
        "pipeline",
        "run",
        &project,
        "--full-refresh",
        "bronze_tickets,silver_tickets",
    ]);
    // The refused run recorded nothing: the refresh is run #2, and gold saw silver made again.
    let events = events(&lab, "2");
    assert_eq!(
        event(&events, "gold_daily_account_status")["status"],
        "COMPLETED"
    );
    assert_eq!(
        event(&events, "bronze_tickets")["files"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(lab.table("silver_tickets"), silver);
    assert_eq!(gold(&lab), gold_before);
    assert_eq!(
        lab.table("_quarantine").len(),
        1,
        "the refreshed table's quarantined rows, once"
    );
}

#[test]
fn views_are_read_through_and_insert_flows_keep_their_own_progress() {
    let lab = TestLab::new("views");
    let dir = lab.data().join("views");
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: views\nlibraries:\n  - glob:\n      include: sql/**\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sql/p.sql"),
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');
         CREATE TEMPORARY VIEW open_tickets AS SELECT ticket_id, status FROM raw WHERE status = 'open';
         CREATE STREAMING TABLE picked AS SELECT * FROM STREAM open_tickets;
         CREATE FLOW closed_too AS INSERT INTO picked BY NAME
           SELECT ticket_id, status, account_id FROM STREAM raw WHERE status = 'closed';
         CREATE MATERIALIZED VIEW per_status AS
           SELECT status, count(*) AS n, count_if(ticket_id >= 100100) AS later FROM picked GROUP BY status;",
    )
    .unwrap();
    let project = dir.to_str().unwrap();
    for days in ["1-2", "3-4"] {
        lab.ok(&["pipeline", "land", "support", "--days", days]);
        lab.ok(&["pipeline", "run", project]);
    }
    // Recounted from the raw lines: every line (no deduplication here) of status open or closed.
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (_, _, line) in landed_lines(lab.data()) {
        let record: Value = serde_json::from_str(&line).unwrap();
        let status = record["status"].as_str().unwrap();
        if status == "open" || status == "closed" {
            let counts = expected.entry(status.to_string()).or_default();
            counts.0 += 1;
            counts.1 += i64::from(record["ticket_id"].as_i64().unwrap() >= 100_100);
        }
    }
    let shown: BTreeMap<String, (i64, i64)> = lab
        .table("per_status")
        .iter()
        .map(|r| {
            let status = r["status"].as_str().unwrap().to_string();
            (
                status,
                (r["n"].as_i64().unwrap(), r["later"].as_i64().unwrap()),
            )
        })
        .collect();
    assert_eq!(shown, expected);
    // The table holds the union of its flows' columns: account_id only from closed_too.
    for row in lab.table("picked") {
        assert_eq!(
            row["account_id"].is_null(),
            row["status"] == "open",
            "{row}"
        );
    }
}

#[test]
fn flows_into_one_table_must_agree_on_a_columns_type() {
    let lab = TestLab::new("clash");
    let dir = lab.data().join("clash");
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        "name: clash\nlibraries:\n  - glob:\n      include: sql/**\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sql/p.sql"),
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');
         CREATE STREAMING TABLE ids;
         CREATE FLOW as_numbers AS INSERT INTO ids BY NAME SELECT ticket_id FROM STREAM raw;
         CREATE FLOW as_text AS INSERT INTO ids BY NAME SELECT CAST(ticket_id AS VARCHAR) AS ticket_id FROM STREAM raw;",
    )
    .unwrap();
    lab.ok(&["pipeline", "land", "support", "--days", "1-1"]);
    let out = lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("ids: flow as_text gives column ticket_id as Utf8"),
        "{}",
        stdout(&out)
    );
}
