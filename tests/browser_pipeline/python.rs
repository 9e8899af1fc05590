//! Week 14 in the course's Python, in the browser (issue "The course's Python runs as written"):
//! the learner starts from the Python example, reads where `/Volumes/...` lands, lands days
//! (as Parquet, what the guided lab reads), runs, and finds the graph and the bad rows as a SQL
//! project shows them; at desktop and phone width. Screenshots go to
//! `artifacts/screenshots/python-*.png`.

use serde_json::json;

use crate::browser::clear_artifacts;
use crate::common::TestLab;
use crate::week14::{land, land_bad_rows_and_run, run, sam_signed_in};

const PY: &str = "transformations/support.py";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_runs_the_courses_python_in_the_browser() {
    clear_artifacts(crate::week14_screenshot);
    let lab = TestLab::new("browser-python");
    let (base, server, api, browser) = sam_signed_in(&lab, "instructor-token-for-python").await;

    // The code page: the course's Python as printed, in the editor.
    browser.open(&format!("{base}/labs/sam/code")).await;
    let start = browser
        .wait_for(".switch-form[data-switch='python'] button")
        .await;
    browser.click(&start).await;
    let editor = browser
        .wait_for(&format!("textarea[data-file='{PY}']"))
        .await;
    let _ = editor;
    let text = api
        .call(
            "GET",
            &format!("/api/labs/sam/pipeline/files/{PY}"),
            json!({}),
        )
        .await;
    assert!(
        text.as_str()
            .unwrap()
            .contains("@dp.expect_or_drop(\"valid_status\""),
        "{text}"
    );
    browser.screenshot("python-code").await;

    // The landing page says where the course's volume is; days land as Parquet.
    browser.open(&format!("{base}/labs/sam/landing")).await;
    let said = browser.wait_text(".note.volumes").await;
    assert!(
        said.contains("/Volumes/workspace/support/landing/") && said.contains("landing/"),
        "{said}"
    );
    land(&browser, &base, "1-3", "tickets/2026-10-03.parquet").await;
    run(&browser, &base, &api).await;
    browser.open(&format!("{base}/labs/sam/pipeline")).await;
    browser
        .wait_for("g.dataset[data-node='silver_tickets'][data-status='completed']")
        .await;
    browser
        .wait_for("g.dataset[data-node='gold_daily_account_status'] rect.node.completed")
        .await;
    browser.screenshot("python-graph").await;

    // The bad rows: dropped under their rule, on the quality page, named by the bronze version
    // they came in (the course's bronze keeps no file column).
    land_bad_rows_and_run(&browser, &base, &api, "tickets/bad-rows.parquet").await;
    browser.open(&format!("{base}/labs/sam/quality")).await;
    browser
        .wait_for("tr[data-rules='valid_status'][data-place^='bronze_tickets version']")
        .await;
    browser.screenshot("python-quality").await;

    // At phone width: the code and the quality pages.
    browser.resize(390, 844).await;
    browser.open(&format!("{base}/labs/sam/code")).await;
    browser
        .wait_for(&format!("textarea[data-file='{PY}']"))
        .await;
    browser.screenshot("python-code-phone").await;
    browser.open(&format!("{base}/labs/sam/quality")).await;
    browser.wait_for("tr[data-rules='valid_status']").await;
    browser.screenshot("python-quality-phone").await;

    let _ = browser.call("DELETE", "", json!({})).await;
    server.stop().await;
}
