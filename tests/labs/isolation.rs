//! A lab with its own topic, folder and history until deleted; ten labs playing the course at once.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lab_has_its_own_topic_folder_and_history_until_deleted() {
    let server = Server::with("own-lab", false, 2).await;
    // Without an instructor token nobody is asked for one (a single-user tool on loopback).
    server.create_lab_as("ann", None).await;
    for (name, message) in [("Ann", "lowercase"), ("a/b", "'/'"), ("ann", "exists")] {
        let answer = server
            .api("POST", "/api/labs", None, json!({"name": name}))
            .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(answer.json["field"], "name");
        assert!(
            answer.json["error"].as_str().unwrap().contains(message),
            "{name}: {}",
            answer.json
        );
    }
    // A topic of a lab's name that already holds events is not taken over.
    let eve_topic = format!("{}.eve", server.lab.topic);
    let kafka = server.lab.kafka();
    kafka.ensure_topic(&eve_topic, 3).await.unwrap();
    kafka
        .producer()
        .unwrap()
        .send(&eve_topic, "1", "left by someone else")
        .await
        .unwrap();
    let answer = server
        .api("POST", "/api/labs", None, json!({"name": "eve"}))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    assert!(
        answer.json["error"].as_str().unwrap().contains("1 events"),
        "{}",
        answer.json
    );
    kafka.delete_topic(&eve_topic).await.unwrap();

    let labs = server.ok_as("GET", "/api/labs", None, json!({})).await;
    let topics: Vec<&str> = labs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["topic"].as_str().unwrap())
        .collect();
    let ann_topic = format!("{}.ann", server.lab.topic);
    assert_eq!(topics, [server.lab.topic.as_str(), ann_topic.as_str()]);

    for batch in ["1", "2"] {
        let sent = server
            .ok_as(
                "POST",
                "/api/labs/ann/produce?and_run=true",
                None,
                json!({"scenario": "course", "batch": batch}),
            )
            .await;
        assert_eq!(sent["run"]["status"], "succeeded", "{sent}");
    }
    assert_eq!(server.runs("ann").await.as_array().unwrap().len(), 2);
    assert_eq!(server.runs("default").await.as_array().unwrap().len(), 0);
    let ann_dir = server.lab.data().join("labs/ann");
    assert!(ann_dir.join("tables/bronze_orders/_delta_log").exists());
    assert!(!server.lab.data().join("tables/bronze_orders").exists());
    let offsets = server.lab.kafka().partitions(&ann_topic).unwrap().unwrap();
    let sent: i64 = offsets
        .iter()
        .map(|p| server.lab.kafka().log_offsets(&ann_topic, *p).unwrap().1)
        .sum();
    assert_eq!(sent, 6);

    let hours = server
        .ok_as("GET", "/api/labs/ann/hours", None, json!({}))
        .await;
    assert_eq!(
        hours.as_array().unwrap().len(),
        2,
        "09:00 and 10:00: {hours}"
    );

    // The command line works on a lab too, into the same history.
    server.lab.ok(&["--lab", "ann", "run"]);
    assert_eq!(server.runs("ann").await[0]["started_by"], "cli");
    assert_eq!(server.runs("ann").await.as_array().unwrap().len(), 3);
    let out = server.lab.reckon(&["--lab", "Ann", "run"]);
    assert!(common::stderr(&out).contains("lab: must start with a lowercase letter"));

    // The course's "replay from a new topic": the topic and tables go, the history stays marked.
    server
        .ok_as("POST", "/api/labs/ann/reset", None, json!({}))
        .await;
    let sent: i64 = offsets
        .iter()
        .map(|p| server.lab.kafka().log_offsets(&ann_topic, *p).unwrap().1)
        .sum();
    assert_eq!(sent, 0);
    let sent = server
        .ok_as(
            "POST",
            "/api/labs/ann/produce?and_run=true",
            None,
            json!({"scenario": "course", "batch": "1"}),
        )
        .await;
    // The recount the reconciliation shows follows the tables: not the one made before the reset.
    let hours = server
        .ok_as("GET", "/api/labs/ann/hours", None, json!({}))
        .await;
    assert_eq!(hours.as_array().unwrap().len(), 1, "09:00 only: {hours}");
    let runs_now = server.runs("ann").await;
    assert_eq!(runs_now.as_array().unwrap().len(), 4, "{sent}");
    assert_eq!(runs_now[0]["generation"], 1);
    assert_eq!(runs_now[3]["generation"], 0);

    // No tokens asked: only this machine is served, not a name made to resolve to it.
    let rebound = server
        .call(
            Request::get("/api/labs/ann/runs")
                .header(header::HOST, "rebound.example:3000")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN, "{}", rebound.json);

    let answer = server
        .api("DELETE", "/api/labs/default", None, json!({}))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    let answer = server.api("DELETE", "/api/labs/ann", None, json!({})).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.json);
    assert!(!ann_dir.exists());
    assert_eq!(server.lab.kafka().partitions(&ann_topic).unwrap(), None);
    let answer = server
        .api("GET", "/api/labs/ann/freshness", None, json!({}))
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(server.snapshot("ann").await["runs"], "0");
    // A new lab of the same name starts clean.
    server.create_lab_as("ann", None).await;
    assert_eq!(server.runs("ann").await.as_array().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_labs_playing_the_course_at_once_give_ten_correct_checks() {
    const MAX_RUNS: usize = 3;
    let server = Server::with("ten-labs", true, MAX_RUNS).await;
    let mut tokens = vec![];
    for i in 0..10 {
        let name = format!("team-{i}");
        tokens.push((
            name.clone(),
            server.create_lab_as(&name, Some(INSTRUCTOR)).await,
        ));
    }
    let plays = tokens.iter().map(|(name, token)| {
        let server = &server;
        async move {
            let mut last = Value::Null;
            for batch in ["1", "2", "3", "3", "4", "5"] {
                last = server
                    .ok_as(
                        "POST",
                        &format!("/api/labs/{name}/produce?and_run=true"),
                        Some(token),
                        json!({"scenario": "course", "batch": batch}),
                    )
                    .await;
                assert_eq!(last["run"]["status"], "succeeded", "{name}: {last}");
            }
            let id = last["run"]["id"].as_i64().unwrap();
            let run = server
                .ok_as(
                    "GET",
                    &format!("/api/labs/{name}/runs/{id}"),
                    Some(token),
                    json!({}),
                )
                .await;
            let check: String = run["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    format!(
                        "{:<8}{}\n",
                        f["verdict"].as_str().unwrap(),
                        f["text"].as_str().unwrap()
                    )
                })
                .collect();
            (name.clone(), check)
        }
    });
    for (name, check) in futures::future::join_all(plays).await {
        assert_eq!(check, SEED_BLOCK, "lab {name}");
    }

    // Never more than MAX_RUNS at once: the runs' recorded spans overlap at most that much.
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        server.lab.config().history.display()
    ))
    .await
    .unwrap();
    let spans: Vec<(String, String)> =
        sqlx::query_as("SELECT started_at, finished_at FROM runs WHERE lab LIKE 'team-%'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(spans.len(), 60);
    let most = spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, f)| s <= start && start < f)
                .count()
        })
        .max()
        .unwrap();
    assert!(most <= MAX_RUNS, "{most} runs at once");
    assert!(
        most >= 2,
        "runs of different labs went on side by side, not one after another"
    );
}
