//! Events that could poison a lab, the produce page after the largest order id, and a bounded fuzz
//! of the event parser and the produce API.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_can_break_a_lab() {
    let server = Server::with("poison", false, 2).await;
    server
        .ok_as(
            "POST",
            "/api/produce",
            None,
            event(json!(1), json!("10.00"), "2026-10-01T09:00:00Z"),
        )
        .await;
    server.run_default().await;
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
        server.run_default().await;
        server.pages_answer().await;
    }
    // The largest order id is an order id: accepted, run, shown, and sent again.
    server
        .ok_as(
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
    server.run_default().await;
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
    let server = Server::with("overflow", false, 2).await;
    server
        .ok_as(
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
    let server = Server::with("fuzzapi", false, 2).await.with_rates(Rates {
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
    server.run_default().await;
    server.pages_answer().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amount_sent_as_a_json_number_is_read_from_its_digits() {
    // Through a float, 999999999999999.99 would be stored as 1000000000000000.00.
    let server = Server::with("digits", false, 2).await;
    let body = r#"{"order_id": 1, "customer_id": "C1", "status": "placed",
                   "amount": 999999999999999.99, "event_time": "2026-10-01T09:00:00Z"}"#;
    let request = Request::post("/api/produce")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    server.call(request).await.ok("produce");
    server.run_default().await;
    let bronze = server.lab.table("bronze_orders");
    assert_eq!(bronze.len(), 1, "{bronze:?}");
    let amount = bronze[0]["amount"].to_string();
    assert!(amount.contains("999999999999999.99"), "{amount}");
}
