//! A learner's run cannot hurt the server: it goes in a process of its own with hard limits.
//! A query that would overflow a stack, one that takes all the memory, one that never ends and
//! one the learner cancels each end that run with its reason; the server answers throughout, and
//! the lab's next run goes on as after a crash.

use reckon::config::{RunLimits, Serving};

use super::*;

const SQL: &str = "transformations/support.sql";

/// A cross join of a million rows each: hours of work.
const SLOW: &str = "CREATE MATERIALIZED VIEW slow AS SELECT sum(a * b) AS s \
    FROM (SELECT unnest(range(1000000)) AS a) x, (SELECT unnest(range(1000000)) AS b) y;\n";

/// A view computed at once.
const SMALL: &str = "CREATE MATERIALIZED VIEW small AS SELECT 1 AS one;\n";

/// A server whose runs may take `limits`, and a learner's lab `ann` holding a project.
async fn lab_with(name: &str, limits: RunLimits) -> (Server, String) {
    let server = Server::with_config(
        name,
        Serving {
            instructor_token: Some(INSTRUCTOR.into()),
            max_runs: 2,
            run_limits: limits,
            ..Default::default()
        },
    )
    .await;
    let ann = server.create_lab("ann").await;
    let example = "/api/labs/ann/pipeline/example";
    server.ok_as("POST", example, Some(&ann), json!({})).await;
    (server, ann)
}

/// Saves `sql` as the project's one SQL file.
async fn save(server: &Server, ann: &str, sql: &str) -> common::Answer {
    let uri = format!("/api/labs/ann/pipeline/files/{SQL}");
    server.put_text(&uri, Some(ann), sql).await
}

/// Runs the lab's project, waiting for its end: (status, error).
async fn run(server: &Server, ann: &str) -> (String, String) {
    let run = server
        .ok("POST", "/api/labs/ann/runs?wait=true", ann, json!({}))
        .await;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (text(&run["status"]), text(&run["error"]))
}

/// Runs the lab's project and insists it succeeds.
async fn succeeds(server: &Server, ann: &str) {
    assert_eq!(run(server, ann).await, ("succeeded".into(), String::new()));
}

/// The lab's runs, newest first.
async fn history(server: &Server, ann: &str) -> Value {
    server.ok("GET", "/api/labs/ann/runs", ann, json!({})).await
}

/// The server still answers a page read.
async fn answers(server: &Server, ann: &str) {
    let runs = server
        .api("GET", "/api/labs/ann/runs", Some(ann), json!({}))
        .await;
    assert_eq!(runs.status, StatusCode::OK, "{}", runs.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_expression_runs_and_one_past_the_limit_is_refused_at_save() {
    let (server, ann) = lab_with("deep", RunLimits::DEFAULT).await;
    // 1,990 terms: deeper than a 2 MiB stack took (the server aborted at 500), within the limit.
    let deep = format!(
        "CREATE MATERIALIZED VIEW deep AS SELECT {} AS v;\n",
        vec!["1"; 1990].join(" + ")
    );
    save(&server, &ann, &deep)
        .await
        .ok("a deep expression within the limit");
    succeeds(&server, &ann).await;
    // 30,000 terms (60 KB): refused where it passes the limit, the file left as it was.
    let deeper = format!(
        "-- the sum\nCREATE MATERIALIZED VIEW deep AS SELECT {} AS v;\n",
        vec!["1"; 30_000].join("+")
    );
    let refused = save(&server, &ann, &deeper).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert_eq!(refused.json["line"], 2, "{}", refused.json);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap()
            .contains("deeper than 2000"),
        "{}",
        refused.json
    );
    answers(&server, &ann).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_time_or_memory_is_stopped_and_the_next_run_goes_on() {
    let limits = RunLimits {
        wall: Duration::from_secs(4),
        resident: 512 << 20,
        ..RunLimits::DEFAULT
    };
    let (server, ann) = lab_with("bounded", limits).await;
    save(&server, &ann, SLOW).await.ok("a slow query");
    let started = std::time::Instant::now();
    let (status, error) = run(&server, &ann).await;
    assert_eq!(status, "failed", "{error}");
    assert!(error.contains("passed 4 s"), "{error}");
    assert_eq!(
        warm_pid(&server),
        None,
        "a stopped run's process is not kept"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    answers(&server, &ann).await;
    // One row of 300 million numbers: gigabytes.
    let big = "CREATE MATERIALIZED VIEW big AS SELECT cardinality(range(1, 300000000)) AS n;\n";
    save(&server, &ann, big)
        .await
        .ok("a query that takes all the memory");
    let (status, error) = run(&server, &ann).await;
    assert_eq!(status, "failed", "{error}");
    assert!(error.contains("memory passed 512 MiB"), "{error}");
    // The run after them: a small view, computed.
    save(&server, &ann, SMALL).await.ok("a small view");
    succeeds(&server, &ann).await;
    assert!(warm_pid(&server).is_some(), "a good run's process is kept");
    let runs = history(&server, &ann).await;
    let statuses: Vec<&str> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["succeeded", "failed", "failed"], "{runs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_cancels_a_run_and_it_ends_at_once() {
    let (server, ann) = lab_with("cancel", RunLimits::DEFAULT).await;
    save(&server, &ann, SLOW).await.ok("a slow query");
    let started = server
        .ok("POST", "/api/labs/ann/runs", &ann, json!({}))
        .await;
    let id = started["id"].as_i64().unwrap();
    // Nothing to cancel in another lab; this one's run stops.
    let cancelled = server
        .ok("POST", "/api/labs/ann/runs/cancel", &ann, json!({}))
        .await;
    assert_eq!(cancelled["cancelled"], true);
    let at = std::time::Instant::now();
    loop {
        let run = server
            .ok("GET", &format!("/api/labs/ann/runs/{id}"), &ann, json!({}))
            .await;
        if run["status"] != "running" {
            assert_eq!(run["status"], "canceled", "{run}");
            break;
        }
        assert!(
            at.elapsed() < Duration::from_secs(10),
            "still running: {run}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    save(&server, &ann, SMALL).await.ok("a small view");
    succeeds(&server, &ann).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_by_a_crash_is_recorded_so_before_the_next_run() {
    let (server, ann) = lab_with("crashed", RunLimits::DEFAULT).await;
    save(&server, &ann, SMALL).await.ok("a small view");
    // A command-line run of the lab that dies mid-way: its record says running.
    let project = server.folder("ann").join("project");
    let project = project.to_str().unwrap();
    let args = [
        "--lab",
        "ann",
        "--crash-at",
        "small:after-read",
        "pipeline",
        "run",
        project,
    ];
    let out = server.lab.reckon(&args);
    assert!(!out.status.success(), "no crash: {}", common::stdout(&out));
    let runs = history(&server, &ann).await;
    assert_eq!(runs["runs"][0]["status"], "running", "{runs}");
    // The next run finds the lab's lock free: the cut run is recorded as ended by a crash.
    succeeds(&server, &ann).await;
    let runs = history(&server, &ann).await;
    let cut = &runs["runs"][1];
    assert_eq!(cut["status"], "failed", "{runs}");
    assert!(
        cut["error"].as_str().unwrap().contains("ended by a crash"),
        "{runs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_name_that_is_a_path_is_bad_input_not_a_server_error() {
    let (server, ann) = lab_with("history-path", RunLimits::DEFAULT).await;
    let uri = "/api/labs/ann/pipeline/history?table=../x&key=1";
    let answer = server.api("GET", uri, Some(&ann), json!({})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    assert_eq!(answer.json["field"], "table", "{}", answer.json);
    assert!(!answer.json.to_string().contains("/tmp"), "{}", answer.json);
}

/// The lab's run process, kept between runs, if any.
fn warm_pid(server: &Server) -> Option<u32> {
    server.state.labs.get("ann").and_then(|d| d.warm_pid())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labs_run_process_is_kept_between_runs_and_sees_what_others_wrote() {
    let (server, ann) = lab_with("warm", RunLimits::DEFAULT).await;
    save(&server, &ann, SMALL).await.ok("a small view");
    succeeds(&server, &ann).await;
    let first = warm_pid(&server).expect("the run's process is kept after a good run");
    succeeds(&server, &ann).await;
    assert_eq!(warm_pid(&server), Some(first), "the same process ran again");
    // A command-line run between two of the server's: the kept process reads what it wrote.
    let view = "CREATE MATERIALIZED VIEW small AS SELECT 2 AS one;\n";
    save(&server, &ann, view).await.ok("the view changed");
    let project = server.folder("ann").join("project");
    server
        .lab
        .ok(&["--lab", "ann", "pipeline", "run", project.to_str().unwrap()]);
    succeeds(&server, &ann).await;
    assert_eq!(warm_pid(&server), Some(first));
    let rows = server.lab.ok(&["--lab", "ann", "table", "small", "--json"]);
    assert!(rows.contains("\"one\":2"), "{rows}");
    // A reset ends it; the run after starts another, which keeps the history going.
    server
        .ok("POST", "/api/labs/ann/reset", &ann, json!({}))
        .await;
    assert_eq!(warm_pid(&server), None, "a reset ends the kept process");
    succeeds(&server, &ann).await;
    let second = warm_pid(&server).expect("kept again");
    assert_ne!(second, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_reads_the_project_in_a_child_within_the_limits_and_sweeps_crashed_saves() {
    let (server, ann) = lab_with("save-child", RunLimits::DEFAULT).await;
    // A crashed save's scratch folder, an hour old, and one of a save under way.
    let lab = server.folder("ann");
    let (crashed, current) = (lab.join(".project-checkAbC"), lab.join(".project-checkXyZ"));
    for dir in [&crashed, &current] {
        std::fs::create_dir_all(dir.join("transformations")).unwrap();
    }
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&crashed)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    save(&server, &ann, SMALL).await.ok("a small view");
    assert!(!crashed.exists(), "a crashed save's folder is left");
    assert!(current.exists(), "a save under way lost its folder");
    // A server whose runs get 64 MiB of private memory: too little for the reading process's
    // 512 MiB stack, so the save is refused with why, and the file stays as it was.
    let (tight, bob) = lab_with(
        "save-child-tight",
        RunLimits {
            data: 64 << 20,
            ..RunLimits::DEFAULT
        },
    )
    .await;
    let before = std::fs::read_to_string(tight.folder("ann").join("project").join(SQL)).unwrap();
    let refused = save(&tight, &bob, SMALL).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap()
            .contains("could not start its thread"),
        "{}",
        refused.json
    );
    let after = std::fs::read_to_string(tight.folder("ann").join("project").join(SQL)).unwrap();
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_cell_is_shown_cut_and_the_page_stays_small() {
    let (server, ann) = lab_with("huge-cell", RunLimits::DEFAULT).await;
    let sql = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('landing/big', format => 'json');\n";
    save(&server, &ann, sql).await.ok("a streaming table");
    let landing = server.folder("ann").join("landing/big");
    std::fs::create_dir_all(&landing).unwrap();
    // One 8 MiB line, and a small one.
    let line = format!(
        "{{\"id\": 1, \"note\": \"{}\"}}\n{{\"id\": 2, \"note\": \"small\"}}\n",
        "x".repeat(8 << 20)
    );
    std::fs::write(landing.join("a.json"), line).unwrap();
    succeeds(&server, &ann).await;
    let request = Request::post("/fn/table")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {ann}"))
        .body(Body::from("lab=ann&name=raw"))
        .unwrap();
    let answer = server.call(request).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    let text = answer.json.to_string();
    assert!(text.len() < 64 << 10, "the page holds {} bytes", text.len());
    let rows = answer.json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{text:.2000}");
    let cells: Vec<&str> = rows
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .filter_map(|c| c.as_str())
        .collect();
    let cut = cells
        .iter()
        .find(|c| c.starts_with("xxx"))
        .expect("the cell");
    assert_eq!(
        cut.chars().count(),
        reckon::service::pages::tables::CELL_SHOWN + 1
    );
    assert!(cut.ends_with('…'));
    assert!(cells.contains(&"small"), "{cells:?}");
}
