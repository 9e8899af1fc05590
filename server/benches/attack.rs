//! A learner's attack projects while the class reads (`make bench`; never part of the tests):
//! through a real socket, one lab saves and runs, in turn, a query that spins (a cross join of
//! a million rows each), one that takes all the memory (a row of 300 million numbers) and a
//! 30,000-term expression (refused at save), while 200 viewers read the other labs' pages and
//! those labs' learners send and run the course. Each attack must end FAILED with its reason
//! within its bounds; every viewer is answered (p99 under 200 ms); the server's resident memory
//! stays within its idle figure + 256 MiB; the other labs' runs all succeed.
//!
//!     cargo bench -p reckon --bench attack -- [--readers 200] [--wall 20]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reckon::config::{RunLimits, Serving};
use reckon::kafka::broker::Started;
use reckon::service::labs::Labs;
use reckon::{Config, Lab};
use serde_json::{Value, json};
use tokio::sync::Mutex;

const INSTRUCTOR: &str = "instructor-token-for-the-attack-bench";
const SQL: &str = "transformations/support.sql";

/// The attacks, as a learner saves them: (what, file, what the run's error must say: one of
/// these, `|` between).
fn attacks() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "F5 spin",
            "CREATE MATERIALIZED VIEW slow AS SELECT sum(a * b) AS s FROM \
             (SELECT unnest(range(1000000)) AS a) x, (SELECT unnest(range(1000000)) AS b) y;\n"
                .into(),
            "the most a run may take",
        ),
        (
            "F3 memory",
            "CREATE MATERIALIZED VIEW big AS SELECT cardinality(range(1, 300000000)) AS n;\n"
                .into(),
            // Unoptimized (the smoke run), it may spin past the wall before its memory does.
            "memory passed|the most a run may take",
        ),
        (
            "F1 deep",
            format!(
                "CREATE MATERIALIZED VIEW deep AS SELECT {} AS v;\n",
                vec!["1"; 30_000].join("+")
            ),
            "deeper than",
        ),
    ]
}

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<String>,
) -> (u16, Value) {
    let mut request = client.request(method, &url).bearer_auth(token);
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn post(client: &reqwest::Client, url: String, token: &str, body: Value) -> Value {
    let (status, answer) = call(
        client,
        reqwest::Method::POST,
        url.clone(),
        token,
        Some(body.to_string()),
    )
    .await;
    assert!(
        (200..300).contains(&status),
        "POST {url}: {status} {answer}"
    );
    answer
}

fn main() -> anyhow::Result<()> {
    reckon::process::runtime()?.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let (mut readers, mut wall) = (200usize, 20u64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--readers" => readers = args.next().unwrap_or_default().parse()?,
            "--wall" => wall = args.next().unwrap_or_default().parse()?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    let limits = RunLimits {
        wall: Duration::from_secs(wall),
        resident: 512 << 20,
        ..RunLimits::DEFAULT
    };
    let dir = tempfile::tempdir()?;
    let mut config = Config::new(dir.path());
    config.topic = format!("bench.attack.{}", std::process::id());
    let started_broker = match config.local_broker.answers() {
        true => false,
        false => matches!(config.local_broker.start().await?, Started::Now { .. }),
    };
    Lab::new(config.clone()).kafka().await?;
    let mut serving_config = config.clone();
    serving_config.serving = Serving {
        instructor_token: Some(INSTRUCTOR.into()),
        max_runs: 4,
        run_limits: limits,
        ..Default::default()
    };
    let labs = Labs::open(serving_config).await?;
    let site = tempfile::tempdir()?;
    let state = reckon::web::AppState::new(labs, site.path().to_path_buf());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(reckon::web::serve(listener, state, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(5))
        .build()?;
    let mut tokens = vec![];
    for name in ["attacker", "good-1", "good-2"] {
        let made = post(
            &client,
            format!("{base}/api/labs"),
            INSTRUCTOR,
            json!({ "name": name }),
        )
        .await;
        tokens.push((name, made["token"].as_str().unwrap_or_default().to_string()));
    }
    let (attacker, good) = (tokens[0].clone(), tokens[1..].to_vec());
    post(
        &client,
        format!("{base}/api/labs/attacker/pipeline/example"),
        &attacker.1,
        json!({}),
    )
    .await;
    // A run in each good lab first, then the server's idle memory, read a few times.
    for (name, token) in &good {
        let url = format!("{base}/api/labs/{name}/produce?and_run=true");
        post(
            &client,
            url,
            token,
            json!({"scenario": "course", "batch": "1"}),
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = reckon::bench::rss_mib();
    println!("server idle: {idle:.0} MiB resident");

    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(idle as u64));
    let watcher = {
        let (done, peak) = (done.clone(), peak.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                peak.fetch_max(reckon::bench::rss_mib() as u64, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let times = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let pages = [
        "/labs/{lab}",
        "/labs/{lab}/runs",
        "/api/labs/{lab}/freshness",
        "/api/labs/{lab}/runs?limit=20",
    ];
    let viewers: Vec<_> = (0..readers)
        .map(|reader| {
            let (client, base, done) = (client.clone(), base.clone(), done.clone());
            let (times, errors, good) = (times.clone(), errors.clone(), good.clone());
            tokio::spawn(async move {
                let mut turn = reader;
                tokio::time::sleep(Duration::from_millis((reader as u64 * 2000) / 200)).await;
                while !done.load(Ordering::SeqCst) {
                    let (lab, token) = &good[turn % good.len()];
                    let url = format!("{base}{}", pages[turn % pages.len()].replace("{lab}", lab));
                    turn += 1;
                    let asked = Instant::now();
                    match client.get(&url).bearer_auth(token).send().await {
                        Ok(r) if r.status().is_success() => {
                            let _ = r.bytes().await;
                            times.lock().await.push(asked.elapsed());
                        }
                        Ok(r) => errors
                            .lock()
                            .await
                            .push(format!("GET {url}: {}", r.status())),
                        Err(e) => errors.lock().await.push(format!("GET {url}: {e}")),
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            })
        })
        .collect();
    // The good labs' learners: the course's batches, sent and run, until the attacks end.
    let learners: Vec<_> = good
        .iter()
        .cloned()
        .map(|(name, token)| {
            let (client, base, done) = (client.clone(), base.clone(), done.clone());
            tokio::spawn(async move {
                let (mut ok, mut failed) = (0, vec![]);
                for batch in ["2", "3", "4", "5", "1"].iter().cycle() {
                    if done.load(Ordering::SeqCst) {
                        break;
                    }
                    let url = format!("{base}/api/labs/{name}/produce?and_run=true");
                    let body = json!({"scenario": "course", "batch": batch}).to_string();
                    let (_, sent) =
                        call(&client, reqwest::Method::POST, url, &token, Some(body)).await;
                    match sent["run"]["status"].as_str() {
                        Some("succeeded") => ok += 1,
                        _ => failed.push(sent.to_string()),
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    let mut verdicts = vec![];
    for (what, sql, reason) in attacks() {
        let url = format!("{base}/api/labs/attacker/pipeline/files/{SQL}");
        let started = Instant::now();
        let (status, saved) =
            call(&client, reqwest::Method::PUT, url, &attacker.1, Some(sql)).await;
        let error = match status {
            200..300 => {
                let url = format!("{base}/api/labs/attacker/runs?wait=true");
                let run = post(&client, url, &attacker.1, json!({})).await;
                assert_eq!(run["status"], "failed", "{what}: {run}");
                run["error"].as_str().unwrap_or_default().to_string()
            }
            _ => saved["error"].as_str().unwrap_or_default().to_string(),
        };
        let took = started.elapsed();
        let said = reason.split('|').any(|r| error.contains(r));
        let held = said && took < Duration::from_secs(wall + 15);
        println!("{what}: ended in {:.1} s: {error:.160}", took.as_secs_f64());
        verdicts.push((what, held));
    }
    done.store(true, Ordering::SeqCst);
    for viewer in viewers {
        viewer.await?;
    }
    let (mut good_runs, mut good_failed) = (0, vec![]);
    for learner in learners {
        let (ok, failed) = learner.await?;
        good_runs += ok;
        good_failed.extend(failed);
    }
    watcher.await?;
    let _ = stop.send(());
    server.await??;
    if started_broker {
        config.local_broker.stop().await?;
    }
    let mut times = times.lock().await.clone();
    times.sort();
    let p = |q: f64| {
        times
            .get(((times.len().max(1) - 1) as f64 * q) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let (p50, p99) = (p(0.5), p(0.99));
    let peak = peak.load(Ordering::SeqCst) as f64;
    let errors = errors.lock().await;
    println!(
        "{readers} viewers: {} reads, p50 {p50:.1} ms, p99 {p99:.1} ms (target under 200 ms: {}), {} errors",
        times.len(),
        if p99 < 200.0 { "met" } else { "MISSED" },
        errors.len()
    );
    println!(
        "server resident memory: idle {idle:.0} MiB, peak {peak:.0} MiB (+{:.0}, target within +256: {})",
        peak - idle,
        if peak - idle <= 256.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "other labs' runs meanwhile: {good_runs} succeeded, {} failed",
        good_failed.len()
    );
    for (what, held) in &verdicts {
        println!(
            "  {what}: {}",
            if *held {
                "ended with its reason within its bounds"
            } else {
                "MISSED"
            }
        );
    }
    if let Some(first) = errors.first() {
        anyhow::bail!("{} viewers' reads failed, the first: {first}", errors.len());
    }
    if let Some(first) = good_failed.first() {
        anyhow::bail!("a good lab's run failed: {first}");
    }
    if verdicts.iter().any(|(_, held)| !held) {
        anyhow::bail!("an attack did not end as it must");
    }
    Ok(())
}
