//! Live updates, shutdown during a run, the schedule, one run at a time.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_updates_announce_sends_and_runs() {
    let lab = TestLab::new("live");
    let site = site(&lab).await;
    let response = app(site.state.clone())
        .oneshot(Request::get("/api/live").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let mut body = response.into_body();
    site.post_ok(
        "/api/produce?and_run=true",
        json!({"scenario": "course", "batch": "1"}),
    )
    .await;
    let mut seen = String::new();
    while !seen.contains("run-finished") {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .expect("an announcement within 30 s")
            .unwrap()
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
    assert!(
        seen.contains("\"sent\"") && seen.contains("run-started"),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_the_run_in_progress_finish() {
    let lab = TestLab::new("shutdown");
    let site = site(&lab).await;
    site.post_ok("/api/produce", json!({"scenario": "course", "batch": "1"}))
        .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, site.state.clone(), async {
        let _ = stopped.await;
    }));
    let (status, run) = site.post("/api/runs", json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{run}");
    assert_eq!(run["status"], "running");
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    let id = run["id"].as_i64().unwrap();
    let detail = site.get_json(&format!("/api/runs/{id}")).await;
    assert_eq!(detail["status"], "succeeded", "{detail}");
    assert_eq!(lab.table("bronze_orders").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_runs_the_pipeline_until_turned_off() {
    let lab = TestLab::new("schedule");
    let site = site(&lab).await;
    site.post_ok("/api/produce", json!({"scenario": "course", "batch": "1"}))
        .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, site.state.clone(), async {
        let _ = stopped.await;
    }));
    let settings = site
        .post_ok("/api/settings", json!({"schedule_seconds": 1}))
        .await;
    assert_eq!(settings["schedule_seconds"], 1);
    let started = std::time::Instant::now();
    let scheduled = loop {
        let runs = site.get_json("/api/runs").await;
        let scheduled: Vec<Value> = runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["started_by"] == "schedule" && r["status"] == "succeeded")
            .cloned()
            .collect();
        if scheduled.len() >= 2 {
            break scheduled;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{runs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        scheduled
            .iter()
            .all(|r| r["streams"].as_array().unwrap().len() == 3)
    );
    assert_eq!(lab.table("bronze_orders").len(), 3);

    site.post_ok("/api/settings", json!({"schedule_seconds": null}))
        .await;
    // Let a run the schedule had started finish, then no new one comes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let count = |runs: &Value| runs["runs"].as_array().unwrap().len();
    let before = count(&site.get_json("/api/runs").await);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count(&site.get_json("/api/runs").await), before);
    // The setting is kept for the next start.
    let settings: Value =
        serde_json::from_slice(&std::fs::read(lab.data().join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["schedule_seconds"], Value::Null);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_at_a_time_also_against_a_cli_run() {
    let lab = TestLab::new("one-run");
    let mut config = lab.config();
    config.lock_wait = Duration::from_secs(3);
    let dir = tempfile::tempdir().unwrap();
    let site = Site {
        state: lab.server(dir.path(), config, Default::default()).await,
        _site: dir,
    };
    site.post_ok("/api/produce", json!({"scenario": "course", "batch": "1"}))
        .await;

    // A CLI run holds the lab (its lock) longer than the server waits: refused, saying why.
    let cli_run = lab.open().await.lock().unwrap();
    // The reconciliation before the lab's first check, while a run holds the lab: nothing is
    // checked yet, said at once (it used to wait for the lock, then fail).
    assert_eq!(site.get_json("/api/hours").await, json!([]));
    let (status, answer) = site.post("/api/runs", json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("another run of this lab"),
        "{answer}"
    );

    // A run waiting for the CLI run's lock counts as in progress: a second one is refused at once.
    let waiting = {
        let state = site.state.clone();
        tokio::spawn(async move {
            app(state)
                .oneshot(
                    Request::post("/api/runs?wait=true")
                        .body(Body::empty())
                        .unwrap(),
                )
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, answer) = site.post("/api/runs", json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("a run is starting"),
        "{answer}"
    );
    // The CLI run ends; the waiting run takes the lab and succeeds.
    drop(cli_run);
    let response = waiting.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let run: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(run["status"], "succeeded", "{run}");
    // Nothing was recorded for the refused ones: one run in the history.
    assert_eq!(
        site.get_json("/api/runs").await["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
