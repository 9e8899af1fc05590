//! A shared lab under attack: events that could poison a lab, limits on every write route,
//! sign-in floods, concurrent token minting, guessed secrets, half-open connections, live streams
//! outliving access, bad server-function input; and a bounded fuzz of the event parser and the
//! produce API. Real broker, real tables, real SQLite, the real router.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use common::{Answer, TestLab};
use http_body_util::BodyExt;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use reckon::engine::event::OrderEvent;
use reckon::limit::Rate;
use reckon::service::labs::LabsConfig;
use reckon::web::{AppState, Rates, app};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

const INSTRUCTOR: &str = "instructor-token-for-tests";

struct Server {
    router: Router,
    state: AppState,
    lab: TestLab,
    _site: tempfile::TempDir,
}

async fn server(name: &str, instructor: bool) -> Server {
    let lab = TestLab::new(name);
    let site = tempfile::tempdir().unwrap();
    let labs = LabsConfig {
        instructor_token: instructor.then(|| INSTRUCTOR.to_string()),
        max_runs: 2,
    };
    let state = lab.server(site.path(), lab.config(), labs).await;
    Server {
        router: app(state.clone()),
        state,
        lab,
        _site: site,
    }
}

/// A request from `address` (as the server's accept loop marks it).
fn from(address: [u8; 4], mut request: Request<Body>) -> Request<Body> {
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((address, 40000))));
    request
}

impl Server {
    /// The same server with other rates (its router rebuilt on the new state).
    fn with_rates(mut self, rates: Rates) -> Self {
        self.state = self.state.clone().with_rates(rates);
        self.router = app(self.state.clone());
        self
    }

    async fn call(&self, request: Request<Body>) -> Answer {
        common::call(self.router.clone(), request).await
    }

    async fn api(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(common::json_request(method, uri, token, body))
            .await
    }

    async fn ok(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Value {
        let answer = self.api(method, uri, token, body).await;
        answer.ok(&format!("{method} {uri}"))
    }

    /// Makes lab `name` as the instructor: its learner token.
    async fn create_lab(&self, name: &str) -> String {
        let made = self
            .ok("POST", "/api/labs", Some(INSTRUCTOR), json!({"name": name}))
            .await;
        made["token"].as_str().unwrap().to_string()
    }

    async fn page(&self, uri: &str, cookie: Option<&str>) -> (StatusCode, String) {
        let mut request = Request::get(uri);
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let call = self.call(request.body(Body::empty()).unwrap());
        let answer = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("GET {uri} hangs"));
        let body = match answer.json {
            Value::String(s) => s,
            other => other.to_string(),
        };
        (answer.status, body)
    }

    /// Signs in from `address`: the session cookie, or the refusal's status.
    async fn sign_in(&self, address: [u8; 4], token: &str) -> Result<String, StatusCode> {
        let request = Request::post("/login")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={token}")))
            .unwrap();
        let answer = self.call(from(address, request)).await;
        match answer.headers.get(header::SET_COOKIE) {
            Some(cookie) if answer.status == StatusCode::SEE_OTHER => Ok(cookie
                .to_str()
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_string()),
            _ => Err(answer.status),
        }
    }

    /// Whether the session `cookie` still opens lab `lab`'s runs.
    async fn signed_in(&self, cookie: &str, lab: &str) -> bool {
        let request = Request::get(format!("/api/labs/{lab}/runs"))
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap();
        self.call(request).await.status == StatusCode::OK
    }

    /// Every page a learner reads, and the reconciliation, answer 200 (none hangs).
    async fn pages_answer(&self) {
        for uri in [
            "/api/hours",
            "/api/freshness",
            "/api/runs",
            "/hours",
            "/produce",
            "/runs",
            "/tables?table=bronze_rejects",
            "/pipeline",
            "/topic",
        ] {
            let (status, body) = self.page(uri, None).await;
            assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        }
    }

    async fn run(&self) -> Value {
        let run = self
            .ok("POST", "/api/runs?wait=true", None, json!({}))
            .await;
        assert_eq!(run["status"], "succeeded", "{run}");
        run
    }
}

fn event(order_id: Value, amount: Value, event_time: &str) -> Value {
    json!({"order_id": order_id, "customer_id": "C1", "status": "placed", "amount": amount,
           "event_time": event_time})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_can_break_a_lab() {
    let server = server("poison", false).await;
    server
        .ok(
            "POST",
            "/api/produce",
            None,
            event(json!(1), json!("10.00"), "2026-10-01T09:00:00Z"),
        )
        .await;
    server.run().await;
    let refused = [
        (
            event(json!(2), json!(1), "0000-01-01T00:00:00Z"),
            "event_time",
        ),
        (
            event(json!(3), json!(1), "0000-01-01T00:00:00+23:59"),
            "event_time",
        ),
        (
            event(json!(4), json!(1), "9999-12-31T23:59:59-23:59"),
            "event_time",
        ),
        (
            event(json!(5), json!(1), "1969-12-31T23:59:59Z"),
            "event_time",
        ),
        (
            event(json!(9), json!(1), "9999-12-31T23:59:59Z"),
            "event_time",
        ),
        (
            event(json!(6), json!("1__0.5_0"), "2026-10-01T09:00:00Z"),
            "amount",
        ),
        (
            event(json!(7), json!("1_0"), "2026-10-01T09:00:00Z"),
            "amount",
        ),
        (
            event(
                json!("9223372036854775808"),
                json!(1),
                "2026-10-01T09:00:00Z",
            ),
            "order_id",
        ),
    ];
    for (body, field) in refused {
        let answer = server.api("POST", "/api/produce", None, body.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            answer.json
        );
        assert_eq!(answer.json["field"], field, "{body}: {}", answer.json);
        server.run().await;
        server.pages_answer().await;
    }
    // The largest order id is an order id: accepted, run, shown, and sent again.
    server
        .ok(
            "POST",
            "/api/produce?and_run=true",
            None,
            event(json!(i64::MAX), json!("0.01"), "2261-12-31T23:59:59Z"),
        )
        .await;
    server.pages_answer().await;
    // A poison message written to the topic by something else than Reckon: bronze rejects it
    // with the reason, and the lab goes on.
    let kafka = server.lab.kafka();
    let producer = kafka.producer().unwrap();
    let poison = event(json!(8), json!(1), "0000-01-01T00:00:00Z").to_string();
    producer
        .send(&server.lab.topic, "8", &poison)
        .await
        .unwrap();
    server.run().await;
    server.pages_answer().await;
    let rejects = server.lab.table("bronze_rejects");
    assert!(
        rejects
            .iter()
            .any(|r| r.to_string().contains("outside the years")),
        "{rejects:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_produce_page_answers_after_the_largest_order_id() {
    let server = server("overflow", false).await;
    server
        .ok(
            "POST",
            "/api/produce",
            None,
            event(json!(i64::MAX), json!("1.00"), "2026-10-01T09:00:00Z"),
        )
        .await;
    let (status, page) = server.page("/produce", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains(&i64::MAX.to_string()), "{page}");
}

/// A route pattern made a path: `{lab}` is lab default, `{id}` run 1.
fn concrete(pattern: &str) -> String {
    pattern.replace("{lab}", "default").replace("{id}", "1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_route_is_limited_in_rate_and_body() {
    let tiny = Rate {
        burst: 3,
        per_second: 0.001,
    };
    let server = server("limits", true).await.with_rates(Rates {
        sends: tiny,
        writes: tiny,
        sign_ins: tiny,
        guesses: tiny,
    });
    let mut routes = reckon::web::write_routes();
    for function in [
        "/fn/produce",
        "/fn/send_batch",
        "/fn/send_again",
        "/fn/save_settings",
    ] {
        assert!(
            routes.iter().any(|(_, path)| path == function),
            "{function} is not among the write routes: {routes:?}"
        );
    }
    // A path no router registered is held to the same limits.
    routes.push((axum::http::Method::POST, "/fn/no_such_function".into()));
    assert!(routes.len() > 20, "{routes:?}");
    for (i, (method, pattern)) in routes.iter().enumerate() {
        let path = concrete(pattern);
        let address = [10, 0, (i / 250) as u8, (i % 250) as u8];
        // Uploads into a lab's landing folder may be larger; every other body stops at 64 KiB.
        let upload = *method == axum::http::Method::POST && path.ends_with("/landing");
        let limit = match upload {
            true => reckon::web::UPLOAD_LIMIT,
            false => 64 * 1024,
        };
        let big = Request::builder()
            .method(method.clone())
            .uri(&path)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, limit + 1)
            .body(Body::from(vec![b' '; limit + 1]))
            .unwrap();
        let answer = server.call(from(address, big)).await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{method} {path} took a body over {limit} bytes"
        );
        let mut statuses = vec![];
        for _ in 0..=tiny.burst {
            let request = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("lab=default"))
                .unwrap();
            statuses.push(server.call(from(address, request)).await.status);
        }
        assert_eq!(
            statuses.last(),
            Some(&StatusCode::TOO_MANY_REQUESTS),
            "{method} {path}: {statuses:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_flood_signs_nobody_else_out() {
    let server = server("flood", true).await;
    let learner = server.create_lab("ann").await;
    let viewer = server
        .ok(
            "POST",
            "/api/labs/ann/viewer-token",
            Some(&learner),
            json!({}),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    let instructor = server.sign_in([192, 168, 0, 1], INSTRUCTOR).await.unwrap();
    let student = server.sign_in([192, 168, 0, 2], &learner).await.unwrap();
    // From one address, sign-ins are throttled.
    let mut throttled = 0;
    for _ in 0..30 {
        if server.sign_in([10, 9, 9, 9], &viewer).await == Err(StatusCode::TOO_MANY_REQUESTS) {
            throttled += 1;
        }
    }
    assert!(
        throttled > 0,
        "30 sign-ins from one address were not throttled"
    );
    // From many addresses, more sign-ins than the server once kept in all: each evicts only
    // the viewer token's own oldest sessions.
    for i in 0..10_050u32 {
        let address = [10, (i >> 16) as u8 + 1, (i >> 8) as u8, i as u8];
        let _ = server.sign_in(address, &viewer).await;
    }
    assert!(
        server.signed_in(&instructor, "ann").await,
        "the instructor was signed out"
    );
    assert!(
        server.signed_in(&student, "ann").await,
        "the learner was signed out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_minted_at_once_all_succeed_and_minting_is_throttled() {
    let server = server("mints", true).await;
    let learner = server.create_lab("ann").await;
    let mints = (0..16).map(|_| {
        server.api(
            "POST",
            "/api/labs/ann/viewer-token",
            Some(&learner),
            json!({}),
        )
    });
    let answers = futures::future::join_all(mints).await;
    for answer in &answers {
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.json);
    }
    let mut statuses = vec![];
    for _ in 0..10 {
        statuses.push(
            server
                .api(
                    "POST",
                    "/api/labs/ann/viewer-token",
                    Some(&learner),
                    json!({}),
                )
                .await
                .status,
        );
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    // Guessing a known token id's secret costs an argon2 a few times, then is refused.
    let id = learner.split('.').next().unwrap();
    let mut guesses = vec![];
    for i in 0..10 {
        let guess = format!("{id}.{i:048}");
        guesses.push(
            server
                .api("GET", "/api/labs/ann/runs", Some(&guess), json!({}))
                .await
                .status,
        );
    }
    assert!(
        guesses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{guesses:?}"
    );
    assert_eq!(
        server
            .api("GET", "/api/labs/ann/runs", Some(&learner), json!({}))
            .await
            .status,
        StatusCode::OK,
        "the real token, verified before, still opens its lab"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_by_timeout() {
    let server = server("halfopen", false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(reckon::web::serve(listener, server.state.clone(), async {
        let _ = stopped.await;
    }));
    let mut idle = vec![];
    for _ in 0..50 {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /api/freshness HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        idle.push(stream);
    }
    for mut stream in idle {
        let mut buffer = [0u8; 1024];
        let read = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buffer))
            .await
            .expect("a half-sent request's connection is still open after 20 s");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"GET /api/freshness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_stream_ends_when_the_lab_goes_private() {
    let server = server("private", true).await;
    server
        .ok(
            "POST",
            "/api/settings",
            Some(INSTRUCTOR),
            json!({"public": true}),
        )
        .await;
    let response = server
        .router
        .clone()
        .oneshot(Request::get("/api/live").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    server
        .ok(
            "POST",
            "/api/settings",
            Some(INSTRUCTOR),
            json!({"public": false}),
        )
        .await;
    server
        .ok("POST", "/api/reset", Some(INSTRUCTOR), json!({}))
        .await;
    let mut seen = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                seen.push_str(&String::from_utf8_lossy(&data));
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the stream still runs after the lab went private: {seen}"
    );
    assert!(
        !seen.contains("reset"),
        "an anonymous stream heard a private lab: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_server_function_input_answers_400_with_the_field() {
    let server = server("fnargs", false).await;
    for (uri, body, field) in [
        ("/fn/runs", "lab=default&limit=abc", Some("limit")),
        ("/fn/runs", "lab=default&before=x", Some("before")),
        ("/fn/runs", "lab=default&lab=other", None),
        ("/fn/run", "lab=default&id=x", Some("id")),
        (
            "/fn/table",
            "lab=default&name=orders&version=v1",
            Some("version"),
        ),
        ("/fn/send_again", "lab=default&id=first", Some("id")),
        (
            "/fn/save_settings",
            "lab=default&schedule_seconds=soon",
            Some("schedule_seconds"),
        ),
    ] {
        let request = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(body))
            .unwrap();
        let answer = server.call(request).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{uri} {body}: {}",
            answer.json
        );
        assert!(
            answer.json["field"].is_string(),
            "{uri} {body}: {}",
            answer.json
        );
        if let Some(field) = field {
            assert_eq!(answer.json["field"], field, "{uri} {body}: {}", answer.json);
        }
        assert!(
            answer.json["error"].is_string(),
            "{uri} {body}: {}",
            answer.json
        );
    }
}

/// JSON values a careless or hostile sender might put in a field.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::from)),
        "[0-9_.eE+-]{0,12}".prop_map(Value::from),
        "[0-9]{1,5}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})"
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ]
}

/// A valid event with some fields replaced or removed.
fn mutated_event() -> impl Strategy<Value = Value> {
    let fields = ["order_id", "customer_id", "status", "amount", "event_time"];
    (
        proptest::collection::vec((0..fields.len(), any_value(), any::<bool>()), 0..4),
        0i64..3000,
    )
        .prop_map(move |(changes, order)| {
            let mut event = json!({"order_id": 1000 + order, "customer_id": "C1",
                                   "status": "placed", "amount": "18.25",
                                   "event_time": "2026-10-01T09:05:00Z"});
            for (field, value, remove) in changes {
                let object = event.as_object_mut().unwrap();
                if remove {
                    object.remove(fields[field]);
                } else {
                    object.insert(fields[field].into(), value);
                }
            }
            event
        })
}

/// Whether an accepted event can be read back by everything downstream: its JSON parses to the
/// same event, and its time prints in RFC 3339 within the years the tables hold.
fn readable(event: &OrderEvent) -> bool {
    let time = reckon::engine::event::format_micros(event.event_time_micros);
    OrderEvent::parse(event.to_json().as_bytes()).as_ref() == Ok(event)
        && reckon::engine::event::parse_time(&time) == Ok(event.event_time_micros)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_event_is_accepted_and_readable_or_refused_with_a_field(event in mutated_event()) {
        match OrderEvent::parse(event.to_string().as_bytes()) {
            Ok(parsed) => prop_assert!(readable(&parsed), "{event}"),
            Err(e) => prop_assert!(e.field.is_some(), "{event}: {e}"),
        }
    }

    #[test]
    fn random_bytes_never_panic_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = OrderEvent::parse(&bytes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzed_events_through_the_api_are_refused_with_a_field_or_shown_by_every_page() {
    let many = Rate {
        burst: 10_000,
        per_second: 1000.0,
    };
    let server = server("fuzzapi", false).await.with_rates(Rates {
        sends: many,
        writes: many,
        ..Default::default()
    });
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = mutated_event();
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..300 {
        let event = strategy.new_tree(&mut runner).unwrap().current();
        let answer = server
            .api("POST", "/api/produce", None, event.clone())
            .await;
        match answer.status {
            StatusCode::OK => accepted += 1,
            StatusCode::BAD_REQUEST => {
                assert!(answer.json["field"].is_string(), "{event}: {}", answer.json);
                refused += 1;
            }
            other => panic!("{event}: {other} {}", answer.json),
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
    server.run().await;
    server.pages_answer().await;
}
