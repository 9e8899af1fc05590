//! The child's side of a run (`reckon worker`, started by `child/`): it opens the lab as the
//! server holds it, then runs its pipeline each time the parent writes `run <started by> <dedup
//! 0|1> <CPU seconds>` on its stdin, and says how it went on stdout: `started <id>` once it has a
//! history id, then `ok` or `failed <the error as JSON>`. It ends when its stdin closes, when a
//! run panics, and after `--idle` seconds without a command.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Duration;

use app::api::ApiError;
use app::model::PipelineKind;

use crate::process::sandbox;
use crate::service::error::{failed, refused};
use crate::service::lab::Lab;

/// Runs the lab's pipeline once: its project's flows, or the course's streams and check.
async fn run_pipeline(
    lab: &Lab,
    dedup: bool,
    started: impl FnOnce(Option<i64>),
) -> Result<(), ApiError> {
    match lab.kind() {
        PipelineKind::Course => lab
            .pipeline_with(dedup, started)
            .await
            .map(|_| ())
            .map_err(failed),
        PipelineKind::Project => {
            let graph = lab.project_graph().await.map_err(refused)?;
            let run = lab
                .run_project_with(&graph, &[], started)
                .await
                .map_err(failed)?;
            match run.error() {
                Some(error) => Err(ApiError::Failed(error)),
                None => Ok(()),
            }
        }
    }
}

/// One command from the parent.
struct RunCommand {
    started_by: &'static str,
    dedup: bool,
    cpu_seconds: u64,
}

impl RunCommand {
    /// `run <started by> <0|1> <CPU seconds>`; who started it is one of a few names, each kept
    /// for the process's life once.
    fn parse(line: &str, names: &mut HashMap<String, &'static str>) -> Option<Self> {
        let mut words = line.split_whitespace();
        (words.next()? == "run").then_some(())?;
        let who = words.next()?;
        let dedup = words.next()? == "1";
        let cpu_seconds = words.next()?.parse().ok()?;
        let started_by = *names
            .entry(who.to_string())
            .or_insert_with(|| Box::leak(who.to_string().into_boxed_str()));
        Some(Self {
            started_by,
            dedup,
            cpu_seconds,
        })
    }
}

/// The CPU time this process may reach: what it has used plus `seconds` (its soft limit; the
/// hard limit is the parent's). Past it the kernel stops the process.
fn allow_cpu(seconds: u64) {
    // SAFETY: getrusage, getrlimit and setrlimit read and write the structs they are given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return;
        }
        let used = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1).max(0) as u64;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_CPU, &mut limit) != 0 {
            return;
        }
        limit.rlim_cur = ((used + seconds) as libc::rlim_t).min(limit.rlim_max);
        libc::setrlimit(libc::RLIMIT_CPU, &limit);
    }
}

pub(super) fn say(line: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(line);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// `reckon worker`: runs the lab's pipeline in this process each time the parent asks, and says
/// how it went on stdout. Everything goes on one thread with a 512 MiB stack (reserved, not
/// used), its own runtime included: a learner's deep expression that would overflow a small
/// stack runs.
pub fn worker(mut config: crate::config::Config, idle: Duration) -> std::process::ExitCode {
    // The server started the local broker: a run never starts it (it would inherit the run's
    // limits and die with them).
    if config.brokers.is_none() {
        config.brokers = Some(config.bootstrap_servers());
    }
    // Before any thread starts, so every thread has it: the brokers' ports and nothing else.
    sandboxed(&sandbox::broker_ports(&config.bootstrap_servers()));
    // The parent's commands, a line each. The server (its parent) ended or dropped this child:
    // its end of stdin closes, and this process with it.
    let (commands, mut next) = tokio::sync::mpsc::channel::<String>(4);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if commands.blocking_send(line).is_err() {
                break;
            }
        }
        std::process::exit(3);
    });
    let run = std::thread::Builder::new()
        .name("reckon-run".into())
        .stack_size(512 << 20)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the run");
            let mut names = HashMap::new();
            let mut lab: Option<Lab> = None;
            loop {
                // The timer is made inside the runtime: it needs its clock.
                let waited =
                    runtime.block_on(async { tokio::time::timeout(idle, next.recv()).await });
                let Ok(Some(line)) = waited else {
                    // Idle for long enough, or no parent: the next run starts a new child.
                    return;
                };
                let Some(command) = RunCommand::parse(&line, &mut names) else {
                    say(format_args!(
                        "failed {}",
                        json(&ApiError::Failed(format!(
                            "the worker cannot read {line:?}"
                        )))
                    ));
                    continue;
                };
                allow_cpu(command.cpu_seconds);
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runtime.block_on(async {
                        if lab.is_none() {
                            // As the server holds it: files read only from its landing/ folder.
                            let opened = Lab::open(config.clone()).await.map_err(failed)?;
                            lab = Some(opened.sharing(Default::default()));
                        }
                        let lab = lab.as_ref().expect("opened above");
                        let started = |id: Option<i64>| match id {
                            Some(id) => say(format_args!("started {id}")),
                            None => say(format_args!("started none")),
                        };
                        let lab = lab.started_by(command.started_by);
                        run_pipeline(&lab, command.dedup, started).await
                    })
                }));
                match ran {
                    Ok(Ok(())) => say(format_args!("ok")),
                    // As JSON, on one line: the parent answers with the same kind of error (a
                    // busy lab 409).
                    Ok(Err(e)) => say(format_args!("failed {}", json(&e))),
                    // What it held may be half changed: the next run starts a new child.
                    Err(_) => {
                        say(format_args!(
                            "failed {}",
                            json(&ApiError::Failed("the run panicked".into()))
                        ));
                        return;
                    }
                }
            }
        });
    match run {
        Ok(run) => {
            let _ = run.join();
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            let why = format!("the run's process could not start its thread: {e}");
            say(format_args!("failed {}", json(&ApiError::Failed(why))));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Limits this process's network to `ports` (`process::sandbox`), and logs how that held.
pub(super) fn sandboxed(ports: &[u16]) {
    match sandbox::connect_only_to(ports) {
        Ok(held) => tracing::debug!("{held}"),
        Err(e) => tracing::warn!("the run's network could not be limited: {e}"),
    }
}

fn json(error: &ApiError) -> String {
    serde_json::to_string(error).unwrap_or_else(|_| "\"the run failed\"".into())
}
