//! PIPELINES §9 for tables whose flows do not aggregate: on the week-14 example with the bad
//! rows landed, the check's `ok` lines count rows per destination and name no row; each change
//! another writer makes behind the pipeline's back (a row deleted, a row added twice, a
//! quarantined row removed) is a PROBLEM naming the row, with its file and line or the table
//! version that added it.

use deltalake::protocol::SaveMode;

use super::*;

fn check(lab: &TestLab, project: &str) -> (Option<i32>, String) {
    let out = lab.reckon(&["pipeline", "check", project]);
    (out.status.code(), stdout(&out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_is_accounted_for_and_a_change_behind_the_pipelines_back_is_named() {
    let lab = TestLab::new("accounting");
    let project = project(&lab);
    lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
    lab.ok(&["pipeline", "run", &project]);
    lab.ok(&["pipeline", "land", "support", "--bad-rows"]);
    lab.ok(&["pipeline", "run", &project]);
    let (code, text) = check(&lab, &project);
    assert_eq!(code, Some(0), "{text}");
    let silver = text
        .lines()
        .find(|l| l.contains("silver_tickets:"))
        .unwrap();
    assert!(silver.starts_with("ok "), "{text}");
    assert!(silver.contains("dropped by valid_status"), "{text}");
    assert!(silver.contains("duplicates"), "{text}");
    assert!(
        !silver.contains("ticket_id"),
        "an ok line names no row: {text}"
    );
    assert!(
        text.contains("gold_daily_account_status equals its query"),
        "{text}"
    );

    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let tables = engine.flows().tables;
    let silver = tables.open_named("silver_tickets").await.unwrap().unwrap();
    // One row out: the check names it, with its file and line.
    let ctx = reckon::engine::tables::session(&silver, "s").await.unwrap();
    let row = ctx
        .sql("SELECT * FROM s ORDER BY ticket_id LIMIT 1")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let id = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(
        row[0].column_by_name("ticket_id").unwrap(),
    )
    .value(0);
    let silver = silver
        .delete()
        .with_predicate(format!("ticket_id = {id}"))
        .await
        .unwrap()
        .0;
    let (code, text) = check(&lab, &project);
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("not in it"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("PROBLEM silver_tickets: 1 row(s)"),
        "{text}"
    );
    assert!(line.contains(&format!("ticket_id {id}")), "{line}");
    assert!(
        line.contains("landing/tickets/"),
        "its file and line: {line}"
    );
    // Put back, then added twice: the extra row is named with the version that added it.
    let silver = silver
        .write(row.clone())
        .with_save_mode(SaveMode::Append)
        .await
        .unwrap();
    let (code, text) = check(&lab, &project);
    assert_eq!(code, Some(0), "put back, it adds up again: {text}");
    let silver = silver
        .write(row)
        .with_save_mode(SaveMode::Append)
        .await
        .unwrap();
    let version = silver.version().unwrap();
    let (_, text) = check(&lab, &project);
    let line = text
        .lines()
        .find(|l| l.contains("come from no source row"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&format!("ticket_id {id}")), "{line}");
    assert!(
        line.contains(&format!("silver_tickets version {version}")),
        "{line}"
    );
    // A quarantined row removed.
    let quarantine = tables.open_named("_quarantine").await.unwrap().unwrap();
    quarantine
        .delete()
        .with_predicate("rules = 'valid_status'")
        .await
        .unwrap();
    let (_, text) = check(&lab, &project);
    let line = text
        .lines()
        .find(|l| l.contains("missing from _quarantine"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with("PROBLEM silver_tickets: 2 row(s)"),
        "{line}"
    );
    assert!(line.contains("by valid_status"), "{line}");
}

/// A table two append flows fill: the check accounts for both flows' rows together, and names
/// a row deleted behind the pipeline's back with the flow it came through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_filled_by_two_flows_is_accounted_for_as_one() {
    let lab = TestLab::new("accounting-flows");
    let sql = "CREATE OR REFRESH STREAMING TABLE all_sales (CONSTRAINT positive EXPECT (qty > 0) ON VIOLATION DROP ROW);
CREATE FLOW north AS INSERT INTO all_sales BY NAME
  SELECT id, qty, 'north' AS region FROM STREAM read_files('landing/north', format => 'json', schema => 'id BIGINT, qty BIGINT');
CREATE FLOW south AS INSERT INTO all_sales BY NAME
  SELECT id, qty FROM STREAM read_files('landing/south', format => 'json', schema => 'id BIGINT, qty BIGINT') WHERE id < 100;";
    let dir = sql_project(&lab, "flows", sql);
    let project = dir.display().to_string();
    for (run, rows) in [
        (1, vec![("north", 1, 5), ("south", 2, 3), ("south", 200, 1)]),
        (2, vec![("north", 3, -1), ("north", 4, 2), ("south", 5, 7)]),
    ] {
        for (region, id, qty) in rows {
            let folder = lab.data().join("landing").join(region);
            std::fs::create_dir_all(&folder).unwrap();
            let file = folder.join(format!("{run}-{id}.json"));
            std::fs::write(file, format!("{{\"id\": {id}, \"qty\": {qty}}}\n")).unwrap();
        }
        lab.ok(&["pipeline", "run", &project]);
    }
    let (code, text) = check(&lab, &project);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("ok")
            && l.ends_with("all_sales: 5 rows read, 4 kept, 1 dropped by positive")),
        "{text}"
    );
    let engine = reckon::Lab::new(reckon::Config::new(lab.data()));
    let table = engine
        .flows()
        .tables
        .open_named("all_sales")
        .await
        .unwrap()
        .unwrap();
    table.delete().with_predicate("id = 5").await.unwrap();
    let (code, text) = check(&lab, &project);
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("not in it"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("id 5, qty 7"), "{line}");
    assert!(
        line.contains("flow south"),
        "the flow it came through: {line}"
    );
}
