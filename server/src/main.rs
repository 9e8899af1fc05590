//! The `reckon` command line: parses arguments, builds the config, calls the library.

use std::process::ExitCode;

use clap::Parser;
use reckon::Lab;
use reckon::cli::{
    self,
    args::{Cli, Command},
    config::config,
};

async fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = config(&cli)?;
    let command = match cli.command {
        // The broker serves every lab: its commands open none.
        Command::Broker { action } => {
            return cli::broker::execute(&config.local_broker, &action).await;
        }
        // A class makes labs in the data folder: its command opens them all, as the server.
        Command::Class { command } => {
            return cli::class::execute(config, command, &cli.lab).await;
        }
        lab_command => lab_command,
    };
    let lab = Lab::open(config).await?;
    match command {
        Command::Broker { .. } | Command::Worker { .. } | Command::Class { .. } => {}
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
        } => cli::consume::execute(&lab, &group, from_beginning, max, json).await?,
        Command::Produce {
            scenario,
            batch,
            event,
        } => cli::produce::execute(&lab, scenario, batch, event).await?,
        Command::Run {
            stream,
            no_dedup,
            json,
        } => cli::run::execute(&lab, stream.as_deref(), no_dedup, json).await?,
        Command::Check { json, full } => return cli::check::execute(&lab, json, full).await,
        Command::Play {
            file,
            no_dedup,
            force,
            verbose,
        } => return cli::play::execute(&lab, &file, no_dedup, force, verbose).await,
        Command::Whatif { delay, json } => cli::whatif::execute(&lab, &delay, json).await?,
        Command::Freshness { json } => cli::freshness::execute(&lab, json).await?,
        Command::Progress { json } => cli::progress::execute(&lab, json).await?,
        Command::Serve(args) => cli::serve::execute(&lab, args).await?,
        Command::Pipeline { command } => return cli::pipeline::execute(&lab, command).await,
        Command::Table { name, json } => cli::table::execute(&lab, &name, json).await?,
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
        full_check,
    } = &cli.command
    {
        use reckon::service::runner::reader::{self, Asked};
        use reckon::service::runner::worker;
        let asked = match (*validate, *full_check) {
            (true, _) => Asked::Validate,
            (_, true) => Asked::Check,
            _ => Asked::Graph,
        };
        return match (check_project, config(&cli)) {
            (Some(dir), Ok(config)) => reader::check_project(dir.clone(), asked, Some(config)),
            (Some(dir), Err(_)) if asked == Asked::Graph => {
                reader::check_project(dir.clone(), asked, None)
            }
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
