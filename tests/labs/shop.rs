//! Module 9 written in SQL in a shared lab (PIPELINES §8): started from the code page's button
//! (the API here), it reads the lab's own topic, as the learner names it, and never another
//! lab's; its hours are SPEC §4's and its freshness says which hour is final.

use axum::http::StatusCode;
use serde_json::json;

use super::server::Server;

/// Module 9 written in SQL, started from the browser's button (the API here): the shop project
/// reads the lab's own topic, as the learner names it, and its hours are SPEC §4's; another lab's
/// sends never reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lab_started_from_module_9_in_sql_reads_its_own_topic_and_closes_the_seeds_hours() {
    let server = Server::new("shoplab").await;
    let ann = server.create_lab("ann").await;
    let bob = server.create_lab("bob").await;
    let code = server
        .ok(
            "POST",
            "/api/labs/ann/pipeline/example?example=shop",
            &ann,
            json!({}),
        )
        .await;
    let text = code["files"].to_string();
    let named = format!("subscribe => '{}'", server.lab.topic);
    assert!(
        text.contains(&named),
        "the lab's topic as the learner names it: {text}"
    );
    let refused = server
        .api(
            "POST",
            "/api/labs/ann/pipeline/example?example=nope",
            Some(&ann),
            json!({}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.json["field"], "example");
    // Bob's sends go to bob's topic only.
    let batch = |n: &str| json!({"scenario": "course", "batch": n});
    server
        .ok("POST", "/api/labs/bob/produce", &bob, batch("1"))
        .await;
    for n in ["1", "2", "3", "3", "4", "5"] {
        server
            .ok("POST", "/api/labs/ann/produce", &ann, batch(n))
            .await;
        server.run("ann", &ann).await;
    }
    let rows = server
        .lab
        .ok(&["--lab", "ann", "table", "hourly_sales", "--json"]);
    let hours: Vec<(String, i64, String)> = rows
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                r["hour"].as_str().unwrap().to_string(),
                r["orders"].as_i64().unwrap(),
                r["revenue"].to_string().trim_matches('"').to_string(),
            )
        })
        .collect();
    let expected = [
        ("2026-10-01T09:00:00Z", 3, "68.50"),
        ("2026-10-01T10:00:00Z", 2, "55.00"),
        ("2026-10-01T11:00:00Z", 1, "18.25"),
    ];
    let expected: Vec<(String, i64, String)> = expected
        .iter()
        .map(|(h, o, r)| (h.to_string(), *o, r.to_string()))
        .collect();
    assert_eq!(hours, expected, "{rows}");
    // Final through the last hour written; the next closes with an event at 14:00 (SPEC §3).
    let fresh = server
        .ok("GET", "/api/labs/ann/freshness", &ann, json!({}))
        .await;
    assert_eq!(fresh["final_through"], "2026-10-01 11:00", "{fresh}");
    let said = fresh["sentences"].to_string();
    assert!(
        said.contains("an event at or after 2026-10-01 14:00 arrives"),
        "{said}"
    );
}

/// Week 14 in the course's Python, started from the code page's button (the API here): the
/// landing page's example days land as Parquet, which the guided lab's code reads from the
/// volume's root; a run loads them and Reconciliation's check adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lab_started_from_the_courses_python_lands_parquet_and_loads_it() {
    let server = Server::new("pythonlab").await;
    let cal = server.create_lab("cal").await;
    let code = server
        .ok(
            "POST",
            "/api/labs/cal/pipeline/example?example=support_python",
            &cal,
            json!({}),
        )
        .await;
    assert!(code["files"].to_string().contains("support.py"), "{code}");
    let landed = server
        .ok(
            "POST",
            "/api/labs/cal/landing/example",
            &cal,
            json!({"days": "1-2"}),
        )
        .await;
    assert!(landed.to_string().contains(".parquet"), "{landed}");
    server.run("cal", &cal).await;
    let silver = server
        .lab
        .ok(&["--lab", "cal", "table", "silver_tickets", "--json"]);
    assert!(silver.lines().count() > 500, "{}", silver.lines().count());
    let check = server
        .ok("GET", "/api/labs/cal/pipeline/check", &cal, json!({}))
        .await;
    assert!(check["error"].is_null(), "{check}");
    let text = check["lines"].to_string();
    assert!(text.contains("silver_tickets:"), "{check}");
    assert!(!text.contains("problem"), "{check}");
}
