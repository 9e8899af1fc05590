//! The real router on a lab of its own, called with `oneshot`: a learner's, a viewer's and the
//! instructor's requests, multipart uploads, and a snapshot of a lab's folder to see that a
//! refused write changed nothing. Included with `#[path]` by the route tests of week 14, the
//! shared lab's and the hardening's; each adds the requests only it makes in an `impl` of its own.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use reckon::config::{Rates, Serving};
use reckon::web::{AppState, app};
use serde_json::{Value, json};

use crate::common::{self, Answer, TestLab};

pub const INSTRUCTOR: &str = "instructor-token-for-tests";
pub const SQL: &str = "transformations/support.sql";

pub struct Server {
    /// Built once, as the server builds it, and rebuilt when the rates change.
    pub router: Router,
    pub state: AppState,
    pub lab: TestLab,
    _site: tempfile::TempDir,
}

impl Server {
    /// A server that asks for tokens ([`INSTRUCTOR`] is the instructor's), 2 runs at a time.
    pub async fn new(name: &str) -> Self {
        Self::with(name, true, 2).await
    }

    /// A server on its own folder and topic; with `instructor`, it asks for tokens.
    pub async fn with(name: &str, instructor: bool, max_runs: usize) -> Self {
        let labs = Serving {
            instructor_token: instructor.then(|| INSTRUCTOR.to_string()),
            max_runs,
            ..Default::default()
        };
        Self::with_config(name, labs).await
    }

    /// A server on its own folder and topic, as `labs` says.
    pub async fn with_config(name: &str, labs: Serving) -> Self {
        let lab = TestLab::new(name);
        let site = tempfile::tempdir().unwrap();
        let state = lab.server(site.path(), lab.config(), labs).await;
        Self {
            router: app(state.clone()),
            state,
            lab,
            _site: site,
        }
    }

    /// The same server with other rates (its router rebuilt on the new state).
    pub fn with_rates(mut self, rates: Rates) -> Self {
        self.state = self.state.clone().with_rates(rates);
        self.router = app(self.state.clone());
        self
    }

    pub async fn call(&self, request: Request<Body>) -> Answer {
        common::call(self.router.clone(), request).await
    }

    /// `method uri` with a JSON body, as `token` (none: no Authorization header).
    pub async fn api(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(common::json_request(method, uri, token, body))
            .await
    }

    /// [`Server::api`] as `token`, which must answer 2xx: its JSON.
    pub async fn ok(&self, method: &str, uri: &str, token: &str, body: Value) -> Value {
        self.ok_as(method, uri, Some(token), body).await
    }

    /// [`Server::ok`] with a token or none.
    pub async fn ok_as(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Value {
        let answer = self.api(method, uri, token, body).await;
        answer.ok(&format!("{method} {uri}"))
    }

    /// A raw text body (a project file).
    pub async fn put_text(&self, uri: &str, token: Option<&str>, text: &str) -> Answer {
        let mut request = Request::put(uri).header(header::CONTENT_TYPE, "text/plain");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.call(request.body(Body::from(text.to_string())).unwrap())
            .await
    }

    pub async fn get_text(&self, uri: &str, token: &str) -> String {
        let answer = self.api("GET", uri, Some(token), json!({})).await;
        assert_eq!(answer.status, StatusCode::OK, "GET {uri}: {}", answer.json);
        answer.json.as_str().unwrap().to_string()
    }

    /// Files as a multipart upload: (filename, bytes).
    pub async fn upload(&self, lab: &str, token: Option<&str>, files: &[(&str, &[u8])]) -> Answer {
        let mut body = vec![];
        for (name, bytes) in files {
            body.extend_from_slice(
                format!(
                    "--XBOUNDARYX\r\nContent-Disposition: form-data; name=\"file\"; \
                     filename=\"{name}\"\r\nContent-Type: application/json\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"--XBOUNDARYX--\r\n");
        let mut request = Request::post(format!("/api/labs/{lab}/landing")).header(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XBOUNDARYX",
        );
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.call(request.body(Body::from(body)).unwrap()).await
    }

    /// Makes lab `name` as the instructor: its learner token.
    pub async fn create_lab(&self, name: &str) -> String {
        self.create_lab_as(name, Some(INSTRUCTOR)).await
    }

    /// Makes lab `name` as `token` (none where the server asks for no tokens): its learner token.
    pub async fn create_lab_as(&self, name: &str, token: Option<&str>) -> String {
        let made = self
            .ok_as("POST", "/api/labs", token, json!({"name": name}))
            .await;
        assert_eq!(made["lab"], name);
        made["token"].as_str().unwrap().to_string()
    }

    /// Makes lab `name` running week 14's example project, with `days` of its files landed
    /// (`{"days": "1-5", "bad_rows": true}`) and run once when given: its learner token.
    pub async fn example_lab(&self, name: &str, days: Option<Value>) -> String {
        let token = self.create_lab(name).await;
        let at = |path: &str| format!("/api/labs/{name}{path}");
        self.ok("POST", &at("/pipeline/example"), &token, json!({}))
            .await;
        if let Some(days) = days {
            self.ok("POST", &at("/landing/example"), &token, days).await;
            self.run(name, &token).await;
        }
        token
    }

    pub fn folder(&self, lab: &str) -> std::path::PathBuf {
        self.lab.config().for_lab(lab).data_dir
    }

    pub async fn run(&self, lab: &str, token: &str) -> i64 {
        let uri = format!("/api/labs/{lab}/runs?wait=true");
        let run = self.ok("POST", &uri, token, json!({})).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        run["id"].as_i64().unwrap()
    }
}

/// Every file under a folder with its size and content hash, to see that nothing changed.
pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if !path.ends_with("lock") {
                let bytes = std::fs::read(&path).unwrap();
                let sum: u64 = bytes
                    .iter()
                    .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)));
                seen.insert(path.display().to_string(), format!("{} {sum}", bytes.len()));
            }
        }
    }
    seen
}

pub fn landed<'a>(files: &'a Value, path: &str) -> &'a Value {
    files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no landed file {path}: {files}"))
}
