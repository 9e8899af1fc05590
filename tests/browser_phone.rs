//! Every page at a phone's width (400 px) and at a desktop's, in a real browser: a course lab
//! after two batches and a run each, and a week-14 lab after days 1-30 and the bad rows. At 400
//! px no page is wider than the screen (a wide table or graph scrolls inside its own box, and
//! says so). Screenshots of each go to `artifacts/screenshots/{course,week14}-PAGE{,-phone}.png`.
//!
//! Needs the built site (`scripts/build-site.sh`, which `make test` runs first) for hydration.

mod common;

#[path = "support/browser.rs"]
mod browser;

use browser::{Browser, clear_artifacts, serve_shared, sign_in};
use common::TestLab;
use serde_json::{Value, json};

const INSTRUCTOR: &str = "instructor-token-for-phones";

/// A call to the JSON API as `token` (a GET without a body); its answer, which must be a success.
async fn call(base: &str, token: &str, path: &str, body: Value) -> Value {
    let client = reqwest::Client::new();
    let request = match body {
        Value::Null => client.get(format!("{base}{path}")),
        body => client
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string()),
    };
    let answer = request.bearer_auth(token).send().await.unwrap();
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// The lab's newest run, as its page's path.
async fn last_run(base: &str, token: &str, lab: &str) -> String {
    let runs = call(base, token, &format!("/api/labs/{lab}/runs"), Value::Null).await;
    format!("/runs/{}", runs["runs"][0]["id"].as_i64().expect("a run"))
}

/// How much wider than the window the page is, in CSS pixels, and the widest element past it.
const OVERFLOW: &str = "
    const width = document.documentElement.clientWidth;
    let widest = null, right = width;
    for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        let inside = false;
        for (let p = e.parentElement; p; p = p.parentElement) {
            const o = getComputedStyle(p).overflowX;
            if (o === 'auto' || o === 'scroll' || o === 'hidden') { inside = true; break; }
        }
        if (!inside && r.right > right + 1) { right = r.right; widest = e; }
    }
    const what = widest ? widest.tagName.toLowerCase() + (widest.className ? '.' + String(widest.className).split(' ').join('.') : '') : '';
    return [document.documentElement.scrollWidth - width, what];";

/// Opens each of `pages` of `lab` at desktop and phone width, screenshots both, and says which
/// were wider than the phone's screen.
async fn look(
    browser: &Browser,
    base: &str,
    lab: &str,
    prefix: &str,
    pages: &[&str],
) -> Vec<String> {
    let mut wide = vec![];
    for page in pages {
        let name = match page.trim_matches('/') {
            "" => "freshness".to_string(),
            p => p
                .split('&')
                .next()
                .unwrap_or(p)
                .replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
        };
        browser.resize(1280, 1000).await;
        browser.open(&format!("{base}/labs/{lab}{page}")).await;
        browser.screenshot(&format!("{prefix}-{name}")).await;
        browser.resize(400, 860).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        browser.screenshot(&format!("{prefix}-{name}-phone")).await;
        let over = browser
            .call(
                "POST",
                "/execute/sync",
                json!({"script": OVERFLOW, "args": []}),
            )
            .await;
        let by = over[0].as_f64().unwrap_or_default();
        if by > 1.0 {
            wide.push(format!("{lab}{page}: {by} px too wide, by {}", over[1]));
        }
    }
    browser.resize(1280, 1000).await;
    wide
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_a_phone() {
    clear_artifacts(|name| {
        name.ends_with("-phone") || name.starts_with("course-") || name.starts_with("shop-")
    });
    let lab = TestLab::new("browser-phone");
    let (base, _server) = serve_shared(&lab, INSTRUCTOR).await;
    let made = |name: &'static str| {
        let base = base.clone();
        async move {
            call(&base, INSTRUCTOR, "/api/labs", json!({"name": name})).await["token"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let (ann, sam, kim) = (made("ann").await, made("sam").await, made("kim").await);
    for batch in ["1", "2"] {
        call(
            &base,
            &ann,
            "/api/labs/ann/produce?and_run=true",
            json!({"scenario": "course", "batch": batch}),
        )
        .await;
    }
    call(&base, &sam, "/api/labs/sam/pipeline/example", json!({})).await;
    for days in [
        json!({"days": "1-30"}),
        json!({"days": "31-35", "bad_rows": true}),
    ] {
        call(&base, &sam, "/api/labs/sam/landing/example", days).await;
        call(&base, &sam, "/api/labs/sam/runs?wait=true", json!({})).await;
    }
    // Module 9 written in SQL, fed the course's batches.
    call(
        &base,
        &kim,
        "/api/labs/kim/pipeline/example?example=shop",
        json!({}),
    )
    .await;
    for batch in ["1", "2", "3", "4", "5"] {
        let uri = "/api/labs/kim/produce?and_run=true";
        call(
            &base,
            &kim,
            uri,
            json!({"scenario": "course", "batch": batch}),
        )
        .await;
    }

    let browser = Browser::start().await;
    sign_in(&browser, &base, INSTRUCTOR, "/labs").await;
    let mut wide = look(&browser, &base, "", "labs", &[""]).await;
    let (ann_run, sam_run) = (
        last_run(&base, &ann, "ann").await,
        last_run(&base, &sam, "sam").await,
    );
    let course = [
        "",
        "/runs",
        &ann_run,
        "/hours",
        "/produce",
        "/topic",
        "/tables",
        "/pipeline",
        "/history",
    ];
    wide.extend(look(&browser, &base, "ann", "course", &course).await);
    let week14 = [
        "",
        "/runs",
        &sam_run,
        "/pipeline",
        "/code",
        "/landing",
        "/quality",
        "/events",
        "/tables",
        "/history",
        // The rows a warn rule kept, found on the tables page.
        "/tables?table=silver_tickets&column=first_response_s&op=%3C&value=0",
    ];
    let shop = [
        "",
        "/runs",
        "/pipeline",
        "/code",
        "/topic",
        "/events",
        "/tables",
        "/late",
    ];
    wide.extend(look(&browser, &base, "kim", "shop", &shop).await);
    wide.extend(look(&browser, &base, "sam", "week14", &week14).await);
    assert!(wide.is_empty(), "wider than a phone:\n{}", wide.join("\n"));
    // The filtered tables page says how many rows matched.
    let shown = browser.wait_for("p.shown").await;
    let said = browser.text(&shown).await;
    assert!(said.contains(" match, rows 1 to "), "{said}");
}
