//! The browser the browser tests drive: Debian's chromium, headless, through chromedriver
//! (WebDriver), and the dashboard served on a loopback port for it. Screenshots go to
//! `artifacts/screenshots/`. Included by each browser test with `#[path]`.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// How long the browser may take to show what a step expects.
pub const PATIENCE: Duration = Duration::from_secs(60);
/// The key WebDriver names an element by (W3C).
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The site `scripts/build-site.sh` wrote: `RECKON_SITE`, else `<target dir>/site`.
pub fn site_root() -> PathBuf {
    if let Some(site) = std::env::var_os("RECKON_SITE") {
        return site.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().unwrap().join("../target"));
    target.join("site")
}

/// `artifacts/screenshots` of the checkout the tests run in (Cargo runs them in `server/`).
pub fn artifacts() -> PathBuf {
    let dir = std::env::current_dir()
        .unwrap()
        .join("../artifacts/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The built site, or a panic saying how to build it.
pub fn built_site() -> PathBuf {
    let site = site_root();
    assert!(
        site.join("pkg/reckon.wasm").exists(),
        "no built site in {}: run `scripts/build-site.sh` (make test does) or set RECKON_SITE",
        site.display()
    );
    site
}

/// A shared server on `lab`'s folder and topic that asks for tokens (`instructor` is the
/// instructor's), served on a loopback port: its base URL.
pub async fn serve_shared(lab: &crate::common::TestLab, instructor: &str) -> (String, Served) {
    let labs = reckon::config::Serving {
        instructor_token: Some(instructor.into()),
        max_runs: 2,
        ..Default::default()
    };
    let state = lab.server(&built_site(), lab.config(), labs).await;
    Served::start(state).await
}

/// Screenshots of an earlier run would pass for this one's: the ones `ours` names are cleared
/// once, before the first test of this test binary takes any (each binary clears its own).
pub fn clear_artifacts(ours: fn(&str) -> bool) {
    static CLEARED: std::sync::Once = std::sync::Once::new();
    CLEARED.call_once(|| {
        for entry in std::fs::read_dir(artifacts())
            .into_iter()
            .flatten()
            .flatten()
        {
            if ours(&entry.file_name().to_string_lossy()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    });
}

/// The dashboard served on a free loopback port until [`Served::stop`].
pub struct Served {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    /// Serves `state`; returns its base URL.
    pub async fn start(state: reckon::web::AppState) -> (String, Self) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(reckon::web::serve(listener, state, async {
            let _ = stopped.await;
        }));
        (base, Self { stop, task })
    }

    pub async fn stop(self) {
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
pub struct Browser {
    http: reqwest::Client,
    session: String,
    driver: Child,
}

impl Browser {
    pub async fn start() -> Self {
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
    pub async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))
    }

    pub async fn try_call(&self, method: &str, path: &str, body: Value) -> Result<Value, String> {
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

    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url })).await;
    }

    pub async fn find(&self, css: &str) -> Option<String> {
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
    pub async fn wait_for(&self, css: &str) -> String {
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

    /// The text of the first element matching `css`, once there is one: found again when the
    /// page replaced it between finding and reading (hydration, or a resource coming back).
    pub async fn wait_text(&self, css: &str) -> String {
        let started = Instant::now();
        loop {
            let element = self.wait_for(css).await;
            let path = format!("/element/{element}/text");
            match self.try_call("GET", &path, json!({})).await {
                Ok(text) => return text.as_str().unwrap_or_default().to_string(),
                Err(e) if e.contains("stale element") && started.elapsed() < PATIENCE => {}
                Err(e) => panic!("WebDriver GET {path}: {e}"),
            }
        }
    }

    /// Waits until `script` (returning a value) returns `true`.
    pub async fn wait_until(&self, what: &str, script: &str) {
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

    pub async fn click(&self, element: &str) {
        self.call("POST", &format!("/element/{element}/click"), json!({}))
            .await;
    }

    pub async fn type_into(&self, element: &str, text: &str) {
        self.call("POST", &format!("/element/{element}/clear"), json!({}))
            .await;
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    pub async fn text(&self, element: &str) -> String {
        self.call("GET", &format!("/element/{element}/text"), json!({}))
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn attribute(&self, element: &str, name: &str) -> Option<String> {
        self.call(
            "GET",
            &format!("/element/{element}/attribute/{name}"),
            json!({}),
        )
        .await
        .as_str()
        .map(str::to_string)
    }

    pub async fn screenshot(&self, name: &str) {
        let png = self.call("GET", "/screenshot", json!({})).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::write(artifacts().join(format!("{name}.png")), bytes).unwrap();
    }

    /// Sets the window's size, in CSS pixels (a phone's: 400 wide).
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            json!({"width": width, "height": height}),
        )
        .await;
    }

    /// Opens a page and waits until it is hydrated (the wasm ran).
    pub async fn open(&self, url: &str) {
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

/// Signs the browser in with `token` on the login page; waits for the page it lands on.
pub async fn sign_in(browser: &Browser, base: &str, token: &str, lands_on: &str) {
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

/// Signs the browser out, then in with `token`; waits for the page it lands on.
pub async fn sign_in_instead(browser: &Browser, base: &str, token: &str, lands_on: &str) {
    let sign_out = browser.wait_for(".sign-out button").await;
    browser.click(&sign_out).await;
    browser.wait_for(".login-form").await;
    sign_in(browser, base, token, lands_on).await;
}
