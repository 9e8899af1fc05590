//! The course scenario with and without dedup, every batch before one run, the tables' shapes, and
//! the tables read back by another Delta reader.

use super::*;

#[test]
fn course_with_dedup_prints_the_seed_block() {
    let lab = TestLab::new("course");
    // The course's own file where the developers' `../shared` is beside the checkout; the copy
    // built into the binary (the same file) elsewhere.
    let shared = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/scenarios/course.json"
    );
    let file = if std::path::Path::new(shared).exists() {
        shared
    } else {
        "course"
    };
    let out = lab.reckon(&["play", file]);
    assert_eq!(stdout(&out), SEED_BLOCK, "stderr: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
    // A check run on its own agrees with the one play ran.
    assert_eq!(lab.check(), (SEED_BLOCK.to_string(), 0));

    // The manager's question, in plain words.
    let words = lab.ok(&["freshness"]);
    assert!(
        words.starts_with(
            "Hourly sales are final through the 11:00 hour. The 12:00 hour will be final once an order \
             placed at 14:00 or later arrives. Last run "
        ),
        "{words}"
    );
    assert!(
        words.contains("; every check passed. Left out as late, as designed: 09:00"),
        "{words}"
    );
    let light: serde_json::Value = serde_json::from_str(&lab.ok(&["freshness", "--json"])).unwrap();
    assert_eq!(light["light"], "green");

    // The history kept every run: six pipeline steps and two checks, each check line by line.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let history = reckon::store::History::open(&lab.data().join("history.sqlite"))
            .await
            .unwrap();
        let runs = history.runs("default", 100, None).await.unwrap();
        assert_eq!(runs.len(), 8);
        assert!(
            runs.iter()
                .all(|r| r.status == RunStatus::Succeeded && r.generation == 1)
        );
        let last = history.run(runs[0].id).await.unwrap().unwrap();
        let lines: String = last.findings.iter().map(|f| format!("{f}\n")).collect();
        assert_eq!(lines, SEED_BLOCK);
        let late = last
            .findings
            .iter()
            .find(|f| f.verdict == Verdict::Late)
            .unwrap();
        assert_eq!((late.orders, late.bronze_orders), (Some(3), Some(4)));
        // The last run checked: its check is a flow of the run, with its own event.
        let check = last.check.as_ref().expect("the check's event");
        assert_eq!(check.status, FlowStatus::Completed);
        let gold = history.run(runs[3].id).await.unwrap().unwrap();
        assert_eq!(
            gold.streams
                .iter()
                .map(|s| s.flow.as_str())
                .collect::<Vec<_>>(),
            ["bronze", "silver", "gold"]
        );
        let dropped = &gold.streams[2].dropped[0];
        assert_eq!(
            (dropped.order_id, dropped.reason),
            (1006, DropReason::Late),
            "the run that dropped 1006 as late"
        );
    });
}

#[test]
fn course_without_dedup_flags_11_00_as_a_problem() {
    let lab = TestLab::new("nodedup");
    let out = lab.reckon(&["play", "course", "--no-dedup"]);
    let expected = SEED_BLOCK.replace(
        "ok      11:00 1 order, 18.25\n",
        "PROBLEM 11:00 counted 2 orders, 36.50, but bronze has 1 order: an event counted twice\n",
    );
    assert_eq!(stdout(&out), expected, "stderr: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(1));
    let light: serde_json::Value = serde_json::from_str(&lab.ok(&["freshness", "--json"])).unwrap();
    assert_eq!(light["light"], "red");
    assert_eq!(light["last_check"], "problem");
    // The setting is fixed with gold's state: a run with dedup on is refused until a reset.
    let refused = lab.reckon(&["run"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("deduplication off"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn all_batches_before_one_run_leave_nothing_late() {
    let lab = TestLab::new("onerun");
    for batch in ["1", "2", "3", "3", "4", "5"] {
        lab.send(batch);
    }
    let runs: serde_json::Value = serde_json::from_str(&lab.ok(&["run", "--json"])).unwrap();
    assert_eq!(runs[0]["rows_read"], 11);
    assert_eq!(runs[2]["rows_late"], 0);
    assert_eq!(runs[2]["rows_duplicate"], 1);
    assert_eq!(runs[2]["watermark_after"], "2026-10-01T12:20:00Z");
    let hours = lab.table("hourly_sales");
    assert_eq!(
        hours,
        vec![
            serde_json::json!({"hour": "2026-10-01T09:00:00Z", "orders": 4, "revenue": "90.50"}),
            serde_json::json!({"hour": "2026-10-01T10:00:00Z", "orders": 2, "revenue": "55.00"}),
            serde_json::json!({"hour": "2026-10-01T11:00:00Z", "orders": 1, "revenue": "18.25"}),
        ]
    );
    let (check, code) = lab.check();
    assert!(check.contains("ok      09:00 4 orders, 90.50\n"), "{check}");
    assert_eq!(code, 0);
    // A second run finds nothing new and changes nothing.
    let again: serde_json::Value = serde_json::from_str(&lab.ok(&["run", "--json"])).unwrap();
    assert_eq!(again[0]["rows_read"], 0);
    assert_eq!(lab.table("hourly_sales"), hours);
}

#[test]
fn tables_have_the_spec_shapes() {
    let lab = TestLab::new("shapes");
    lab.ok(&["play", "course"]);
    let orders = lab.table("orders");
    assert_eq!(orders.len(), 9);
    assert_eq!(
        orders[0],
        serde_json::json!({"order_id": 1001, "customer_id": "C01", "status": "paid", "amount": "25.00",
                           "event_time": "2026-10-01T10:50:00Z"})
    );
    let bronze = lab.table("bronze_orders");
    assert_eq!(bronze.len(), 11);
    let keys: Vec<(i64, i64)> = bronze
        .iter()
        .map(|r| {
            (
                r["partition"].as_i64().unwrap(),
                r["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted by (partition, offset)");
    // Both copies of order 1005 landed in one partition, as Kafka's murmur2 on the key puts them.
    let copies: Vec<_> = bronze
        .iter()
        .filter(|r| r["order_id"] == 1005)
        .map(|r| &r["partition"])
        .collect();
    assert_eq!(copies.len(), 2);
    assert_eq!(copies[0], copies[1]);
    let unknown = lab.reckon(&["table", "gold", "--json"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no table named \"gold\""));
}

#[test]
fn another_delta_reader_sees_the_same_rows() {
    let lab = TestLab::new("pyreader");
    lab.ok(&["play", "course"]);
    for table in ["bronze_orders", "orders", "hourly_sales"] {
        common::same_rows_in_python(&lab, table);
    }
}
