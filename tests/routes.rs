//! Every page and API route of the dashboard, called with `oneshot` on `app(state)`: a real broker,
//! real Delta tables and SQLite in a temp folder, no port bound (except the shutdown test).

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::TestLab;
use http_body_util::BodyExt;
use reckon::web::{AppState, app, serve};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Site {
    state: AppState,
    _site: tempfile::TempDir,
}

async fn site(lab: &TestLab) -> Site {
    let site = tempfile::tempdir().unwrap();
    Site {
        state: lab.dashboard(site.path()).await,
        _site: site,
    }
}

impl Site {
    async fn call(&self, request: Request<Body>) -> (StatusCode, String, axum::http::HeaderMap) {
        let response = app(self.state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned(), headers)
    }

    async fn get(&self, uri: &str) -> (StatusCode, String) {
        let (status, body, _) = self
            .call(Request::get(uri).body(Body::empty()).unwrap())
            .await;
        (status, body)
    }

    async fn get_json(&self, uri: &str) -> Value {
        let (status, body) = self.get(uri).await;
        assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        let (status, body, _) = self
            .call(
                Request::post(uri)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap(),
            )
            .await;
        let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
        (status, json)
    }

    async fn post_ok(&self, uri: &str, body: Value) -> Value {
        let (status, json) = self.post(uri, body).await;
        assert!(status.is_success(), "POST {uri}: {status} {json}");
        json
    }

    /// The course as a student plays it: each send followed by a run.
    async fn play_course(&self) {
        for batch in ["1", "2", "3", "3", "4", "5"] {
            let sent = self
                .post_ok(
                    "/api/produce?and_run=true",
                    json!({"scenario": "course", "batch": batch}),
                )
                .await;
            assert_eq!(sent["run"]["status"], "succeeded", "{sent}");
        }
    }
}

fn hour<'a>(hours: &'a Value, at: &str) -> &'a Value {
    hours
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["hour"] == at)
        .unwrap_or_else(|| panic!("no hour {at} in {hours}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_course_through_the_api_reconciles_late_09_and_ok_11() {
    let lab = TestLab::new("api-course");
    let site = site(&lab).await;
    site.play_course().await;

    let hours = site.get_json("/api/hours").await;
    let nine = hour(&hours, "2026-10-01T09:00:00Z");
    assert_eq!(nine["verdict"], "late", "{nine}");
    assert_eq!(
        (nine["orders"].clone(), nine["bronze_orders"].clone()),
        (json!(3), json!(4))
    );
    let why = nine["explanation"].as_str().unwrap();
    assert!(
        why.contains("order 1006") && why.contains("watermark was"),
        "{why}"
    );
    let eleven = hour(&hours, "2026-10-01T11:00:00Z");
    assert_eq!(eleven["verdict"], "ok", "{eleven}");
    assert_eq!(eleven["orders"], 1);
    assert_eq!(eleven["revenue"], "18.25");
    assert_eq!(hour(&hours, "2026-10-01T12:00:00Z")["verdict"], "waiting");
    // 09:00 waited for the watermark, was ok, then late once batch 4 brought order 1006.
    let changes: Vec<&str> = nine["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["waiting", "ok", "late"], "{nine}");

    let freshness = site.get_json("/api/freshness").await;
    assert_eq!(freshness["light"], "green");
    assert_eq!(
        freshness["sentences"][0],
        "Hourly sales are final through the 11:00 hour."
    );

    // Six runs, newest first, each with three streams and a check.
    let runs = site.get_json("/api/runs").await;
    let list = runs["runs"].as_array().unwrap();
    assert_eq!(list.len(), 6);
    assert!(
        list.iter()
            .all(|r| r["status"] == "succeeded" && r["streams"].as_array().unwrap().len() == 3)
    );
    assert_eq!(list[0]["started_by"], "send-and-run");
    let paged = site.get_json("/api/runs?limit=4").await;
    assert_eq!(paged["runs"].as_array().unwrap().len(), 4);
    let older = paged["older"].as_i64().unwrap();
    let rest = site
        .get_json(&format!("/api/runs?limit=4&before={older}"))
        .await;
    assert_eq!(rest["runs"].as_array().unwrap().len(), 2);
    assert_eq!(rest["older"], Value::Null);

    let id = list[0]["id"].as_i64().unwrap();
    let detail = site.get_json(&format!("/api/runs/{id}")).await;
    assert_eq!(detail["streams"][0]["stream"], "bronze");
    assert_eq!(detail["streams"][0]["source"]["kind"], "offsets");
    assert!(
        detail["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["verdict"] == "late")
    );

    // A run started by a script, waited for.
    let (status, run) = site.post("/api/runs?wait=true", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(run["id"].as_i64().unwrap() > id);
    // The pages show the same.
    let (status, page) = site.get("/hours").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("order 1006"), "{page}");
    let (_, page) = site.get(&format!("/runs/{id}")).await;
    assert!(
        page.contains(&format!("Run #{id}")) && page.contains("partition"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_off_flags_11_as_a_problem_and_names_the_event_sent_twice() {
    let lab = TestLab::new("api-dedup");
    let site = site(&lab).await;
    let settings = site.post_ok("/api/settings", json!({"dedup": false})).await;
    assert_eq!(
        settings,
        json!({"schedule_seconds": null, "dedup": false, "dedup_in_effect": false, "public": false, "run_on_arrival": false})
    );
    site.play_course().await;

    let hours = site.get_json("/api/hours").await;
    let eleven = hour(&hours, "2026-10-01T11:00:00Z");
    assert_eq!(eleven["verdict"], "problem", "{eleven}");
    assert_eq!(
        (eleven["orders"].clone(), eleven["bronze_orders"].clone()),
        (json!(2), json!(1))
    );
    let why = eleven["explanation"].as_str().unwrap();
    assert!(
        why.contains("order 1005") && why.contains("2 times"),
        "{why}"
    );
    assert_eq!(site.get_json("/api/freshness").await["light"], "red");

    // Turning dedup back on waits for a reset: gold's state keeps what it started with.
    let settings = site.post_ok("/api/settings", json!({"dedup": true})).await;
    assert_eq!(
        (
            settings["dedup"].clone(),
            settings["dedup_in_effect"].clone()
        ),
        (json!(true), json!(false))
    );
    let (_, page) = site.get("/produce").await;
    assert!(page.contains("after the next reset"), "{page}");
    let settings = site.post_ok("/api/reset", json!({})).await;
    assert_eq!(settings["dedup_in_effect"], true);
    assert_eq!(site.get_json("/api/hours").await, json!([]));
    // Replayed from the new topic, 11:00 is right.
    site.play_course().await;
    let hours = site.get_json("/api/hours").await;
    assert_eq!(hour(&hours, "2026-10-01T11:00:00Z")["verdict"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_answers_4xx_naming_the_field_and_writes_nothing() {
    let lab = TestLab::new("api-bad");
    let site = site(&lab).await;
    let event = json!({"order_id": 1, "customer_id": "C1", "status": "placed", "amount": "1.00", "event_time": "2026-10-01T09:00:00Z"});
    let with = |key: &str, value: Value| {
        let mut e = event.clone();
        match value {
            Value::Null => {
                e.as_object_mut().unwrap().remove(key);
            }
            v => e[key] = v,
        }
        e
    };
    for (body, field) in [
        (with("order_id", json!("x")), "order_id"),
        (with("customer_id", json!("")), "customer_id"),
        (with("status", json!("lost")), "status"),
        (with("amount", json!("1.005")), "amount"),
        (with("event_time", json!("yesterday")), "event_time"),
        (with("event_time", Value::Null), "event_time"),
        (json!({"scenario": "course", "batch": "9"}), "batch"),
        (json!({"scenario": "/etc/passwd", "batch": "1"}), "scenario"),
        (json!([1, 2]), "body"),
    ] {
        let (status, answer) = site.post("/api/produce", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["field"], field, "{body}: {answer}");
        assert!(
            answer["error"].as_str().unwrap().starts_with(field),
            "{answer}"
        );
    }
    let (status, answer) = site.post("/api/produce?and_run=maybe", event.clone()).await;
    assert_eq!(
        (status, answer["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("and_run"))
    );
    for (body, field) in [
        (json!({"schedule_seconds": -5}), "schedule_seconds"),
        (json!({"schedule_seconds": 0}), "schedule_seconds"),
        (json!({"dedup": "no"}), "dedup"),
        (json!({"run_on_arrival": "yes"}), "run_on_arrival"),
        (json!({"colour": "blue"}), "colour"),
    ] {
        let (status, answer) = site.post("/api/settings", body.clone()).await;
        assert_eq!(
            (status, answer["field"].clone()),
            (StatusCode::BAD_REQUEST, json!(field)),
            "{body}: {answer}"
        );
    }
    let (status, answer) = site.post("/api/runs?wait=perhaps", json!({})).await;
    assert_eq!(
        (status, answer["field"].clone()),
        (StatusCode::BAD_REQUEST, json!("wait"))
    );
    for (uri, field) in [
        ("/api/runs/abc", "id"),
        ("/api/runs?before=x", "before"),
        ("/api/runs?limit=0", "limit"),
    ] {
        let (status, body) = site.get(uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["field"],
            field
        );
    }
    assert_eq!(site.get("/api/runs/424242").await.0, StatusCode::NOT_FOUND);

    // Nothing was written: no topic, no tables, no runs, no sends, settings as they were.
    assert_eq!(lab.kafka().partitions(&lab.topic).unwrap(), None);
    assert!(!lab.data().join("tables").exists());
    assert_eq!(site.get_json("/api/runs").await["runs"], json!([]));
    assert_eq!(
        site.get_json("/api/settings").await,
        json!({"schedule_seconds": null, "dedup": true, "dedup_in_effect": true, "public": false, "run_on_arrival": false})
    );
}

/// Routers built while pages render (as tests and several labs do) never stall a render: Leptos's
/// route generation once left a page waiting forever for its data (leptos-rs/leptos#4773).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_while_other_routers_are_built() {
    let lab = TestLab::new("routers");
    let site = std::sync::Arc::new(site(&lab).await);
    let builder = {
        let state = site.state.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                drop(app(state.clone()));
                tokio::task::yield_now().await;
            }
        })
    };
    for round in 0..200 {
        let page = tokio::time::timeout(Duration::from_secs(30), site.get("/produce")).await;
        let Ok((status, body)) = page else {
            panic!("GET /produce (round {round}) did not finish within 30 s")
        };
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    builder.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_without_javascript() {
    let lab = TestLab::new("pages");
    let site = site(&lab).await;
    // Before anything happened.
    for (uri, text) in [
        ("/", "No hour of sales is final yet."),
        ("/runs", "No runs yet."),
        ("/hours", "No hours yet"),
        ("/produce", "Send one event"),
        ("/topic", "does not exist yet"),
        ("/tables", "does not exist yet"),
        ("/pipeline", "not created yet"),
    ] {
        let (status, page) = site.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(page.contains(text), "{uri} lacks {text:?}:\n{page}");
        assert!(
            page.contains("/pkg/reckon.js"),
            "{uri} loads no hydration script"
        );
    }
    site.play_course().await;
    for (uri, text) in [
        ("/", "Hourly sales are final through the 11:00 hour."),
        ("/runs", "check: late"),
        ("/hours", "data-verdict=\"late\""),
        ("/produce", "send again"),
        ("/produce?preset=late", "is behind it"),
        ("/topic", "bronze stored"),
        ("/tables?table=hourly_sales", "hourly_sales at version"),
        ("/tables?table=orders&version=1", "(latest is"),
        ("/pipeline", "up to date with bronze"),
    ] {
        let (status, page) = site.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(page.contains(text), "{uri} lacks {text:?}:\n{page}");
    }
    let (status, page) = site.get("/tables?table=nope").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("table: one of bronze_orders"), "{page}");
    assert_eq!(site.get("/no-such-page").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_posted_without_javascript_comes_back_with_the_fields_error() {
    let lab = TestLab::new("form");
    let site = site(&lab).await;
    let form = "lab=default&event[order_id]=12x&event[customer_id]=C1&event[status]=placed&event[amount]=1.00&event[event_time]=2026-10-01T09:00:00Z";
    let (status, _, headers) = site
        .call(
            Request::post("/fn/produce")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://127.0.0.1:3000/produce")
                .body(Body::from(form))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::FOUND);
    // Back where the form was (browsers send the whole address as the referer).
    let back = headers[header::LOCATION].to_str().unwrap();
    let back = back
        .strip_prefix("http://127.0.0.1:3000")
        .unwrap_or(back)
        .to_string();
    assert!(back.starts_with("/produce?"), "{back}");
    let (status, page) = site.get(&back).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-field=\"order_id\""), "{page}");
    assert!(page.contains("must be a whole number"), "{page}");
    assert_eq!(lab.kafka().partitions(&lab.topic).unwrap(), None);

    // The same form, right, sends the event and comes back without an error.
    let (status, _, headers) = site
        .call(
            Request::post("/fn/produce")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "text/html")
                .header(header::REFERER, "http://127.0.0.1:3000/produce")
                .body(Body::from(form.replace("12x", "12")))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::FOUND);
    let back = headers[header::LOCATION].to_str().unwrap();
    assert!(
        back.trim_end_matches('?') == "http://127.0.0.1:3000/produce",
        "{back}"
    );
    let (_, page) = site.get("/produce").await;
    assert!(page.contains("send again"), "{page}");
}

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
