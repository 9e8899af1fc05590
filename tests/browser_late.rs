//! The late ledger and the check of module 9 written in SQL, and the classroom (a class, its
//! board, a learner's checklist and writing), in a real browser (headless
//! chromium): a learner starts the shop example in a shared lab, sends the course's batches and
//! runs; the Late rows page names order 1006, which came after its hour was written, with its
//! window, the watermark then and the run that read it; Reconciliation shows each hour beside
//! all its events with the course check's verdicts (09:00 late, 10:00 ok) and every table's
//! line; a viewer of the lab reads the same pages.
//! The API answers the same ledger, and refuses a table that is not windowed naming the field.
//!
//! Needs the built site (`scripts/build-site.sh`, which `make test` runs first) for hydration.

mod common;

#[path = "support/browser.rs"]
mod browser;

use browser::{Browser, clear_artifacts, serve_shared, sign_in, sign_in_instead};
use common::TestLab;
use serde_json::{Value, json};

const INSTRUCTOR: &str = "instructor-token-for-late-rows";

async fn call(base: &str, token: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = format!("{base}{path}");
    let request = match method {
        "GET" => client.get(url),
        _ => client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string()),
    };
    let answer = request.bearer_auth(token).send().await.unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_late_rows_of_module_9_written_in_sql_are_shown_to_a_learner_and_a_viewer() {
    clear_artifacts(|name| name.starts_with("late-"));
    let lab = TestLab::new("browser-late");
    let (base, _server) = serve_shared(&lab, INSTRUCTOR).await;
    let (_, made) = call(
        &base,
        INSTRUCTOR,
        "POST",
        "/api/labs",
        json!({"name": "lee"}),
    )
    .await;
    let learner = made["token"].as_str().unwrap().to_string();
    let (status, _) = call(
        &base,
        &learner,
        "POST",
        "/api/labs/lee/pipeline/example?example=shop",
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    // The learner's recount job: all placed orders per hour, late ones too (PIPELINES §9).
    let job = "\nCREATE OR REFRESH MATERIALIZED VIEW all_hours\n\
               TBLPROPERTIES ('reckon.recountOf' = 'hourly_sales')\n\
               AS SELECT date_trunc('hour', event_time) AS hour, count(*) AS orders, sum(amount) AS revenue\n\
               FROM (SELECT DISTINCT order_id, event_time, amount FROM bronze_orders WHERE status = 'placed')\n\
               GROUP BY 1;\n";
    let client = reqwest::Client::new();
    let url = format!("{base}/api/labs/lee/pipeline/files/transformations/recount.sql");
    let saved = client
        .put(&url)
        .bearer_auth(&learner)
        .body(format!("-- the recount job{job}"))
        .send()
        .await
        .unwrap();
    assert!(
        saved.status().is_success(),
        "{}",
        saved.text().await.unwrap()
    );
    for batch in ["1", "2", "3", "3", "4", "5"] {
        let sent = json!({"scenario": "course", "batch": batch});
        let (status, answer) = call(
            &base,
            &learner,
            "POST",
            "/api/labs/lee/produce?and_run=true",
            sent,
        )
        .await;
        assert_eq!(status, 200, "{answer}");
    }
    let (status, ledger) = call(
        &base,
        &learner,
        "GET",
        "/api/labs/lee/late?table=hourly_sales",
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{ledger}");
    let rows = ledger["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{ledger}");
    assert!(
        rows[0]["row"].as_str().unwrap().contains("order_id 1006"),
        "{ledger}"
    );
    assert_eq!(rows[0]["window_start"], "2026-10-01T09:00:00Z", "{ledger}");
    let (status, refused) = call(
        &base,
        &learner,
        "GET",
        "/api/labs/lee/late?table=orders",
        json!({}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("table"), "{refused}");

    let browser = Browser::start().await;
    sign_in(&browser, &base, &learner, "/labs/lee").await;
    for (who, width) in [("learner", 1280), ("learner-phone", 400)] {
        browser.resize(width, 1000).await;
        browser.open(&format!("{base}/labs/lee/late")).await;
        let row = browser.wait_for("table.late-rows tbody tr").await;
        let text = browser.text(&row).await;
        assert!(text.contains("order_id 1006"), "{text}");
        assert!(
            text.contains("2026-10-01 09:00 to 2026-10-01 10:00"),
            "{text}"
        );
        browser.screenshot(&format!("late-{who}")).await;
    }
    // Reconciliation: each hour beside all its events, with the course check's verdicts.
    for (who, width) in [("learner", 1280), ("learner-phone", 400)] {
        browser.resize(width, 1000).await;
        browser.open(&format!("{base}/labs/lee/hours")).await;
        let late = browser
            .wait_for("tr.window[data-window='2026-10-01T09:00:00Z']")
            .await;
        assert_eq!(
            browser.attribute(&late, "data-verdict").await.as_deref(),
            Some("late")
        );
        let text = browser.text(&late).await;
        assert!(text.contains("orders 3, revenue 68.50"), "{text}");
        assert!(text.contains("orders 4, revenue 90.50"), "{text}");
        assert!(text.contains("order_id 1006"), "{text}");
        // The recount job counts order 1006 in 09:00: 4 orders, 90.50.
        let job = browser
            .text(
                &browser
                    .wait_for("tr.window[data-window='2026-10-01T09:00:00Z'] td.recount-job")
                    .await,
            )
            .await;
        assert!(job.contains("orders 4, revenue 90.50 (all_hours)"), "{job}");
        let ok = browser
            .wait_for("tr.window[data-window='2026-10-01T10:00:00Z']")
            .await;
        assert_eq!(
            browser.attribute(&ok, "data-verdict").await.as_deref(),
            Some("ok")
        );
        let lines = browser.wait_for("ul.check-lines").await;
        let text = browser.text(&lines).await;
        assert!(
            text.contains("bronze_orders: 11 rows read, 11 kept"),
            "{text}"
        );
        browser
            .screenshot(&format!("late-reconciliation-{who}"))
            .await;
    }
    browser.resize(1280, 1000).await;
    let (_, viewer) = call(
        &base,
        &learner,
        "POST",
        "/api/labs/lee/viewer-token",
        json!({}),
    )
    .await;
    sign_in_instead(
        &browser,
        &base,
        viewer["token"].as_str().unwrap(),
        "/labs/lee",
    )
    .await;
    browser.open(&format!("{base}/labs/lee/late")).await;
    let row = browser.wait_for("table.late-rows tbody tr").await;
    assert!(browser.text(&row).await.contains("order_id 1006"));
    browser.screenshot("late-viewer").await;
    browser.open(&format!("{base}/labs/lee/hours")).await;
    let late = browser
        .wait_for("tr.window[data-window='2026-10-01T09:00:00Z']")
        .await;
    assert_eq!(
        browser.attribute(&late, "data-verdict").await.as_deref(),
        Some("late")
    );
    browser.screenshot("late-reconciliation-viewer").await;
}

/// A class made on the labs page from a pasted list: the sheet shows each lab and its token
/// once; the board marks what each lab did, and a learner sees her own row as a checklist.
/// Screenshots go to `artifacts/screenshots/class-*.png`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instructor_makes_a_class_from_a_pasted_list_and_sees_the_sheet_once() {
    clear_artifacts(|name| name.starts_with("class-"));
    let lab = TestLab::new("browser-class");
    let (base, _server) = serve_shared(&lab, INSTRUCTOR).await;
    let browser = Browser::start().await;
    sign_in(&browser, &base, INSTRUCTOR, "/labs").await;
    browser.open(&format!("{base}/labs")).await;
    let class = browser
        .wait_for(".create-class-form input[name='class']")
        .await;
    browser.type_into(&class, "dp-2026").await;
    let list = browser
        .wait_for(".create-class-form textarea[name='list']")
        .await;
    browser
        .type_into(&list, "Ann Lee\nAnn Lee\nZoë O'Brien, zoe@example.org\n")
        .await;
    let submit = browser
        .wait_for(".create-class-form button[type='submit']")
        .await;
    browser.click(&submit).await;
    let sheet = browser.wait_for(".class-sheet table.tokens").await;
    let text = browser.text(&sheet).await;
    for lab in ["ann-lee", "ann-lee-2", "zoe-o-brien"] {
        assert!(text.contains(lab), "{lab}: {text}");
    }
    assert!(
        browser
            .find(".class-sheet a[download='dp-2026-tokens.csv']")
            .await
            .is_some()
    );
    let show = "document.querySelector('.class-sheet').scrollIntoView()";
    browser
        .call("POST", "/execute/sync", json!({"script": show, "args": []}))
        .await;
    browser.screenshot("class-sheet").await;
    let ann_token = browser
        .text(
            &browser
                .wait_for(".class-sheet tr[data-lab='ann-lee'] code.token")
                .await,
        )
        .await;
    // Shown once: the page opened again shows no token.
    browser.open(&format!("{base}/labs")).await;
    browser.wait_for("table.labs").await;
    assert!(browser.find(".class-sheet").await.is_none());

    // Ann's lab runs the week-14 example: the board marks her milestone, with the class's share.
    for (method, path, body) in [
        ("POST", "/pipeline/example", json!({})),
        ("POST", "/landing/example", json!({"days": "1-2"})),
        ("POST", "/runs?wait=true", json!({})),
    ] {
        let (status, answer) = call(
            &base,
            &ann_token,
            method,
            &format!("/api/labs/ann-lee{path}"),
            body,
        )
        .await;
        assert!(status < 300, "{path}: {status} {answer}");
    }
    browser.open(&format!("{base}/classes/dp-2026")).await;
    browser
        .wait_for("tr[data-lab='ann-lee'] td.done[data-milestone='w14.expectations'] a")
        .await;
    assert!(
        browser
            .find("tr[data-lab='zoe-o-brien'] td.done")
            .await
            .is_none(),
        "Zoë did nothing yet"
    );
    assert!(
        browser
            .find("tr[data-lab='ann-lee'] td.done[data-milestone='m9.check_clean']")
            .await
            .is_none(),
        "a clean check of week 14's tables is not module 9's"
    );
    let share = browser
        .text(
            &browser
                .wait_for("tfoot td.share[data-milestone='w14.expectations']")
                .await,
        )
        .await;
    assert!(share.starts_with("1 of 3"), "{share}");
    assert!(browser.find("a[download='dp-2026.csv']").await.is_some());
    browser.screenshot("class-board").await;
    // A lost token replaced from the board: shown once, beside the lab.
    let replace = browser
        .wait_for(".replace-token-form[data-lab='zoe-o-brien'] button")
        .await;
    browser.click(&replace).await;
    let new = browser.wait_text("code.new-token").await;
    assert!(new.contains('.'), "{new}");
    // Deleting the class asks first, naming its labs; nothing is deleted.
    let delete = browser.wait_for(".delete-class-form button").await;
    browser.click(&delete).await;
    let said = browser.wait_text(".delete-class .error").await;
    assert!(
        said.contains("ann-lee") && said.contains("confirm"),
        "{said}"
    );
    let (status, _) = call(
        &base,
        &ann_token,
        "GET",
        "/api/labs/ann-lee/freshness",
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "nothing was deleted");
    browser
        .open(&format!("{base}/classes/dp-2026?course=week14"))
        .await;
    browser.wait_for("table.board").await;
    assert!(
        browser
            .find("th[data-milestone='m9.built']")
            .await
            .is_none()
    );
    browser.resize(390, 844).await;
    browser.screenshot("class-board-phone").await;

    // Ann sees her own row as a checklist on her lab's home page; the board is not hers.
    sign_in_instead(&browser, &base, &ann_token, "/labs/ann-lee").await;
    browser
        .wait_for(".checklist li.done[data-milestone='w14.expectations'] a")
        .await;
    browser
        .wait_for(".checklist li.todo[data-milestone='w14.bad_rows'] .how")
        .await;
    let show = "document.querySelector('.checklist').scrollIntoView()";
    browser
        .call("POST", "/execute/sync", json!({"script": show, "args": []}))
        .await;
    browser.screenshot("class-checklist-phone").await;
    browser.resize(1280, 1000).await;
    browser.open(&format!("{base}/labs/ann-lee")).await;
    browser.wait_for(".checklist li.done").await;
    browser
        .call("POST", "/execute/sync", json!({"script": show, "args": []}))
        .await;
    browser.screenshot("class-checklist").await;
    let (status, _) = call(
        &base,
        &ann_token,
        "GET",
        "/api/classes/dp-2026/progress",
        json!({}),
    )
    .await;
    assert_eq!(status, 403, "a learner does not see the class's board");
}

/// The writing page: the note's words counted and its jargon marked as the learner types, the
/// lab's cost figures offered as facts; saved, it proves the milestone on her checklist.
/// Screenshots go to `artifacts/screenshots/writing-*.png`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_writes_the_director_note_with_jargon_marked_as_she_types() {
    clear_artifacts(|name| name.starts_with("writing-"));
    let lab = TestLab::new("browser-writing");
    let (base, _server) = serve_shared(&lab, INSTRUCTOR).await;
    let (status, made) = call(
        &base,
        INSTRUCTOR,
        "POST",
        "/api/labs",
        json!({"name": "kim"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let token = made["token"].as_str().unwrap().to_string();
    let browser = Browser::start().await;
    sign_in(&browser, &base, &token, "/labs/kim").await;
    browser.open(&format!("{base}/labs/kim/writing")).await;
    let note = browser
        .wait_for("section.writing[data-task='note'] textarea")
        .await;
    let words = "Hourly dashboards are cheap and good enough for most decisions. ".repeat(10);
    browser
        .type_into(
            &note,
            &format!("{words}Real-time needs a Kafka stream and a watermark."),
        )
        .await;
    browser
        .wait_until(
            "the live count and the jargon",
            "const s = document.querySelector(\"section.writing[data-task='note']\");
             return s.querySelector('.words').textContent === '108'
                 && s.querySelector(\"mark[data-word='kafka']\") !== null
                 && s.querySelector(\"mark[data-word='watermark']\") !== null;",
        )
        .await;
    let show = "document.querySelector(\"section.writing[data-task='note']\").scrollIntoView()";
    browser
        .call("POST", "/execute/sync", json!({"script": show, "args": []}))
        .await;
    browser.screenshot("writing-note").await;
    let save = browser
        .wait_for("section.writing[data-task='note'] button[type='submit']")
        .await;
    browser.click(&save).await;
    browser
        .wait_for("section.writing[data-task='note'] .outcome.succeeded")
        .await;
    browser.resize(390, 844).await;
    browser
        .call("POST", "/execute/sync", json!({"script": show, "args": []}))
        .await;
    browser.screenshot("writing-note-phone").await;
    browser.resize(1280, 1000).await;
    browser.open(&format!("{base}/labs/kim")).await;
    browser
        .wait_for(".checklist li.done[data-milestone='w14.note']")
        .await;
}
