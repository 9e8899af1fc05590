//! `reckon check [--full]`: the lab's check printed, exit 1 on a PROBLEM; a lab that runs its
//! own project (started in the browser) checks that project.

use std::process::ExitCode;

use app::model::PipelineKind;

use crate::service::lab::Lab;

pub async fn execute(lab: &Lab, json: bool, full: bool) -> anyhow::Result<ExitCode> {
    if lab.kind() == PipelineKind::Project {
        let graph = lab.project_graph().await?;
        let problem = super::pipeline::check(lab, &graph, json).await?;
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
    Ok(ExitCode::from(report.exit_code() as u8))
}
