//! The dashboard in a real browser: Debian's chromium, headless, driven through chromedriver
//! (WebDriver). Opens every page, plays the course through the produce form, runs, and reads the
//! reconciliation; saves a screenshot of each page in `artifacts/screenshots/`.
//!
//! Needs the built site (`scripts/build-site.sh`, which `make test` runs first) for hydration.

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::TestLab;
use serde_json::{Value, json};

/// How long the browser may take to show what a step expects.
const PATIENCE: Duration = Duration::from_secs(60);
/// The key WebDriver names an element by (W3C).
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The site `scripts/build-site.sh` wrote: `RECKON_SITE`, else `<target dir>/site`.
fn site_root() -> PathBuf {
    if let Some(site) = std::env::var_os("RECKON_SITE") {
        return site.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap().join("../target"));
    target.join("site")
}

/// `artifacts/screenshots` of the checkout the tests run in (Cargo runs them in `server/`).
fn artifacts() -> PathBuf {
    let dir = std::env::current_dir()
        .unwrap()
        .join("../artifacts/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Screenshots of an earlier run would pass for this one's: cleared once, before the first test
/// of this run takes any.
fn clear_artifacts() {
    static CLEARED: std::sync::Once = std::sync::Once::new();
    CLEARED.call_once(|| {
        let _ = std::fs::remove_dir_all(artifacts());
        artifacts();
    });
}

/// The dashboard served on a free loopback port until [`Served::stop`].
struct Served {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    /// Serves `state`; returns its base URL.
    async fn start(state: reckon::web::AppState) -> (String, Self) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(reckon::web::serve(listener, state, async {
            let _ = stopped.await;
        }));
        (base, Self { stop, task })
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A chromedriver process and one headless chromium session: just the WebDriver calls we use.
struct Browser {
    http: reqwest::Client,
    session: String,
    driver: Child,
}

impl Browser {
    async fn start() -> Self {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver not found: install Debian's chromium-driver (make setup does)");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(started.elapsed() < PATIENCE, "chromedriver did not answer");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut browser = Self {
            http,
            session: base,
            driver,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]
            }
        }}});
        let session = browser.call("POST", "/session", caps).await;
        let id = session["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser.session = format!("{}/session/{id}", browser.session);
        browser
    }

    /// One WebDriver command; its `value`, or a panic naming the command and the error.
    async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))
    }

    async fn try_call(&self, method: &str, path: &str, body: Value) -> Result<Value, String> {
        let url = format!("{}{path}", self.session);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string()),
        };
        let response = request.send().await.map_err(|e| e.to_string())?;
        let text = response.text().await.map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        match answer["value"].get("error") {
            Some(error) => Err(format!("{error}: {}", answer["value"]["message"])),
            None => Ok(answer["value"].clone()),
        }
    }

    async fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url })).await;
    }

    async fn find(&self, css: &str) -> Option<String> {
        let found = self
            .try_call(
                "POST",
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await
            .ok()?;
        found[ELEMENT].as_str().map(str::to_string)
    }

    /// Waits for an element matching `css`.
    async fn wait_for(&self, css: &str) -> String {
        let started = Instant::now();
        loop {
            if let Some(element) = self.find(css).await {
                return element;
            }
            if started.elapsed() > PATIENCE {
                let page = self.call("GET", "/source", json!({})).await;
                panic!("no {css} after {PATIENCE:?}; the page:\n{page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `script` (returning a value) returns `true`.
    async fn wait_until(&self, what: &str, script: &str) {
        let started = Instant::now();
        while self
            .call(
                "POST",
                "/execute/sync",
                json!({"script": script, "args": []}),
            )
            .await
            != json!(true)
        {
            if started.elapsed() > PATIENCE {
                self.screenshot("failed").await;
                let page = self.call("GET", "/source", json!({})).await;
                let console = self
                    .try_call("POST", "/se/log", json!({"type": "browser"}))
                    .await;
                panic!(
                    "waited {PATIENCE:?} for {what}; the console: {console:?}\nthe page:\n{page}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn click(&self, element: &str) {
        self.call("POST", &format!("/element/{element}/click"), json!({}))
            .await;
    }

    async fn type_into(&self, element: &str, text: &str) {
        self.call("POST", &format!("/element/{element}/clear"), json!({}))
            .await;
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    async fn text(&self, element: &str) -> String {
        self.call("GET", &format!("/element/{element}/text"), json!({}))
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    async fn attribute(&self, element: &str, name: &str) -> Option<String> {
        self.call(
            "GET",
            &format!("/element/{element}/attribute/{name}"),
            json!({}),
        )
        .await
        .as_str()
        .map(str::to_string)
    }

    async fn screenshot(&self, name: &str) {
        let png = self.call("GET", "/screenshot", json!({})).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::write(artifacts().join(format!("{name}.png")), bytes).unwrap();
    }

    /// Opens a page and waits until it is hydrated (the wasm ran).
    async fn open(&self, url: &str) {
        self.goto(url).await;
        self.wait_for("body[data-hydrated='true']").await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_plays_the_course_in_the_browser() {
    let site = site_root();
    assert!(
        site.join("pkg/reckon.wasm").exists(),
        "no built site in {}: run `scripts/build-site.sh` (make test does) or set RECKON_SITE",
        site.display()
    );
    clear_artifacts();
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
    browser.open(&format!("{base}/")).await;
    let first = browser.wait_for(".sentences p").await;
    assert_eq!(
        browser.text(&first).await,
        "Hourly sales are final through the 11:00 hour."
    );
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

/// Signs the browser in with `token` on the login page; waits for the page it lands on.
async fn sign_in(browser: &Browser, base: &str, token: &str, lands_on: &str) {
    browser.open(&format!("{base}/login")).await;
    let field = browser.wait_for(".login-form input[name='token']").await;
    browser.type_into(&field, token).await;
    let submit = browser.wait_for(".login-form button[type='submit']").await;
    browser.click(&submit).await;
    browser
        .wait_until(
            &format!("the page {lands_on} after signing in"),
            &format!("return location.pathname === '{lands_on}';"),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instructor_makes_a_lab_a_learner_plays_in_it_a_viewer_only_looks() {
    const INSTRUCTOR: &str = "instructor-token-for-the-browser";
    let site = site_root();
    assert!(
        site.join("pkg/reckon.wasm").exists(),
        "no built site in {}",
        site.display()
    );
    clear_artifacts();
    let lab = TestLab::new("browser-labs");
    let labs = reckon::service::labs::LabsConfig {
        instructor_token: Some(INSTRUCTOR.into()),
        max_runs: 2,
    };
    let state = lab.server(&site, lab.config(), labs).await;
    let (base, server) = Served::start(state).await;
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
    browser.wait_for("tr[data-lab='ann']").await;
    browser.screenshot("labs").await;
    let sign_out = browser.wait_for(".sign-out button").await;
    browser.click(&sign_out).await;
    browser.wait_for(".login-form").await;

    // The learner signs in, lands on the lab, and plays the first batch in it.
    sign_in(&browser, &base, &learner, "/labs/ann").await;
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
    let sign_out = browser.wait_for(".sign-out button").await;
    browser.click(&sign_out).await;
    browser.wait_for(".login-form").await;
    sign_in(
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
