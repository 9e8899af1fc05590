//! A shared server for the week-14 route tests, called with `oneshot`: a learner's, a viewer's
//! and the instructor's requests, multipart uploads, and a snapshot of a lab's folder to see that
//! a refused write changed nothing. Included by those tests with `#[path]`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use reckon::service::labs::LabsConfig;
use reckon::web::{AppState, app};
use serde_json::{Value, json};

use crate::common::{self, Answer, TestLab};

pub const INSTRUCTOR: &str = "instructor-token-for-workspace-tests";
pub const SQL: &str = "transformations/support.sql";

pub struct Server {
    pub state: AppState,
    pub lab: TestLab,
    _site: tempfile::TempDir,
}

impl Server {
    pub async fn new(name: &str) -> Self {
        let lab = TestLab::new(name);
        let site = tempfile::tempdir().unwrap();
        let labs = LabsConfig {
            instructor_token: Some(INSTRUCTOR.into()),
            max_runs: 2,
        };
        let state = lab.server(site.path(), lab.config(), labs).await;
        Self {
            state,
            lab,
            _site: site,
        }
    }

    pub async fn call(&self, request: Request<Body>) -> Answer {
        common::call(app(self.state.clone()), request).await
    }

    pub async fn api(&self, method: &str, uri: &str, token: Option<&str>, body: Value) -> Answer {
        self.call(common::json_request(method, uri, token, body))
            .await
    }

    pub async fn ok(&self, method: &str, uri: &str, token: &str, body: Value) -> Value {
        let answer = self.api(method, uri, Some(token), body).await;
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

    pub async fn create_lab(&self, name: &str) -> String {
        let made = self
            .ok("POST", "/api/labs", INSTRUCTOR, json!({"name": name}))
            .await;
        made["token"].as_str().unwrap().to_string()
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
