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

/// A scenario of `batches` batches written to the lab's folder, and each batch's size (drawn by
/// `size` as the batch starts): order `first + 10 * batch + k` for the k-th event when it is new
/// (`new_percent` of them, and the first), otherwise another event of an order sent before.
fn changing_orders(
    test: &TestLab,
    rng: &mut Rng,
    batches: i64,
    size: impl Fn(&mut Rng) -> u64,
    new_percent: u64,
    first: i64,
) -> (std::path::PathBuf, Vec<u64>) {
    let (mut out, mut sizes, mut orders) = (serde_json::Map::new(), vec![], vec![]);
    for b in 1..=batches {
        let mut batch = vec![];
        for k in 0..size(rng) as i64 {
            let order = match orders.is_empty() || rng.percent(new_percent) {
                true => first + 10 * b + k,
                false => orders[rng.below(orders.len() as u64) as usize],
            };
            orders.push(order);
            batch.push(event_of(rng, order));
        }
        sizes.push(batch.len() as u64);
        out.insert(b.to_string(), Value::Array(batch));
    }
    let sends: Vec<String> = (1..=batches).map(|b| b.to_string()).collect();
    let file = test.data().join("changing.json");
    let scenario = json!({"name": "changing", "batches": out, "sends": sends});
    std::fs::write(&file, scenario.to_string()).unwrap();
    (file, sizes)
}

/// Sends batch `batch` of the scenario in `file` with `reckon produce`.
fn send(test: &TestLab, file: &Path, batch: usize) {
    let batch = batch.to_string();
    let args = [
        "produce",
        "--scenario",
        file.to_str().unwrap(),
        "--batch",
        &batch,
    ];
    tokio::task::block_in_place(|| test.ok(&args));
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
    // Mostly new orders, so that `orders` gains a file a run, and some earlier ones, so that
    // MERGE rewrites files a compaction made.
    let (file, sizes) = changing_orders(&test, &mut rng, 9, |rng| 3 + rng.below(6), 70, 2000);
    let mut config = test.config();
    config.compact_after = 2;
    let lab = reckon::Lab::new(config);
    for (i, sent) in sizes.iter().enumerate() {
        let batch = i + 1;
        send(&test, &file, batch);
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

/// The data files in a table's folder (not its log or change feed), by path from the folder.
fn files_on_disk(table: &Path) -> std::collections::BTreeSet<String> {
    fn walk(dir: &Path, root: &Path, out: &mut std::collections::BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('_') {
                    walk(&path, root, out);
                }
            } else if name.ends_with(".parquet") {
                out.insert(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(table, table, &mut out);
    out
}

/// The data files a table's current version holds, by name (the course's tables have no
/// partitions: their files lie in the table's folder).
async fn files_held(lab: &reckon::Lab, name: reckon::engine::tables::TableName) -> Vec<String> {
    let table = lab.tables.open(name).await.unwrap().unwrap();
    let uris = table.get_file_uris().unwrap();
    let mut files: Vec<String> = uris
        .map(|uri| uri.rsplit('/').next().unwrap().into())
        .collect();
    files.sort();
    files
}

/// A pipeline run of a lab that keeps files out of use for no time deletes every file `orders`
/// and `hourly_sales` stopped using (MERGE and compaction leave them), and none of bronze's:
/// silver, gold and the what-if replay read bronze's change feed. The check, the full recount
/// and the replay of gold still agree afterwards, on that run and the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vacuum_deletes_what_orders_and_hourly_sales_stopped_using_and_none_of_bronze() {
    use reckon::engine::tables::TableName::{BronzeOrders, HourlySales, Orders};
    let test = TestLab::new("vacuum");
    let mut rng = Rng(0x7AC);
    // New orders and changes to earlier ones: MERGE rewrites the files holding those.
    let (file, _) = changing_orders(&test, &mut rng, 7, |_| 6, 50, 3000);
    // Each batch with a new order an hour later than the last batch's, so that the watermark
    // moves and gold writes `hourly_sales` on every run (compaction then replaces its files).
    let send = |b: usize| {
        send(&test, &file, b);
        let time = format!("2026-10-01T{:02}:00:00Z", 12 + b);
        let event = json!({"order_id": 9000 + b, "customer_id": "C9", "status": "placed",
                           "amount": "1.00", "event_time": time});
        tokio::task::block_in_place(|| test.ok(&["produce", "--event", &event.to_string()]));
    };
    let mut config = test.config();
    config.compact_after = 2;
    config.vacuum_after = None;
    let keeping = reckon::Lab::new(config.clone());
    for b in 1..=4 {
        send(b);
        keeping.pipeline(true).await.unwrap();
    }
    // Kept for an hour: this run's vacuum finds nothing that old.
    config.vacuum_after = Some(std::time::Duration::from_secs(3600));
    let hour = reckon::Lab::new(config.clone());
    send(5);
    hour.pipeline(true).await.unwrap();
    let marker = test.data().join("state/vacuumed");
    assert!(marker.exists(), "the run noted its vacuum");
    std::fs::remove_file(&marker).unwrap();
    let tables = test.data().join("tables");
    for name in [Orders, HourlySales] {
        let (on_disk, held) = (
            files_on_disk(&tables.join(name.as_str())).len(),
            files_held(&hour, name).await.len(),
        );
        assert!(
            on_disk > held,
            "{name} keeps the files it replaced within the hour: {on_disk} on disk, {held} held"
        );
    }
    let bronze_before = files_on_disk(&tables.join("bronze_orders"));
    assert!(compactions(&tables.join("bronze_orders")) >= 1);

    config.vacuum_after = Some(std::time::Duration::ZERO);
    let vacuuming = reckon::Lab::new(config);
    send(6);
    let (_, report) = vacuuming.pipeline(true).await.unwrap();
    for name in [Orders, HourlySales] {
        let on_disk: Vec<String> = files_on_disk(&tables.join(name.as_str()))
            .into_iter()
            .collect();
        assert_eq!(
            on_disk,
            files_held(&vacuuming, name).await,
            "{name}'s folder after the vacuum"
        );
    }
    let bronze_after = files_on_disk(&tables.join("bronze_orders"));
    assert!(
        bronze_after.is_superset(&bronze_before),
        "bronze keeps every file: {:?} went",
        bronze_before.difference(&bronze_after).collect::<Vec<_>>()
    );
    assert!(bronze_after.len() > files_held(&vacuuming, BronzeOrders).await.len());
    let full = vacuuming.check_full().await.unwrap();
    assert_eq!(
        report.to_string(),
        full.to_string(),
        "after the vacuum's run"
    );

    // The next run reads on from the vacuumed tables; the replay reads bronze from version 0.
    send(7);
    let (_, report) = vacuuming.pipeline(true).await.unwrap();
    let full = vacuuming.check_full().await.unwrap();
    assert_eq!(
        report.to_string(),
        full.to_string(),
        "after the run after it"
    );
    assert!(!report.to_string().contains("PROBLEM"), "{report}");
    // Within the hour the lab does not vacuum again: what this run's MERGE replaced stays.
    assert!(test.data().join("state/vacuumed").exists());
    let (on_disk, held) = (
        files_on_disk(&tables.join("orders")).len(),
        files_held(&vacuuming, Orders).await.len(),
    );
    assert!(
        on_disk > held,
        "orders: {on_disk} files on disk, {held} held"
    );
    // An earlier version of `orders` whose files went cannot be shown, and the page says why.
    let gone =
        reckon::service::pages::tables::page(&vacuuming, "orders", Some(2), &Default::default())
            .await;
    let words = gone.unwrap_err().to_string();
    assert!(
        words.contains("orders version 2 can no longer be read"),
        "{words}"
    );
    assert!(words.contains("deleted by the vacuum"), "{words}");
    let latest = files_held(&vacuuming, Orders).await;
    let now =
        reckon::service::pages::tables::page(&vacuuming, "orders", None, &Default::default()).await;
    let version = now.unwrap().latest_version;
    let now =
        reckon::service::pages::tables::page(&vacuuming, "orders", version, &Default::default())
            .await;
    assert!(
        now.unwrap().total_rows > 0,
        "orders {latest:?} at {version:?}"
    );
    let whatif = tokio::task::block_in_place(|| test.ok(&["whatif", "--delay", "2h", "--json"]));
    let whatif: Value = serde_json::from_str(&whatif).unwrap();
    assert_eq!(whatif["matches_table"], true, "{whatif}");
    assert_eq!(whatif["runs"].as_array().unwrap().len(), 7);
}
