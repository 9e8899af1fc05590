//! `reckon progress`: the courses' milestones for the lab, each proved from what it did; a line
//! (or, with `--json`, an object) per milestone.

use crate::service::lab::Lab;

pub async fn execute(lab: &Lab, json: bool) -> anyhow::Result<()> {
    let progress = crate::service::progress::progress(lab)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let (false, Some(project)) = (json, &progress.project) {
        println!("project: {project}");
    }
    for m in &progress.milestones {
        if json {
            println!("{}", serde_json::to_string(m)?);
            continue;
        }
        let mark = if m.done { "done" } else { "todo" };
        let course = m.course.label();
        match (&m.evidence, &m.since) {
            (Some(evidence), Some(since)) => {
                println!(
                    "{mark}  {course:<9} {}: {evidence} (since {since})",
                    m.title
                )
            }
            (Some(evidence), None) => println!("{mark}  {course:<9} {}: {evidence}", m.title),
            _ => println!("{mark}  {course:<9} {}. {}", m.title, m.how),
        }
    }
    Ok(())
}
