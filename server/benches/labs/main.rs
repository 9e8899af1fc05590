//! The shared lab under load (`make bench`; never part of the tests): 200 viewers on the
//! dashboard's pages and JSON API, each reading one every 2 s, while learners send and run in 3
//! labs, over a real socket, with tokens; then 100 senders at once, each sending one event at a
//! time (the server's one shared Kafka producer). Reports p50/p99 latency by kind of request and
//! fails on any error. `--every 0` makes the viewers read back to back (the server's throughput).
//!
//! First, the server's resident memory after 10 runs in one lab and after 100 (it must not grow).
//!
//!     cargo bench -p reckon --bench labs -- [--readers 200] [--every 2] [--seconds 60] [--labs 3] [--senders 100] [--rss-runs 100] [--no-runs]
//!
//! Writes `bench/results.md`'s labs-load section and `bench/labs_load.json`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reckon::kafka::broker::Started;
use reckon::service::labs::Labs;
use reckon::{Config, Lab};
use serde_json::{Value, json};
use tokio::sync::Mutex;

mod memory;
mod record;

const INSTRUCTOR: &str = "instructor-token-for-the-load-bench";

struct Args {
    readers: usize,
    /// Each viewer reads once every this many seconds (0: back to back).
    every: u64,
    seconds: u64,
    labs: usize,
    senders: usize,
    /// Runs in one lab before the load, the server's memory read after the 10th and the last.
    rss_runs: usize,
    /// The learners send without running (`--no-runs`): the readers' figures without runs beside.
    runs: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        readers: 200,
        every: 2,
        seconds: 60,
        labs: 3,
        senders: 100,
        rss_runs: 100,
        runs: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> anyhow::Result<usize> {
            let value = it.next().unwrap_or_default();
            value
                .parse()
                .map_err(|_| anyhow::anyhow!("{name}: expected a whole number, got {value:?}"))
        };
        match arg.as_str() {
            "--readers" => args.readers = number("--readers")?,
            "--every" => args.every = number("--every")? as u64,
            "--seconds" => args.seconds = number("--seconds")? as u64,
            "--labs" => args.labs = number("--labs")?,
            "--senders" => args.senders = number("--senders")?,
            "--rss-runs" => args.rss_runs = number("--rss-runs")?.max(10),
            "--no-runs" => args.runs = false,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    Ok(args)
}

/// What the readers ask for, in turn: pages as a browser without JavaScript gets them, and the
/// API as a script reads it.
const READS: [(&str, &str); 6] = [
    ("page", "/labs/{lab}"),
    ("page", "/labs/{lab}/runs"),
    ("page", "/labs/{lab}/hours"),
    ("api", "/api/labs/{lab}/freshness"),
    ("api", "/api/labs/{lab}/runs?limit=20"),
    ("api", "/api/labs"),
];

struct Sample {
    kind: &'static str,
    /// The route asked for (its template), or "send".
    route: &'static str,
    took: Duration,
    /// Learners' runs (with their sends) under way when the read was asked.
    runs_under_way: usize,
}

async fn post(client: &reqwest::Client, url: String, token: &str, body: Value) -> Value {
    let response = client
        .post(url.clone())
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    assert!(status.is_success(), "POST {url}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Prints one row of read times (`label` first) and returns its figures: count, p50, p99.
fn summary(label: &str, mut times: Vec<Duration>) -> Value {
    times.sort();
    let (p50, p99) = (percentile(&times, 0.5), percentile(&times, 0.99));
    println!(
        "{label} {:>7} reads  p50 {p50:>8.1} ms  p99 {p99:>8.1} ms",
        times.len()
    );
    json!({"reads": times.len(), "p50_ms": p50, "p99_ms": p99})
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// On the runtime the CLI and the server start with (`reckon::process`).
fn main() -> anyhow::Result<()> {
    reckon::process::runtime()?.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let args = args()?;
    let dir = tempfile::tempdir()?;
    let mut config = Config::new(dir.path());
    config.topic = format!("bench.labs.{}", std::process::id());
    let started_broker = match config.local_broker.answers() {
        true => false,
        false => matches!(config.local_broker.start().await?, Started::Now { .. }),
    };
    Lab::new(config.clone()).kafka().await?;
    // The engine's speed is measured, not the limits a server puts on one client.
    let unlimited = reckon::limit::Rate {
        burst: 1_000_000,
        per_second: 1_000_000.0,
    };
    let mut serving_config = config.clone();
    serving_config.serving = reckon::config::Serving {
        instructor_token: Some(INSTRUCTOR.into()),
        max_runs: 4,
        rates: reckon::config::Rates {
            sends: unlimited,
            writes: unlimited,
            ..Default::default()
        },
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

    // The server closes a connection idle for 10 s (`Timeouts::header_read`). A pooled
    // connection reused at that moment fails to send; browsers retry such a GET, reqwest does
    // not. So the client drops idle connections first, as a client of this server should.
    let client = reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(5))
        .build()?;
    let rss = memory::rss_over_runs(&client, &base, args.rss_runs).await;
    let mut learners = vec![];
    for i in 0..args.labs {
        let name = format!("load-{i}");
        let made = post(
            &client,
            format!("{base}/api/labs"),
            INSTRUCTOR,
            json!({ "name": name }),
        )
        .await;
        learners.push((name, made["token"].as_str().unwrap_or_default().to_string()));
    }
    let viewers = {
        let mut tokens = vec![];
        for (name, learner) in &learners {
            let made = post(
                &client,
                format!("{base}/api/labs/{name}/viewer-token"),
                learner,
                json!({}),
            )
            .await;
            tokens.push((
                name.clone(),
                made["token"].as_str().unwrap_or_default().to_string(),
            ));
        }
        Arc::new(tokens)
    };

    let until = Instant::now() + Duration::from_secs(args.seconds);
    let under_way = Arc::new(AtomicUsize::new(0));
    // Learners: the course's batches, each sent and run, round and round, until the end.
    let writers: Vec<_> = learners
        .iter()
        .cloned()
        .map(|(name, token)| {
            let (client, base, under_way) = (client.clone(), base.clone(), under_way.clone());
            let and_run = args.runs;
            tokio::spawn(async move {
                let mut runs = 0;
                for batch in ["1", "2", "3", "4", "5"].iter().cycle() {
                    if Instant::now() >= until {
                        break;
                    }
                    under_way.fetch_add(1, Ordering::SeqCst);
                    let sent = post(
                        &client,
                        format!("{base}/api/labs/{name}/produce?and_run={and_run}"),
                        &token,
                        json!({"scenario": "course", "batch": batch}),
                    )
                    .await;
                    under_way.fetch_sub(1, Ordering::SeqCst);
                    if and_run {
                        assert_eq!(sent["run"]["status"], "succeeded", "{name}: {sent}");
                    } else {
                        // Sends alone come at the pace a learner's runs would set.
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    runs += 1;
                }
                runs
            })
        })
        .collect();

    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let every = Duration::from_secs(args.every);
    let readers: Vec<_> = (0..args.readers)
        .map(|reader| {
            let (client, base) = (client.clone(), base.clone());
            let (samples, errors, viewers) = (samples.clone(), errors.clone(), viewers.clone());
            let under_way = under_way.clone();
            // Viewers spread over the first interval, as people arriving do, not all at once.
            let first = every.mul_f64(reader as f64 / args.readers.max(1) as f64);
            tokio::spawn(async move {
                let mut turn = reader;
                let mut next = tokio::time::Instant::now() + first;
                while Instant::now() < until {
                    tokio::time::sleep_until(next).await;
                    next += every;
                    if Instant::now() >= until {
                        break;
                    }
                    let (lab, token) = &viewers[turn % viewers.len()];
                    let (kind, route) = READS[turn % READS.len()];
                    turn += 1;
                    let url = format!("{base}{}", route.replace("{lab}", lab));
                    let runs_under_way = under_way.load(Ordering::SeqCst);
                    let asked = Instant::now();
                    let answer = client.get(&url).bearer_auth(token).send().await;
                    let outcome = match answer {
                        Ok(response) if response.status().is_success() => response
                            .bytes()
                            .await
                            .map(|_| ())
                            .map_err(|e| e.to_string()),
                        Ok(response) => Err(format!("{}", response.status())),
                        // With its causes: "error sending request" alone does not say why.
                        Err(e) => Err(format!("{:#}", anyhow::Error::from(e))),
                    };
                    let took = asked.elapsed();
                    match outcome {
                        Ok(()) => samples.lock().await.push(Sample {
                            kind,
                            route,
                            took,
                            runs_under_way,
                        }),
                        Err(e) => errors.lock().await.push(format!("GET {url}: {e}")),
                    }
                }
            })
        })
        .collect();
    for reader in readers {
        reader.await?;
    }
    let mut runs = 0;
    for writer in writers {
        runs += writer.await?;
    }

    // Senders: one event each at a time, back to back, all labs at once.
    let send_until = Instant::now() + Duration::from_secs(args.seconds.min(10));
    let send_started = Instant::now();
    let senders: Vec<_> = (0..args.senders)
        .map(|sender| {
            let (client, base) = (client.clone(), base.clone());
            let (samples, errors) = (samples.clone(), errors.clone());
            let (name, token) = learners[sender % learners.len()].clone();
            tokio::spawn(async move {
                let mut order = 0;
                while Instant::now() < send_until {
                    order += 1;
                    let event = json!({"order_id": sender * 100_000 + order, "customer_id": "L",
                        "status": "placed", "amount": "1.00",
                        "event_time": "2026-10-01T09:00:00Z"});
                    let url = format!("{base}/api/labs/{name}/produce");
                    let asked = Instant::now();
                    let answer = client
                        .post(&url)
                        .bearer_auth(&token)
                        .header("content-type", "application/json")
                        .body(event.to_string())
                        .send()
                        .await;
                    let took = asked.elapsed();
                    match answer {
                        Ok(r) if r.status().is_success() => samples.lock().await.push(Sample {
                            kind: "send",
                            route: "send",
                            took,
                            runs_under_way: 0,
                        }),
                        Ok(r) => errors
                            .lock()
                            .await
                            .push(format!("POST {url}: {}", r.status())),
                        Err(e) => errors.lock().await.push(format!("POST {url}: {e}")),
                    }
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await?;
    }
    let send_seconds = send_started.elapsed().as_secs_f64();
    let _ = stop.send(());
    server.await??;
    if started_broker {
        config.local_broker.stop().await?;
    }

    let samples = samples.lock().await;
    let errors = errors.lock().await;
    let mut figures = serde_json::Map::new();
    println!(
        "{} readers (one read every {} s each) for {} s while learners sent and ran in {} labs ({runs} runs):",
        args.readers, args.every, args.seconds, args.labs
    );
    let took = |keep: &dyn Fn(&Sample) -> bool| -> Vec<Duration> {
        samples.iter().filter(|s| keep(s)).map(|s| s.took).collect()
    };
    for kind in ["page", "api", "all", "send"] {
        let times = took(&|s| s.kind == kind || (kind == "all" && s.kind != "send"));
        figures.insert(kind.into(), summary(&format!("  {kind:<5}"), times));
    }
    // Where the slow reads are: each route alone, and the reads asked while N learners' sends
    // (and runs) were under way.
    let mut groups: Vec<(String, Vec<Duration>)> = READS
        .iter()
        .map(|(_, route)| (route.to_string(), took(&|s| s.route == *route)))
        .collect();
    groups.extend((0..=args.labs).map(|n| {
        let busy = took(&|s| s.kind != "send" && s.runs_under_way == n);
        (format!("{n} learners busy"), busy)
    }));
    let mut by_route = serde_json::Map::new();
    for (name, times) in groups {
        let figures = summary(&format!("    {name:<34}"), times);
        by_route.insert(name, figures);
    }
    println!("  errors: {}", errors.len());
    let (at_10, at_end) = rss;
    let (after_10, after_all) = (at_10.total, at_end.total);
    let growth = after_all / after_10 - 1.0;
    println!(
        "resident memory of the server: {after_10:.0} MiB after 10 runs in one lab, {after_all:.0} MiB after {} ({:+.1} %, target within 10 %)",
        args.rss_runs,
        growth * 100.0
    );
    println!(
        "  of which its own (heap, stacks) {:.1} -> {:.1} MiB, mapped files (its code among them) {:.1} -> {:.1} MiB; threads {} -> {}",
        at_10.anonymous, at_end.anonymous, at_10.files, at_end.files, at_10.threads, at_end.threads
    );
    let result = json!({
        "readers": args.readers,
        "every_seconds": args.every,
        "seconds": args.seconds,
        "labs": args.labs,
        "runs": runs,
        "reads_per_second": samples.iter().filter(|s| s.kind != "send").count() as f64
            / args.seconds as f64,
        "senders": args.senders,
        "sends_per_second": samples.iter().filter(|s| s.kind == "send").count() as f64
            / send_seconds,
        "errors": errors.len(),
        // What went wrong, so a result with errors says which.
        "first_errors": errors.iter().take(3).collect::<Vec<_>>(),
        "latency": figures,
        "latency_by": by_route,
        "rss_mib": {"after_10_runs": after_10, "runs": args.rss_runs, "after_runs": after_all,
            "anonymous": [at_10.anonymous, at_end.anonymous], "files": [at_10.files, at_end.files],
            "threads": [at_10.threads, at_end.threads]},
    });
    record::record(&result)?;
    if !errors.is_empty() {
        anyhow::bail!("{} error answers, the first: {}", errors.len(), errors[0]);
    }
    Ok(())
}
