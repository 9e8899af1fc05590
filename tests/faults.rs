//! Faults and bad input (SPEC §5): malformed messages, a recreated topic, two runs at once, typed
//! input that names the bad field, and a reset that would delete someone else's topic.

mod common;

use common::{SEED_BLOCK, TestLab, stderr, stdout};
use reckon::kafka::Kafka;

fn send_raw(kafka: &Kafka, topic: &str, values: &[String]) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let producer = kafka.producer().unwrap();
    let messages: Vec<(String, String)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("junk-{i}"), v.clone()))
        .collect();
    rt.block_on(producer.send_all(topic, &messages)).unwrap();
}

/// 1,000 malformed messages of four kinds, as the shop's broken clients might send them.
fn garbage(from: usize, n: usize) -> Vec<String> {
    (from..from + n)
        .map(|i| match i % 4 {
            0 => format!("<order id={i}>"),
            1 => format!(r#"{{"order_id": {i}, "status": "placed", "amount": 1, "event_time": "2026-10-01T09:00:00Z"}}"#),
            2 => format!(r#"{{"order_id": "{i}", "customer_id": "C", "status": "placed", "amount": 1, "event_time": "2026-10-01T09:00:00Z"}}"#),
            _ => format!(r#"{{"order_id": {i}, "customer_id": "C", "status": "placed", "amount": 1, "event_time": "01/10/2026 09:00"}}"#),
        })
        .collect()
}

#[test]
fn malformed_messages_land_in_rejects_and_the_check_stays_clean() {
    let lab = TestLab::new("rejects");
    lab.ok(&["reset"]);
    let kafka = lab.kafka();
    let mut rejected = 0;
    let plan: [(&[&str], usize); 3] = [(&["1", "2"], 250), (&["3", "3"], 250), (&["4", "5"], 500)];
    let mut sent = 0;
    for (batches, junk) in plan {
        for (i, batch) in batches.iter().enumerate() {
            lab.send(batch);
            if i == 0 {
                send_raw(&kafka, &lab.topic, &garbage(sent, junk));
                sent += junk;
            }
        }
        let runs: serde_json::Value = serde_json::from_str(&lab.ok(&["run", "--json"])).unwrap();
        rejected += runs[0]["rows_rejected"].as_u64().unwrap();
    }
    assert_eq!(rejected, 1000);
    let rejects = lab.table("bronze_rejects");
    assert_eq!(rejects.len(), 1000);
    let reason = |needle: &str| {
        rejects
            .iter()
            .filter(|r| r["reason"].as_str().unwrap().contains(needle))
            .count()
    };
    assert_eq!(reason("not JSON"), 250);
    assert_eq!(reason("customer_id: missing"), 250);
    assert_eq!(reason("order_id: must be an integer"), 250);
    assert_eq!(reason("event_time: "), 250);
    assert!(
        rejects
            .iter()
            .all(|r| !r["value"].as_str().unwrap().is_empty())
    );
    // The good events are untouched: the same check as the course, plus the note on rejects.
    let (check, code) = lab.check();
    let expected = SEED_BLOCK.replace(
        "note    1 of them sent twice by the shop's system\n",
        "note    1 of them sent twice by the shop's system\nnote    1000 messages rejected, kept in bronze_rejects\n",
    );
    assert_eq!(check, expected);
    assert_eq!(code, 0);
}

#[test]
fn a_recreated_topic_is_refused_by_name_until_reset() {
    let lab = TestLab::new("recreated");
    lab.ok(&["play", "course"]);
    let kafka = lab.kafka();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        kafka.delete_topic(&lab.topic).await.unwrap();
        kafka.ensure_topic(&lab.topic, 3).await.unwrap();
    });
    lab.send("1");
    let out = lab.reckon(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("topic {} partition", lab.topic)),
        "{err}"
    );
    assert!(
        err.contains("bronze stored offset") && err.contains("log end"),
        "{err}"
    );
    assert!(err.contains("reckon reset"), "{err}");
    lab.ok(&["reset"]);
    lab.send("1");
    let runs: serde_json::Value = serde_json::from_str(&lab.ok(&["run", "--json"])).unwrap();
    assert_eq!(runs[0]["rows_read"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_one_process_a_refused_run_leaves_the_next_run_nothing_of_its_own() {
    // The server keeps bronze's consumers between runs, and a run resuming every partition
    // assigns its consumer before it asks where the logs end. A run refused because the topic
    // was made again had its consumer fetching where the new log does not reach: the run after
    // the reset, in the same process, must read the new events and nothing of that.
    use reckon::service::lab::Streams;
    let test = TestLab::new("refusedreader");
    let lab = test.open().await;
    let scenario = reckon::engine::scenario::Scenario::load("course").unwrap();
    let course = |batch: &str| scenario.batch(batch).unwrap().to_vec();
    for batch in ["1", "2", "3", "4", "5"] {
        lab.produce(&course(batch), "test").await.unwrap();
        lab.run(Streams::All, true).await.unwrap();
    }
    let kafka = lab.kafka().await.unwrap();
    kafka.delete_topic(&test.topic).await.unwrap();
    kafka.ensure_topic(&test.topic, 3).await.unwrap();
    lab.produce(&course("1"), "test").await.unwrap();
    let refused = lab.run(Streams::All, true).await.unwrap_err().to_string();
    assert!(refused.contains("bronze stored offset"), "{refused}");
    lab.reset(false).await.unwrap();
    lab.produce(&course("1"), "test").await.unwrap();
    let runs = lab.run(Streams::All, true).await.unwrap();
    assert_eq!(runs[0].figures.rows_read, 3, "{:?}", runs[0]);
    lab.produce(&course("2"), "test").await.unwrap();
    let runs = lab.run(Streams::All, true).await.unwrap();
    assert_eq!(runs[0].figures.rows_read, 3, "{:?}", runs[0]);
}

#[test]
fn a_topic_made_again_answers_its_offsets_to_a_new_client_at_once() {
    // A reset deletes the topic and makes it again; the next page or run asks its offsets from
    // another client straight away. Ten rounds, since the broker's settling moment is short.
    let lab = TestLab::new("remade");
    let kafka = lab.kafka();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for round in 0..10 {
        let parts = rt.block_on(async {
            kafka.delete_topic(&lab.topic).await.unwrap();
            kafka.ensure_topic(&lab.topic, 3).await.unwrap()
        });
        assert_eq!(parts, vec![0, 1, 2], "round {round}");
        let other = lab.kafka();
        for p in parts {
            let offsets = other.log_offsets(&lab.topic, p);
            assert!(
                matches!(offsets, Ok((0, 0))),
                "round {round} partition {p}: {offsets:?}"
            );
        }
    }
}

#[test]
fn two_runs_at_once_are_serialized() {
    let lab = TestLab::new("concurrent");
    for batch in ["1", "2", "3", "3", "4", "5"] {
        lab.send(batch);
    }
    let first = lab.command(&["run", "--json"]).spawn_output();
    let second = lab.command(&["run", "--json"]).spawn_output();
    let (a, b) = (first.join().unwrap(), second.join().unwrap());
    let mut bronze_read = 0;
    for out in [&a, &b] {
        assert!(out.status.success(), "{}", stderr(out));
        let runs: serde_json::Value = serde_json::from_str(&stdout(out)).unwrap();
        bronze_read += runs[0]["rows_read"].as_u64().unwrap();
    }
    assert_eq!(
        bronze_read, 11,
        "each event read by exactly one of the two runs"
    );
    assert_eq!(lab.table("bronze_orders").len(), 11);
    assert_eq!(lab.check().1, 0);
}

#[test]
fn a_held_lock_makes_a_run_wait_then_fail_clearly() {
    let lab = TestLab::new("lock");
    lab.send("1");
    let held = reckon::Lab::new(reckon::Config::new(lab.data()))
        .lock()
        .unwrap();
    let out = lab.reckon(&["--lock-wait", "1", "run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("another run of this lab"),
        "{}",
        stderr(&out)
    );
    assert!(lab.table("bronze_orders").is_empty(), "nothing was written");
    drop(held);
    lab.ok(&["run"]);
    assert_eq!(lab.table("bronze_orders").len(), 3);
}

#[test]
fn bad_input_names_the_field_and_sends_nothing() {
    let lab = TestLab::new("badinput");
    lab.ok(&["reset"]);
    let cases = [
        (
            r#"{"order_id": "x", "customer_id": "C", "status": "placed", "amount": 1, "event_time": "2026-10-01T09:00:00Z"}"#,
            "order_id",
        ),
        (
            r#"{"order_id": 1, "customer_id": "C", "status": "sold", "amount": 1, "event_time": "2026-10-01T09:00:00Z"}"#,
            "status",
        ),
        (
            r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": "1.234", "event_time": "2026-10-01T09:00:00Z"}"#,
            "amount",
        ),
        (
            r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": 1, "event_time": "noon"}"#,
            "event_time",
        ),
    ];
    for (event, field) in cases {
        let out = lab.reckon(&["produce", "--event", event]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains(&format!("{field}: ")),
            "{field}: {}",
            stderr(&out)
        );
    }
    let out = lab.reckon(&["produce", "--scenario", "course", "--batch", "9"]);
    assert!(stderr(&out).contains("no batch \"9\""), "{}", stderr(&out));
    let kafka = lab.kafka();
    for p in 0..3 {
        assert_eq!(
            kafka.log_offsets(&lab.topic, p).unwrap(),
            (0, 0),
            "nothing sent to partition {p}"
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
        .args(["--data"])
        .arg(lab.data())
        .args(["--topic", "no spaces allowed", "run"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("topic: ' ' is not allowed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn reset_refuses_a_broker_it_does_not_manage_without_force() {
    let lab = TestLab::new("force");
    lab.send("1");
    lab.ok(&["run"]);
    let out = lab.reckon(&["--brokers", "127.0.0.1:9092", "reset"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("add --force"), "{}", stderr(&out));
    assert_eq!(lab.table("bronze_orders").len(), 3, "nothing removed");
    assert_eq!(
        lab.kafka()
            .log_offsets(&lab.topic, 0)
            .map(|(_, end)| end >= 0)
            .ok(),
        Some(true)
    );
    lab.ok(&["--brokers", "127.0.0.1:9092", "reset", "--force"]);
    assert!(lab.table("bronze_orders").is_empty());
}

trait SpawnOutput {
    fn spawn_output(self) -> std::thread::JoinHandle<std::process::Output>;
}

impl SpawnOutput for std::process::Command {
    fn spawn_output(mut self) -> std::thread::JoinHandle<std::process::Output> {
        std::thread::spawn(move || self.output().unwrap())
    }
}

/// Without sign-in the dashboard serves this machine only: an address other machines reach is
/// refused by name, and nothing is served.
#[test]
fn serve_refuses_an_address_other_machines_reach() {
    let lab = TestLab::new("open-addr");
    let out = lab.reckon(&["serve", "--addr", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("addr: 0.0.0.0:0"), "{}", stderr(&out));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("dashboard: http"),
        "{}",
        stdout(&out)
    );
}

/// With an instructor token every page and write asks for a token, so the dashboard may listen
/// where other machines reach it; a token short enough to guess is refused.
#[test]
fn serve_with_an_instructor_token_may_listen_for_other_machines() {
    use std::io::{BufRead, BufReader};
    let lab = TestLab::new("token-addr");
    let out = lab
        .command(&["serve", "--addr", "0.0.0.0:0"])
        .env("RECKON_INSTRUCTOR_TOKEN", "short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("instructor-token: at least 16"),
        "{}",
        stderr(&out)
    );

    let mut serving = lab
        .command(&["serve", "--addr", "0.0.0.0:0"])
        .env("RECKON_INSTRUCTOR_TOKEN", "a-token-long-enough-to-keep")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serving.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = serving.kill();
    let _ = serving.wait();
    assert!(
        line.starts_with("Reckon's dashboard: http://0.0.0.0:"),
        "{line}"
    );
}

#[test]
fn a_deleted_topic_is_refused_whichever_partitions_bronze_read() {
    // Every event went to partition 2; then the topic is deleted. Bronze holds offsets of it, so
    // the run must say the topic is gone, not make it again (it asked partition 0 alone).
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let lab = TestLab::new("gone");
    let kafka = lab.kafka();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        kafka.ensure_topic(&lab.topic, 3).await.unwrap();
        let producer: FutureProducer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", kafka.brokers())
            .create()
            .unwrap();
        let event = r#"{"order_id": 1, "customer_id": "C1", "status": "placed", "amount": "10.00", "event_time": "2026-10-01T09:00:00Z"}"#;
        let record = FutureRecord::to(&lab.topic).partition(2).key("1").payload(event);
        producer
            .send(record, std::time::Duration::from_secs(10))
            .await
            .unwrap();
    });
    lab.ok(&["run"]);
    rt.block_on(kafka.delete_topic(&lab.topic)).unwrap();
    let out = lab.reckon(&["run"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "topic {} does not exist, but bronze has read from it before",
            lab.topic
        )),
        "{err}"
    );
    assert_eq!(
        kafka.partitions(&lab.topic).unwrap(),
        None,
        "the topic was made again"
    );
}
