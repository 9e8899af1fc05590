//! The course's demo of offsets through the JSON API: a consumer in a lab's group reads 5 of 8
//! messages, 3 more are sent, and it resumes at the group's commit, saying so; the topic page
//! lists the group's offsets and lag; each lab's groups see only its own topic. And bronze's
//! consumers, pooled per server: one left by a lab's run reads another lab's topic next, and each
//! bronze holds exactly its own events. Real broker.

mod common;

#[path = "support/server.rs"]
mod server;

use axum::http::StatusCode;
use serde_json::{Value, json};
use server::Server;

fn event(order: i64) -> Value {
    json!({"order_id": order, "customer_id": "C01", "status": "placed", "amount": "1.00",
           "event_time": "2026-10-01T09:00:00Z"})
}

/// The order ids of the messages a read returned.
fn orders(read: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let value: Value = serde_json::from_str(m["value"].as_str().unwrap()).unwrap();
            value["order_id"].as_i64().unwrap()
        })
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labs_consumer_resumes_at_its_groups_commit_and_sees_only_its_topic() {
    let server = Server::new("consumers").await;
    let ann = server.create_lab("ann").await;
    let bob = server.create_lab("bob").await;
    let send = |lab: &'static str, token: String, order: i64| {
        let server = &server;
        async move {
            let uri = format!("/api/labs/{lab}/produce");
            server.ok("POST", &uri, &token, event(order)).await;
        }
    };
    for order in 1..=8 {
        send("ann", ann.clone(), order).await;
    }
    for order in [101, 102] {
        send("bob", bob.clone(), order).await;
    }
    let consume = |lab: &'static str, token: String, body: Value| {
        let server = &server;
        async move {
            let uri = format!("/api/labs/{lab}/consumers");
            server.api("POST", &uri, Some(&token), body).await
        }
    };
    let topic = |lab: &'static str, token: String| {
        let server = &server;
        async move {
            let uri = format!("/api/labs/{lab}/topic");
            server.ok("GET", &uri, &token, json!({})).await
        }
    };

    let first = consume(
        "ann",
        ann.clone(),
        json!({"group": "demo", "max": 5, "from_beginning": true}),
    )
    .await
    .ok("first read");
    assert_eq!(orders(&first).len(), 5, "{first}");
    assert_eq!(first["group_id"], "reckon.ann.demo");
    let said = first["sentences"].to_string();
    assert!(said.contains("from the beginning"), "{said}");

    // The topic page: the group's commits add up to the 5 read, its lag to the 3 left.
    let page = topic("ann", ann.clone()).await;
    let groups = page["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{page}");
    assert_eq!(groups[0]["name"], "demo");
    let sum = |key: &str| -> i64 {
        groups[0]["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[key].as_i64().unwrap_or(0))
            .sum()
    };
    assert_eq!((sum("committed"), sum("lag")), (5, 3), "{page}");

    for order in 9..=11 {
        send("ann", ann.clone(), order).await;
    }
    let second = consume("ann", ann.clone(), json!({"group": "demo", "max": 100}))
        .await
        .ok("second read");
    let mut all = orders(&first);
    all.extend(orders(&second));
    all.sort();
    assert_eq!(
        all,
        (1..=11).collect::<Vec<_>>(),
        "each message once: {second}"
    );
    assert_eq!(orders(&second).len(), 6);
    for r in second["resumed"].as_array().unwrap() {
        let p = r["partition"].as_i64().unwrap().to_string();
        let committed = &first["committed"][&p];
        assert_eq!(&r["offset"], committed, "partition {p}: {second}");
        assert_eq!(r["from"], "committed", "{second}");
    }
    let said = second["sentences"].to_string();
    assert!(
        said.contains("the offset group demo committed when it last read"),
        "{said}"
    );
    assert!(said.contains("exactly once"), "{said}");

    // Bob's lab: no group of Ann's is listed, and his own group "demo" reads his topic only.
    assert_eq!(topic("bob", bob.clone()).await["groups"], json!([]));
    let bobs = consume(
        "bob",
        bob.clone(),
        json!({"group": "demo", "max": 100, "from_beginning": true}),
    )
    .await
    .ok("bob's read");
    assert_eq!(orders(&bobs), vec![101, 102], "{bobs}");
    assert_eq!(bobs["group_id"], "reckon.bob.demo");
    let anns = topic("ann", ann.clone()).await;
    assert_eq!(anns["groups"].as_array().unwrap().len(), 1, "{anns}");
    assert_eq!(anns["groups"][0]["group_id"], "reckon.ann.demo");

    // Bob may not read in Ann's lab; a bad group or count is refused by name.
    let refused = consume("ann", bob.clone(), json!({"group": "demo", "max": 1})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.json);
    for (body, field) in [
        (json!({"group": "a.b", "max": 1}), "group"),
        (json!({"group": "", "max": 1}), "group"),
        (json!({"group": "ok", "max": 0}), "max"),
        (json!({"group": "ok", "max": "x"}), "max"),
        (json!({"max": 1}), "group"),
    ] {
        let answer = consume("ann", ann.clone(), body.clone()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.json["field"], field, "{body}: {}", answer.json);
    }
    assert_eq!(
        topic("ann", ann.clone()).await["groups"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// Two labs of one server share its Kafka connection and bronze's pool of consumers, so the
/// consumer one lab's run leaves is the one the other's run takes next. Each bronze must hold
/// exactly its own events, each offset once, run after run: nothing fetched for one topic is
/// handed to the other, and nothing is read twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labs_sharing_bronzes_consumers_each_load_their_own_events_exactly_once() {
    use reckon::bench::{self, Workload};
    let shared = std::sync::Arc::new(reckon::kafka::SharedClients::default());
    let (a, b) = (
        common::TestLab::new("pool-ann"),
        common::TestLab::new("pool-bob"),
    );
    let ann = reckon::Lab::new(a.config()).sharing(shared.clone());
    let bob = reckon::Lab::new(b.config()).sharing(shared.clone());
    let (ann_sends, bob_sends) = (Workload::new(900, 3), Workload::new(300, 3));
    let (mut ann_sent, mut bob_sent) = (0, 0);
    for (mine, theirs) in ann_sends.sends.iter().zip(&bob_sends.sends) {
        // Both topics hold new events before either runs: the consumer has both to fetch from.
        ann.produce(mine, "test").await.unwrap();
        bob.produce(theirs, "test").await.unwrap();
        ann_sent += mine.len() as u64;
        bob_sent += theirs.len() as u64;
        let ann_run = bench::reckon_run(&ann)
            .await
            .expect("ann's run, with a clean check");
        let bob_run = bench::reckon_run(&bob)
            .await
            .expect("bob's run, with a clean check");
        assert_eq!(ann_run.events, mine.len() as u64);
        assert_eq!(bob_run.events, theirs.len() as u64);
    }
    for (lab, sent) in [(&ann, ann_sent), (&bob, bob_sent)] {
        let report = lab.check_full().await.unwrap();
        assert_eq!(report.bronze_events as u64, sent, "{report}");
        assert!(
            report.findings[0]
                .text
                .ends_with(&format!("{sent} events, each offset once")),
            "{report}"
        );
    }
}
