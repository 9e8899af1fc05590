//! Limits on every write route, sign-in floods, concurrent token minting, half-open connections,
//! live streams outliving access, bad server-function input.

use super::*;

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
    let server = Server::with("limits", true, 2).await.with_rates(Rates {
        sends: tiny,
        writes: tiny,
        sign_ins: tiny,
        guesses: tiny,
    });
    let mut routes = reckon::web::write_routes();
    for function in [
        "/fn/landing",
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
        // Uploads into a lab's landing folder may be larger; every other body stops at 64 KiB,
        // the server function that lists the folder (`/fn/landing`) too.
        let upload = *method == axum::http::Method::POST
            && path.starts_with("/api/")
            && path.ends_with("/landing");
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
        // The same body sent in chunks, its length unsaid: a server function still answers
        // 413, not "bad input".
        if path.starts_with("/fn/") {
            let chunks = (0..=limit / 1024).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024]));
            let chunked = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from_stream(futures::stream::iter(chunks)))
                .unwrap();
            let answer = server.call(from(address, chunked)).await;
            assert_eq!(
                answer.status,
                StatusCode::PAYLOAD_TOO_LARGE,
                "{method} {path} took a chunked body over {limit} bytes: {}",
                answer.json
            );
        }
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
    let server = Server::with("flood", true, 2).await;
    let learner = server.create_lab("ann").await;
    let viewer = server
        .ok_as(
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
    let server = Server::with("mints", true, 2).await;
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
    let server = Server::with("halfopen", false, 2).await;
    let socket = Socket::serve(&server, Timeouts::default()).await;
    let address = socket.address;
    let mut idle = vec![];
    for _ in 0..50 {
        idle.push(half_sent(address).await);
    }
    for mut stream in idle {
        let mut buffer = [0u8; 1024];
        let read = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buffer))
            .await
            .expect("a half-sent request's connection is still open after 20 s");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    let answer = freshness_from(address, [127, 0, 0, 1]).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    socket.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_are_closed_by_timeout() {
    // Four addresses' worth of silent connections once made the server unreachable.
    let server = Server::with("silent", false, 2).await;
    let timeouts = Timeouts {
        header_read: Duration::from_secs(2),
        ..Timeouts::default()
    };
    let socket = Socket::serve(&server, timeouts).await;
    let mut silent = vec![];
    for _ in 0..50 {
        silent.push(
            tokio::net::TcpStream::connect(socket.address)
                .await
                .unwrap(),
        );
    }
    for mut stream in silent {
        let mut buffer = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("a connection that sent nothing is still open after 10 s");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    let answer = freshness_from(socket.address, [127, 0, 0, 1]).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    socket.stop().await;
}

/// The server serving on a socket of its own, as `reckon serve` does, until [`Socket::stop`].
struct Socket {
    address: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Socket {
    async fn serve(server: &Server, timeouts: Timeouts) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopping = async {
            let _ = stopped.await;
        };
        let state = server.state.clone();
        let serving = tokio::spawn(reckon::web::serve_with(listener, state, stopping, timeouts));
        Self {
            address,
            stop,
            serving,
        }
    }

    /// Stops serving, and waits for the server to finish.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.serving.await.unwrap().unwrap();
    }
}

/// A connection that sent half of a request's headers, and waits.
async fn half_sent(server: SocketAddr) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(server).await.unwrap();
    stream
        .write_all(b"GET /api/freshness HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    stream
}

/// A connection from `from` that asks for the freshness and reads the whole answer.
async fn freshness_from(server: SocketAddr, from: [u8; 4]) -> String {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    stream
        .write_all(b"GET /api/freshness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut answer));
    read.await.expect("no answer in 20 s").unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holds_at_most_its_share_of_connections() {
    let server = Server::with("addrshare", false, 2).await;
    let timeouts = Timeouts {
        max_connections: Some(64),
        per_address: Some(4),
        ..Default::default()
    };
    let socket = Socket::serve(&server, timeouts).await;
    let address = socket.address;
    // Four connections from 127.0.0.1 held open, each half-way through its request's headers.
    let mut held = vec![];
    for _ in 0..4 {
        held.push(half_sent(address).await);
    }
    let refused = freshness_from(address, [127, 0, 0, 1]).await;
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(
        refused.contains("at most 4 at once from one address"),
        "{refused}"
    );
    // Another address is not held back by this one's.
    let other = freshness_from(address, [127, 0, 0, 2]).await;
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
    // A connection closed gives its place back.
    drop(held.pop());
    let mut answer = String::new();
    for _ in 0..50 {
        answer = freshness_from(address, [127, 0, 0, 1]).await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(held);
    socket.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_stream_ends_when_the_lab_goes_private() {
    let server = Server::with("private", true, 2).await;
    server
        .ok_as(
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
        .ok_as(
            "POST",
            "/api/settings",
            Some(INSTRUCTOR),
            json!({"public": false}),
        )
        .await;
    server
        .ok_as("POST", "/api/reset", Some(INSTRUCTOR), json!({}))
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
async fn a_live_stream_ends_soon_after_its_session_signs_out() {
    let server = Server::with("signout", true, 2).await;
    let cookie = server
        .sign_in([127, 0, 0, 1], INSTRUCTOR)
        .await
        .expect("signed in");
    let request = Request::get("/api/live")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .unwrap();
    let response = server.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let out = Request::post("/logout")
        .header(header::COOKIE, &cookie)
        .body(Body::empty())
        .unwrap();
    assert_eq!(server.call(out).await.status, StatusCode::SEE_OTHER);
    assert!(!server.signed_in(&cookie, "default").await);
    // Nothing is announced: the stream ends all the same, within a few of its checks.
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(frame) = body.frame().await {
            frame.unwrap();
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream still runs after its sign-out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_server_function_input_answers_400_with_the_field() {
    let server = Server::with("fnargs", false, 2).await;
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
