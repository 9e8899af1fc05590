//! Only new files loaded, bad rows dropped and counted, a line that is not UTF-8 rescued, a
//! changed file, a bad project, a fail-update rule.

use super::*;

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
    let dir = sql_project(&lab, "bad", "");
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

    // A syntax error in a query: its place said once, as the file's line and column.
    write("CREATE MATERIALIZED VIEW g AS\nSELECT status, count(*) FORM t GROUP BY status;");
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("sql/p.sql:2:"), "{said}");
    assert!(!said.contains("Line: "), "{said}");

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
    let dir = sql_project(
        &lab,
        "strict",
        "CREATE STREAMING TABLE tickets (\n  CONSTRAINT known EXPECT (status IN ('open', 'closed')) ON VIOLATION FAIL UPDATE\n)\n\
         AS SELECT * FROM STREAM read_files('landing/tickets', format => 'json');\n\
         CREATE MATERIALIZED VIEW counts AS SELECT status, count(*) AS n FROM tickets GROUP BY status;",
    );
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

#[test]
fn a_run_before_anything_lands_waits_and_says_what_to_do() {
    let lab = TestLab::new("early");
    let project = project(&lab);
    // Nothing landed: the materialized views wait for their inputs instead of failing on tables
    // without columns, and the run says what to do.
    let early = lab.ok(&["pipeline", "run", &project]);
    assert!(
        early.contains("nothing was new: every flow was idle"),
        "{early}"
    );
    assert!(events(&lab, "1").iter().all(|e| e["status"] == "IDLE"));
    lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
    let landed = lab.ok(&["pipeline", "run", &project]);
    assert!(!landed.contains("nothing was new"), "{landed}");
    assert_eq!(gold(&lab), recount(lab.data()));
}

#[test]
fn a_line_that_is_not_utf8_becomes_a_rescued_row_and_the_others_load() {
    let lab = TestLab::new("not-utf8");
    let sql = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/d', format => 'json');";
    let dir = sql_project(&lab, "utf8", sql);
    let landing = lab.data().join("landing/d");
    std::fs::create_dir_all(&landing).unwrap();
    let mut bytes = b"{\"id\": 1, \"status\": \"open\"}\n".to_vec();
    bytes.extend_from_slice(b"{\"id\": 2, \"status\": \"op\xffen\"}\r\n");
    bytes.extend_from_slice(b"{\"id\": 3, \"status\": \"closed\"}\n");
    std::fs::write(landing.join("latin1.json"), bytes).unwrap();
    let project = dir.display().to_string();
    // Twice: the second run finds nothing new (the file is read once, not failed on each run).
    lab.ok(&["pipeline", "run", &project]);
    lab.ok(&["pipeline", "run", &project]);
    let rows = lab.table("raw");
    assert_eq!(rows.len(), 3, "{rows:?}");
    let rescued: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["_rescued_data"].as_str())
        .collect();
    assert_eq!(rescued.len(), 1, "{rows:?}");
    assert!(
        rescued[0].contains("_corrupt_record") && rescued[0].contains("op\u{fffd}en"),
        "{rescued:?}"
    );
}

#[test]
fn fields_named_like_hidden_columns_are_kept_in_rescued_data() {
    let lab = TestLab::new("hidden-names");
    let sql = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/h', format => 'json');\n\
               CREATE STREAMING TABLE raw_csv AS SELECT * FROM STREAM read_files('landing/c', format => 'csv');";
    let dir = sql_project(&lab, "hidden", sql);
    for (folder, file, text) in [
        (
            "landing/h",
            "a.json",
            "{\"id\": 1, \"__version\": 7, \"_rescued_data\": \"mine\", \"_change_type\": \"x\", \"_commit_version\": 3, \"__file\": \"f\"}\n{\"id\": 2}\n",
        ),
        ("landing/c", "a.csv", "id,_commit_version,__line\n1,5,9\n"),
    ] {
        let landing = lab.data().join(folder);
        std::fs::create_dir_all(&landing).unwrap();
        std::fs::write(landing.join(file), text).unwrap();
    }
    let project = dir.display().to_string();
    lab.ok(&["pipeline", "run", &project]);
    let rows = lab.table("raw");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let first = rows.iter().find(|r| r["id"] == 1).expect("row 1");
    let rescued: serde_json::Value =
        serde_json::from_str(first["_rescued_data"].as_str().unwrap()).unwrap();
    for (name, value) in [
        ("__version", serde_json::json!(7)),
        ("_rescued_data", serde_json::json!("mine")),
        ("_change_type", serde_json::json!("x")),
        ("_commit_version", serde_json::json!(3)),
        ("__file", serde_json::json!("f")),
    ] {
        assert_eq!(rescued[name], value, "{name} in {rescued}");
        assert!(
            first.get(name).is_none() || name == "_rescued_data",
            "{first:?}"
        );
    }
    let second = rows.iter().find(|r| r["id"] == 2).expect("row 2");
    assert!(second["_rescued_data"].is_null(), "{second:?}");
    let csv = lab.table("raw_csv");
    assert_eq!(csv.len(), 1, "{csv:?}");
    let rescued: serde_json::Value =
        serde_json::from_str(csv[0]["_rescued_data"].as_str().unwrap()).unwrap();
    assert_eq!(rescued["_commit_version"], "5", "{rescued}");
    assert_eq!(rescued["__line"], "9", "{rescued}");
    // A declared schema may not name one: refused at its line, nothing written.
    let declared = "CREATE STREAMING TABLE typed AS SELECT * FROM STREAM read_files('landing/h', format => 'json', schema => 'id BIGINT, __version BIGINT');";
    let bad = sql_project(&lab, "hidden-declared", declared);
    let out = lab.reckon(&["pipeline", "run", &bad.display().to_string()]);
    assert!(!out.status.success());
    assert!(
        common::stderr(&out).contains("Reckon keeps for itself"),
        "{}",
        common::stderr(&out)
    );
}
