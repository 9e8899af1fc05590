//! A class in one step (issue "The classroom"): a pasted list of 30 (one name pasted twice, one
//! with no letter a lab name can hold, one with accents and an email) makes 30 labs and learner
//! tokens, each change of name said back; each token opens its own lab only; pasting the list
//! again with one more line makes only that lab; a learner cannot make a class.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::server::{INSTRUCTOR, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_list_of_30_makes_30_labs_each_opened_by_its_own_token_only() {
    let server = Server::new("classlab").await;
    let mut lines: Vec<String> = (1..=26).map(|i| format!("Student {i}")).collect();
    lines.push("Ann Lee".into());
    lines.push("Ann Lee".into());
    lines.push("李雷".into());
    lines.push("Zoë O'Brien, zoe@example.org".into());
    let list = format!("name,email\n{}\n", lines.join("\n"));
    let made = server
        .ok_as(
            "POST",
            "/api/classes",
            Some(INSTRUCTOR),
            json!({"class": "dp-2026", "list": list}),
        )
        .await;
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
    let more = server
        .ok_as(
            "POST",
            "/api/classes",
            Some(INSTRUCTOR),
            json!({"class": "dp-2026", "list": again}),
        )
        .await;
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
