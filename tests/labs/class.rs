//! A class in one step (issue "The classroom"): a pasted list of 30 (one name pasted twice, one
//! with no letter a lab name can hold, one with accents and an email) makes 30 labs and learner
//! tokens, each change of name said back; each token opens its own lab only; pasting the list
//! again with one more line makes only that lab; a learner cannot make a class.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::server::{INSTRUCTOR, Server};

/// Class `class` made by the instructor from `list`: the sheet the API answers.
async fn make_class(server: &Server, class: &str, list: &str) -> Value {
    let body = json!({"class": class, "list": list});
    server
        .ok_as("POST", "/api/classes", Some(INSTRUCTOR), body)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_list_of_30_makes_30_labs_each_opened_by_its_own_token_only() {
    let server = Server::new("classlab").await;
    let mut lines: Vec<String> = (1..=26).map(|i| format!("Student {i}")).collect();
    lines.push("Ann Lee".into());
    lines.push("Ann Lee".into());
    lines.push("李雷".into());
    lines.push("Zoë O'Brien, zoe@example.org".into());
    let list = format!("name,email\n{}\n", lines.join("\n"));
    let made = make_class(&server, "dp-2026", &list).await;
    let labs = made["labs"].as_array().unwrap();
    assert_eq!(labs.len(), 30, "{made}");
    let lab_of = |line: &str| -> Value {
        labs.iter()
            .find(|l| l["line"] == line)
            .cloned()
            .unwrap_or_else(|| panic!("no {line}: {made}"))
    };
    assert_eq!(lab_of("Ann Lee")["lab"], "ann-lee");
    assert_eq!(lab_of("Ann Lee (2)")["lab"], "ann-lee-2");
    assert!(
        lab_of("Ann Lee (2)")["note"]
            .as_str()
            .unwrap()
            .contains("again")
    );
    assert_eq!(lab_of("李雷")["lab"], "learner-1");
    let zoe = lab_of("Zoë O'Brien, zoe@example.org");
    assert_eq!(
        (zoe["lab"].as_str(), zoe["email"].as_str()),
        (Some("zoe-o-brien"), Some("zoe@example.org"))
    );
    let csv = made["csv"].as_str().unwrap();
    assert_eq!(csv.lines().count(), 31, "{csv}");
    assert!(csv.starts_with("name,email,lab,token\n"), "{csv}");
    // Each token opens its own lab, and no other.
    let (first, second) = (&labs[0], &labs[1]);
    let mine = format!("/api/labs/{}/runs", first["lab"].as_str().unwrap());
    let theirs = format!("/api/labs/{}/runs", second["lab"].as_str().unwrap());
    let token = first["token"].as_str().unwrap();
    assert_eq!(
        server
            .api("GET", &mine, Some(token), json!({}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        server
            .api("GET", &theirs, Some(token), json!({}))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    // Pasted again with one more line: only that line becomes a lab.
    let again = format!("{list}Sam Park\n");
    let more = make_class(&server, "dp-2026", &again).await;
    let labs = more["labs"].as_array().unwrap();
    assert_eq!(labs.len(), 1, "{more}");
    assert_eq!(labs[0]["lab"], "sam-park");
    assert_eq!(more["seen_before"].as_array().unwrap().len(), 30, "{more}");
    // A learner makes no class.
    let refused = server
        .api(
            "POST",
            "/api/classes",
            Some(token),
            json!({"class": "mine", "list": "Eve"}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
}

/// `reckon class create` at the shell, beside a running server on the same data folder: the
/// server serves the new labs with their tokens at once; a second list adds only its new
/// lines; a file that cannot be read is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_made_at_the_shell_is_served_by_the_running_server_at_once() {
    let server = Server::new("classcli").await;
    let file = server.lab.data().join("dp-cli.txt");
    let csv = server.lab.data().join("sheet.csv");
    std::fs::write(&file, "Ann Lee\nBob Roy, bob@example.org\n").unwrap();
    let args = |file: &std::path::Path| {
        vec![
            "class".to_string(),
            "create".into(),
            file.display().to_string(),
            "--csv".into(),
            csv.display().to_string(),
        ]
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        server.lab.reckon(&args)
    };
    let out = run(args(&file));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("class dp-cli: 2 lab(s) made"), "{said}");
    let sheet = std::fs::read_to_string(&csv).unwrap();
    let token = |lab: &str| -> String {
        let row = sheet
            .lines()
            .find(|l| l.contains(&format!(",{lab},")))
            .unwrap();
        row.rsplit(',').next().unwrap().to_string()
    };
    let ann = token("ann-lee");
    // The running server, which was not told, serves the lab with its token.
    let answer = server
        .api("GET", "/api/labs/ann-lee/freshness", Some(&ann), json!({}))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    let answer = server
        .api("GET", "/api/labs/bob-roy/freshness", Some(&ann), json!({}))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::FORBIDDEN,
        "Ann's token opens her lab only"
    );
    let board = server
        .ok_as(
            "GET",
            "/api/classes/dp-cli/progress",
            Some(INSTRUCTOR),
            json!({}),
        )
        .await;
    assert_eq!(board["labs"].as_array().unwrap().len(), 2, "{board}");
    // The list again with one more line: only that one is made.
    std::fs::write(&file, "Ann Lee\nBob Roy, bob@example.org\nCy\n").unwrap();
    let out = run(args(&file));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        said.contains("1 lab(s) made") && said.contains("cy\t"),
        "{said}"
    );
    assert_eq!(said.matches("has a lab already").count(), 2, "{said}");
    let labs = server
        .ok_as("GET", "/api/labs", Some(INSTRUCTOR), json!({}))
        .await;
    assert!(labs.to_string().contains("\"cy\""), "{labs}");
    // A list that cannot be read is named.
    let missing = server.lab.data().join("no-such-list.txt");
    let out = run(args(&missing));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-list.txt"));
}

/// A lost token replaced by the instructor (the old one opens nothing from then on), and a
/// class deleted only when the instructor confirms, having been told what goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_token_is_replaced_and_a_class_is_deleted_only_when_confirmed() {
    let server = Server::new("classops").await;
    let made = make_class(&server, "tiny", "Ann\nBob\n").await;
    let token = |lab: &str| -> String {
        let labs = made["labs"].as_array().unwrap();
        let row = labs.iter().find(|l| l["lab"] == lab).unwrap();
        row["token"].as_str().unwrap().to_string()
    };
    let (old, bob) = (token("ann"), token("bob"));
    let status = |answer: super::common::Answer| answer.status;
    let fresh = "/api/labs/ann/freshness";
    let replace = "/api/labs/ann/learner-token";
    assert_eq!(
        status(server.api("POST", replace, Some(&old), json!({})).await),
        StatusCode::FORBIDDEN,
        "a learner cannot replace tokens"
    );
    let new = server
        .ok_as("POST", replace, Some(INSTRUCTOR), json!({}))
        .await;
    let new = new["token"].as_str().unwrap().to_string();
    assert_eq!(
        status(server.api("GET", fresh, Some(&old), json!({})).await),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(server.api("GET", fresh, Some(&new), json!({})).await),
        StatusCode::OK
    );
    assert_eq!(
        status(
            server
                .api("GET", "/api/labs/bob/freshness", Some(&bob), json!({}))
                .await
        ),
        StatusCode::OK,
        "Bob's token is untouched"
    );
    // Deleting the class asks first, naming what goes; nothing goes meanwhile.
    let asked = server
        .api("DELETE", "/api/classes/tiny", Some(INSTRUCTOR), json!({}))
        .await;
    assert_eq!(asked.status, StatusCode::CONFLICT, "{}", asked.json);
    let said = asked.json.to_string();
    assert!(
        said.contains("ann") && said.contains("bob") && said.contains("confirm"),
        "{said}"
    );
    assert_eq!(
        status(server.api("GET", fresh, Some(&new), json!({})).await),
        StatusCode::OK
    );
    assert_eq!(
        status(
            server
                .api(
                    "DELETE",
                    "/api/classes/tiny?confirm=true",
                    Some(&new),
                    json!({})
                )
                .await
        ),
        StatusCode::FORBIDDEN
    );
    let deleted = server
        .ok_as(
            "DELETE",
            "/api/classes/tiny?confirm=true",
            Some(INSTRUCTOR),
            json!({}),
        )
        .await;
    assert_eq!(deleted, json!(["ann", "bob"]));
    assert_eq!(
        status(server.api("GET", fresh, Some(INSTRUCTOR), json!({})).await),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status(
            server
                .api(
                    "GET",
                    "/api/classes/tiny/progress",
                    Some(INSTRUCTOR),
                    json!({})
                )
                .await
        ),
        StatusCode::NOT_FOUND
    );
}

/// A class's viewer token opens its board and no lab; with names hidden, the board names no
/// one; the class deleted, the token opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_viewer_sees_the_board_only_and_names_only_if_the_instructor_allows() {
    let server = Server::new("classview").await;
    let made = make_class(&server, "seen", "Ann Lee\nBob Roy\n").await;
    let ann = made["labs"][0]["token"].as_str().unwrap().to_string();
    let mint = "/api/classes/seen/viewer-token";
    let answer = server
        .api("POST", mint, Some(&ann), json!({"hide_names": false}))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::FORBIDDEN,
        "a learner mints no class token"
    );
    let open = server
        .ok_as("POST", mint, Some(INSTRUCTOR), json!({"hide_names": false}))
        .await;
    let open = open["token"].as_str().unwrap().to_string();
    let board = "/api/classes/seen/progress";
    let seen = server.ok_as("GET", board, Some(&open), json!({})).await;
    let named: Vec<&str> = (seen["labs"].as_array().unwrap().iter())
        .map(|l| l["progress"]["lab"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["ann-lee", "bob-roy"], "{seen}");
    for uri in ["/api/labs/ann-lee/freshness", "/api/labs/ann-lee/progress"] {
        let answer = server.api("GET", uri, Some(&open), json!({})).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{uri}: {}",
            answer.json
        );
    }
    let listed = server
        .ok_as("GET", "/api/labs", Some(&open), json!({}))
        .await;
    assert_eq!(listed, json!([]), "a class viewer opens no lab");
    // Names hidden: for every viewer of the class, from now on.
    let hidden = server
        .ok_as("POST", mint, Some(INSTRUCTOR), json!({"hide_names": true}))
        .await;
    let hidden = hidden["token"].as_str().unwrap().to_string();
    for token in [&hidden, &open] {
        let seen = server.ok_as("GET", board, Some(token), json!({})).await;
        let text = seen.to_string();
        assert!(!text.contains("ann") && !text.contains("Ann"), "{text}");
        assert!(
            text.contains("learner 1") && text.contains("learner 2"),
            "{text}"
        );
    }
    let seen = server
        .ok_as("GET", board, Some(INSTRUCTOR), json!({}))
        .await;
    assert!(
        seen.to_string().contains("ann-lee"),
        "the instructor sees the names"
    );
    // The class deleted: its viewer tokens open nothing.
    server
        .ok_as(
            "DELETE",
            "/api/classes/seen?confirm=true",
            Some(INSTRUCTOR),
            json!({}),
        )
        .await;
    let answer = server.api("GET", board, Some(&hidden), json!({})).await;
    assert_ne!(answer.status, StatusCode::OK, "{}", answer.json);
}
