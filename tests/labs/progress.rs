//! The classroom's milestones (issue "The classroom"), each driven through the real pipeline
//! until it holds, and each read back with `reckon progress --json`: module 9 by playing the
//! course (the double count caught without dropping duplicates, then fixed by a replay with
//! them), week 14 by the support example (expectations, incremental loads, bad rows, SCD2 by
//! AUTO CDC) and a consumer group that resumes where it committed. Where a milestone must not
//! hold yet, it does not.

use std::collections::BTreeMap;

use super::common::TestLab;
use serde_json::Value;

/// The lab's milestones by id.
fn progress(lab: &TestLab) -> BTreeMap<String, Value> {
    lab.ok(&["progress", "--json"])
        .lines()
        .map(|l| {
            let m: Value = serde_json::from_str(l).unwrap();
            (m["id"].as_str().unwrap().to_string(), m)
        })
        .collect()
}

fn done(milestones: &BTreeMap<String, Value>, id: &str) -> bool {
    milestones[id]["done"].as_bool().unwrap()
}

#[test]
fn module_9_milestones_come_from_the_labs_own_runs_and_checks() {
    let lab = TestLab::new("progress-m9");
    let before = progress(&lab);
    assert!(before.values().all(|m| m["done"] == false), "{before:?}");
    assert_eq!(before.len(), 14);

    // The course played without dropping duplicates: built, the double count caught, 09:00
    // late; not fixed, and no clean check.
    let out = lab.reckon(&["play", "course", "--no-dedup"]);
    assert_eq!(out.status.code(), Some(1), "the check finds the PROBLEM");
    let m = progress(&lab);
    assert!(done(&m, "m9.built") && done(&m, "m9.double_caught") && done(&m, "m9.late_seen"));
    assert!(!done(&m, "m9.double_fixed"), "{:?}", m["m9.double_fixed"]);
    assert!(!done(&m, "m9.check_clean"), "{:?}", m["m9.check_clean"]);
    let caught = &m["m9.double_caught"];
    assert!(
        caught["evidence"].as_str().unwrap().contains("11:00"),
        "{caught}"
    );
    assert!(caught["run"].as_i64().is_some() && caught["since"].is_string());

    // Checked again without a replay: the hour still counts twice, nothing is fixed.
    let _ = lab.reckon(&["check"]);
    assert!(!done(&progress(&lab), "m9.double_fixed"));

    // Replayed from a new topic with duplicates dropped: fixed, by the clean check's run.
    lab.ok(&["play", "course"]);
    let m = progress(&lab);
    for id in ["m9.double_fixed", "m9.check_clean", "m9.replay"] {
        assert!(done(&m, id), "{id}: {:?}", m[id]);
    }
    let fixed = m["m9.double_fixed"]["run"].as_i64().unwrap();
    assert!(fixed > caught["run"].as_i64().unwrap());
    // Week 14's stay to do: this lab ran no declarative pipeline.
    assert!(!done(&m, "w14.expectations") && !done(&m, "w14.incremental"));
}

#[test]
fn week_14_milestones_come_from_the_projects_runs_tables_and_a_consumer_group() {
    let lab = TestLab::new("progress-w14");
    let dir = lab.data().join("support");
    let project = dir.to_str().unwrap();
    lab.ok(&["pipeline", "example", "support", project]);
    lab.ok(&["pipeline", "land", "support", "--days", "1-2"]);
    lab.ok(&["pipeline", "run", project]);
    let m = progress(&lab);
    assert!(done(&m, "w14.expectations"), "{:?}", m["w14.expectations"]);
    assert!(
        !done(&m, "w14.incremental"),
        "one run proves no incremental load"
    );
    assert!(!done(&m, "w14.bad_rows"));

    lab.ok(&["pipeline", "land", "support", "--days", "3-4"]);
    lab.ok(&["pipeline", "run", project]);
    let m = progress(&lab);
    let incremental = &m["w14.incremental"];
    assert!(done(&m, "w14.incremental"), "{incremental}");
    assert_eq!(incremental["run"], 2, "{incremental}");
    // Accounts changed on days 3-4: an SCD 2 version closed, and the run's check says the
    // history is right.
    assert!(done(&m, "w14.scd2"), "{:?}", m["w14.scd2"]);

    lab.ok(&["pipeline", "land", "support", "--bad-rows"]);
    lab.ok(&["pipeline", "run", project]);
    let m = progress(&lab);
    assert!(done(&m, "w14.bad_rows"), "{:?}", m["w14.bad_rows"]);
    assert!(!done(&m, "w14.triggered"), "every run was started by hand");

    // A consumer group: a read, more sent, the same group resumes at its commit.
    lab.send("1");
    lab.ok(&["consume", "--group", "demo", "--from-beginning", "--json"]);
    assert!(
        !done(&progress(&lab), "w14.kafka_offsets"),
        "nothing more sent yet"
    );
    lab.send("2");
    lab.ok(&["consume", "--group", "demo", "--json"]);
    let m = progress(&lab);
    assert!(
        done(&m, "w14.kafka_offsets"),
        "{:?}",
        m["w14.kafka_offsets"]
    );
}

/// The API: a lab's milestones for its learner and the instructor, no one else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labs_progress_is_its_learners_and_the_instructors_only() {
    let server = super::Server::new("progress-api").await;
    let ann = server
        .example_lab("ann", Some(serde_json::json!({"days": "1-2"})))
        .await;
    let bob = server.create_lab("bob").await;
    let uri_progress = || "/api/labs/ann/progress";
    let uri = uri_progress();
    for token in [&ann, &super::INSTRUCTOR.to_string()] {
        let answer = server
            .api("GET", uri, Some(token), serde_json::json!({}))
            .await;
        assert_eq!(answer.status, axum::http::StatusCode::OK, "{}", answer.json);
        assert_eq!(answer.json["lab"], "ann");
        let expectations = (answer.json["milestones"].as_array().unwrap().iter())
            .find(|m| m["id"] == "w14.expectations")
            .unwrap();
        assert_eq!(expectations["done"], true, "{expectations}");
        assert_eq!(expectations["course"], "week14");
        assert_eq!(answer.json["project"], "the week-14 example as given");
    }
    // The learner changes one line: the milestones stand, the project says so.
    let uri = "/api/labs/ann/pipeline/files/transformations/support.sql";
    let text = server.get_text(uri, &ann).await;
    let edited = text.replacen("CREATE OR REFRESH", "-- edited\nCREATE OR REFRESH", 1);
    let saved = server.put_text(uri, Some(&ann), &edited).await;
    assert_eq!(saved.status, axum::http::StatusCode::OK, "{}", saved.json);
    let answer = server
        .api("GET", uri_progress(), Some(&ann), serde_json::json!({}))
        .await;
    assert_eq!(
        answer.json["project"],
        "the week-14 example with 1 line(s) changed"
    );
    // The instructor accepts by hand what the evidence does not prove; done stays the
    // evidence's.
    let accept = "/api/labs/ann/progress/w14.triggered/accept";
    let note = serde_json::json!({"note": "scheduled on Databricks; shown in class"});
    let answer = server.api("POST", accept, Some(&ann), note.clone()).await;
    assert_eq!(
        answer.status,
        axum::http::StatusCode::FORBIDDEN,
        "{}",
        answer.json
    );
    let wrong = "/api/labs/ann/progress/w99.nothing/accept";
    let answer = (server.api("POST", wrong, Some(super::INSTRUCTOR), note.clone())).await;
    assert_eq!(answer.status, axum::http::StatusCode::BAD_REQUEST);
    assert!(
        answer.json.to_string().contains("milestone"),
        "{}",
        answer.json
    );
    let blank = serde_json::json!({"note": " "});
    let answer = server
        .api("POST", accept, Some(super::INSTRUCTOR), blank)
        .await;
    assert!(answer.json.to_string().contains("note"), "{}", answer.json);
    let accepted = server
        .ok_as("POST", accept, Some(super::INSTRUCTOR), note)
        .await;
    let triggered = (accepted["milestones"].as_array().unwrap().iter())
        .find(|m| m["id"] == "w14.triggered")
        .unwrap();
    assert_eq!(triggered["done"], false, "{triggered}");
    assert_eq!(
        triggered["accepted"]["note"],
        "scheduled on Databricks; shown in class"
    );
    let answer = server
        .api("GET", uri, Some(&bob), serde_json::json!({}))
        .await;
    assert_eq!(
        answer.status,
        axum::http::StatusCode::FORBIDDEN,
        "{}",
        answer.json
    );
    let answer = server.api("GET", uri, None, serde_json::json!({})).await;
    assert_eq!(answer.status, axum::http::StatusCode::UNAUTHORIZED);
}

/// The writing tasks through the API: saved with their time, bounded, of known tasks only, by
/// the lab's learner only; the note and the check count once long enough.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_tasks_are_saved_bounded_and_prove_their_milestones() {
    use axum::http::StatusCode;
    let server = super::Server::new("progress-writing").await;
    let ann = server.create_lab("ann").await;
    let viewer = server
        .ok(
            "POST",
            "/api/labs/ann/viewer-token",
            &ann,
            serde_json::json!({}),
        )
        .await;
    let viewer = viewer["token"].as_str().unwrap().to_string();
    let put = |task: &str, text: String, token: String| {
        let uri = format!("/api/labs/ann/writing/{task}");
        let server = &server;
        async move { server.put_text(&uri, Some(&token), &text).await }
    };
    let words = |n: usize| vec!["word"; n].join(" ");
    let note_done = || async {
        let answer = server
            .api(
                "GET",
                "/api/labs/ann/progress",
                Some(&ann),
                serde_json::json!({}),
            )
            .await;
        let all = answer.json["milestones"].as_array().unwrap().clone();
        let of = |id: &str| all.iter().find(|m| m["id"] == id).unwrap()["done"] == true;
        (of("w14.note"), of("w14.check"))
    };
    let saved = put("note", words(99), ann.clone()).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.json);
    assert!(saved.json["at"].is_string());
    assert_eq!(
        note_done().await,
        (false, false),
        "99 words are not a note yet"
    );
    let saved = put("note", format!("{} Kafka", words(99)), ann.clone()).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.json);
    assert_eq!(note_done().await.0, true);
    for task in ["check.1", "check.2", "check.3", "check.4", "check.5"] {
        put(task, words(10), ann.clone()).await;
    }
    assert_eq!(note_done().await.1, false, "the teach-back is missing");
    put("teachback", words(12), ann.clone()).await;
    assert_eq!(note_done().await.1, true);
    // The newest text of each, with the prompt.
    let all = server
        .ok_as(
            "GET",
            "/api/labs/ann/writing",
            Some(&viewer),
            serde_json::json!({}),
        )
        .await;
    let note = (all.as_array().unwrap().iter())
        .find(|w| w["task"] == "note")
        .unwrap();
    assert!(note["text"].as_str().unwrap().ends_with("Kafka"), "{note}");
    assert!(note["prompt"].as_str().unwrap().contains("director"));
    // Refused: an unknown task, a text over the bound, a viewer's save; nothing changes.
    let answer = put("essay", words(3), ann.clone()).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    assert!(answer.json.to_string().contains("task"), "{}", answer.json);
    let answer = put("note", "x".repeat(20_001), ann.clone()).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    assert!(answer.json.to_string().contains("text"), "{}", answer.json);
    let answer = put("note", words(150), viewer.clone()).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.json);
    let again = server
        .ok_as(
            "GET",
            "/api/labs/ann/writing",
            Some(&ann),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(again, all);
}
