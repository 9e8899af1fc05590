//! `reckon run [bronze|silver|gold]`: the course's streams, each printing its run.

use crate::service::lab::{Lab, Streams};

pub async fn execute(
    lab: &Lab,
    stream: Option<&str>,
    no_dedup: bool,
    json: bool,
) -> anyhow::Result<()> {
    let which = match stream {
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
    Ok(())
}
