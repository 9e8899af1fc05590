//! Crashes and reruns, another Delta reader, full refresh, views and insert flows, column types
//! across flows.

use super::*;

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
    let dir = sql_project(
        &lab,
        "views",
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');
         CREATE TEMPORARY VIEW tickets AS SELECT * FROM raw;
         -- a view of a view: the stream reaches raw through both (the ticket's own file)
         CREATE TEMPORARY VIEW open_tickets AS SELECT ticket_id, status FROM tickets WHERE status = 'open';
         CREATE STREAMING TABLE picked AS SELECT * FROM STREAM open_tickets;
         CREATE FLOW closed_too AS INSERT INTO picked BY NAME
           SELECT ticket_id, status, account_id FROM STREAM raw WHERE status = 'closed';
         CREATE MATERIALIZED VIEW per_status AS
           SELECT status, count(*) AS n, count_if(ticket_id >= 100100) AS later FROM picked GROUP BY status;
         CREATE MATERIALIZED VIEW open_now AS SELECT count(*) AS n FROM open_tickets;",
    );
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
    // A plain read of the same views sees every open row of raw.
    assert_eq!(
        lab.table("open_now")[0]["n"],
        expected["open"].0,
        "open rows"
    );
    // The table holds the union of its flows' columns: account_id only from closed_too.
    for row in lab.table("picked") {
        assert_eq!(
            row["account_id"].is_null(),
            row["status"] == "open",
            "{row}"
        );
    }
    // picked streams raw through two views: refreshing raw alone would leave it behind.
    let out = lab.reckon(&["pipeline", "run", project, "--full-refresh", "raw"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("picked streams from raw; refresh picked too"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn flows_into_one_table_must_agree_on_a_columns_type() {
    let lab = TestLab::new("clash");
    let dir = sql_project(
        &lab,
        "clash",
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');
         CREATE STREAMING TABLE ids;
         CREATE FLOW as_numbers AS INSERT INTO ids BY NAME SELECT ticket_id FROM STREAM raw;
         CREATE FLOW as_text AS INSERT INTO ids BY NAME SELECT CAST(ticket_id AS VARCHAR) AS ticket_id FROM STREAM raw;",
    );
    lab.ok(&["pipeline", "land", "support", "--days", "1-1"]);
    let out = lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("ids: flow as_text gives column ticket_id as Utf8"),
        "{}",
        stdout(&out)
    );
}

/// A project of one streaming table with a drop rule, over `landing/nums`.
fn nums_project(lab: &TestLab) -> String {
    std::fs::create_dir_all(lab.data().join("landing/nums")).unwrap();
    let sql =
        "CREATE STREAMING TABLE nums (CONSTRAINT positive EXPECT (n > 0) ON VIOLATION DROP ROW)
               AS SELECT n FROM STREAM read_files('landing/nums', format => 'json');";
    sql_project(lab, "nums", sql).display().to_string()
}

fn land(lab: &TestLab, file: &str, numbers: &[i64]) {
    let text: String = numbers
        .iter()
        .map(|n| format!("{{\"n\": {n}}}\n"))
        .collect();
    std::fs::write(lab.data().join("landing/nums").join(file), text).unwrap();
}

/// The table's numbers and the quarantined rows' numbers, sorted.
fn kept_and_dropped(lab: &TestLab) -> (Vec<i64>, Vec<i64>) {
    let n = |v: &Value| v["n"].as_i64().unwrap();
    let mut kept: Vec<i64> = lab.table("nums").iter().map(n).collect();
    let mut dropped: Vec<i64> = lab
        .table("_quarantine")
        .iter()
        .map(|r| n(&serde_json::from_str(r["row"].as_str().unwrap()).unwrap()))
        .collect();
    kept.sort_unstable();
    dropped.sort_unstable();
    (kept, dropped)
}

#[test]
fn a_crash_after_the_quarantine_then_new_files_keeps_every_dropped_row_once() {
    // The crashed try wrote a.json's dropped row to the quarantine, not the table; b.json lands
    // before the rerun, which reads both files: b's dropped row must be kept too, a's once.
    let lab = TestLab::new("quarantine-crash");
    let project = nums_project(&lab);
    land(&lab, "a.json", &[1, -1]);
    let out = lab.reckon(&[
        "--crash-at",
        "nums:after-write",
        "pipeline",
        "run",
        &project,
    ]);
    assert!(!out.status.success(), "no crash: {}", stdout(&out));
    let dropped: Vec<Value> = lab.table("_quarantine");
    assert_eq!(
        dropped.len(),
        1,
        "the crashed try's dropped row: {dropped:?}"
    );
    land(&lab, "b.json", &[2, -2]);
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(kept_and_dropped(&lab), (vec![1, 2], vec![-2, -1]));
    // And nothing more on the next run.
    land(&lab, "c.json", &[3]);
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(kept_and_dropped(&lab), (vec![1, 2, 3], vec![-2, -1]));
}
