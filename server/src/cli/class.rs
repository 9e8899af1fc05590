//! `reckon class create FILE`: a class made in one step on the data folder, as the labs page
//! makes it (`service/class.rs`): at the shell, the instructor is the one asking.

use std::process::ExitCode;

use anyhow::Context;
use app::api::Server;
use app::model::DEFAULT_LAB;

use super::args::ClassCommand;
use crate::config::Config;
use crate::service::labs::Labs;

pub async fn execute(
    mut root: Config,
    command: ClassCommand,
    lab: &str,
) -> anyhow::Result<ExitCode> {
    if lab != DEFAULT_LAB {
        anyhow::bail!("--lab: a class is made in the data folder, not in lab {lab}");
    }
    let ClassCommand::Create { file, class, csv } = command;
    let list = std::fs::read_to_string(&file)
        .with_context(|| format!("{}: cannot read the class list", file.display()))?;
    let class = match class {
        Some(class) => class,
        None => file
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default(),
    };
    // The shell's user holds the data folder: no token is asked of them.
    root.serving.instructor_token = None;
    let labs = Labs::open(root).await?;
    let made = labs
        .create_class(&http::HeaderMap::new(), &class, &list, None)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    println!(
        "class {}: {} lab(s) made; the tokens are shown once",
        made.class,
        made.labs.len()
    );
    for lab in &made.labs {
        let note = lab
            .note
            .as_deref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        println!("{}\t{}\t{}{note}", lab.lab, lab.token, lab.line);
    }
    for line in &made.seen_before {
        println!("(has a lab already)\t{line}");
    }
    if let Some(out) = csv {
        std::fs::write(&out, &made.csv)
            .with_context(|| format!("{}: cannot write the sheet", out.display()))?;
        println!("the sheet is in {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
