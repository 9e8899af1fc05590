//! The week-14 lab "sam" in the browser: the JSON API beside the pages, a run started from the
//! pipeline page, days landed from the landing page.

use serde_json::{Value, json};

use crate::browser::{self, Browser, Served, serve_shared, sign_in};
use crate::common::TestLab;

/// The dashboard's JSON API as the learner's scripts would call it (to read what the pages do).
pub struct Api {
    pub base: String,
    pub token: String,
}

impl Api {
    pub async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let client = reqwest::Client::new();
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => client.get(url),
            _ => client
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string()),
        };
        let answer = request.bearer_auth(&self.token).send().await.unwrap();
        let status = answer.status();
        let text = answer.text().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    /// The lab's newest run id.
    pub async fn last_run(&self, lab: &str) -> i64 {
        let runs = self
            .call("GET", &format!("/api/labs/{lab}/runs"), json!({}))
            .await;
        runs["runs"][0]["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("no run: {runs}"))
    }
}

/// Clicks the pipeline page's run button, and waits for the run it started to succeed.
pub async fn run(browser: &Browser, base: &str, api: &Api) {
    browser.open(&format!("{base}/labs/sam/pipeline")).await;
    let button = browser.wait_for(".run-form button[type='submit']").await;
    browser.click(&button).await;
    let text = browser.wait_text(".outcome a").await;
    let id: i64 = text
        .trim_start_matches("Run #")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no run id in {text:?}"));
    let waited = std::time::Instant::now();
    loop {
        let run = api
            .call("GET", &format!("/api/labs/sam/runs/{id}"), json!({}))
            .await;
        match run["status"].as_str() {
            Some("running") => {}
            Some("succeeded") => return,
            other => panic!("run #{id} ended {other:?}: {run}"),
        }
        assert!(
            waited.elapsed() < browser::PATIENCE,
            "run #{id} did not end"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Lands days `days` of the example from the landing page's form.
pub async fn land(browser: &Browser, base: &str, days: &str, last_file: &str) {
    browser.open(&format!("{base}/labs/sam/landing")).await;
    let field = browser.wait_for(".land-form input[name='days']").await;
    browser.type_into(&field, days).await;
    let button = browser.wait_for(".land-form button[type='submit']").await;
    browser.click(&button).await;
    browser
        .wait_for(&format!("tr[data-file='{last_file}']"))
        .await;
}

/// A server for `lab` with instructor token `instructor`, its lab "sam" made, and a browser
/// signed in as sam's learner: the server's address, the server, sam's API, the browser.
pub async fn sam_signed_in(lab: &TestLab, instructor: &str) -> (String, Served, Api, Browser) {
    let (base, server) = serve_shared(lab, instructor).await;
    let made = Api {
        base: base.clone(),
        token: instructor.into(),
    }
    .call("POST", "/api/labs", json!({"name": "sam"}))
    .await;
    let api = Api {
        base: base.clone(),
        token: made["token"].as_str().unwrap().to_string(),
    };
    let browser = Browser::start().await;
    sign_in(&browser, &base, &api.token, "/labs/sam").await;
    (base, server, api, browser)
}

/// Lands the example's bad rows from the landing page's form (as `file`, in the format the
/// project reads), and runs.
pub async fn land_bad_rows_and_run(browser: &Browser, base: &str, api: &Api, file: &str) {
    browser.open(&format!("{base}/labs/sam/landing")).await;
    let bad = browser
        .wait_for(".bad-rows-form button[type='submit']")
        .await;
    browser.click(&bad).await;
    browser.wait_for(&format!("tr[data-file='{file}']")).await;
    run(browser, base, api).await;
}
