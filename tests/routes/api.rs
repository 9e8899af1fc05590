//! The course, dedup off, and bad input through the API.

use super::*;

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
    // All good, and still it says what the late order left out of 09:00.
    assert_eq!(freshness["late_hours"], 1, "{freshness}");
    let said = freshness["sentences"].to_string();
    assert!(
        said.contains("Left out as late, as designed: 09:00"),
        "{said}"
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
        json!({"schedule_seconds": null, "dedup": false, "dedup_in_effect": false, "public": false, "run_on_arrival": false,
               "cost": {"startup_s": 300, "minimum_s": 60, "price_per_hour_cents": 100}})
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
    let freshness = site.get_json("/api/freshness").await;
    assert_eq!(freshness["light"], "red");
    // The problem is named, not "some numbers are wrong".
    let said = freshness["sentences"].to_string();
    assert!(
        said.contains("the last check found a problem: 11:00 counted 2 orders"),
        "{said}"
    );

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
        json!({"schedule_seconds": null, "dedup": true, "dedup_in_effect": true, "public": false, "run_on_arrival": false,
               "cost": {"startup_s": 300, "minimum_s": 60, "price_per_hour_cents": 100}})
    );
}

/// After batch 1 (09:05 to 09:45) the watermark is in the 08:00 hour, which has no orders: the
/// page promises the 09:00 hour, the first with orders still open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freshness_promises_the_next_hour_with_orders() {
    let lab = TestLab::new("api-next-hour");
    let site = site(&lab).await;
    let sent = site
        .post_ok(
            "/api/produce?and_run=true",
            json!({"scenario": "course", "batch": "1"}),
        )
        .await;
    assert_eq!(sent["run"]["status"], "succeeded", "{sent}");
    let freshness = site.get_json("/api/freshness").await;
    assert_eq!(
        freshness["sentences"][1],
        "The 09:00 hour will be final once an order placed at 11:00 or later arrives.",
        "{freshness}"
    );
    assert_eq!(freshness["next_hour"], "2026-10-01T09:00:00Z");
}
