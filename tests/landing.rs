//! A lab's landing folder through the JSON API: uploads checked before anything is written (paths,
//! count, size), and runs started by files landing when the lab asks for it. Real broker, real
//! Delta tables, real SQLite, the router called with `oneshot`, a real file watcher.

mod common;

#[path = "support/server.rs"]
mod server;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::json;
use server::{SQL, Server, landed, snapshot};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_checked_before_anything_is_written() {
    let server = Server::new("workspace-uploads").await;
    let ann = server.create_lab("ann").await;
    let landing = server.folder("ann").join("landing");
    let line = br#"{"ticket_id": 1, "status": "open"}"#;

    let ok = server
        .upload(
            "ann",
            Some(&ann),
            &[("mine/one.json", line), ("two.json", line)],
        )
        .await
        .ok("upload");
    assert_eq!(ok.as_array().unwrap().len(), 2, "{ok}");
    assert_eq!(std::fs::read(landing.join("mine/one.json")).unwrap(), line);

    let before = snapshot(&server.folder("ann"));
    // Bad paths, each beside a good file that is not written either; and paths that clash,
    // with each other or with what is there (the first of them was written, then the second
    // failed): refused before anything is written.
    let bad = [
        "../x.json",
        "/etc/x.json",
        ".hidden.json",
        "a/../../x.json",
        "a/.b/c.json",
        "_x.json",
        // A folder's path: it answered 500 with the server's path and left a hidden partial.
        "leak1.json/",
    ];
    let clashes = [
        ["x.json", "x.json/y.json"],
        ["z.json", "z.json"],
        ["fine.json", "two.json/y.json"],
        ["fine.json", "mine"],
    ];
    let uploads = bad.iter().map(|name| ["fine.json", name]).chain(clashes);
    for upload in uploads {
        let files: Vec<(&str, &[u8])> = upload.iter().map(|n| (*n, &line[..])).collect();
        let refused = server.upload("ann", Some(&ann), &files).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{upload:?}: {}",
            refused.json
        );
        assert_eq!(
            refused.json["field"], "path",
            "{upload:?}: {}",
            refused.json
        );
        assert_eq!(snapshot(&server.folder("ann")), before, "{upload:?}");
    }

    // Over the count limit, and a body declared larger than the limit: 413, nothing written.
    let many: Vec<(String, &[u8])> = (0..101)
        .map(|i| (format!("n{i}.json"), &line[..]))
        .collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    let refused = server.upload("ann", Some(&ann), &many).await;
    assert_eq!(
        refused.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        refused.json
    );
    let huge = Request::post("/api/labs/ann/landing")
        .header(header::AUTHORIZATION, format!("Bearer {ann}"))
        .header(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XBOUNDARYX",
        )
        .header(
            header::CONTENT_LENGTH,
            (reckon::web::UPLOAD_LIMIT + 1).to_string(),
        )
        .body(Body::from("--XBOUNDARYX--\r\n"))
        .unwrap();
    assert_eq!(
        server.call(huge).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // A project file larger than the API's body limit.
    let big = "-- x\n".repeat(reckon::web::BODY_LIMIT / 4);
    server
        .ok("POST", "/api/labs/ann/pipeline/example", &ann, json!({}))
        .await;
    let refused = server
        .put_text(
            &format!("/api/labs/ann/pipeline/files/{SQL}"),
            Some(&ann),
            &big,
        )
        .await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
    let after = snapshot(&server.folder("ann"));
    assert_eq!(
        after
            .keys()
            .filter(|k| k.contains("/landing/"))
            .collect::<Vec<_>>(),
        before
            .keys()
            .filter(|k| k.contains("/landing/"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_landing_start_a_run_when_the_lab_asks_for_it() {
    let server = Server::new("workspace-arrival").await;
    let ann = server.create_lab("ann").await;
    server.state.labs.start_schedules();
    server
        .ok("POST", "/api/labs/ann/pipeline/example", &ann, json!({}))
        .await;
    let runs = || async {
        server
            .ok("GET", "/api/labs/ann/runs", &ann, json!({}))
            .await["runs"]
            .as_array()
            .unwrap()
            .clone()
    };

    // Off (the default): landing files starts nothing.
    server
        .ok(
            "POST",
            "/api/labs/ann/landing/example",
            &ann,
            json!({"days": "1-1"}),
        )
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(runs().await.is_empty(), "no run without the setting");

    // On: one upload of two files, then one run, started by file-arrival, that reads them.
    let settings = server
        .ok(
            "POST",
            "/api/labs/ann/settings",
            &ann,
            json!({"run_on_arrival": true}),
        )
        .await;
    assert_eq!(settings["run_on_arrival"], true);
    land_one_ticket_twice(&server, &ann).await;
    let waited = std::time::Instant::now();
    let run = loop {
        let runs = runs().await;
        if let Some(run) = runs.first()
            && run["status"] != "running"
        {
            assert_eq!(runs.len(), 1, "one run for one landing: {runs:?}");
            break run.clone();
        }
        assert!(
            waited.elapsed().as_secs() < 60,
            "no run after the files landed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(run["started_by"], "file-arrival", "{run}");
    assert_eq!(run["status"], "succeeded", "{run}");
    let id = run["id"].as_i64().unwrap();
    let files = server
        .ok("GET", "/api/labs/ann/landing", &ann, json!({}))
        .await;
    for path in [
        "tickets/a.json",
        "tickets/b.json",
        "tickets/2026-10-01.json",
    ] {
        assert_eq!(landed(&files, path)["read_by_run"], id, "{path}");
    }
    server.state.labs.finish().await;
}

/// Duplicates show where people look (the graph and the event log), and a run with nothing new
/// leaves the graph's counts at the last run that did something, saying which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_counts_duplicates_and_keeps_counts_through_an_idle_run() {
    let server = Server::new("landing-duplicates").await;
    let ann = server.example_lab("ann", None).await;
    land_one_ticket_twice(&server, &ann).await;
    let first = server.run("ann", &ann).await;
    let node = |graph: &serde_json::Value, name: &str| {
        graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("no node {name}: {graph}"))
            .clone()
    };
    let graph = server
        .ok("GET", "/api/labs/ann/pipeline/graph", &ann, json!({}))
        .await;
    let silver = node(&graph, "silver_tickets");
    assert_eq!(silver["duplicates"], 1, "{silver}");
    assert!(silver["counted_run"].is_null(), "{silver}");
    let log = server
        .ok("GET", "/api/labs/ann/pipeline/events", &ann, json!({}))
        .await;
    let duplicates: u64 = log["runs"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rows_duplicate"].as_u64().unwrap_or_default())
        .sum();
    assert_eq!(duplicates, 1, "{log}");

    // Nothing new: the flows are idle, the counts stay those of the first run, said so.
    server.run("ann", &ann).await;
    let graph = server
        .ok("GET", "/api/labs/ann/pipeline/graph", &ann, json!({}))
        .await;
    let idle = node(&graph, "silver_tickets");
    assert_eq!(idle["status"], "IDLE", "{idle}");
    assert_eq!(idle["duplicates"], 1, "{idle}");
    assert_eq!(idle["rows_in"], silver["rows_in"], "{idle}");
    assert_eq!(idle["counted_run"], first, "{idle}");
    assert!(idle["counted_at"].is_string(), "{idle}");
}

/// "Final up to when?" first, for a project: a day is final once the next day's files have
/// loaded, or as many later days as `reckon.finalAfterDays` in the project's configuration says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_numbers_are_final_through_the_day_its_setting_says() {
    let server = Server::new("landing-final").await;
    let ann = server
        .example_lab("ann", Some(json!({"days": "1-5"})))
        .await;
    let said = || async {
        server
            .ok("GET", "/api/labs/ann/freshness", &ann, json!({}))
            .await
    };
    let freshness = said().await;
    assert_eq!(
        freshness["sentences"][0],
        "The numbers are final through 2026-10-04; the day after it is not final yet.",
        "{freshness}"
    );
    assert_eq!(freshness["final_through"], "2026-10-04");

    let yml = "/api/labs/ann/pipeline/files/spark-pipeline.yml";
    let text = server.get_text(yml, &ann).await;
    let refused = server
        .put_text(
            yml,
            Some(&ann),
            &format!("{text}configuration:\n  reckon.finalAfterDays: none\n"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("reckon.finalAfterDays"),
        "{}",
        refused.json
    );
    server
        .put_text(
            yml,
            Some(&ann),
            &format!("{text}configuration:\n  reckon.finalAfterDays: 3\n"),
        )
        .await
        .ok("finalAfterDays 3");
    let freshness = said().await;
    assert_eq!(
        freshness["sentences"][0],
        "The numbers are final through 2026-10-02; the 3 days after it are not final yet.",
        "{freshness}"
    );
    let rule = freshness["chart"]["final_rule"]
        .as_str()
        .unwrap_or_default();
    assert!(rule.contains("files of 3 later days"), "{rule}");
}

/// The tables page finds rows by a column's value, a page at a time: the rows a warn rule kept
/// in silver (`first_response_s < 0`) are found, the next page follows the first, and a filter
/// that does not fit the table is refused at its field. Nothing typed is read as SQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tables_page_filters_and_pages_a_tables_rows() {
    let server = Server::new("landing-rows").await;
    let ann = server
        .example_lab("ann", Some(json!({"days": "1-30", "bad_rows": true})))
        .await;
    let (server, ann) = (&server, ann.as_str());
    let table = |fields: String| async move {
        let request = Request::post("/fn/table")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {ann}"))
            .body(Body::from(format!("lab=ann&{fields}")))
            .unwrap();
        server.call(request).await
    };
    let found = table("name=silver_tickets&column=first_response_s&op=%3C&value=0".into()).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.json);
    let column = found.json["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "first_response_s")
        .unwrap();
    let negative = |rows: &serde_json::Value| {
        rows.as_array()
            .unwrap()
            .iter()
            .filter(|row| {
                row[column]
                    .as_str()
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v < 0)
            })
            .count()
    };
    let matching = found.json["matching_rows"].as_u64().unwrap() as usize;
    assert!(
        matching > 0,
        "the example's bad rows break the warn rule: {}",
        found.json
    );
    assert_eq!(negative(&found.json["rows"]), matching, "{}", found.json);
    // Every page of silver, read in turn, holds as many such rows: the filter missed none.
    let total = found.json["total_rows"].as_u64().unwrap() as usize;
    let mut seen = 0;
    for page in 0..total.div_ceil(200) {
        let rows = table(format!("name=silver_tickets&page={page}")).await.json;
        seen += negative(&rows["rows"]);
    }
    assert_eq!(seen, matching);

    let first = table("name=bronze_tickets".into()).await.json;
    let second = table("name=bronze_tickets&page=1".into()).await.json;
    assert_eq!(first["rows"].as_array().unwrap().len(), 200);
    assert_eq!(second["matching_rows"], first["total_rows"]);
    assert_ne!(first["rows"][0], second["rows"][0], "page 1 follows page 0");

    for (fields, field) in [
        ("column=nope", "column"),
        ("column=ticket_date&value=abc", "value"),
        ("column=status&op=%3B+DROP", "op"),
        ("page=abc", "page"),
        ("page=-1", "page"),
        ("page=1000000000000", "page"),
    ] {
        let refused = table(format!("name=silver_tickets&{fields}")).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{fields}: {}",
            refused.json
        );
        assert_eq!(refused.json["field"], field, "{fields}: {}", refused.json);
    }
}

/// Lands the same ticket in two files of lab `ann` (`tickets/a.json`, `tickets/b.json`): a
/// duplicate the second file brings.
async fn land_one_ticket_twice(server: &Server, ann: &str) {
    let line = br#"{"ticket_id": 7000001, "account_id": "acc-001", "status": "open", "created_at": "2026-10-02T10:00:00Z", "first_response_s": 5}"#;
    server
        .upload(
            "ann",
            Some(ann),
            &[("tickets/a.json", line), ("tickets/b.json", line)],
        )
        .await
        .ok("upload");
}
