//! The incremental check against the full recount, on random scenarios split into random runs:
//! events of six orders with ties on event time, resends, late and out-of-order times, malformed messages,
//! runs of only some streams, dedup on and off, tables compacted after every check or never.
//! After every step, `reckon check` (from the state kept run by run) and `reckon check --full`
//! (from scratch) print the same findings. Real broker, real Delta tables; each scenario has its
//! own topic and folder.

mod common;

use std::path::Path;

use common::{TestLab, stderr};
use reckon::engine::rng::Rng;
use serde_json::{Value, json};

const STATUSES: [&str; 4] = ["placed", "placed", "paid", "shipped"];

/// One random event of a small shop: few orders and customers, times within five hours.
fn event(rng: &mut Rng) -> Value {
    let order = 1000 + rng.below(6) as i64;
    event_of(rng, order)
}

/// A random event of order `order`.
fn event_of(rng: &mut Rng, order: i64) -> Value {
    // Whole half-hours: ties on event time are common.
    let minutes = rng.below(8) * 30;
    json!([
        order,
        format!("C{}", rng.below(4)),
        STATUSES[rng.below(4) as usize],
        format!("{}.{:02}", 1 + rng.below(40), rng.below(100)),
        format!("2026-10-01T{:02}:{:02}:00Z", 8 + minutes / 60, minutes % 60),
    ])
}

/// Batches "1".."n", later batches sometimes resending an event of an earlier one.
fn scenario(rng: &mut Rng, batches: usize) -> Value {
    let mut all: Vec<Value> = vec![];
    let mut out = serde_json::Map::new();
    for b in 1..=batches {
        let mut batch = vec![];
        for _ in 0..rng.below(12) {
            let e = if !all.is_empty() && rng.percent(20) {
                all[rng.below(all.len() as u64) as usize].clone()
            } else {
                event(rng)
            };
            all.push(e.clone());
            batch.push(e);
        }
        out.insert(b.to_string(), Value::Array(batch));
    }
    let sends: Vec<String> = (1..=batches).map(|b| b.to_string()).collect();
    json!({"name": "random", "batches": out, "sends": sends})
}

/// The commits in a table's log that compacted it (operation `OPTIMIZE`).
fn compactions(table: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(table.join("_delta_log")) else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter(|text| text.contains(r#""operation":"OPTIMIZE""#))
        .count()
}

/// The findings of `reckon check [--full] --json` (with `extra` options), and the events it
/// counted.
fn findings(lab: &TestLab, full: bool, extra: &[&str]) -> Value {
    let mut args = vec!["check", "--json"];
    if full {
        args.push("--full");
    }
    args.extend(extra);
    let out = lab.reckon(&args);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "check {args:?}: {}",
        stderr(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    json!({"findings": report["findings"], "events": report["bronze_events"]})
}

#[test]
fn the_incremental_check_always_agrees_with_the_full_recount() {
    let mut compactions_seen = 0;
    for seed in 1..=6u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
        let lab = TestLab::new(&format!("incremental{seed}"));
        let batches = 2 + rng.below(4) as usize;
        let file = lab.data().join("random.json");
        std::fs::write(&file, scenario(&mut rng, batches).to_string()).unwrap();
        let file = file.display().to_string();
        let dedup = rng.percent(70);
        // Odd seeds compact a table after every check once it holds two small files.
        let extra: &[&str] = match seed % 2 {
            1 => &["--compact-after", "1"],
            _ => &["--compact-after", "0"],
        };
        let run = |which: Option<&str>| {
            let mut args = vec!["run"];
            args.extend(which);
            if !dedup {
                args.push("--no-dedup");
            }
            args.extend(extra);
            lab.ok(&args);
        };
        let mut steps = vec![];
        for b in 1..=batches {
            let batch = b.to_string();
            lab.ok(&["produce", "--scenario", &file, "--batch", &batch]);
            steps.push(format!("send {b}"));
            if rng.percent(25) {
                let junk = format!("<not an order {b}>");
                let rt = tokio::runtime::Runtime::new().unwrap();
                let producer = lab.kafka().producer().unwrap();
                rt.block_on(producer.send_all(&lab.topic, &[("junk".to_string(), junk)]))
                    .unwrap();
                steps.push("junk".into());
            }
            // Sometimes no run, sometimes only the first streams: the check then sees tables
            // at different points.
            match rng.below(5) {
                0 => continue,
                1 => {
                    run(Some("bronze"));
                    steps.push("run bronze".into());
                }
                2 => {
                    run(Some("bronze"));
                    run(Some("silver"));
                    steps.push("run bronze, silver".into());
                }
                _ => {
                    run(None);
                    steps.push("run".into());
                }
            }
            let (incremental, full) = (findings(&lab, false, extra), findings(&lab, true, &[]));
            assert_eq!(
                incremental, full,
                "seed {seed}, dedup {dedup}, after {steps:?}"
            );
        }
        run(None);
        assert_eq!(
            findings(&lab, false, extra),
            findings(&lab, true, &[]),
            "seed {seed}, dedup {dedup}, at the end of {steps:?}"
        );
        let tables = lab.data().join("tables");
        let compacted: usize = ["bronze_orders", "orders", "hourly_sales"]
            .iter()
            .map(|t| compactions(&tables.join(t)))
            .sum();
        match seed % 2 {
            1 => compactions_seen += compacted,
            _ => assert_eq!(compacted, 0, "seed {seed} compacts nothing"),
        }
    }
    assert!(compactions_seen > 0, "no scenario compacted a table");
}

/// A lab whose tables are compacted after every check once they hold more than two small files:
/// each check reads only the rows its run added (a compaction's files are moved in its state,
/// never counted again), agrees with the full recount, and bronze stays at a few files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_tables_are_checked_without_counting_them_again() {
    let test = TestLab::new("compacted");
    let mut rng = Rng(0x5EED);
    let mut batches = serde_json::Map::new();
    let mut sizes = vec![];
    let mut orders = vec![];
    for b in 1..=9 {
        // Mostly new orders, so that `orders` gains a file a run, and some earlier ones, so that
        // MERGE rewrites files a compaction made.
        let mut batch = vec![];
        for k in 0..3 + rng.below(6) as i64 {
            let order = match orders.is_empty() || rng.percent(70) {
                true => 2000 + 10 * b + k,
                false => orders[rng.below(orders.len() as u64) as usize],
            };
            orders.push(order);
            batch.push(event_of(&mut rng, order));
        }
        sizes.push(batch.len() as u64);
        batches.insert(b.to_string(), Value::Array(batch));
    }
    let sends: Vec<String> = (1..=9).map(|b| b.to_string()).collect();
    let file = test.data().join("nine.json");
    let scenario = json!({"name": "nine", "batches": batches, "sends": sends});
    std::fs::write(&file, scenario.to_string()).unwrap();
    let mut config = test.config();
    config.compact_after = 2;
    let lab = reckon::Lab::new(config);
    for (i, sent) in sizes.iter().enumerate() {
        let batch = (i + 1).to_string();
        let args = [
            "produce",
            "--scenario",
            file.to_str().unwrap(),
            "--batch",
            &batch,
        ];
        tokio::task::block_in_place(|| test.ok(&args));
        let (events, report) = lab.pipeline(true).await.unwrap();
        let check = events.iter().find(|e| e.flow == "check").unwrap();
        assert_eq!(
            check.figures.rows_read, *sent,
            "run {batch}: the check read the run's new bronze rows, and only those"
        );
        let full = lab.check_full().await.unwrap();
        assert_eq!(report.to_string(), full.to_string(), "after run {batch}");
    }
    let tables = test.data().join("tables");
    assert!(compactions(&tables.join("bronze_orders")) >= 2);
    assert!(compactions(&tables.join("orders")) >= 1);
    let bronze = lab
        .tables
        .open(reckon::engine::tables::TableName::BronzeOrders);
    let files = bronze
        .await
        .unwrap()
        .unwrap()
        .get_file_uris()
        .unwrap()
        .count();
    assert!(files <= 3, "bronze holds {files} files after 9 runs");
}
