//! The bench's Reckon side on 1,000 events, a big run's offset order, ties on event time, a
//! consumer group resuming, a what-if that writes nothing.

use super::*;

/// The benchmark's Reckon side on 1,000 events (`make bench` runs it on 1 M beside Spark): the
/// workload's duplicates and late events really happen, every check passes, and the limits run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmarks_reckon_side_on_1000_events() {
    use reckon::bench::{self, Stages, Workload};
    let lab = TestLab::new("bench").open().await;
    let workload = Workload::new(1000, 5);
    assert_eq!(workload.events(), 1000);
    assert_eq!(workload.duplicates, 90);
    assert!(workload.late > 20, "{} late", workload.late);
    let mut total = Stages::default();
    for send in &workload.sends {
        lab.produce(send, "bench").await.unwrap();
        total.add(
            &bench::reckon_run(&lab)
                .await
                .expect("a run with a clean check"),
        );
    }
    assert_eq!(total.events, 1000);
    // Each check recounts all of bronze: 200 + 400 + ... + 1000 rows.
    assert_eq!(total.checked, 3000);
    let report = lab.check().await.unwrap();
    let text = report.to_string();
    assert!(text.contains("90 of them sent twice"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("late")), "{text}");

    let (_, stages) = bench::timed_run(&lab, &workload.after(0, 10))
        .await
        .unwrap();
    assert_eq!(stages.events, 10);
    let consumed = bench::raw_consume(&lab).await.unwrap();
    assert_eq!(consumed.messages, 1010);
    let dir = tempfile::tempdir().unwrap();
    bench::parquet_write(&workload.sends.concat(), dir.path()).unwrap();
    assert!(!bench::hourly_sales(&lab).await.unwrap().is_empty());
}

/// A run of many chunks: the decoders finish them in any order, and the writer puts them back in
/// the order they were polled, so in the run's file each partition's rows are in offset order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_run_writes_each_partitions_rows_in_offset_order() {
    use deltalake::arrow::array::{Int32Array, Int64Array};
    use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use reckon::bench::{self, Workload};
    use reckon::service::lab::Streams;
    let test = TestLab::new("bigrun");
    let lab = test.open().await;
    let workload = Workload::new(30_000, 1);
    lab.produce(&workload.sends[0], "bench").await.unwrap();
    let runs = lab.run(Streams::All, true).await.unwrap();
    assert_eq!(runs[0].figures.rows_read, 30_000);
    let folder = lab.tables.root().join("bronze_orders");
    let mut files = 0;
    let mut rows = 0;
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "parquet") {
            continue;
        }
        files += 1;
        let file = std::fs::File::open(&path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let mut last: std::collections::BTreeMap<i32, i64> = Default::default();
        for batch in reader {
            let batch = batch.unwrap();
            let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
            let partition = column("partition");
            let partition = partition.as_any().downcast_ref::<Int32Array>().unwrap();
            let offset = column("offset");
            let offset = offset.as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..batch.num_rows() {
                let (p, o) = (partition.value(i), offset.value(i));
                if let Some(before) = last.insert(p, o) {
                    assert!(
                        o > before,
                        "{}: partition {p} has offset {o} after {before}",
                        path.display()
                    );
                }
                rows += 1;
            }
        }
        assert!(last.len() > 1, "the run read more than one partition");
    }
    assert_eq!((files, rows), (1, 30_000), "one file of the run's rows");
    assert!(!bench::hourly_sales(&lab).await.unwrap().is_empty());
}

/// Reckon's rule for events of one order with the same `event_time`: the first stored (by bronze
/// run, then partition and offset) is the newest, in silver and in the check alike. Spark's `max_by` picks
/// any of them, which is why the seed's check can print "orders differs" on Spark's tables.
#[test]
fn of_events_tied_on_time_the_first_stored_wins_in_one_run_and_across_runs() {
    let lab = TestLab::new("ties");
    let event = |order: i64, status: &str, time: &str| {
        serde_json::json!({"order_id": order, "customer_id": "C01", "status": status,
                           "amount": "10.00", "event_time": time})
        .to_string()
    };
    // Run 1: two events of order 7001 tied at 09:10 in one run.
    lab.ok(&[
        "produce",
        "--event",
        &event(7001, "placed", "2026-10-01T09:10:00Z"),
    ]);
    lab.ok(&[
        "produce",
        "--event",
        &event(7001, "paid", "2026-10-01T09:10:00Z"),
    ]);
    lab.ok(&["run"]);
    // Run 2: a third tie of 7001 in a later run; order 7002, then an older event of it.
    lab.ok(&[
        "produce",
        "--event",
        &event(7001, "shipped", "2026-10-01T09:10:00Z"),
    ]);
    lab.ok(&[
        "produce",
        "--event",
        &event(7002, "placed", "2026-10-01T09:20:00Z"),
    ]);
    lab.ok(&[
        "produce",
        "--event",
        &event(7002, "cancelled", "2026-10-01T09:05:00Z"),
    ]);
    lab.ok(&["run"]);
    let orders = lab.table("orders");
    let status = |id: i64| {
        orders
            .iter()
            .find(|o| o["order_id"] == id)
            .map(|o| o["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        status(7001),
        "placed",
        "the first stored of three ties: {orders:?}"
    );
    assert_eq!(status(7002), "placed", "the newer event stays: {orders:?}");
    let (check, code) = lab.check();
    assert!(
        check.contains("ok      orders has the newest state of all 2 orders"),
        "{check}"
    );
    assert_eq!(code, 0, "{check}");
}

/// A producer without keys scatters an order's events over partitions. Of events tied on time in
/// two runs, the one stored first is the earlier run's, even at a higher partition: silver keeps
/// it, gold counts its amount, and the check agrees with both (it ordered by partition first and
/// said "orders differs").
#[test]
fn of_events_tied_on_time_across_runs_and_partitions_the_earlier_run_wins() {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let lab = TestLab::new("scattered");
    let kafka = lab.kafka();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(kafka.ensure_topic(&lab.topic, 3)).unwrap();
    let send = |partition: i32, status: &str, amount: &str| {
        let event = serde_json::json!({"order_id": 7101, "customer_id": "C01", "status": status,
                                       "amount": amount, "event_time": "2026-10-01T09:10:00Z"})
        .to_string();
        rt.block_on(async {
            let producer: FutureProducer = rdkafka::ClientConfig::new()
                .set("bootstrap.servers", kafka.brokers())
                .create()
                .unwrap();
            let record = FutureRecord::<(), _>::to(&lab.topic)
                .partition(partition)
                .payload(&event);
            producer
                .send(record, std::time::Duration::from_secs(10))
                .await
                .unwrap();
        });
    };
    send(2, "placed", "10.00");
    lab.ok(&["run"]);
    // Run 2, at partition 0: a tie of another status, and the placed event again with another
    // amount (gold drops it as a duplicate of the first).
    send(0, "paid", "10.00");
    send(0, "placed", "99.00");
    lab.ok(&["run"]);
    let orders = lab.table("orders");
    assert_eq!(orders[0]["status"], "placed", "{orders:?}");
    let (check, code) = lab.check();
    assert!(
        check.contains("ok      orders has the newest state of all 1 orders"),
        "{check}"
    );
    assert_eq!(code, 0, "{check}");
    let full = lab.ok(&["check", "--full"]);
    assert_eq!(full, check, "the full recount says the same");
}

/// The course's demo of offsets: a consumer in group G reads 5 of 8 messages and stops; 3 more
/// are sent; it starts again and reads exactly the 6 left, from the group's committed offsets.
#[test]
fn a_consumer_group_resumes_at_its_committed_offsets() {
    let lab = TestLab::new("consume");
    let send = |order: i64| {
        let event = serde_json::json!({"order_id": order, "customer_id": "C01", "status": "placed",
                                       "amount": "1.00", "event_time": "2026-10-01T09:00:00Z"});
        lab.ok(&["produce", "--event", &event.to_string()]);
    };
    (1..=8).for_each(send);
    let read = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["consume", "--group", "demo", "--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&lab.ok(&all)).unwrap()
    };
    let first = read(&["--from-beginning", "--max", "5"]);
    assert_eq!(first["messages"].as_array().unwrap().len(), 5, "{first}");
    assert!(
        first["resumed"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["from"] == "beginning")
    );
    (9..=11).for_each(send);
    let second = read(&[]);
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6, "the 3 left and the 3 new: {second}");
    assert!(
        second["resumed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["from"] == "committed")
    );
    // Every message read once across the two reads, none twice.
    let mut seen: Vec<(i64, i64)> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .chain(messages)
        .map(|m| {
            (
                m["partition"].as_i64().unwrap(),
                m["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 11);
    // Resumed where the first read committed.
    for r in second["resumed"].as_array().unwrap() {
        let p = r["partition"].as_i64().unwrap().to_string();
        if let Some(committed) = first["committed"][&p].as_i64() {
            assert_eq!(
                r["offset"].as_i64(),
                Some(committed),
                "partition {p}: {second}"
            );
        }
    }
    // A third read finds nothing new.
    assert_eq!(read(&[])["messages"].as_array().unwrap().len(), 0);
}

/// Every file of the lab's tables and state, with its size and modification time.
fn listing(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out = vec![];
    for sub in ["tables", "state"] {
        let mut stack = vec![dir.join(sub)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let meta = entry.metadata().unwrap();
                if meta.is_dir() {
                    stack.push(entry.path());
                } else {
                    out.push((
                        entry.path().display().to_string(),
                        meta.len(),
                        meta.modified().unwrap(),
                    ));
                }
            }
        }
    }
    out.sort();
    out
}

/// The what-if on the course: with 2 hours, 09:00 counts 1006 too (4 orders, 90.50) and is
/// final two runs later; with 1 hour it is today's `hourly_sales`, exactly; nothing is written.
#[test]
fn a_what_if_replays_gold_with_another_delay_and_writes_nothing() {
    let lab = TestLab::new("whatif");
    lab.reckon(&["play", "course"]);
    let before = listing(lab.data());
    assert!(before.iter().any(|(p, ..)| p.contains("_delta_log")));
    let whatif = |delay: &str| -> serde_json::Value {
        serde_json::from_str(&lab.ok(&["whatif", "--delay", delay, "--json"])).unwrap()
    };
    let two = whatif("2h");
    let nine = &two["hours"][0];
    assert_eq!(nine["hour"], "2026-10-01T09:00:00Z");
    assert_eq!(nine["with_delay"]["orders"], 4, "{two}");
    assert_eq!(nine["with_delay"]["revenue"], "90.50");
    assert_eq!(nine["now"]["orders"], 3);
    let (now_final, later_final) = (
        nine["now"]["final_after"].as_u64().unwrap(),
        nine["with_delay"]["final_after"].as_u64().unwrap(),
    );
    assert!(later_final > now_final, "{two}");
    let changed = two["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{two}");
    assert_eq!(
        (
            &changed[0]["order_id"],
            &changed[0]["now"],
            &changed[0]["with_delay"]
        ),
        (&serde_json::json!(1006), &"late".into(), &"counted".into())
    );
    assert_eq!(two["matches_table"], true);

    // One hour is gold's own delay: the replay's final hours are hourly_sales, row for row.
    let one = whatif("60");
    let final_hours: Vec<serde_json::Value> = one["hours"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| !h["with_delay"]["final_after"].is_null())
        .map(|h| {
            serde_json::json!({"hour": h["hour"], "orders": h["with_delay"]["orders"],
                               "revenue": h["with_delay"]["revenue"]})
        })
        .collect();
    assert_eq!(final_hours, lab.table("hourly_sales"));
    assert!(one["changed"].as_array().unwrap().is_empty());
    assert!(
        one["hours"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["now"] == h["with_delay"])
    );

    // Bad input names the field; and no what-if wrote a file of the lab's tables or state.
    let bad = lab.reckon(&["whatif", "--delay", "2 days"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("delay: "), "{}", stderr(&bad));
    assert_eq!(listing(lab.data()), before);
}
