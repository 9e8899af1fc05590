//! The `reckon` command line's arguments: global options and one subcommand each.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::crash::CrashPoint;

/// Runs a shop's streaming pipeline (Kafka -> bronze -> silver / gold) and proves it right.
#[derive(Parser)]
#[command(name = "reckon", version)]
pub struct Cli {
    /// The lab's data folder: tables, state, and the local broker's home.
    #[arg(long, global = true, env = "RECKON_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// Kafka bootstrap servers; without it, the machine's local broker (started if needed).
    #[arg(long, global = true, env = "RECKON_BROKERS")]
    pub brokers: Option<String>,
    /// The topic of order events (of the lab `default`; lab L uses TOPIC.L).
    #[arg(long, global = true, env = "RECKON_TOPIC", default_value = "orders")]
    pub topic: String,
    /// The lab to work on: `default`, or one made on the dashboard (its folder is
    /// <data>/labs/LAB, its topic TOPIC.LAB).
    #[arg(long, global = true, env = "RECKON_LAB", default_value = "default")]
    pub lab: String,
    /// Partitions of the topic when Reckon creates it.
    #[arg(long, global = true, default_value_t = 3)]
    pub partitions: i32,
    /// The local broker's home (default: <data>/kafka).
    #[arg(long, global = true, env = "RECKON_BROKER_HOME")]
    pub broker_home: Option<PathBuf>,
    /// The local broker's client port (its controller uses the next one).
    #[arg(
        long,
        global = true,
        env = "RECKON_BROKER_PORT",
        default_value_t = 9092
    )]
    pub broker_port: u16,
    /// Folder of Kafka's jars for the local broker.
    #[arg(long, global = true, env = "RECKON_KAFKA_LIBS")]
    pub kafka_libs: Option<PathBuf>,
    /// After each check, compact a table's small files once more than N of them can be packed
    /// into one (0: never). Few files keep a run's cost to what it adds rather than the lab's age.
    #[arg(long, global = true, env = "RECKON_COMPACT_AFTER", default_value_t = crate::config::COMPACT_AFTER)]
    pub compact_after: usize,
    /// After a check, delete the files `orders` and `hourly_sales` stopped using (MERGE rewrites
    /// them) more than HOURS ago, from 0.1 to 168 (a week, Delta's default and the most); their
    /// earlier versions stay readable that long (0: never delete).
    #[arg(long, global = true, env = "RECKON_VACUUM_AFTER", value_name = "HOURS", value_parser = hours, default_value_t = crate::config::VACUUM_AFTER_HOURS)]
    pub vacuum_after: f64,
    /// Seconds a run waits for another run of the same lab.
    #[arg(long, global = true, default_value_t = 60)]
    pub lock_wait: u64,
    /// Abort at STREAM:MOMENT (crash tests).
    #[arg(long, global = true, hide = true)]
    pub crash_at: Option<CrashPoint>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Start, stop or look at the local Kafka broker.
    Broker {
        #[arg(value_parser = ["start", "stop", "status"])]
        action: String,
    },
    /// Delete and recreate the topic, remove the tables and state (SPEC §5).
    Reset {
        /// Needed with --brokers: it deletes a topic on a broker Reckon does not manage.
        #[arg(long)]
        force: bool,
    },
    /// Read the lab's topic in a consumer group, committing as it goes (the course's demo of
    /// offsets): stops after --max messages or at the end offsets seen when it started.
    Consume {
        #[arg(long)]
        group: String,
        /// A group with no commit yet starts at the beginning (else at the end).
        #[arg(long)]
        from_beginning: bool,
        #[arg(long, default_value_t = 1_000_000)]
        max: usize,
        #[arg(long)]
        json: bool,
    },
    /// Send one batch of a scenario, or one event.
    Produce {
        /// A scenario file, or `course`.
        #[arg(long, requires = "batch", conflicts_with = "event")]
        scenario: Option<String>,
        /// The batch of the scenario to send.
        #[arg(long, requires = "scenario")]
        batch: Option<String>,
        /// One event as JSON.
        #[arg(long)]
        event: Option<String>,
    },
    /// Run the streams: each loads what is new and stops.
    Run {
        #[arg(value_parser = ["bronze", "silver", "gold"])]
        stream: Option<String>,
        /// Count duplicates in gold (fixed when gold's state starts).
        #[arg(long)]
        no_dedup: bool,
        /// Print the run records as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the tables against bronze; exit 1 on a PROBLEM.
    Check {
        #[arg(long)]
        json: bool,
        /// Recount every table from scratch instead of from what the last check kept.
        #[arg(long)]
        full: bool,
    },
    /// Reset, play a scenario's steps, then check (its exit code).
    Play {
        /// A scenario file, or `course`.
        file: String,
        #[arg(long)]
        no_dedup: bool,
        /// Needed with --brokers (play resets the topic).
        #[arg(long)]
        force: bool,
        /// Print each step on stderr.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Replay gold with another watermark delay (never writing a table): per hour, what it
    /// would count and when it would be final, beside today's.
    Whatif {
        /// 2h, 90m or 90 (minutes).
        #[arg(long)]
        delay: String,
        #[arg(long)]
        json: bool,
    },
    /// In plain words: which hours are final, what closes the next, how the last run went.
    Freshness {
        #[arg(long)]
        json: bool,
    },
    /// A class: labs made from a class list in one step, as the labs page does.
    Class {
        #[command(subcommand)]
        command: ClassCommand,
    },
    /// The courses' milestones for the lab (module 9, week 14): each done or not, since when,
    /// and the run that proves it.
    Progress {
        /// One JSON object a milestone, a line each.
        #[arg(long)]
        json: bool,
    },
    /// Serve the dashboard and the JSON API; runs the schedule. Stops on Ctrl-C or SIGTERM,
    /// letting a run in progress finish.
    Serve(ServeArgs),
    /// Declarative pipelines: run a project, its graph, the event log, the week-14 example.
    Pipeline {
        #[command(subcommand)]
        command: super::pipeline::PipelineCommand,
    },
    /// Run the lab's pipeline each time the server asks, as its child (the server starts it;
    /// see `service::runner::child`).
    #[command(hide = true)]
    Worker {
        /// Seconds without a run after which the child ends.
        #[arg(long, default_value_t = 300)]
        idle: u64,
        /// Instead: read the project in this folder into a graph, as a save does, and say what
        /// was found.
        #[arg(long)]
        check_project: Option<std::path::PathBuf>,
        /// With `--check-project`: also analyse its flows over the lab's tables.
        #[arg(long, requires = "check_project")]
        validate: bool,
        /// With `--check-project`: instead, check every table of the project (PIPELINES §9).
        #[arg(long, requires = "check_project", conflicts_with = "validate")]
        full_check: bool,
    },
    /// Print a table's rows, sorted by its key (a pipeline's table: by all its columns).
    Table {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// `--vacuum-after`'s hours: 0 (never), or within [`crate::config::vacuum_after`]'s bounds.
fn hours(text: &str) -> Result<f64, String> {
    let hours: f64 = text
        .parse()
        .map_err(|_| format!("expected a number of hours, got {text:?}"))?;
    crate::config::vacuum_after(hours)
        .map(|_| hours)
        .map_err(|e| e.why)
}

/// `reckon serve`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub addr: String,
    /// The built site (wasm, JS, CSS) from `scripts/build-site.sh` (`make site`).
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site: PathBuf,
    /// Run the pipeline every SECONDS (0: never), kept in the lab's settings; the dashboard
    /// changes it too. Default: as last set (off at first).
    #[arg(long, value_name = "SECONDS")]
    pub schedule: Option<u64>,
    /// The instructor's token. With one, every page and call needs a token (labs, roles)
    /// and --addr may be reachable from other machines; without, a single-user tool on
    /// loopback. Prefer the environment variable: arguments show in `ps`.
    #[arg(long, env = "RECKON_INSTRUCTOR_TOKEN", hide_env_values = true)]
    pub instructor_token: Option<String>,
    /// Pipeline runs at once across all labs.
    #[arg(long, default_value_t = 4)]
    pub max_runs: usize,
    /// Sends (produce calls and forms) a client may make to a lab at once, then
    /// --produce-rate a second.
    #[arg(long, default_value_t = 50)]
    pub produce_burst: u32,
    #[arg(long, default_value_t = 20.0)]
    pub produce_rate: f64,
}

#[derive(Debug, clap::Subcommand)]
pub enum ClassCommand {
    /// A lab and a learner token for each line of FILE (one name a line, or a CSV of name and
    /// email) not made into a lab before in this class; the sheet printed once. A server
    /// running on the same data folder serves the new labs without a restart.
    Create {
        file: PathBuf,
        /// The class's name (default: FILE's name without its extension).
        #[arg(long)]
        class: Option<String>,
        /// Also write the sheet as CSV (name, email, lab, token) to OUT.
        #[arg(long, value_name = "OUT")]
        csv: Option<PathBuf>,
    },
}
