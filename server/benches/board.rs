//! The class board (issue "The classroom"): `GET /api/classes/{class}/progress` for a class of
//! 200 labs, each with 100 runs written straight into the history store (bronze, silver, gold and
//! the check, as the course's runs record them), asked 100 times by the instructor while runs go
//! on (a run recorded in a random lab of the class every 50 ms). Goal: p99 within 200 ms. The
//! first answer, which computes every lab's milestones, is reported apart. Needs no broker.
//!
//!     cargo bench -p reckon --bench board -- [--labs 200] [--runs 100] [--asks 100]

use std::time::{Duration, Instant};

use app::model::{CheckLine, FlowRun, FlowStatus, Verdict};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use reckon::Config;
use reckon::service::labs::Labs;
use reckon::web::{AppState, app};
use tower::ServiceExt;

const INSTRUCTOR: &str = "instructor-token-for-the-board-bench";

fn sizes() -> (usize, usize, usize) {
    let (mut labs, mut runs, mut asks) = (200, 100, 100);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || args.next().and_then(|v| v.parse().ok()).filter(|n| *n > 0);
        match arg.as_str() {
            "--labs" => labs = number().expect("--labs takes a whole number above 0"),
            "--runs" => runs = number().expect("--runs takes a whole number above 0"),
            "--asks" => asks = number().expect("--asks takes a whole number above 0"),
            "--bench" => {}
            other => panic!("unknown argument {other:?}"),
        }
    }
    (labs, runs, asks)
}

/// A course run's flows as the history keeps them.
fn events(i: usize) -> Vec<FlowRun> {
    [
        ("bronze", "bronze_orders"),
        ("silver", "orders"),
        ("gold", "hourly_sales"),
    ]
    .into_iter()
    .map(|(flow, target)| {
        let mut event = FlowRun::starting(flow, Some(target.into()), "2026-10-01T12:00:00Z".into());
        event.status = FlowStatus::Completed;
        event.figures.rows_read = (i % 7) as u64 + 1;
        event.figures.rows_written = (i % 5) as u64;
        event
    })
    .collect()
}

fn lines(i: usize) -> Vec<CheckLine> {
    let hour = |verdict, text: &str| CheckLine {
        hour: Some("2026-10-01T10:00:00Z".into()),
        ..CheckLine::says(verdict, text.into())
    };
    vec![
        hour(Verdict::Ok, "10:00 2 orders, 55.00"),
        match i % 10 {
            0 => hour(Verdict::Late, "09:00 counted 3 orders, 68.50; bronze has 4"),
            _ => hour(Verdict::Waiting, "12:00 is not written yet"),
        },
    ]
}

/// Writes the class, its labs and their runs straight into the history database.
async fn history(config: &Config, labs: usize, runs: usize) {
    let url = format!("sqlite://{}", config.history.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    let at = "2026-10-01T12:00:00.000Z";
    sqlx::query("INSERT INTO classes (name, created_at) VALUES ('big', ?)")
        .bind(at)
        .execute(&mut *tx)
        .await
        .unwrap();
    for l in 0..labs {
        let lab = format!("learner-{l}");
        sqlx::query("INSERT INTO labs (name, created_at, public) VALUES (?, ?, 0)")
            .bind(&lab)
            .bind(at)
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO class_members (class, line, lab) VALUES ('big', ?, ?)")
            .bind(format!("Learner {l}"))
            .bind(&lab)
            .execute(&mut *tx)
            .await
            .unwrap();
        for r in 0..runs {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO runs (lab, started_by, generation, started_at, finished_at, status) \
                 VALUES (?, 'button', 0, ?, ?, 'succeeded') RETURNING id",
            )
            .bind(&lab)
            .bind(at)
            .bind(at)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
            for (seq, event) in events(r).iter().enumerate() {
                sqlx::query(
                    "INSERT INTO flow_events (run_id, seq, flow, target, status, started_at, \
                     duration_ms, error, figures, dropped) VALUES (?, ?, ?, ?, 'COMPLETED', ?, 40, NULL, ?, '[]')",
                )
                .bind(id)
                .bind(seq as i64)
                .bind(&event.flow)
                .bind(&event.target)
                .bind(at)
                .bind(serde_json::to_string(&event.figures).unwrap())
                .execute(&mut *tx)
                .await
                .unwrap();
            }
            for (n, line) in lines(r).iter().enumerate() {
                sqlx::query(
                    "INSERT INTO check_findings (run_id, line, verdict, text, hour) VALUES (?, ?, ?, ?, ?)",
                )
                .bind(id)
                .bind(n as i64)
                .bind(line.verdict.as_str())
                .bind(&line.text)
                .bind(&line.hour)
                .execute(&mut *tx)
                .await
                .unwrap();
            }
        }
    }
    tx.commit().await.unwrap();
}

#[tokio::main]
async fn main() {
    let (labs, runs, asks) = sizes();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.serving.instructor_token = Some(INSTRUCTOR.into());
    // The history made (migrations applied), then filled straight.
    drop(reckon::store::History::open(&config.history).await.unwrap());
    let started = Instant::now();
    history(&config, labs, runs).await;
    println!(
        "recorded {labs} labs x {runs} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let served = Labs::open(config.clone()).await.unwrap();
    let site = tempfile::tempdir().unwrap();
    let router = app(AppState::new(served, site.path().to_path_buf()));
    let ask = || async {
        let started = Instant::now();
        let response = router
            .clone()
            .oneshot(
                Request::get("/api/classes/big/progress")
                    .header("authorization", format!("Bearer {INSTRUCTOR}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let board: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(board["labs"].as_array().unwrap().len(), labs);
        started.elapsed()
    };
    let cold = ask().await;
    // Runs go on: one recorded every 50 ms in a lab of the class.
    let history = reckon::store::History::open(&config.history).await.unwrap();
    let writer = tokio::spawn(async move {
        let mut recorded = 0usize;
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let lab = format!("learner-{}", (recorded * 37) % labs);
            let id = history.start_run(&lab, "schedule").await.unwrap();
            history
                .finish_run(id, &events(recorded), &lines(recorded), None)
                .await
                .unwrap();
            recorded += 1;
        }
    });
    let mut times = vec![];
    for _ in 0..asks {
        times.push(ask().await);
    }
    writer.abort();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "class board, first answer: {:.1} ms (every lab computed)",
        ms(cold)
    );
    println!(
        "class board, {labs} labs x {runs} runs, while runs go on: p50 {:.1} ms, p99 {:.1} ms (goal: p99 within 200 ms)",
        ms(p(0.50)),
        ms(p(0.99))
    );
}
