//! A shared lab: labs with their own topic, folder and history; roles and tokens; every forbidden
//! write refused with 401/403 and nothing changed (tables, topic offsets and history compared);
//! sessions with CSRF tokens; send limits; ten labs playing the course at once.

mod class;
#[path = "../common/mod.rs"]
mod common;
mod isolation;
mod progress;
mod refusals;
#[path = "../support/server.rs"]
mod server;
mod shop;

use std::collections::BTreeMap;
use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{Answer, SEED_BLOCK};
use reckon::config::Rates;
use reckon::limit::Rate;
use serde_json::{Value, json};
use server::{INSTRUCTOR, Server};

/// The requests only these tests make.
impl Server {
    /// A lab's runs, newest first, as the API lists them (no token).
    async fn runs(&self, lab: &str) -> Value {
        let uri = match lab {
            "default" => "/api/runs".to_string(),
            _ => format!("/api/labs/{lab}/runs"),
        };
        self.ok_as("GET", &uri, None, json!({})).await["runs"].clone()
    }

    /// Signs a browser in with `token`: its session cookie.
    async fn sign_in(&self, token: &str) -> String {
        let answer = self
            .call(
                Request::post("/login")
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(Body::from(format!("token={token}")))
                    .unwrap(),
            )
            .await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.json);
        let cookie = answer.headers[header::SET_COOKIE].to_str().unwrap();
        for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(flag), "{cookie}");
        }
        cookie.split(';').next().unwrap().to_string()
    }

    /// A server function called as a form posts it, with a session cookie.
    async fn form(&self, function: &str, cookie: &str, fields: &str) -> Answer {
        self.call(
            Request::post(format!("/fn/{function}"))
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::ACCEPT, "application/json")
                .header(header::COOKIE, cookie)
                .body(Body::from(fields.to_string()))
                .unwrap(),
        )
        .await
    }

    /// Everything a write could change in lab `name`: each table's Delta log, the topic's
    /// offsets, the lab's rows in the history, its settings file, whether its folder exists.
    async fn snapshot(&self, name: &str) -> BTreeMap<String, String> {
        let root = self.lab.config();
        let config = root.for_lab(name);
        let mut seen = BTreeMap::new();
        seen.insert("folder".into(), config.data_dir.exists().to_string());
        for table in ["bronze_orders", "bronze_rejects", "orders", "hourly_sales"] {
            let log = config
                .data_dir
                .join("tables")
                .join(table)
                .join("_delta_log");
            seen.insert(format!("table {table}"), listing(&log));
        }
        seen.insert(
            "settings".into(),
            std::fs::read_to_string(config.data_dir.join("settings.json")).unwrap_or_default(),
        );
        let kafka = self.lab.kafka();
        for partition in kafka.partitions(&config.topic).unwrap().unwrap_or_default() {
            let offsets = kafka.log_offsets(&config.topic, partition).unwrap();
            seen.insert(format!("partition {partition}"), format!("{offsets:?}"));
        }
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", root.history.display()))
            .await
            .unwrap();
        for (what, query) in [
            ("runs", "SELECT count(*) FROM runs WHERE lab = ?"),
            ("sent", "SELECT count(*) FROM produced_events WHERE lab = ?"),
            ("resets", "SELECT count(*) FROM resets WHERE lab = ?"),
            ("tokens", "SELECT count(*) FROM tokens WHERE lab = ?"),
            ("labs", "SELECT count(*) FROM labs WHERE name = ?"),
        ] {
            let count: i64 = sqlx::query_scalar(query)
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap();
            seen.insert(what.into(), count.to_string());
        }
        seen
    }
}

/// The files of a folder, sorted, as one line ("" if it does not exist).
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.join(" ")
}
