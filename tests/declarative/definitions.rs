//! A changed definition (PIPELINES §2): a materialized view is recomputed, a streaming table's
//! new query applies to new rows only, and comments or spacing change nothing; the check
//! recomputes each part of a table with the definition that wrote it (PIPELINES §9).

use super::*;

const TABLE: &str = "CREATE OR REFRESH STREAMING TABLE t
AS SELECT id, status FROM STREAM read_files('landing/d', format => 'json', schema => 'id BIGINT, status STRING');";

fn write(dir: &Path, table: &str, view: &str) {
    std::fs::write(dir.join("sql/p.sql"), format!("{table}\n{view}\n")).unwrap();
}

fn land(lab: &TestLab, file: &str, rows: &[(i64, &str)]) {
    let dir = lab.data().join("landing/d");
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = rows
        .iter()
        .map(|(id, status)| format!("{{\"id\": {id}, \"status\": \"{status}\"}}\n"))
        .collect();
    std::fs::write(dir.join(file), text).unwrap();
}

/// A table's rows as (first column, second column) texts, sorted.
fn rows(lab: &TestLab, table: &str, a: &str, b: &str) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = lab
        .table(table)
        .iter()
        .map(|r| (r[a].to_string(), r[b].to_string()))
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_changed_view_is_recomputed_and_a_changed_stream_applies_to_new_rows() {
    let lab = TestLab::new("definitions");
    let view = "CREATE OR REFRESH MATERIALIZED VIEW g AS SELECT status, count(*) AS n FROM t GROUP BY status;";
    let dir = sql_project(&lab, "defs", &format!("{TABLE}\n{view}\n"));
    let project = dir.display().to_string();
    land(&lab, "1.json", &[(1, "open"), (2, "closed"), (3, "open")]);
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(rows(&lab, "g", "status", "n").len(), 2);

    // The view's query changes, nothing lands: the view alone is recomputed, and says why.
    let filtered = "CREATE OR REFRESH MATERIALIZED VIEW g AS SELECT status, count(*) AS n FROM t WHERE status <> 'closed' GROUP BY status;";
    write(&dir, TABLE, filtered);
    let out = lab.ok(&["pipeline", "run", &project]);
    assert!(out.contains("definition changed"), "{out}");
    let second = events(&lab, "2");
    assert_eq!(event(&second, "g")["status"], "COMPLETED");
    assert_eq!(event(&second, "g")["definition_changed"], true);
    assert_eq!(event(&second, "t")["status"], "IDLE");
    assert_eq!(
        rows(&lab, "g", "status", "n"),
        [("\"open\"".to_string(), "2".to_string())]
    );

    // Comments and spacing are not the definition: every flow idle.
    let spaced = format!(
        "-- counted per status\n{}",
        filtered.replace(" FROM t", "\n   FROM   t")
    );
    write(&dir, &format!("-- the table\n{TABLE}"), &spaced);
    lab.ok(&["pipeline", "run", &project]);
    assert!(events(&lab, "3").iter().all(|e| e["status"] == "IDLE"));

    // The streaming table's query changes: earlier rows stay as they were, new rows take it.
    let upper = TABLE.replace("SELECT id, status", "SELECT id, upper(status) AS status");
    write(&dir, &upper, filtered);
    land(&lab, "2.json", &[(4, "open")]);
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(event(&events(&lab, "4"), "t")["definition_changed"], true);
    let statuses: Vec<(String, String)> = rows(&lab, "t", "id", "status");
    assert_eq!(
        statuses,
        [
            ("1".into(), "\"open\"".into()),
            ("2".into(), "\"closed\"".into()),
            ("3".into(), "\"open\"".into()),
            ("4".into(), "\"OPEN\"".into())
        ]
    );
    // The check recomputes each part of t with the definition that wrote it: no PROBLEM.
    let checked = |lab: &TestLab| {
        let out = lab.reckon(&["pipeline", "check", &project]);
        (out.status.code(), stdout(&out))
    };
    let (code, said) = checked(&lab);
    assert_eq!(code, Some(0), "{said}");
    let line = |said: &str| {
        let found = said
            .lines()
            .find(|l| l.contains(" t: ") && l.contains("rows read"));
        found.unwrap_or_else(|| panic!("{said}")).to_string()
    };
    assert!(line(&said).starts_with("ok"), "{said}");
    assert!(line(&said).ends_with("t: 4 rows read, 4 kept"), "{said}");

    // Once more: a rule that drops and a filter, then a third file. Each part keeps its rules.
    let strict = TABLE
        .replace(
            "TABLE t",
            "TABLE t (CONSTRAINT known EXPECT (status <> 'lost') ON VIOLATION DROP ROW)",
        )
        .replace("SELECT id, status", "SELECT id, lower(status) AS status")
        .replace(
            "schema => 'id BIGINT, status STRING')",
            "schema => 'id BIGINT, status STRING') WHERE id <> 7",
        );
    write(&dir, &strict, filtered);
    land(&lab, "3.json", &[(5, "LOST"), (6, "Open"), (7, "open")]);
    lab.ok(&["pipeline", "run", &project]);
    assert_eq!(rows(&lab, "t", "id", "status").len(), 5);
    let (code, said) = checked(&lab);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        line(&said).ends_with("t: 6 rows read, 5 kept, 1 dropped by known"),
        "{said}"
    );
}

#[test]
fn a_query_that_does_not_resolve_is_refused_at_its_place_before_anything_is_written() {
    let lab = TestLab::new("validate");
    let project = project(&lab);
    let ok = lab.ok(&["pipeline", "validate", &project]);
    assert!(ok.starts_with("ok: "), "{ok}");
    // `FROM` typed `FORM` in the gold view: it parses (FORM is taken for an alias) but its
    // columns come from nowhere.
    let sql = Path::new(&project).join("transformations/support.sql");
    let text = std::fs::read_to_string(&sql).unwrap();
    let typo = text.replacen("FROM silver_tickets", "FORM silver_tickets", 1);
    std::fs::write(&sql, &typo).unwrap();
    let line = typo[..typo.find("FORM silver_tickets").unwrap()]
        .lines()
        .count();
    for command in ["validate", "run"] {
        lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
        let out = lab.reckon(&["pipeline", command, &project]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stdout(&out));
        let error = stderr(&out);
        assert!(
            error.contains("transformations/support.sql:")
                && error.contains("flow gold_daily_account_status does not resolve"),
            "{command}: {error}"
        );
        // The place is the query's: at or just before the typo's line.
        let at: usize = error.split(':').nth(2).unwrap().parse().unwrap();
        assert!(
            at <= line && line - at < 3,
            "{command}: line {at}, typo on {line}: {error}"
        );
    }
    assert!(
        !lab.data().join("tables").exists()
            || std::fs::read_dir(lab.data().join("tables"))
                .unwrap()
                .next()
                .is_none(),
        "a refused run wrote nothing"
    );
}

#[test]
fn a_self_join_reads_its_table_once() {
    let lab = TestLab::new("self-join");
    let view = "CREATE MATERIALIZED VIEW pairs AS SELECT a.id, b.id AS other FROM t a, t b WHERE a.id < b.id;";
    let dir = sql_project(&lab, "pairs", &format!("{TABLE}\n{view}\n"));
    land(&lab, "1.json", &[(1, "open"), (2, "closed"), (3, "open")]);
    lab.ok(&["pipeline", "run", dir.to_str().unwrap()]);
    assert_eq!(lab.table("pairs").len(), 3);
}
