//! The `reckon` command line: parses arguments, builds the config, calls the library.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use app::api::Backend;
use clap::Parser;
use reckon::cli::args::{Cli, Command};
use reckon::engine::event::OrderEvent;
use reckon::engine::render;
use reckon::engine::scenario::Scenario;
use reckon::engine::tables::TableName;
use reckon::service::lab::Streams;
use reckon::service::labs::{Labs, LabsConfig};
use reckon::web;
use reckon::{Config, Lab, config};

fn config(cli: &Cli) -> anyhow::Result<Config> {
    config::validate_topic(&cli.topic).map_err(anyhow::Error::msg)?;
    if cli.partitions < 1 {
        bail!("partitions: must be at least 1, got {}", cli.partitions);
    }
    if let Some(brokers) = &cli.brokers
        && brokers.trim().is_empty()
    {
        bail!("brokers: must be HOST:PORT[,HOST:PORT...]");
    }
    config::validate_lab_name(&cli.lab)
        .map_err(|e| anyhow::anyhow!("lab: {}", e.strip_prefix("name: ").unwrap_or(&e)))?;
    let mut config = Config::new(&cli.data);
    config.brokers = cli.brokers.clone();
    config.topic = cli.topic.clone();
    config.partitions = cli.partitions;
    config.compact_after = cli.compact_after;
    config.vacuum_after = reckon::config::vacuum_after(cli.vacuum_after)
        .expect("--vacuum-after was checked as it was parsed");
    config.lock_wait = Duration::from_secs(cli.lock_wait);
    config.crash_at = cli.crash_at.clone();
    config.local_broker.port = cli.broker_port;
    config.local_broker.controller_port = cli
        .broker_port
        .checked_add(1)
        .context("broker-port: too large")?;
    if let Some(home) = &cli.broker_home {
        config.local_broker.home = home.clone();
    }
    if let Some(libs) = &cli.kafka_libs {
        config.local_broker.kafka_libs = libs.clone();
    }
    Ok(config.for_lab(&cli.lab))
}

/// Without an instructor token the dashboard asks nobody who they are, so it serves this machine
/// only: an address other machines reach is refused before anything starts.
async fn refuse_unprotected(addr: &str) -> anyhow::Result<()> {
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("addr: {addr:?} is not a HOST:PORT address"))?
        .collect();
    if let Some(open) = resolved.iter().find(|a| !a.ip().is_loopback()) {
        bail!(
            "addr: {addr} ({}) is reachable from other machines, and without an instructor token \
             the dashboard asks nobody for one: anyone reaching it could send events, run and reset. \
             Set RECKON_INSTRUCTOR_TOKEN (every page and write then needs a token), or serve on a \
             loopback address (the default 127.0.0.1:3000)",
            open.ip()
        );
    }
    Ok(())
}

async fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = config(&cli)?;
    let command = match cli.command {
        // The broker serves every lab: its commands open none.
        Command::Broker { action } => {
            return reckon::cli::broker::execute(&config.local_broker, &action).await;
        }
        lab_command => lab_command,
    };
    let lab = Lab::open(config).await?;
    match command {
        Command::Broker { .. } | Command::Worker { .. } => {}
        Command::Reset { force } => {
            lab.reset(force).await?;
            println!(
                "reset: topic {} recreated, tables and state removed",
                lab.config.topic
            );
        }
        Command::Consume {
            group,
            from_beginning,
            max,
            json,
        } => {
            reckon::cli::consume::execute(&lab, &group, from_beginning, max, json).await?;
        }
        Command::Produce {
            scenario,
            batch,
            event,
        } => {
            let (events, source) = match (scenario, batch, event) {
                (Some(scenario), Some(batch), None) => {
                    let scenario = Scenario::load(&scenario)?;
                    let source = format!("scenario:{}:{batch}", scenario.name);
                    (scenario.batch(&batch)?.to_vec(), source)
                }
                (None, None, Some(event)) => (
                    vec![OrderEvent::parse(event.as_bytes()).context("event")?],
                    "cli".into(),
                ),
                _ => bail!("produce: give --scenario FILE --batch N, or --event JSON"),
            };
            for (event, sent) in events.iter().zip(lab.produce(&events, &source).await?) {
                println!(
                    "sent order {} ({}) to partition {} offset {}",
                    event.order_id, event.status, sent.partition, sent.offset
                );
            }
        }
        Command::Run {
            stream,
            no_dedup,
            json,
        } => {
            let which = match stream.as_deref() {
                Some("bronze") => Streams::Bronze,
                Some("silver") => Streams::Silver,
                Some("gold") => Streams::Gold,
                _ => Streams::All,
            };
            let runs = lab.run(which, !no_dedup).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                runs.iter().for_each(|run| println!("{run}"));
            }
        }
        Command::Check { json, full } => {
            // A lab that runs its own project (started in the browser) checks that project.
            if lab.kind() == app::model::PipelineKind::Project {
                let graph = lab.project_graph().await?;
                let problem = reckon::cli::pipeline::check(&lab, &graph, json).await?;
                return Ok(ExitCode::from(u8::from(problem)));
            }
            let report = if full {
                lab.check_full().await?
            } else {
                lab.check().await?
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{report}");
            }
            return Ok(ExitCode::from(report.exit_code() as u8));
        }
        Command::Play {
            file,
            no_dedup,
            force,
            verbose,
        } => {
            let scenario = Scenario::load(&file)?;
            let report = lab
                .play(&scenario, !no_dedup, force, |step| {
                    if verbose {
                        eprintln!("{step}");
                    }
                })
                .await?;
            print!("{report}");
            return Ok(ExitCode::from(report.exit_code() as u8));
        }
        Command::Whatif { delay, json } => {
            reckon::cli::whatif::execute(&lab, &delay, json).await?;
        }
        Command::Freshness { json } => {
            let freshness = reckon::service::pages::freshness::freshness(
                &lab,
                chrono::Utc::now(),
                &app::model::CostModel::default(),
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&freshness)?);
            } else {
                println!("{}", freshness.sentences.join(" "));
            }
        }
        Command::Serve {
            addr,
            site,
            schedule,
            instructor_token,
            max_runs,
            produce_burst,
            produce_rate,
        } => {
            // Trimmed as the headers and the sign-in form are: a token read from a file keeps
            // its newline.
            let instructor_token = instructor_token
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty());
            match &instructor_token {
                None => refuse_unprotected(&addr).await?,
                Some(token) if token.len() < 16 => {
                    bail!("instructor token: at least 16 characters, so it cannot be guessed")
                }
                Some(_) => {}
            }
            if max_runs == 0 {
                bail!("max-runs: at least 1");
            }
            if produce_burst == 0 || !(produce_rate > 0.0) {
                bail!("produce-burst, produce-rate: above 0");
            }
            if lab.config.lab != app::model::DEFAULT_LAB {
                bail!("lab: the server serves every lab; start it without --lab");
            }
            // Start the local broker now, not at the first click.
            lab.kafka().await?;
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .with_context(|| format!("addr: cannot listen on {addr}"))?;
            let labs = Labs::open(
                lab.config.clone(),
                LabsConfig {
                    instructor_token,
                    max_runs,
                    ..Default::default()
                },
            )
            .await?;
            println!("Reckon's dashboard: http://{}", listener.local_addr()?);
            if let Some(seconds) = schedule {
                labs.default_lab()
                    .update_settings(app::model::SettingsChange {
                        schedule_seconds: Some((seconds > 0).then_some(seconds)),
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| anyhow::anyhow!("schedule: {e}"))?;
            }
            let state = web::AppState::new(labs, site).with_rates(web::Rates {
                sends: reckon::limit::Rate {
                    burst: produce_burst,
                    per_second: produce_rate,
                },
                ..Default::default()
            });
            web::serve(listener, state, web::shutdown_signal()).await?;
        }
        Command::Pipeline { command } => {
            return reckon::cli::pipeline::execute(&lab, command).await;
        }
        Command::Table { name, json } => {
            let batches = match TableName::parse(&name) {
                Ok(course) => render::rows(&lab.tables, course).await?,
                Err(_) => render::named_rows(&lab.tables, &name).await?,
            };
            if json {
                for row in render::json_rows(&batches) {
                    println!("{}", serde_json::Value::Object(row));
                }
            } else {
                println!("{}", arrow::util::pretty::pretty_format_batches(&batches)?);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    // Output piped into `head` ends quietly when the reader goes, as a Unix tool's does.
    // SAFETY: setting a signal's disposition to its default, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RECKON_LOG")
                .unwrap_or_else(|_| "warn,deltalake_core=error,librdkafka=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // A run or a save's check for the server, in a process of its own within the run's limits:
    // it makes its own runtime on a thread with a large stack, never this one (whose threads a
    // tight limit may refuse).
    if let Command::Worker {
        idle,
        check_project,
        validate,
    } = &cli.command
    {
        use reckon::service::dashboard::{reader, worker};
        return match (check_project, config(&cli)) {
            (Some(dir), Ok(config)) => {
                reader::check_project(dir.clone(), validate.then_some(config))
            }
            (Some(dir), Err(_)) if !*validate => reader::check_project(dir.clone(), None),
            (None, Ok(config)) => worker::worker(config, std::time::Duration::from_secs(*idle)),
            (_, Err(e)) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    match reckon::process::runtime() {
        // On a worker thread, whose stack is the runtime's (`process::runtime`), not main's.
        Ok(runtime) => runtime
            .block_on(runtime.spawn(run(cli)))
            .unwrap_or_else(|e| {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }),
        Err(e) => {
            eprintln!("error: the async runtime could not start: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    match execute(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
