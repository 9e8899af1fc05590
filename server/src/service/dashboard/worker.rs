//! The child's side of a run (`reckon worker`, started by `child.rs`): it opens the lab as the
//! server holds it, runs its pipeline once, and says how it went on stdout: `started <id>` once
//! it has a history id, then `ok` or `failed <the error as JSON>`.

use std::io::Write;

use app::api::ApiError;
use app::model::PipelineKind;

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
            let graph = lab.project_graph().map_err(refused)?;
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

/// `reckon worker`: runs the lab's pipeline in this process and says how it went on stdout.
/// Everything goes on one thread with a 512 MiB stack (reserved, not used), its own runtime
/// included: a learner's deep expression that would overflow a small stack runs.
pub fn worker(
    mut config: crate::Config,
    started_by: &'static str,
    dedup: bool,
) -> std::process::ExitCode {
    // The server (its parent) ended or dropped this run: its end of stdin closes, and this
    // process with it.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(3);
    });
    // The server started the local broker: a run never starts it (it would inherit the run's
    // limits and die with them).
    if config.brokers.is_none() {
        config.brokers = Some(config.bootstrap_servers());
    }
    let run = std::thread::Builder::new()
        .name("reckon-run".into())
        .stack_size(512 << 20)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the run");
            runtime.block_on(async move {
                let lab = Lab::open(config).await.map_err(failed)?;
                // As the server holds it: files read only from its landing/ folder.
                let lab = lab.sharing(Default::default()).started_by(started_by);
                let started = |id: Option<i64>| {
                    let mut out = std::io::stdout().lock();
                    let _ = match id {
                        Some(id) => writeln!(out, "started {id}"),
                        None => writeln!(out, "started none"),
                    };
                    let _ = out.flush();
                };
                run_pipeline(&lab, dedup, started).await
            })
        })
        .expect("a thread for the run");
    let result = run
        .join()
        .unwrap_or_else(|_| Err(ApiError::Failed("the run panicked".into())));
    let mut out = std::io::stdout().lock();
    let _ = match &result {
        Ok(()) => writeln!(out, "ok"),
        // As JSON, on one line: the parent answers with the same kind of error (a busy lab 409).
        Err(e) => writeln!(
            out,
            "failed {}",
            serde_json::to_string(e).unwrap_or_else(|_| "\"the run failed\"".into())
        ),
    };
    let _ = out.flush();
    std::process::ExitCode::SUCCESS
}
