//! How fast the dashboard renders a page of 1,000 runs (the goal: under 200 ms on this
//! machine). A history of 1,000 recorded runs, each with three streams and a check, in SQLite;
//! `/runs?limit=1000` rendered (SSR, as a browser without JavaScript gets it) 20 times.
//! Run with `cargo bench -p reckon --bench dashboard -- [--runs N] [--rounds N]`; needs no broker.

use std::time::{Duration, Instant};

use app::model::{CheckLine, FlowRun, FlowStatus, Verdict};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use reckon::web::{AppState, app};
use reckon::{Config, Lab};
use tower::ServiceExt;

/// The runs recorded and the page's renderings: 1,000 and 20 unless given.
fn sizes() -> (usize, usize) {
    let (mut runs, mut rounds) = (1000, 20);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || args.next().and_then(|v| v.parse().ok()).filter(|n| *n > 0);
        match arg.as_str() {
            "--runs" => runs = number().expect("--runs takes a whole number above 0"),
            "--rounds" => rounds = number().expect("--rounds takes a whole number above 0"),
            "--bench" => {}
            other => panic!("unknown argument {other:?}"),
        }
    }
    (runs, rounds)
}

fn check_lines() -> Vec<CheckLine> {
    let hour = |h: u32, verdict, text: &str| CheckLine {
        hour: Some(format!("2026-10-01T{h:02}:00:00Z")),
        orders: Some(2),
        revenue: Some("55.00".into()),
        bronze_orders: Some(2),
        bronze_revenue: Some("55.00".into()),
        ..CheckLine::says(verdict, text.into())
    };
    vec![
        CheckLine::says(
            Verdict::Ok,
            "bronze_orders has 11 events, each offset once".into(),
        ),
        hour(
            9,
            Verdict::Late,
            "09:00 counted 3 orders, 68.50; bronze has 4 orders, 90.50",
        ),
        hour(10, Verdict::Ok, "10:00 2 orders, 55.00"),
        hour(11, Verdict::Ok, "11:00 1 order, 18.25"),
        hour(12, Verdict::Waiting, "12:00 is not written yet"),
    ]
}

#[tokio::main]
async fn main() {
    let (runs, rounds) = sizes();
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::open(Config::new(dir.path())).await.unwrap();
    let history = lab.history().unwrap().clone();
    let lines = check_lines();
    let started = Instant::now();
    for i in 0..runs {
        let id = history.start_run("default", "bench").await.unwrap();
        let events: Vec<FlowRun> = ["bronze", "silver", "gold", "check"]
            .into_iter()
            .map(|name| {
                let mut event = FlowRun::starting(name, None, "2026-10-01T12:00:00Z".into());
                event.status = FlowStatus::Completed;
                event.figures.rows_read = (i % 7) as u64;
                event.figures.rows_written = (i % 5) as u64;
                event
            })
            .collect();
        history.finish_run(id, &events, &lines, None).await.unwrap();
    }
    println!(
        "recorded {runs} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let site = tempfile::tempdir().unwrap();
    let labs = reckon::service::labs::Labs::open(lab.config.clone())
        .await
        .unwrap();
    let state = AppState::new(labs, site.path().to_path_buf());
    let mut times = vec![];
    let mut size = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let response = app(state.clone())
            .oneshot(
                Request::get("/runs?limit=1000")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        times.push(started.elapsed());
        size = body.len();
        let html = String::from_utf8_lossy(&body);
        assert_eq!(
            html.matches("data-run=").count(),
            runs,
            "{}",
            &html[..html.len().min(3000)]
        );
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "runs page, {runs} runs ({} KiB of HTML): median {:.1} ms, min {:.1} ms, max {:.1} ms (goal: under 200 ms)",
        size / 1024,
        ms(times[rounds / 2]),
        ms(times[0]),
        ms(times[rounds - 1])
    );
}
