//! The dashboard in a real browser: Debian's chromium, headless, driven through chromedriver
//! (WebDriver). Opens every page, plays the course through the produce form, runs, and reads the
//! reconciliation; saves a screenshot of each page in `artifacts/screenshots/`.
//!
//! Needs the built site (`scripts/build-site.sh`, which `make test` runs first) for hydration.

mod common;

#[path = "support/browser.rs"]
mod browser;

use std::time::Duration;

use browser::{
    Browser, Served, built_site, clear_artifacts, serve_shared, sign_in, sign_in_instead,
};
use common::TestLab;
use serde_json::{Value, json};

/// This binary's screenshots: all but week 14's (`tests/browser_pipeline.rs`).
fn course_screenshot(name: &str) -> bool {
    !name.starts_with("week14-")
}

/// Scrolls the page so that `css` is at the top of the window, for a screenshot of it.
async fn scroll_to(browser: &Browser, css: &str) {
    let script = format!("document.querySelector({css:?}).scrollIntoView();");
    browser
        .call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_plays_the_course_in_the_browser() {
    let site = built_site();
    clear_artifacts(course_screenshot);
    let lab = TestLab::new("browser");
    let state = lab.dashboard(&site).await;
    let (base, server) = Served::start(state).await;
    let browser = Browser::start().await;

    // A bad order id: the form says which field, beside it, and sends nothing.
    browser.open(&format!("{base}/produce")).await;
    let order_id = browser.wait_for("input[name='event[order_id]']").await;
    browser.type_into(&order_id, "twelve").await;
    let send = browser.wait_for(".event-form button[type='submit']").await;
    browser.click(&send).await;
    browser
        .wait_until(
            "the order id's error beside it",
            "const e = document.querySelector(\".field-error[data-field='order_id']\");
             return e !== null && e.textContent.includes('whole number');",
        )
        .await;
    assert_eq!(lab.kafka().partitions(&lab.topic).unwrap(), None);

    // The course's batches, each sent and run from its button, as the course does.
    for (i, batch) in ["1", "2", "3", "3", "4", "5"].into_iter().enumerate() {
        let button = browser
            .wait_for(&format!("button[data-batch-run='{batch}']"))
            .await;
        browser.click(&button).await;
        // Run ids count from 1 in the lab's fresh history.
        let run = i + 1;
        browser
            .wait_until(
                &format!("run #{run} to succeed"),
                &format!(
                    "return [...document.querySelectorAll('.outcome.succeeded')]
                        .some(e => e.textContent.includes('Run #{run} succeeded'));"
                ),
            )
            .await;
    }
    browser.screenshot("produce").await;

    // The reconciliation: 09:00 late (order 1006, dropped by the watermark), 11:00 ok.
    browser.open(&format!("{base}/hours")).await;
    let nine = browser
        .wait_for("tr[data-hour='2026-10-01T09:00:00Z']")
        .await;
    assert_eq!(
        browser.attribute(&nine, "data-verdict").await.as_deref(),
        Some("late")
    );
    assert!(browser.text(&nine).await.contains("order 1006"));
    let eleven = browser
        .wait_for("tr[data-hour='2026-10-01T11:00:00Z']")
        .await;
    assert_eq!(
        browser.attribute(&eleven, "data-verdict").await.as_deref(),
        Some("ok")
    );
    browser.screenshot("hours").await;

    // The what-if: with a 2-hour delay 09:00 would count order 1006 too, and be final later.
    let delay = browser.wait_for(".whatif-form input[name='delay']").await;
    browser.type_into(&delay, "2h").await;
    let replay = browser.wait_for(".whatif-form button[type='submit']").await;
    browser.click(&replay).await;
    let nine = browser
        .wait_for(".whatif-result tr[data-hour='2026-10-01T09:00:00Z'][data-differs='true']")
        .await;
    assert!(
        browser.text(&nine).await.contains("90.50"),
        "{}",
        browser.text(&nine).await
    );
    browser
        .wait_for(".whatif-result .changed tr[data-order='1006']")
        .await;
    browser
        .wait_for(".whatif-result[data-matches='true']")
        .await;
    let said = browser.wait_for(".whatif-result").await;
    assert!(
        browser
            .text(&said)
            .await
            .contains("final after run #5 (today: 3 orders, 68.50, final after run #3)"),
        "{}",
        browser.text(&said).await
    );
    scroll_to(&browser, ".whatif").await;
    browser.screenshot("whatif").await;

    // Every page opens, hydrates and shows its content; a screenshot of each.
    for (path, name, expect) in [
        ("/", "freshness", ".light.green"),
        ("/runs", "runs", "li.run.succeeded"),
        ("/runs/1", "run", "section.stream[data-stream='gold']"),
        ("/topic", "topic", "tr[data-partition='0']"),
        (
            "/tables?table=hourly_sales",
            "tables",
            "table[data-table='hourly_sales']",
        ),
        ("/pipeline", "pipeline", ".node[data-node='check']"),
    ] {
        browser.open(&format!("{base}{path}")).await;
        browser.wait_for(expect).await;
        browser.screenshot(name).await;
    }
    // A consumer in group demo: reads 5 and stops; 3 more are sent; it resumes at its commit.
    browser.open(&format!("{base}/topic")).await;
    let max = browser.wait_for(".consume-form input[name='max']").await;
    browser.type_into(&max, "5").await;
    let from_start = browser
        .wait_for(".consume-form input[name='from_beginning']")
        .await;
    browser.click(&from_start).await;
    let read = browser
        .wait_for(".consume-form button[type='submit']")
        .await;
    browser.click(&read).await;
    browser.wait_for(".consumed[data-read='5']").await;
    let api = reqwest::Client::new();
    for order in 2001..=2003 {
        let event = json!({"order_id": order, "customer_id": "C09", "status": "placed",
                           "amount": "5.00", "event_time": "2026-10-01T13:30:00Z"});
        let sent = api
            .post(format!("{base}/api/produce"))
            .header("content-type", "application/json")
            .body(event.to_string())
            .send()
            .await
            .unwrap();
        assert!(sent.status().is_success());
    }
    browser.open(&format!("{base}/topic")).await;
    browser.wait_for("tr[data-group='demo']").await;
    let max = browser.wait_for(".consume-form input[name='max']").await;
    browser.type_into(&max, "100").await;
    let read = browser
        .wait_for(".consume-form button[type='submit']")
        .await;
    browser.click(&read).await;
    browser
        .wait_until(
            "the consumer to say it resumed at the group's commit",
            "const c = document.querySelector('.consumed');
             return c !== null && c.textContent.includes('the offset group demo committed when it last read')
                 && c.querySelector(\"tr[data-offset]\") !== null;",
        )
        .await;
    scroll_to(&browser, ".consume-form").await;
    browser.screenshot("topic-consumer").await;

    browser.open(&format!("{base}/")).await;
    let first = browser.wait_for(".sentences p").await;
    assert_eq!(
        browser.text(&first).await,
        "Hourly sales are final through the 11:00 hour."
    );
    // The cost of freshness, from this lab's runs: four schedules, continuous the dearest.
    browser
        .wait_for(".cost tr[data-option='continuously']")
        .await;
    let sentence = browser.wait_for(".cost-sentence").await;
    assert!(
        browser
            .text(&sentence)
            .await
            .starts_with("Updated every hour, the numbers cost"),
        "{}",
        browser.text(&sentence).await
    );
    // The hours as bars: 09:00 to 11:00 final, the open hours gold holds pale.
    browser.wait_for(".gold-chart rect.final").await;
    browser.wait_for(".gold-chart rect.not-final").await;
    browser.screenshot("freshness-cost").await;
    // The manager reads it on a phone.
    browser
        .call("POST", "/window/rect", json!({"width": 390, "height": 844}))
        .await;
    browser.screenshot("freshness-phone").await;
    browser
        .call(
            "POST",
            "/window/rect",
            json!({"width": 1280, "height": 1000}),
        )
        .await;

    // Live: a run started elsewhere (the API) shows up on an open runs page without a reload.
    browser.open(&format!("{base}/runs")).await;
    let before = browser
        .call(
            "POST",
            "/execute/sync",
            json!({"script": "return document.querySelectorAll('li.run').length;", "args": []}),
        )
        .await;
    let api = reqwest::Client::new();
    api.post(format!("{base}/api/runs?wait=true"))
        .send()
        .await
        .unwrap();
    browser
        .wait_until(
            "the new run on the open page",
            &format!("return document.querySelectorAll('li.run').length > {before};"),
        )
        .await;

    let _ = browser.call("DELETE", "", json!({})).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instructor_makes_a_lab_a_learner_plays_in_it_a_viewer_only_looks() {
    const INSTRUCTOR: &str = "instructor-token-for-the-browser";
    clear_artifacts(course_screenshot);
    let lab = TestLab::new("browser-labs");
    let (base, server) = serve_shared(&lab, INSTRUCTOR).await;
    let browser = Browser::start().await;

    // Nobody signed in: the pages ask for a token.
    browser.open(&format!("{base}/labs/ann")).await;
    browser.wait_for("a.sign-in").await;

    // The instructor makes lab ann on the overview; its learner token is shown once.
    sign_in(&browser, &base, INSTRUCTOR, "/labs").await;
    let name = browser
        .wait_for(".create-lab-form input[name='name']")
        .await;
    browser.type_into(&name, "ann").await;
    let make = browser
        .wait_for(".create-lab-form button[type='submit']")
        .await;
    browser.click(&make).await;
    let token = browser
        .wait_for(".new-token[data-token-lab='ann'] code.token")
        .await;
    let learner = browser.text(&token).await;
    assert!(learner.contains('.'), "{learner}");
    // Shown once, with a button that copies it.
    browser
        .wait_for(".new-token[data-token-lab='ann'] button.copy")
        .await;
    browser.wait_for("tr[data-lab='ann']").await;
    browser.screenshot("labs").await;

    // The learner signs in, lands on the lab, and plays the first batch in it.
    sign_in_instead(&browser, &base, &learner, "/labs/ann").await;
    let shown = browser.wait_for(".lab-name").await;
    assert_eq!(browser.text(&shown).await, "lab ann");
    browser.open(&format!("{base}/labs/ann/produce")).await;
    let send_and_run = browser.wait_for("button[data-batch-run='1']").await;
    browser.click(&send_and_run).await;
    browser
        .wait_until(
            "the run in lab ann to succeed",
            "return [...document.querySelectorAll('.outcome.succeeded')]
                .some(e => e.textContent.includes('succeeded'));",
        )
        .await;
    browser.screenshot("lab-produce").await;
    // The form's event time starts at now: sent as it stands, it is taken.
    let time = browser
        .wait_for(".event-form input[name='event[event_time]']")
        .await;
    let now = browser.attribute(&time, "value").await.unwrap_or_default();
    assert!(now.starts_with("20"), "the event time starts as {now:?}");

    // A learner's lab list offers no "Make a lab" form the server would refuse.
    browser.open(&format!("{base}/labs")).await;
    browser.wait_for("tr[data-lab='ann']").await;
    assert!(browser.find(".create-lab-form").await.is_none());

    // A run started with the button says how it ended, once it has.
    browser.open(&format!("{base}/labs/ann/runs")).await;
    let run = browser.wait_for(".run-form button[type='submit']").await;
    browser.click(&run).await;
    browser
        .wait_until(
            "the button's run to say it succeeded",
            "return [...document.querySelectorAll('.outcome[data-run]')]
                .some(e => e.textContent.includes('succeeded'));",
        )
        .await;
    let topic = format!("{}.ann", lab.topic);
    let kafka = lab.kafka();
    let sent: i64 = (0..3)
        .map(|p| kafka.log_offsets(&topic, p).unwrap().1)
        .sum();
    assert_eq!(sent, 3, "batch 1 landed in ann's own topic");
    assert_eq!(
        kafka.partitions(&lab.topic).unwrap(),
        None,
        "not in default's"
    );

    // The learner resets the lab: the produce page shows it empty, reads it once, and stays
    // within the write limit (a reload made again the effect that reloads it, over and over).
    browser.open(&format!("{base}/labs/ann/produce")).await;
    let confirm = browser.wait_for(".reset-form input[name='confirm']").await;
    browser.click(&confirm).await;
    let reset = browser.wait_for(".reset-form button[type='submit']").await;
    browser.click(&reset).await;
    browser
        .wait_until(
            "the produce page to show the lab empty",
            "return document.body.textContent.includes(\"Gold's watermark: none yet\");",
        )
        .await;
    let calls = "return performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/fn/')).length;";
    let before = browser
        .call(
            "POST",
            "/execute/sync",
            json!({"script": calls, "args": []}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = browser
        .call(
            "POST",
            "/execute/sync",
            json!({"script": calls, "args": []}),
        )
        .await;
    let more = after.as_i64().unwrap() - before.as_i64().unwrap();
    assert!(
        more <= 2,
        "{more} server calls in 3 quiet seconds after a reset"
    );
    let body = browser.wait_for("body").await;
    let page = browser.text(&body).await;
    assert!(!page.contains("too many writes"), "{page}");
    browser.screenshot("lab-reset").await;

    // A viewer of ann reads its pages but is offered nothing to send, run or reset.
    let viewer = reqwest::Client::new()
        .post(format!("{base}/api/labs/ann/viewer-token"))
        .bearer_auth(&learner)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let viewer: Value = serde_json::from_str(&viewer).unwrap();
    sign_in_instead(
        &browser,
        &base,
        viewer["token"].as_str().unwrap(),
        "/labs/ann",
    )
    .await;
    browser.open(&format!("{base}/labs/ann/produce")).await;
    browser.wait_for(".read-only").await;
    assert!(browser.find(".event-form").await.is_none());
    assert!(browser.find("button[data-batch-run='1']").await.is_none());
    assert!(browser.find(".run-form").await.is_none());
    browser.screenshot("viewer-produce").await;
    browser.open(&format!("{base}/labs/ann/runs")).await;
    browser.wait_for("li.run.succeeded").await;

    let _ = browser.call("DELETE", "", json!({})).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_tabs_share_one_live_stream_and_every_page_loads() {
    let lab = TestLab::new("browser-live");
    let state = lab.dashboard(&built_site()).await;
    let (base, server) = Served::start(state.clone()).await;
    let browser = Browser::start().await;
    // Within a ceiling that says "it loads", not a speed: a page that waits for a connection
    // the browser's other pages hold waits far longer.
    let load = |path: &'static str| {
        let (browser, url) = (&browser, format!("{base}{path}"));
        async move {
            tokio::time::timeout(Duration::from_secs(10), browser.open(&url))
                .await
                .unwrap_or_else(|_| panic!("{url} did not load within 10 s"));
        }
    };
    // Ten pages by address in one tab (each a full load, the last ones kept in the
    // back/forward cache)...
    for path in [
        "/",
        "/runs",
        "/hours",
        "/produce",
        "/topic",
        "/tables",
        "/pipeline",
        "/runs",
        "/hours",
        "/",
    ] {
        load(path).await;
    }
    // ... then seven tabs more, each opening a page.
    for path in [
        "/", "/runs", "/hours", "/produce", "/topic", "/tables", "/runs",
    ] {
        let tab = browser
            .call("POST", "/window/new", json!({"type": "tab"}))
            .await;
        let handle = tab["handle"].as_str().unwrap().to_string();
        browser
            .call("POST", "/window", json!({"handle": handle}))
            .await;
        load(path).await;
    }
    // The browser holds one live stream for all its tabs. (A closed stream leaves the server's
    // count when its connection is seen closed, at the latest at the next keep-alive.)
    let started = std::time::Instant::now();
    while state.live_streams() != 1 && started.elapsed() < Duration::from_secs(40) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(state.live_streams(), 1, "live streams the server holds");
    // And it is live: a run started elsewhere shows on this tab's runs page without a reload,
    // through the stream another tab may hold.
    assert!(browser.find("li.run").await.is_none());
    let run = reqwest::Client::new()
        .post(format!("{base}/api/runs?wait=true"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(run.status().is_success(), "{:?}", run.text().await);
    browser.wait_for("li.run").await;
    let _ = browser.call("DELETE", "", json!({})).await;
    server.stop().await;
}
