//! The server's memory over many runs: it must not grow with them.

use reckon::bench::{Resident, resident};
use serde_json::json;

use super::{INSTRUCTOR, post};

/// One lab (made for it) sends a course batch and runs, `runs` times; the server's resident
/// memory after the 10th run and after the last.
pub async fn rss_over_runs(
    client: &reqwest::Client,
    base: &str,
    runs: usize,
) -> (Resident, Resident) {
    let made = post(
        client,
        format!("{base}/api/labs"),
        INSTRUCTOR,
        json!({ "name": "memory" }),
    )
    .await;
    let token = made["token"].as_str().unwrap_or_default().to_string();
    let mut after_10 = Resident::default();
    for (run, batch) in (1..=runs).zip(["1", "2", "3", "4", "5"].iter().cycle()) {
        let sent = post(
            client,
            format!("{base}/api/labs/memory/produce?and_run=true"),
            &token,
            json!({"scenario": "course", "batch": batch}),
        )
        .await;
        assert_eq!(sent["run"]["status"], "succeeded", "memory lab: {sent}");
        if run == 10 {
            after_10 = resident();
        }
    }
    (after_10, resident())
}
