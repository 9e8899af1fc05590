//! Every page and API route of the dashboard, called with `oneshot` on `app(state)`: a real broker,
//! real Delta tables and SQLite in a temp folder, no port bound (except the shutdown test).

mod api;
#[path = "../common/mod.rs"]
mod common;
mod pages;
mod runs;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::TestLab;
use http_body_util::BodyExt;
use reckon::web::{AppState, app, serve};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Site {
    state: AppState,
    _site: tempfile::TempDir,
}

async fn site(lab: &TestLab) -> Site {
    let site = tempfile::tempdir().unwrap();
    Site {
        state: lab.dashboard(site.path()).await,
        _site: site,
    }
}

impl Site {
    async fn call(&self, request: Request<Body>) -> (StatusCode, String, axum::http::HeaderMap) {
        let response = app(self.state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned(), headers)
    }

    async fn get(&self, uri: &str) -> (StatusCode, String) {
        let (status, body, _) = self
            .call(Request::get(uri).body(Body::empty()).unwrap())
            .await;
        (status, body)
    }

    async fn get_json(&self, uri: &str) -> Value {
        let (status, body) = self.get(uri).await;
        assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        let (status, body, _) = self
            .call(
                Request::post(uri)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap(),
            )
            .await;
        let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
        (status, json)
    }

    async fn post_ok(&self, uri: &str, body: Value) -> Value {
        let (status, json) = self.post(uri, body).await;
        assert!(status.is_success(), "POST {uri}: {status} {json}");
        json
    }

    /// The course as a student plays it: each send followed by a run.
    async fn play_course(&self) {
        for batch in ["1", "2", "3", "3", "4", "5"] {
            let sent = self
                .post_ok(
                    "/api/produce?and_run=true",
                    json!({"scenario": "course", "batch": batch}),
                )
                .await;
            assert_eq!(sent["run"]["status"], "succeeded", "{sent}");
        }
    }
}

fn hour<'a>(hours: &'a Value, at: &str) -> &'a Value {
    hours
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["hour"] == at)
        .unwrap_or_else(|| panic!("no hour {at} in {hours}"))
}
