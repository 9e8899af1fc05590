//! A shared lab: labs with their own topic, folder and history; roles and tokens; every forbidden
//! write refused with 401/403 and nothing changed (tables, topic offsets and history compared);
//! sessions with CSRF tokens; send limits; ten labs playing the course at once.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{Answer, SEED_BLOCK, TestLab};
use reckon::limit::Rate;
use reckon::service::labs::LabsConfig;
use reckon::web::{AppState, Rates, app};
use serde_json::{Value, json};

const INSTRUCTOR: &str = "instructor-token-for-tests";

struct Server {
    state: AppState,
    lab: TestLab,
    _site: tempfile::TempDir,
}

/// A server on its own folder and topic; with `instructor`, it asks for tokens.
async fn server(name: &str, instructor: bool, max_runs: usize) -> Server {
    let lab = TestLab::new(name);
    let site = tempfile::tempdir().unwrap();
    let labs = LabsConfig {
        instructor_token: instructor.then(|| INSTRUCTOR.to_string()),
        max_runs,
    };
    let state = lab.server(site.path(), lab.config(), labs).await;
    Server {
        state,
        lab,
        _site: site,
    }
}

impl Server {
    async fn call(&self, request: Request<Body>) -> Answer {
        common::call(app(self.state.clone()), request).await
    }

    /// `method uri` with a JSON body, as `token` (none: no Authorization header).
    async fn api(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(common::json_request(method, uri, token, body))
            .await
    }

    async fn ok(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Value {
        let answer = self.api(method, uri, token, body).await;
        answer.ok(&format!("{method} {uri}"))
    }

    async fn create_lab(&self, name: &str, token: Option<&str>) -> String {
        let made = self
            .ok("POST", "/api/labs", token, json!({"name": name}))
            .await;
        assert_eq!(made["lab"], name);
        made["token"].as_str().unwrap().to_string()
    }

    /// A lab's runs, newest first, as the API lists them (no token).
    async fn runs(&self, lab: &str) -> Value {
        let uri = match lab {
            "default" => "/api/runs".to_string(),
            _ => format!("/api/labs/{lab}/runs"),
        };
        self.ok("GET", &uri, None, json!({})).await["runs"].clone()
    }

    /// Signs a browser in with `token`: its session cookie.
    async fn sign_in(&self, token: &str) -> String {
        let answer = self
            .call(
                Request::post("/login")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(Body::from(format!("token={token}")))
                    .unwrap(),
            )
            .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.json);
        let cookie = answer.headers[header::SET_COOKIE].to_str().unwrap();
        for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(flag), "{cookie}");
        }
        cookie.split(';').next().unwrap().to_string()
    }

    /// A server function called as a form posts it, with a session cookie.
    async fn form(&self, function: &str, cookie: &str, fields: &str) -> Answer {
        self.call(
            Request::post(format!("/fn/{function}"))
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "application/json")
                .header(header::COOKIE, cookie)
                .body(Body::from(fields.to_string()))
                .unwrap(),
        )
        .await
    }

    /// Everything a write could change in lab `name`: each table's Delta log, the topic's
    /// offsets, the lab's rows in the history, its settings file, whether its folder exists.
    async fn snapshot(&self, name: &str) -> BTreeMap<String, String> {
        let root = self.lab.config();
        let config = root.for_lab(name);
        let mut seen = BTreeMap::new();
        seen.insert("folder".into(), config.data_dir.exists().to_string());
        for table in ["bronze_orders", "bronze_rejects", "orders", "hourly_sales"] {
            let log = config
                .data_dir
                .join("tables")
                .join(table)
                .join("_delta_log");
            seen.insert(format!("table {table}"), listing(&log));
        }
        seen.insert(
            "settings".into(),
            std::fs::read_to_string(config.data_dir.join("settings.json")).unwrap_or_default(),
        );
        let kafka = self.lab.kafka();
        for partition in kafka.partitions(&config.topic).unwrap().unwrap_or_default() {
            let offsets = kafka.log_offsets(&config.topic, partition).unwrap();
            seen.insert(format!("partition {partition}"), format!("{offsets:?}"));
        }
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", root.history.display()))
            .await
            .unwrap();
        for (what, query) in [
            ("runs", "SELECT count(*) FROM runs WHERE lab = ?"),
            ("sent", "SELECT count(*) FROM produced_events WHERE lab = ?"),
            ("resets", "SELECT count(*) FROM resets WHERE lab = ?"),
            ("tokens", "SELECT count(*) FROM tokens WHERE lab = ?"),
            ("labs", "SELECT count(*) FROM labs WHERE name = ?"),
        ] {
            let count: i64 = sqlx::query_scalar(query)
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap();
            seen.insert(what.into(), count.to_string());
        }
        seen
    }
}

/// The files of a folder, sorted, as one line ("" if it does not exist).
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_forbidden_write_is_refused_and_changes_nothing() {
    let server = server("forbidden", true, 4).await;
    let instructor = Some(INSTRUCTOR);
    let ann = server.create_lab("ann", instructor).await;
    let bob = server.create_lab("bob", instructor).await;
    let viewer = server
        .ok("POST", "/api/labs/ann/viewer-token", Some(&ann), json!({}))
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    // Ann's lab has data, so a forbidden run or reset would have something to change.
    let sent = server
        .ok(
            "POST",
            "/api/labs/ann/produce?and_run=true",
            Some(&ann),
            json!({"scenario": "course", "batch": "1"}),
        )
        .await;
    assert_eq!(sent["run"]["status"], "succeeded", "{sent}");
    let before = server.snapshot("ann").await;
    assert_eq!(before["runs"], "1");
    assert_ne!(before["table bronze_orders"], "");

    let writes: [(&str, &str, Value); 7] = [
        (
            "POST",
            "/api/labs/ann/produce",
            json!({"scenario": "course", "batch": "2"}),
        ),
        ("POST", "/api/labs/ann/runs?wait=true", json!({})),
        ("POST", "/api/labs/ann/reset", json!({})),
        ("DELETE", "/api/labs/ann", json!({})),
        (
            "POST",
            "/api/labs/ann/settings",
            json!({"schedule_seconds": 1}),
        ),
        ("POST", "/api/labs/ann/viewer-token", json!({})),
        ("POST", "/api/labs", json!({"name": "ann"})),
    ];
    let callers: [(&str, Option<&str>, StatusCode); 4] = [
        ("nobody", None, StatusCode::UNAUTHORIZED),
        (
            "a made-up token",
            Some("0000.1111"),
            StatusCode::UNAUTHORIZED,
        ),
        ("ann's viewer", Some(&viewer), StatusCode::FORBIDDEN),
        ("bob's learner", Some(&bob), StatusCode::FORBIDDEN),
    ];
    for (who, token, expected) in callers {
        for (method, uri, body) in &writes {
            let answer = server.api(method, uri, token, body.clone()).await;
            assert_eq!(
                answer.status, expected,
                "{who}: {method} {uri}: {}",
                answer.json
            );
            let error = answer.json["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("token") || error.contains("instructor"),
                "{who}: {method} {uri}: the message says why: {error}"
            );
        }
    }
    // Ann's own learner token may not manage labs either.
    for (method, uri, body) in [
        ("DELETE", "/api/labs/ann", json!({})),
        ("POST", "/api/labs", json!({"name": "eve"})),
    ] {
        let answer = server.api(method, uri, Some(&ann), body).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {uri}");
        assert!(
            answer.json["error"]
                .as_str()
                .unwrap()
                .contains("instructor")
        );
    }
    // Browsers: a viewer's session may not send; a learner's session may not without its
    // form's CSRF token, nor with another site's Origin.
    let viewer_cookie = server.sign_in(&viewer).await;
    let ann_cookie = server.sign_in(&ann).await;
    let csrf = server.form("session", &ann_cookie, "").await.json["csrf"]
        .as_str()
        .unwrap()
        .to_string();
    for (cookie, fields, expected) in [
        (
            &viewer_cookie,
            "lab=ann&batch=2".to_string(),
            StatusCode::FORBIDDEN,
        ),
        (&ann_cookie, "lab=ann&batch=2".into(), StatusCode::FORBIDDEN),
        (
            &ann_cookie,
            "lab=ann&batch=2&csrf=not-the-token".into(),
            StatusCode::FORBIDDEN,
        ),
        (
            &ann_cookie,
            format!("lab=bob&batch=2&csrf={csrf}"),
            StatusCode::FORBIDDEN,
        ),
    ] {
        let answer = server.form("send_batch", cookie, &fields).await;
        assert_eq!(answer.status, expected, "{fields}: {}", answer.json);
    }
    let cross_site = server
        .call(
            Request::post("/fn/send_batch")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::COOKIE, &ann_cookie)
                .header(header::HOST, "127.0.0.1:3000")
                .header(header::ORIGIN, "https://elsewhere.example")
                .body(Body::from(format!("lab=ann&batch=2&csrf={csrf}")))
                .unwrap(),
        )
        .await;
    assert_eq!(
        cross_site.status,
        StatusCode::FORBIDDEN,
        "{}",
        cross_site.json
    );

    assert_eq!(
        server.snapshot("ann").await,
        before,
        "a refused write changed lab ann"
    );
    assert_eq!(server.snapshot("bob").await["runs"], "0");

    // The same snapshot sees an allowed write: the comparison above could have failed.
    let answer = server
        .form(
            "send_batch",
            &ann_cookie,
            &format!("lab=ann&batch=2&csrf={csrf}"),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    let after = server.snapshot("ann").await;
    assert_eq!(after["sent"], "6");

    // A deleted lab's tokens open nothing, also in a new lab of the same name.
    let answer = server
        .api("DELETE", "/api/labs/bob", instructor, json!({}))
        .await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.json);
    server.create_lab("bob", instructor).await;
    let answer = server
        .api("GET", "/api/labs/bob/runs", Some(&bob), json!({}))
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.json);
    assert_ne!(
        (
            after.get("partition 0"),
            after.get("partition 1"),
            after.get("partition 2")
        ),
        (
            before.get("partition 0"),
            before.get("partition 1"),
            before.get("partition 2")
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lab_has_its_own_topic_folder_and_history_until_deleted() {
    let server = server("own-lab", false, 2).await;
    // Without an instructor token nobody is asked for one (a single-user tool on loopback).
    server.create_lab("ann", None).await;
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

    let labs = server.ok("GET", "/api/labs", None, json!({})).await;
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
            .ok(
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
        .ok("GET", "/api/labs/ann/hours", None, json!({}))
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
        .ok("POST", "/api/labs/ann/reset", None, json!({}))
        .await;
    let sent: i64 = offsets
        .iter()
        .map(|p| server.lab.kafka().log_offsets(&ann_topic, *p).unwrap().1)
        .sum();
    assert_eq!(sent, 0);
    let sent = server
        .ok(
            "POST",
            "/api/labs/ann/produce?and_run=true",
            None,
            json!({"scenario": "course", "batch": "1"}),
        )
        .await;
    // The recount the reconciliation shows follows the tables: not the one made before the reset.
    let hours = server
        .ok("GET", "/api/labs/ann/hours", None, json!({}))
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
    server.create_lab("ann", None).await;
    assert_eq!(server.runs("ann").await.as_array().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_read_public_pages_open_to_all_and_sends_are_limited() {
    let mut server = server("viewers", true, 2).await;
    server.state = server.state.clone().with_rates(Rates {
        sends: Rate {
            burst: 2,
            per_second: 0.01,
        },
        ..Default::default()
    });
    let ann = server.create_lab("ann", Some(INSTRUCTOR)).await;
    let viewer = server
        .ok(
            "POST",
            "/api/labs/ann/viewer-token",
            Some(INSTRUCTOR),
            json!({}),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    for uri in [
        "/api/labs/ann/freshness",
        "/api/labs/ann/runs",
        "/api/labs/ann/hours",
    ] {
        assert_eq!(
            server
                .api("GET", uri, Some(&viewer), json!({}))
                .await
                .status,
            StatusCode::OK
        );
        let anonymous = server.api("GET", uri, None, json!({})).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{uri}");
    }
    // Pages render for the viewer, with the lab's name and no produce form.
    let page = server
        .call(
            Request::get("/labs/ann/produce")
                .header(header::COOKIE, server.sign_in(&viewer).await)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let html = page.json.as_str().unwrap();
    assert!(html.contains("data-lab=\"ann\""), "{html}");
    assert!(
        html.contains("may look at this lab but not change it"),
        "{html}"
    );
    assert!(!html.contains("event-form"), "{html}");

    server
        .ok(
            "POST",
            "/api/labs/ann/settings",
            Some(&ann),
            json!({"public": true}),
        )
        .await;
    for uri in ["/api/labs/ann/freshness", "/api/labs/ann/hours"] {
        let anonymous = server.api("GET", uri, None, json!({})).await;
        assert_eq!(
            anonymous.status,
            StatusCode::OK,
            "{uri}: {}",
            anonymous.json
        );
    }
    let runs = server
        .api("GET", "/api/labs/ann/runs", None, json!({}))
        .await;
    assert_eq!(
        runs.status,
        StatusCode::UNAUTHORIZED,
        "only freshness and hours are public"
    );
    let listed = server.ok("GET", "/api/labs", None, json!({})).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Two sends at once, then the third waits; other labs' clients have their own allowance.
    let send = json!({"scenario": "course", "batch": "1"});
    for _ in 0..2 {
        server
            .ok("POST", "/api/labs/ann/produce", Some(&ann), send.clone())
            .await;
    }
    let refused = server
        .api("POST", "/api/labs/ann/produce", Some(&ann), send.clone())
        .await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        refused.json
    );
    assert!(refused.headers.contains_key(header::RETRY_AFTER));
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap()
            .contains("too many sends")
    );
    let big = json!({"scenario": "course", "batch": "1", "padding": "x".repeat(100_000)});
    let refused = server
        .api("POST", "/api/produce", Some(INSTRUCTOR), big)
        .await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(server.snapshot("ann").await["sent"], "6");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_labs_playing_the_course_at_once_give_ten_correct_checks() {
    const MAX_RUNS: usize = 3;
    let server = server("ten-labs", true, MAX_RUNS).await;
    let mut tokens = vec![];
    for i in 0..10 {
        let name = format!("team-{i}");
        tokens.push((
            name.clone(),
            server.create_lab(&name, Some(INSTRUCTOR)).await,
        ));
    }
    let plays = tokens.iter().map(|(name, token)| {
        let server = &server;
        async move {
            let mut last = Value::Null;
            for batch in ["1", "2", "3", "3", "4", "5"] {
                last = server
                    .ok(
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
                .ok(
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
