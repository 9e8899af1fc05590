//! Week 14's lab through the JSON API, as a learner's browser does it: the lab switches to the
//! example project, lands days, runs, reads its landing list, graph, event log and data quality;
//! a bad edit is refused at its line. Every route answers its roles and refuses the others
//! (401/403, nothing changed). A lab that runs its own project is what `reckon check` checks.
//! Real broker, real Delta tables, real SQLite, the router called with `oneshot`.

mod common;

#[path = "support/server.rs"]
mod server;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use server::{INSTRUCTOR, SQL, Server, landed, snapshot};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_builds_week_14_over_the_api() {
    let server = Server::new("workspace-lab").await;
    let ann = server.create_lab("ann").await;
    let at = |path: &str| format!("/api/labs/ann{path}");

    let code = server
        .ok("GET", &at("/pipeline/files"), &ann, json!({}))
        .await;
    assert_eq!(code["kind"], "course", "{code}");
    let code = server
        .ok("POST", &at("/pipeline/example"), &ann, json!({}))
        .await;
    assert_eq!(code["kind"], "project", "{code}");
    let paths: Vec<&str> = code["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["spark-pipeline.yml", SQL]);

    // A bad edit is refused at its line and column, and the file stays as it was.
    let sql_uri = at(&format!("/pipeline/files/{SQL}"));
    let before = server.get_text(&sql_uri, &ann).await;
    let broken = before.replacen(
        "CREATE OR REFRESH MATERIALIZED VIEW",
        "CREATE OR REFRESH MATERIALISED VIEW",
        1,
    );
    let line = broken
        .lines()
        .position(|l| l.contains("MATERIALISED"))
        .unwrap()
        + 1;
    let refused = server.put_text(&sql_uri, Some(&ann), &broken).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert_eq!(refused.json["field"], SQL, "{}", refused.json);
    assert_eq!(refused.json["line"], line, "{}", refused.json);
    assert!(refused.json["column"].as_u64().unwrap() >= 1);
    assert_eq!(server.get_text(&sql_uri, &ann).await, before);
    // An unknown table is refused at the line that names it.
    let unknown = before.replacen(
        "FROM STREAM(bronze_tickets)",
        "FROM STREAM(bronze_tickes)",
        1,
    );
    let refused = server.put_text(&sql_uri, Some(&ann), &unknown).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap()
            .contains("bronze_tickes"),
        "{}",
        refused.json
    );
    // A good edit is kept.
    let commented = format!("-- my notes\n{before}");
    server
        .put_text(&sql_uri, Some(&ann), &commented)
        .await
        .ok("good edit");
    assert_eq!(server.get_text(&sql_uri, &ann).await, commented);

    // Days 1-30, a run: every file read by run 1.
    let files = server
        .ok(
            "POST",
            &at("/landing/example"),
            &ann,
            json!({"days": "1-30"}),
        )
        .await;
    assert!(
        files
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["read_by_run"].is_null())
    );
    let first = server.run("ann", &ann).await;
    let files = server.ok("GET", &at("/landing"), &ann, json!({})).await;
    let day1 = landed(&files, "tickets/2026-10-01.json");
    assert_eq!(day1["read_by_run"], first, "{day1}");
    assert!(day1["rows"].as_u64().unwrap() > 0, "{day1}");
    let graph = server
        .ok("GET", &at("/pipeline/graph"), &ann, json!({}))
        .await;
    let node = |graph: &Value, name: &str| {
        graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no node {name}: {graph}"))
    };
    let tickets_rows: u64 = files
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("tickets/"))
        .map(|f| f["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(node(&graph, "bronze_tickets")["rows"], tickets_rows);
    assert_eq!(node(&graph, "bronze_tickets")["status"], "COMPLETED");
    assert_eq!(node(&graph, "landing/tickets")["kind"], "files");
    assert!(
        node(&graph, "silver_tickets")["x"].as_u64() > node(&graph, "bronze_tickets")["x"].as_u64()
    );

    // Days 31-35: the new files are read by run 2 only; the old ones stay run 1's.
    server
        .ok(
            "POST",
            &at("/landing/example"),
            &ann,
            json!({"days": "31-35"}),
        )
        .await;
    let second = server.run("ann", &ann).await;
    let files = server.ok("GET", &at("/landing"), &ann, json!({})).await;
    assert_eq!(
        landed(&files, "tickets/2026-10-01.json")["read_by_run"],
        first
    );
    assert_eq!(
        landed(&files, "tickets/2026-11-04.json")["read_by_run"],
        second
    );
    let events = server
        .ok(
            "GET",
            &at(&format!("/pipeline/events?run={second}")),
            &ann,
            json!({}),
        )
        .await;
    assert_eq!(events["runs"].as_array().unwrap().len(), 1, "{events}");
    assert_eq!(events["runs"][0]["run"], second);

    // The bad rows: dropped under their rules, with their file and line.
    server
        .ok(
            "POST",
            &at("/landing/example"),
            &ann,
            json!({"bad_rows": true}),
        )
        .await;
    let third = server.run("ann", &ann).await;
    let quality = server.ok("GET", &at("/quality"), &ann, json!({})).await;
    let rule = quality["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "valid_status")
        .unwrap();
    assert_eq!(rule["action"], "drop row");
    let failed_in_third = rule["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == third)
        .map(|r| r["failed"].as_u64().unwrap())
        .unwrap();
    assert!(failed_in_third > 0, "{quality}");
    let quarantined: Vec<&Value> = quality["quarantined"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["rules"].as_str().unwrap().contains("valid_status"))
        .collect();
    assert_eq!(quarantined.len() as u64, failed_in_third, "{quality}");
    for row in &quarantined {
        assert_eq!(row["file"], "landing/tickets/bad-rows.json", "{row}");
    }
    // Line 2's status is "lost"; line 5 is not JSON (its status is NULL).
    let mut lines: Vec<i64> = quarantined
        .iter()
        .map(|r| r["line"].as_i64().unwrap())
        .collect();
    lines.sort();
    assert_eq!(lines, [2, 5], "{quality}");
    // One rule's rows alone; a rule the project lacks is refused naming the field.
    let only = server
        .ok(
            "GET",
            &at("/quality?rule=silver_tickets.valid_status"),
            &ann,
            json!({}),
        )
        .await;
    let only = only["quarantined"].as_array().unwrap();
    assert_eq!(only.len() as u64, failed_in_third, "{only:?}");
    assert!(
        only.iter()
            .all(|q| q["rules"].as_str().unwrap().contains("valid_status"))
    );
    let unknown = server
        .api(
            "GET",
            &at("/quality?rule=silver_tickets.nope"),
            Some(&ann),
            json!({}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.json);
    assert_eq!(unknown.json["field"], "rule");
    let files = server.ok("GET", &at("/landing"), &ann, json!({})).await;
    let bad = landed(&files, "tickets/bad-rows.json");
    assert_eq!(bad["read_by_run"], third);
    assert!(bad["dropped"].as_u64().unwrap() >= failed_in_third, "{bad}");

    // The instructor's overview says which pipeline the lab runs and its rule failures.
    let labs = server.ok("GET", "/api/labs", INSTRUCTOR, json!({})).await;
    let summary = labs
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "ann")
        .unwrap();
    assert_eq!(summary["pipeline"], "project", "{summary}");
    // ... and up to which day its numbers are final (a day before the newest loaded).
    let through = summary["final_through"].as_str().unwrap_or_default();
    assert!(
        chrono::NaiveDate::parse_from_str(through, "%Y-%m-%d").is_ok(),
        "{summary}"
    );
    // Reconciliation checks the project's own tables; the course's pages say that the lab runs
    // its own project instead.
    let html = server.get_text("/labs/ann/hours", &ann).await;
    assert!(
        html.contains("Every table of the project, worked out again"),
        "/hours: {html}"
    );
    for page in ["/produce", "/topic"] {
        let html = server.get_text(&format!("/labs/ann{page}"), &ann).await;
        assert!(
            html.contains("This lab runs its own SQL project"),
            "{page}: {html}"
        );
    }
    assert!(
        summary["rule_failures"].as_u64().unwrap() >= failed_in_third,
        "{summary}"
    );

    // Switching back asks first (the lab has tables), then resets them.
    let busy = server
        .api("POST", &at("/pipeline/course"), Some(&ann), json!({}))
        .await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{}", busy.json);
    assert!(
        server
            .folder("ann")
            .join("tables")
            .join("bronze_tickets")
            .exists()
    );
    server
        .ok(
            "POST",
            &at("/pipeline/course?confirm=true"),
            &ann,
            json!({}),
        )
        .await;
    assert!(
        !server
            .folder("ann")
            .join("tables")
            .join("bronze_tickets")
            .exists()
    );
    assert!(
        server
            .folder("ann")
            .join("landing/tickets/bad-rows.json")
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_its_roles_and_refusals_change_nothing() {
    let server = Server::new("workspace-roles").await;
    let ann = server.create_lab("ann").await;
    let bob = server.create_lab("bob").await;
    let viewer = server
        .ok("POST", "/api/labs/ann/viewer-token", &ann, json!({}))
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .ok("POST", "/api/labs/ann/pipeline/example", &ann, json!({}))
        .await;
    server
        .ok(
            "POST",
            "/api/labs/ann/landing/example",
            &ann,
            json!({"days": "1-2"}),
        )
        .await;

    let reads = [
        "/api/labs/ann/pipeline/files",
        "/api/labs/ann/pipeline/files/spark-pipeline.yml",
        "/api/labs/ann/pipeline/graph",
        "/api/labs/ann/pipeline/events",
        "/api/labs/ann/landing",
        "/api/labs/ann/quality",
        "/labs/ann/code",
        "/labs/ann/landing",
        "/labs/ann/quality",
        "/labs/ann/events",
    ];
    for uri in reads {
        for (who, token) in [
            ("learner", &ann),
            ("viewer", &viewer),
            ("instructor", &INSTRUCTOR.to_string()),
        ] {
            let answer = server.api("GET", uri, Some(token), json!({})).await;
            assert_eq!(
                answer.status,
                StatusCode::OK,
                "{who} GET {uri}: {}",
                answer.json
            );
        }
        let anonymous = server.api("GET", uri, None, json!({})).await;
        assert!(
            matches!(anonymous.status, StatusCode::UNAUTHORIZED | StatusCode::OK),
            "GET {uri}: {}",
            anonymous.status
        );
        if uri.starts_with("/api") {
            assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "GET {uri}");
            let other = server.api("GET", uri, Some(&bob), json!({})).await;
            assert_eq!(other.status, StatusCode::FORBIDDEN, "bob GET {uri}");
        }
    }

    let folder = server.folder("ann");
    let before = snapshot(&folder);
    let line = br#"{"ticket_id": 1}"#;
    for (who, token, status) in [
        ("viewer", Some(viewer.as_str()), StatusCode::FORBIDDEN),
        ("bob", Some(bob.as_str()), StatusCode::FORBIDDEN),
        ("nobody", None, StatusCode::UNAUTHORIZED),
    ] {
        let file = format!("/api/labs/ann/pipeline/files/{SQL}");
        let answers = [
            server.put_text(&file, token, "-- gone\n").await,
            server
                .api(
                    "POST",
                    "/api/labs/ann/pipeline/example?confirm=true",
                    token,
                    json!({}),
                )
                .await,
            server
                .api(
                    "POST",
                    "/api/labs/ann/pipeline/course?confirm=true",
                    token,
                    json!({}),
                )
                .await,
            server
                .api(
                    "POST",
                    "/api/labs/ann/landing/example",
                    token,
                    json!({"days": "3-4"}),
                )
                .await,
            server.upload("ann", token, &[("x.json", line)]).await,
            server
                .api("POST", "/api/labs/ann/pipeline/validate", token, json!({}))
                .await,
            server
                .api("POST", "/api/labs/ann/runs?wait=true", token, json!({}))
                .await,
        ];
        for (i, answer) in answers.iter().enumerate() {
            assert_eq!(answer.status, status, "{who}, write {i}: {}", answer.json);
        }
        assert_eq!(snapshot(&folder), before, "{who} changed nothing");
    }
    // The pages' own writes (server functions) refuse a viewer the same way.
    for (function, fields) in [
        ("save_file", format!("lab=ann&path={SQL}&text=--+gone")),
        (
            "switch_pipeline",
            "lab=ann&to=course&confirm=true".to_string(),
        ),
        ("land_example", "lab=ann&days=3-4".to_string()),
        ("validate", "lab=ann".to_string()),
        ("run_on_arrival", "lab=ann&on=true".to_string()),
    ] {
        let request = Request::post(format!("/fn/{function}"))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {viewer}"))
            .body(Body::from(fields))
            .unwrap();
        let answer = server.call(request).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{function}: {}",
            answer.json
        );
    }
    assert_eq!(
        snapshot(&folder),
        before,
        "the viewer's page writes changed nothing"
    );

    // The role is checked before the body is read: a viewer's unreadable upload is a 403.
    let garbage = Request::post("/api/labs/ann/landing")
        .header(header::AUTHORIZATION, format!("Bearer {viewer}"))
        .header(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XBOUNDARYX",
        )
        .body(Body::from("not multipart at all"))
        .unwrap();
    assert_eq!(server.call(garbage).await.status, StatusCode::FORBIDDEN);
}

/// A lab whose pipeline is its own project (its `project/` folder) is what `reckon check` checks.
#[test]
fn the_course_command_checks_the_labs_project() {
    let lab = common::TestLab::new("workspace-cli-check");
    let project = lab.data().join("project");
    lab.ok(&["pipeline", "example", "support", project.to_str().unwrap()]);
    lab.ok(&["pipeline", "land", "support", "--days", "1-3"]);
    lab.ok(&["pipeline", "run", project.to_str().unwrap()]);
    let (text, code) = lab.check();
    assert!(
        text.contains("ok      accounts has the history of all 40 keys"),
        "{text}"
    );
    assert_eq!(code, 0, "{text}");
    let json: Value = serde_json::from_str(&lab.ok(&["check", "--json"])).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .all(|l| l["verdict"] != "problem"),
        "{json}"
    );
}
