//! `read_kafka` in a project (PIPELINES §8) on the real broker: a `STREAM` reads each message
//! exactly once whatever the batching and wherever a run is cut; a batch read sees the whole
//! topic; `from_json` keeps a malformed message as a row of NULLs beside its text; a missing
//! topic and another broker are refused, and nothing is created or read.

use std::collections::BTreeSet;

use reckon::engine::rng::Rng;

use super::*;

/// Module 9's bronze, written by a learner, and a count of the whole topic.
fn kafka_project(lab: &TestLab, name: &str) -> String {
    let topic = &lab.topic;
    let sql = format!(
        "CREATE OR REFRESH STREAMING TABLE raw AS\n\
         SELECT e.*, raw, partition, offset\n\
         FROM (SELECT CAST(value AS STRING) AS raw,\n\
                      from_json(value::string, 'order_id BIGINT, status STRING') AS e,\n\
                      partition, offset\n\
               FROM STREAM read_kafka(subscribe => '{topic}', startingOffsets => 'earliest'));\n\n\
         CREATE OR REFRESH MATERIALIZED VIEW everything AS\n\
         SELECT count(*) AS messages FROM read_kafka(subscribe => '{topic}');\n"
    );
    sql_project(lab, name, &sql).display().to_string()
}

/// The n-th message: a good order, or (one in five) text that is no JSON.
fn message(n: u64) -> String {
    match n % 5 {
        4 => format!("not json {n}"),
        _ => format!(r#"{{"order_id": {n}, "status": "placed"}}"#),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kafka_stream_reads_each_message_once_in_any_batching_and_across_crashes() {
    let lab = TestLab::new("readkafka");
    let kafka = lab.kafka();
    kafka.ensure_topic(&lab.topic, 3).await.unwrap();
    let producer = kafka.producer().unwrap();
    let project = kafka_project(&lab, "shop");
    let mut rng = Rng(0x5eed_4afc);
    let mut sent = 0u64;
    for round in 0..6 {
        // Random splits: none, one, or a handful of messages before each run.
        let count = [0, 1, 7][rng.below(3) as usize];
        for _ in 0..count {
            producer
                .send(&lab.topic, &sent.to_string(), &message(sent))
                .await
                .unwrap();
            sent += 1;
        }
        if rng.percent(40) {
            let moment = ["after-read", "after-write", "after-commit"][rng.below(3) as usize];
            let crash = format!("raw:{moment}");
            let out = lab.reckon(&["--crash-at", &crash, "pipeline", "run", &project]);
            assert!(
                !out.status.success() || count == 0,
                "round {round}: no crash at {crash}"
            );
        }
        lab.ok(&["pipeline", "run", &project]);
        let rows = lab.table("raw");
        let places: BTreeSet<(i64, i64)> = rows
            .iter()
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["offset"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            rows.len() as u64,
            sent,
            "round {round}: one row per message: {rows:?}"
        );
        assert_eq!(
            places.len(),
            rows.len(),
            "round {round}: a message read twice"
        );
        let texts: BTreeSet<String> = rows
            .iter()
            .map(|r| r["raw"].as_str().unwrap().into())
            .collect();
        let expected: BTreeSet<String> = (0..sent).map(message).collect();
        assert_eq!(texts, expected, "round {round}");
        for row in &rows {
            let raw = row["raw"].as_str().unwrap();
            match raw.starts_with("not json") {
                true => assert!(
                    row["order_id"].is_null() && row["status"].is_null(),
                    "{row}"
                ),
                false => assert_eq!(row["status"], "placed", "{row}"),
            }
        }
        let everything = lab.table("everything");
        assert_eq!(
            everything[0]["messages"].as_u64(),
            Some(sent),
            "round {round}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_topic_and_another_broker_are_refused_and_nothing_is_made() {
    let lab = TestLab::new("kafkarefused");
    let missing = format!("{}.missing", lab.topic);
    let sql = format!(
        "CREATE OR REFRESH STREAMING TABLE raw AS SELECT * FROM STREAM read_kafka(subscribe => '{missing}');\n"
    );
    let dir = sql_project(&lab, "missing", &sql);
    let out = lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    // The run says which flow failed and why.
    assert!(stdout(&out).contains("does not exist"), "{}", stdout(&out));
    assert_eq!(
        lab.kafka().partitions(&missing).unwrap(),
        None,
        "never created"
    );

    let sql = format!(
        "\n\nCREATE OR REFRESH STREAMING TABLE raw AS SELECT * FROM STREAM read_kafka(\n  subscribe => '{}', bootstrapServers => 'elsewhere:9092');\n",
        lab.topic
    );
    let dir = sql_project(&lab, "elsewhere", &sql);
    let out = lab.reckon(&["pipeline", "validate", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("sql/p.sql:3:") && said.contains("bootstrapServers 'elsewhere:9092'"),
        "{said}"
    );
    let out = lab.reckon(&["pipeline", "run", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(!lab.data().join("tables/raw").exists(), "nothing written");

    let sql =
        "CREATE OR REFRESH STREAMING TABLE raw AS SELECT * FROM STREAM read_kafka(topic => 'x');\n";
    let dir = sql_project(&lab, "option", sql);
    let out = lab.reckon(&["pipeline", "validate", dir.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("read_kafka has no option topic"),
        "{}",
        stderr(&out)
    );
}

/// A malformed message of one of several kinds.
fn malformed(n: usize) -> String {
    match n % 7 {
        0 => format!("not json {n}"),
        1 => "[1, 2, 3]".into(),
        2 => format!(r#"{{"order_id": "x{n}", "status": 7}}"#),
        3 => "[".repeat(5_000) + &"]".repeat(5_000),
        4 => format!(r#"{{"order_id": {n}, "status": "{}"}}"#, "s".repeat(20_000)),
        5 => String::new(),
        _ => r#"{"order_id": 99999999999999999999999, "status": null}"#.into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_malformed_messages_are_each_a_row_with_null_fields() {
    let lab = TestLab::new("kafkamalformed");
    let kafka = lab.kafka();
    kafka.ensure_topic(&lab.topic, 3).await.unwrap();
    let producer = kafka.producer().unwrap();
    let sent: Vec<String> = (0..1_000).map(malformed).collect();
    for (n, message) in sent.iter().enumerate() {
        producer
            .send(&lab.topic, &n.to_string(), message)
            .await
            .unwrap();
    }
    let project = kafka_project(&lab, "malformed");
    lab.ok(&["pipeline", "run", &project]);
    let rows = lab.table("raw");
    assert_eq!(rows.len(), sent.len(), "every message is a row");
    for row in &rows {
        let raw = row["raw"].as_str().unwrap_or_default();
        // Only the long status fits; every other field is NULL.
        match raw.contains(&"s".repeat(100)) {
            true => assert!(row["order_id"].is_i64(), "{raw:.80}"),
            false => assert!(row["order_id"].is_null(), "{raw:.80}: {row:.200}"),
        }
    }
}
