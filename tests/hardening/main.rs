//! A shared lab under attack: events that could poison a lab, limits on every write route,
//! sign-in floods, concurrent token minting, guessed secrets (on reads too), half-open
//! connections, connections past an address's share, live streams outliving access or past a
//! client's share, bad server-function input; and a bounded fuzz of the event parser and the
//! produce API; hostile Python read and never run. Real broker, real tables, real SQLite, the real router.

#[path = "../common/mod.rs"]
mod common;
mod events;
mod limits;
mod projects;
mod python;
mod reads;
mod runs;
#[path = "../support/server.rs"]
mod server;

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use reckon::config::Rates;
use reckon::engine::event::OrderEvent;
use reckon::limit::Rate;
use reckon::web::Timeouts;
use serde_json::{Value, json};
use server::{INSTRUCTOR, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

/// A request from `address` (as the server's accept loop marks it).
fn from(address: [u8; 4], mut request: Request<Body>) -> Request<Body> {
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((address, 40000))));
    request
}

/// The requests only these tests make.
impl Server {
    async fn page(&self, uri: &str, cookie: Option<&str>) -> (StatusCode, String) {
        let mut request = Request::get(uri);
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let call = self.call(request.body(Body::empty()).unwrap());
        let answer = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("GET {uri} hangs"));
        let body = match answer.json {
            Value::String(s) => s,
            other => other.to_string(),
        };
        (answer.status, body)
    }

    /// Signs in from `address`: the session cookie, or the refusal's status.
    async fn sign_in(&self, address: [u8; 4], token: &str) -> Result<String, StatusCode> {
        let request = Request::post("/login")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={token}")))
            .unwrap();
        let answer = self.call(from(address, request)).await;
        match answer.headers.get(header::SET_COOKIE) {
            Some(cookie) if answer.status == StatusCode::SEE_OTHER => Ok(cookie
                .to_str()
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_string()),
            _ => Err(answer.status),
        }
    }

    /// Whether the session `cookie` still opens lab `lab`'s runs.
    async fn signed_in(&self, cookie: &str, lab: &str) -> bool {
        let request = Request::get(format!("/api/labs/{lab}/runs"))
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap();
        self.call(request).await.status == StatusCode::OK
    }

    /// Every page a learner reads, and the reconciliation, answer 200 (none hangs).
    async fn pages_answer(&self) {
        for uri in [
            "/api/hours",
            "/api/freshness",
            "/api/runs",
            "/hours",
            "/produce",
            "/runs",
            "/tables?table=bronze_rejects",
            "/pipeline",
            "/topic",
        ] {
            let (status, body) = self.page(uri, None).await;
            assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        }
    }

    /// A run of the default lab (these servers ask for no token), which must succeed.
    async fn run_default(&self) -> Value {
        let run = self
            .ok_as("POST", "/api/runs?wait=true", None, json!({}))
            .await;
        assert_eq!(run["status"], "succeeded", "{run}");
        run
    }
}

fn event(order_id: Value, amount: Value, event_time: &str) -> Value {
    json!({"order_id": order_id, "customer_id": "C1", "status": "placed", "amount": amount,
           "event_time": event_time})
}
