//! Week 14's guided lab in a real browser (headless chromium through chromedriver), as a learner
//! in a shared lab does it with no shell: start from the example, land days 1-30, run, study the
//! graph; land 31-35, run, see which run read which file; land the bad rows, run, find them on
//! the data-quality page under their rule with their file and line. A bad edit is refused at
//! its line, an upload named `../x.json` is refused, and a viewer is offered no editor, upload
//! or run. A screenshot of each page goes to `artifacts/screenshots/week14-*.png`.
//!
//! Needs the built site (`scripts/build-site.sh`, which `make test` runs first) for hydration.

mod common;

#[path = "support/browser.rs"]
mod browser;

#[path = "browser_pipeline/python.rs"]
mod python;
#[path = "support/week14.rs"]
mod week14;

use browser::{clear_artifacts, sign_in_instead};
use common::TestLab;
use serde_json::json;
use week14::{Api, land, land_bad_rows_and_run, run, sam_signed_in};

const INSTRUCTOR: &str = "instructor-token-for-week-14";
const SQL: &str = "transformations/support.sql";

/// This binary's screenshots (both tests clear them once, whichever starts first).
fn week14_screenshot(name: &str) -> bool {
    name.starts_with("week14-") || name.starts_with("python-")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_does_week_14_in_the_browser_and_a_viewer_only_looks() {
    clear_artifacts(week14_screenshot);
    let lab = TestLab::new("browser-week14");
    let (base, server, api, browser) = sam_signed_in(&lab, INSTRUCTOR).await;

    // The code page: start from the example.
    browser.open(&format!("{base}/labs/sam/code")).await;
    let start = browser
        .wait_for(".switch-form[data-switch='project'] button")
        .await;
    browser.click(&start).await;
    let editor = format!("textarea[data-file='{SQL}']");
    browser.wait_for(&editor).await;
    browser.wait_for(".editor.live .highlight .kw").await;
    browser.screenshot("week14-code").await;

    // A bad edit is refused at its line, and the file is kept as it was.
    let before = api
        .call(
            "GET",
            &format!("/api/labs/sam/pipeline/files/{SQL}"),
            json!({}),
        )
        .await;
    let before = before.as_str().unwrap().to_string();
    let broken = before.replacen(
        "FROM STREAM(bronze_tickets)",
        "FROM STREAM(bronze_tickes)",
        1,
    );
    let line = broken
        .lines()
        .position(|l| l.contains("bronze_tickes"))
        .unwrap()
        + 1;
    browser
        .call(
            "POST",
            "/execute/sync",
            json!({"script": format!(
                "const t = document.querySelector(\"{editor}\");
                 t.value = arguments[0];
                 t.dispatchEvent(new Event('input', {{bubbles: true}}));
                 return true;"
            ), "args": [broken]}),
        )
        .await;
    let save = browser
        .wait_for(&format!(
            ".save-form[data-file='{SQL}'] button[type='submit']"
        ))
        .await;
    browser.click(&save).await;
    let error = browser
        .wait_for(&format!(".code-error[data-line='{line}']"))
        .await;
    assert!(
        browser.text(&error).await.contains("bronze_tickes"),
        "{}",
        browser.text(&error).await
    );
    browser
        .wait_for(&format!("section[data-path='{SQL}'] .gutter span.bad"))
        .await;
    browser.screenshot("week14-code-error").await;
    // "Validate": no file landed yet, so the flows reading files wait for them.
    let validate = browser
        .wait_for(".validate-form button[type='submit']")
        .await;
    browser.click(&validate).await;
    let validated = browser.wait_for(".validation").await;
    let said = browser.text(&validated).await;
    assert!(said.starts_with("Validated: "), "{said}");
    assert!(said.contains("wait for their files"), "{said}");
    browser.screenshot("week14-code-validated").await;
    let after = api
        .call(
            "GET",
            &format!("/api/labs/sam/pipeline/files/{SQL}"),
            json!({}),
        )
        .await;
    assert_eq!(
        after.as_str().unwrap(),
        before,
        "the bad edit was not saved"
    );

    // Days 1-30, a run, the graph with its rows.
    land(&browser, &base, "1-30", "tickets/2026-10-30.json").await;
    run(&browser, &base, &api).await;
    let first = api.last_run("sam").await;
    browser.open(&format!("{base}/labs/sam/pipeline")).await;
    let bronze = browser
        .wait_for("g.dataset[data-node='bronze_tickets'][data-status='completed']")
        .await;
    let shown = browser.text(&bronze).await;
    let landed = api.call("GET", "/api/labs/sam/landing", json!({})).await;
    let tickets: u64 = landed
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("tickets/"))
        .map(|f| f["rows"].as_u64().unwrap())
        .sum();
    assert!(shown.contains(&format!("{tickets} rows")), "{shown}");
    browser
        .wait_for("g.dataset[data-node='gold_daily_account_status'] rect.node.completed")
        .await;
    browser.screenshot("week14-graph").await;

    // Days 31-35: the files list shows the new files read by run 2 only.
    land(&browser, &base, "31-35", "tickets/2026-11-04.json").await;
    run(&browser, &base, &api).await;
    let second = api.last_run("sam").await;
    assert!(second > first);
    browser.open(&format!("{base}/labs/sam/landing")).await;
    browser
        .wait_for(&format!(
            "tr[data-file='tickets/2026-11-04.json'][data-run='{second}']"
        ))
        .await;
    browser
        .wait_for(&format!(
            "tr[data-file='tickets/2026-10-01.json'][data-run='{first}']"
        ))
        .await;
    let read_by_second = landed_by(&api, second).await;
    assert_eq!(
        read_by_second.len(),
        10,
        "5 days of tickets and accounts: {read_by_second:?}"
    );
    browser.screenshot("week14-landing").await;

    // An upload named ../x.json is refused; a good one lands.
    let upload = tempfile::tempdir().unwrap();
    let file = upload.path().join("x.json");
    std::fs::write(&file, "{\"ticket_id\": 1}\n").unwrap();
    for (folder, outcome) in [("..", ".error"), ("extra", ".outcome.succeeded")] {
        browser.open(&format!("{base}/labs/sam/landing")).await;
        let into = browser.wait_for(".upload-form input[name='folder']").await;
        browser.type_into(&into, folder).await;
        let input = browser.wait_for(".upload-form input[type='file']").await;
        browser
            .call(
                "POST",
                &format!("/element/{input}/value"),
                json!({"text": file.display().to_string()}),
            )
            .await;
        let send = browser.wait_for(".upload-form button[type='submit']").await;
        browser.click(&send).await;
        browser.wait_for(outcome).await;
        if folder == ".." {
            browser.screenshot("week14-upload-refused").await;
        }
    }
    assert!(!lab.config().for_lab("sam").data_dir.join("x.json").exists());
    assert!(
        lab.config()
            .for_lab("sam")
            .data_dir
            .join("landing/extra/x.json")
            .exists()
    );

    // The bad rows: on the data-quality page under their rule, with their file and line.
    land_bad_rows_and_run(&browser, &base, &api, "tickets/bad-rows.json").await;
    browser.open(&format!("{base}/labs/sam/quality")).await;
    browser
        .wait_for("tr[data-rules='valid_status'][data-place^='landing/tickets/bad-rows.json:']")
        .await;
    browser
        .wait_for("section.rule[data-rule='silver_tickets.valid_status'] svg.share rect")
        .await;
    // Its axis says how large a share the tallest bar is.
    let top = browser
        .wait_for("section.rule[data-rule='silver_tickets.valid_status'] svg.share text.tick-label")
        .await;
    assert!(
        browser.text(&top).await.ends_with('%'),
        "{}",
        browser.text(&top).await
    );
    browser.screenshot("week14-quality").await;
    // Freshness speaks of the lab's pipeline, with the gold numbers by day.
    browser.open(&format!("{base}/labs/sam")).await;
    browser.wait_for(".gold-chart rect.not-final").await;
    // The chart's axis runs from 0 to its largest day.
    browser.wait_for(".gold-chart text.tick-label").await;
    browser
        .wait_until(
            "the freshness sentences of the support lab",
            "const t = document.querySelector('.sentences').textContent;
             return t.includes('Tickets are loaded through 2026-11-04 (day 35)')
                 && t.includes('include every row landed so far')
                 && t.includes('set aside for breaking');",
        )
        .await;
    browser.screenshot("week14-freshness").await;
    // acc-007 was deleted and came back: two versions, each with the events that made it.
    browser
        .open(&format!(
            "{base}/labs/sam/history?table=accounts&key=acc-007"
        ))
        .await;
    browser.wait_for("section.version[data-version='1']").await;
    browser.wait_for(".key-lanes .lane .tick").await;
    browser.screenshot("week14-history").await;
    browser.open(&format!("{base}/labs/sam/events")).await;
    browser.wait_for(".run-events .lanes .bar.completed").await;
    browser.screenshot("week14-events").await;

    // A viewer sees the code, the files and the graph, and no editor, upload or run.
    let viewer = api
        .call("POST", "/api/labs/sam/viewer-token", json!({}))
        .await;
    sign_in_instead(
        &browser,
        &base,
        viewer["token"].as_str().unwrap(),
        "/labs/sam",
    )
    .await;
    browser.open(&format!("{base}/labs/sam/code")).await;
    browser.wait_for(".editor.read-only .highlight").await;
    assert!(browser.find("textarea").await.is_none());
    assert!(browser.find(".switch-form").await.is_none());
    browser.screenshot("week14-viewer-code").await;
    browser.open(&format!("{base}/labs/sam/landing")).await;
    browser.wait_for("table.landed").await;
    assert!(browser.find(".upload-form").await.is_none());
    assert!(browser.find(".land-form").await.is_none());
    browser.open(&format!("{base}/labs/sam/pipeline")).await;
    browser.wait_for("svg.project-graph").await;
    assert!(browser.find(".run-form").await.is_none());

    let _ = browser.call("DELETE", "", json!({})).await;
    server.stop().await;
}

/// The landed files run `run` read.
async fn landed_by(api: &Api, run: i64) -> Vec<String> {
    let files = api.call("GET", "/api/labs/sam/landing", json!({})).await;
    files
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["read_by_run"] == run)
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}
