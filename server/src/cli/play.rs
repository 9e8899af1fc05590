//! `reckon play FILE`: reset, the scenario's steps, then the check, printed.

use std::process::ExitCode;

use crate::engine::scenario::Scenario;
use crate::service::lab::Lab;

pub async fn execute(
    lab: &Lab,
    file: &str,
    no_dedup: bool,
    force: bool,
    verbose: bool,
) -> anyhow::Result<ExitCode> {
    let scenario = Scenario::load(file)?;
    let report = lab
        .play(&scenario, !no_dedup, force, |step| {
            if verbose {
                eprintln!("{step}");
            }
        })
        .await?;
    print!("{report}");
    Ok(ExitCode::from(report.exit_code() as u8))
}
