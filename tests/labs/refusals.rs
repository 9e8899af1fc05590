//! Every forbidden write refused with 401/403 and nothing changed; what viewers may read, and send
//! limits.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_forbidden_write_is_refused_and_changes_nothing() {
    let server = Server::with("forbidden", true, 4).await;
    let instructor = Some(INSTRUCTOR);
    let ann = server.create_lab_as("ann", instructor).await;
    let bob = server.create_lab_as("bob", instructor).await;
    let viewer = server
        .ok_as("POST", "/api/labs/ann/viewer-token", Some(&ann), json!({}))
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    // Ann's lab has data, so a forbidden run or reset would have something to change.
    let sent = server
        .ok_as(
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
    server.create_lab_as("bob", instructor).await;
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
async fn viewers_read_public_pages_open_to_all_and_sends_are_limited() {
    let server = Server::with("viewers", true, 2).await.with_rates(Rates {
        sends: Rate {
            burst: 2,
            per_second: 0.01,
        },
        ..Default::default()
    });
    let ann = server.create_lab_as("ann", Some(INSTRUCTOR)).await;
    let viewer = server
        .ok_as(
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
        .ok_as(
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
    let listed = server.ok_as("GET", "/api/labs", None, json!({})).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // Two sends at once, then the third waits; other labs' clients have their own allowance.
    let send = json!({"scenario": "course", "batch": "1"});
    for _ in 0..2 {
        server
            .ok_as("POST", "/api/labs/ann/produce", Some(&ann), send.clone())
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

/// The price of a cluster (the cost of freshness) is the instructor's to set: a learner is
/// refused, a bad price is refused at its field, and the lab's freshness prices with what the
/// instructor set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_instructor_sets_the_price_of_a_cluster() {
    let server = Server::new("labs-cost").await;
    let ann = server.create_lab("ann").await;
    let uri = "/api/labs/ann/settings";
    let cost = json!({"cost": {"startup_s": 0, "minimum_s": 60, "price_per_hour": "2.50"}});
    let refused = server.api("POST", uri, Some(&ann), cost.clone()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.json);
    // The role is asked before the values are read.
    let refused = server
        .api("POST", uri, Some(&ann), json!({"cost": 1}))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.json);
    let bad = json!({"cost": {"price_per_hour": "cheap"}});
    let refused = server.api("POST", uri, Some(INSTRUCTOR), bad).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert_eq!(refused.json["field"], "price_per_hour", "{}", refused.json);
    let settings = server.ok("GET", uri, &ann, json!({})).await;
    assert_eq!(
        settings["cost"]["startup_s"], 300,
        "the default: {settings}"
    );

    let set = server.ok("POST", uri, INSTRUCTOR, cost).await;
    assert_eq!(
        set["cost"],
        json!({"startup_s": 0, "minimum_s": 60, "price_per_hour_cents": 250})
    );
    // A course run or two: every hour is 24 runs billed a minute each, at 2.50 an hour.
    for batch in ["1", "2"] {
        server
            .ok(
                "POST",
                "/api/labs/ann/produce?and_run=true",
                &ann,
                json!({"scenario": "course", "batch": batch}),
            )
            .await;
    }
    let freshness = server
        .ok("GET", "/api/labs/ann/freshness", &ann, json!({}))
        .await;
    let hourly = &freshness["cost"]["options"][0];
    assert_eq!(hourly["label"], "every hour", "{freshness}");
    assert_eq!(hourly["billed_s_per_day"], 24 * 60, "{hourly}");
    assert_eq!(hourly["cents_per_day"], 100, "{hourly}");
    assert!(
        hourly["cents_range"].is_null(),
        "two runs give no range: {hourly}"
    );
    let continuous = &freshness["cost"]["options"][3];
    assert_eq!(continuous["cents_per_day"], 24 * 250, "{continuous}");
    let based_on = freshness["cost"]["based_on"].as_str().unwrap();
    assert!(based_on.contains("last 2 course runs"), "{based_on}");
}
