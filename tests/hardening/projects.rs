//! Project files that could break a shared lab: a view that reads itself (it recursed until the
//! server's stack overflowed, ending every lab), text that is not ASCII in a comment, a schema a
//! column cannot take. Each is refused with where it is, the file stays as it was, and the server
//! keeps answering.

use super::*;

const SQL: &str = "transformations/support.sql";

/// A project file's new text, as the learner `token` saves it.
fn put(uri: &str, token: &str, text: &str) -> Request<Body> {
    Request::put(uri)
        .header(header::CONTENT_TYPE, "text/plain")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(text.to_string()))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_project_file_can_break_the_server() {
    let server = Server::with("projects", true, 2).await;
    let ann = server.create_lab("ann").await;
    server
        .ok_as(
            "POST",
            "/api/labs/ann/pipeline/example",
            Some(&ann),
            json!({}),
        )
        .await;
    let uri = format!("/api/labs/ann/pipeline/files/{SQL}");
    let read = || async {
        let answer = server.api("GET", &uri, Some(&ann), json!({})).await;
        assert_eq!(answer.status, StatusCode::OK, "GET {uri}: {}", answer.json);
        answer.json.as_str().unwrap().to_string()
    };
    let before = read().await;
    let landing = "STREAM read_files('landing/tickets', format => 'json')";
    for (text, refusal) in [
        (
            "CREATE TEMPORARY VIEW open_tickets AS SELECT * FROM open_tickets;\n\
             CREATE STREAMING TABLE picked AS SELECT * FROM STREAM open_tickets;"
                .to_string(),
            "a cycle of views: open_tickets reads open_tickets",
        ),
        (
            format!(
                "CREATE STREAMING TABLE raw AS SELECT * FROM {landing};\n\
                 CREATE TEMPORARY VIEW a AS SELECT * FROM b;\n\
                 CREATE TEMPORARY VIEW b AS SELECT * FROM a;\n\
                 CREATE STREAMING TABLE picked AS SELECT * FROM STREAM a;"
            ),
            "a cycle of views: a reads b reads a",
        ),
        (
            "-- niveau élevé: the ticket's amount\n\
             CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files(\
             'landing/tickets', format => 'json', schema => 'amount DECIMAL(40,2)');"
                .to_string(),
            "column amount: DECIMAL(40,2) needs a precision of 1 to 38",
        ),
        (
            // A name that is a path would read or write another lab's table.
            format!(
                "CREATE STREAMING TABLE raw AS SELECT * FROM {landing};\n\
                 CREATE MATERIALIZED VIEW `../../bob/tables/orders` AS SELECT * FROM raw;"
            ),
            "letters, digits and _",
        ),
    ] {
        let refused = server.call(put(&uri, &ann, &text)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
        let error = refused.json["error"].as_str().unwrap_or_default();
        assert!(error.contains(refusal), "{text}\n{}", refused.json);
        assert_eq!(refused.json["field"], SQL, "{}", refused.json);
        assert!(refused.json["line"].as_u64().is_some(), "{}", refused.json);
        assert_eq!(read().await, before, "a refused file is left as it was");
    }
    // A glob that climbs out of the project would read another lab's SQL.
    let yml_uri = "/api/labs/ann/pipeline/files/spark-pipeline.yml";
    let yml = "name: support\nlibraries:\n  - glob:\n      include: ../../bob/project/transformations/**\n";
    let refused = server.call(put(yml_uri, &ann, yml)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("inside the project's folder"),
        "{}",
        refused.json
    );
    // A comment that is not ASCII, with an apostrophe, before an unparenthesised STREAM.
    let commented = format!(
        "-- niveau élevé: the ticket's file\n{}",
        before.replace("FROM STREAM(bronze_tickets)", "FROM STREAM bronze_tickets")
    );
    let saved = server.call(put(&uri, &ann, &commented)).await;
    saved.ok("a comment that is not ASCII");
    assert_eq!(read().await, commented);
    // A project holds so many files at most (each save reads them all again).
    let note = |path: String| {
        put(
            &format!("/api/labs/ann/pipeline/files/{path}"),
            &ann,
            "-- notes\n",
        )
    };
    let limit = reckon::service::lab::workspace::MAX_PROJECT_FILES;
    for i in 2..limit {
        let saved = server.call(note(format!("notes/n{i}.sql"))).await;
        assert_eq!(saved.status, StatusCode::OK, "file {i}: {}", saved.json);
    }
    let refused = server.call(note("notes/one_more.sql".into())).await;
    assert_eq!(
        refused.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        refused.json
    );
    let files = "/api/labs/ann/pipeline/files";
    let answer = server.api("GET", files, Some(&ann), json!({})).await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "GET {files}: {}",
        answer.json
    );
}

/// Pages read the project in a child process and keep the graph while its files stay the same:
/// a file changed on disk (not through a save) is seen at the next page, broken or mended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_see_the_project_as_its_files_are_now() {
    let server = Server::with("projects-graph", true, 2).await;
    let ann = server.example_lab("ann", None).await;
    let graph = "/api/labs/ann/pipeline/graph";
    let names = |answer: &Value| -> Vec<String> {
        answer["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("no nodes: {answer}"))
            .iter()
            .map(|n| n["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let first = server.ok_as("GET", graph, Some(&ann), json!({})).await;
    assert!(!names(&first).contains(&"extra".to_string()), "{first}");

    let extra = server
        .folder("ann")
        .join("project/transformations/extra.sql");
    std::fs::write(
        &extra,
        "CREATE MATERIALIZED VIEW extra AS SELECT count(*) AS n FROM silver_tickets;\n",
    )
    .unwrap();
    let added = server.ok_as("GET", graph, Some(&ann), json!({})).await;
    assert!(names(&added).contains(&"extra".to_string()), "{added}");

    std::fs::write(&extra, "CREATE MATERIALIZED VIEW extra AS SELEC 1;\n").unwrap();
    let broken = server.api("GET", graph, Some(&ann), json!({})).await;
    assert_eq!(broken.status, StatusCode::BAD_REQUEST, "{}", broken.json);
    let error = broken.json["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("transformations/extra.sql:1"),
        "{}",
        broken.json
    );
    // Said again from what was kept, the same.
    let again = server.api("GET", graph, Some(&ann), json!({})).await;
    assert_eq!(again.json, broken.json);

    std::fs::remove_file(&extra).unwrap();
    let mended = server.ok_as("GET", graph, Some(&ann), json!({})).await;
    assert_eq!(names(&mended), names(&first));
}

/// A save keeps a project whose query does not resolve and says where; "Validate" says the same
/// at any time, and what waits for its files; a run refuses the project (PIPELINES section 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_warns_of_a_query_that_does_not_resolve_and_validate_says_it_again() {
    let server = Server::with("projects-validate", true, 2).await;
    let ann = server.example_lab("ann", None).await;
    let at = |path: &str| format!("/api/labs/ann{path}");
    // No file landed yet: the flows reading files resolve by name only.
    let fresh = server
        .ok_as("POST", &at("/pipeline/validate"), Some(&ann), json!({}))
        .await;
    assert!(fresh["unresolved"].is_null(), "{fresh}");
    assert!(
        !fresh["by_name_only"].as_array().unwrap().is_empty(),
        "{fresh}"
    );
    server
        .ok_as(
            "POST",
            &at("/landing/example"),
            Some(&ann),
            json!({"days": "1-2"}),
        )
        .await;
    server.run("ann", &ann).await;
    let landed = server
        .ok_as("POST", &at("/pipeline/validate"), Some(&ann), json!({}))
        .await;
    assert!(landed["unresolved"].is_null(), "{landed}");
    assert!(
        landed["by_name_only"].as_array().unwrap().is_empty(),
        "{landed}"
    );

    let uri = at(&format!("/pipeline/files/{SQL}"));
    let text = server.get_text(&uri, &ann).await;
    let typo = text.replacen("FROM silver_tickets", "FORM silver_tickets", 1);
    let saved = server.call(put(&uri, &ann, &typo)).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.json);
    let warned = &saved.json["validation"]["unresolved"];
    assert_eq!(warned["file"], SQL, "{}", saved.json);
    assert_eq!(
        warned["flow"], "gold_daily_account_status",
        "{}",
        saved.json
    );
    assert!(warned["line"].as_u64().unwrap() > 1, "{}", saved.json);
    assert_eq!(
        server.get_text(&uri, &ann).await,
        typo,
        "kept, with its warning"
    );

    let again = server
        .ok_as("POST", &at("/pipeline/validate"), Some(&ann), json!({}))
        .await;
    assert_eq!(again["unresolved"], *warned);
    let run = server
        .api("POST", &at("/runs?wait=true"), Some(&ann), json!({}))
        .await;
    let said = run.json.to_string();
    assert!(said.contains("does not resolve"), "{} {said}", run.status);
}
