//! The code page (the lab's project files) and the landing page (every landed file, with the
//! run that read it and what became of its rows), read from the lab's folder, its history and
//! its `_quarantine` table.

use std::collections::BTreeMap;

use app::api::ApiError;
use app::model::{LandedFile, ProjectCode};
use arrow::datatypes::Int64Type;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::engine::columns::Columns;
use crate::engine::declarative::declared::QUARANTINE;
use crate::engine::tables;
use crate::service::error::failed;
use crate::service::lab::workspace::{LANDING, files_under};
use crate::service::lab::{Lab, LabError};

pub fn code(lab: &Lab) -> Result<ProjectCode, ApiError> {
    Ok(ProjectCode {
        kind: lab.kind(),
        files: lab.project_files().map_err(failed)?,
        has_tables: lab.has_tables(),
        validation: None,
    })
}

/// What the runs made of a file: the first run that read it, its rows and rescued rows.
struct Read {
    run: i64,
    rows: u64,
    rescued: u64,
}

pub async fn landing(lab: &Lab) -> Result<Vec<LandedFile>, LabError> {
    let files = files_under(&lab.landing_dir())?;
    let mut read: BTreeMap<String, Read> = BTreeMap::new();
    let mut changed: BTreeMap<String, bool> = BTreeMap::new();
    let events = match lab.history() {
        Some(history) => history.events(&lab.config.lab, None).await?,
        None => vec![],
    };
    for (run, event) in events {
        for file in event.figures.files {
            if file.changed {
                changed.insert(file.path, true);
            } else {
                read.entry(file.path).or_insert(Read {
                    run,
                    rows: file.rows,
                    rescued: file.rescued,
                });
            }
        }
    }
    let dropped = dropped_by_file(lab).await?;
    Ok(files
        .into_iter()
        .map(|(path, meta)| {
            // The history and the quarantine name files from the data folder.
            let from_data = format!("{LANDING}/{path}");
            let landed_at = meta
                .modified()
                .map(|t| DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::Secs, true))
                .unwrap_or_default();
            let first = read.get(&from_data);
            LandedFile {
                size: meta.len(),
                landed_at,
                read_by_run: first.map(|r| r.run),
                rows: first.map(|r| r.rows),
                rescued: first.map(|r| r.rescued),
                dropped: dropped.get(&from_data).copied().unwrap_or(0),
                changed_after_load: changed.contains_key(&from_data),
                path,
            }
        })
        .collect())
}

/// Rows each file lost to a rule, from `_quarantine`.
async fn dropped_by_file(lab: &Lab) -> Result<BTreeMap<String, u64>, LabError> {
    let Some(table) = lab.tables.open_named(QUARANTINE).await? else {
        return Ok(BTreeMap::new());
    };
    let ctx = tables::session(&table, "q").await?;
    let sql = "SELECT source_file, count(*) AS n FROM q WHERE source_file IS NOT NULL \
               GROUP BY source_file";
    let batches = tables::query(&ctx, QUARANTINE, sql).await?;
    let mut counts = BTreeMap::new();
    for batch in &batches {
        let columns = Columns::of(batch, QUARANTINE);
        let files = columns.strings("source_file")?;
        let n = columns.primitive::<Int64Type>("n")?;
        for i in 0..batch.num_rows() {
            counts.insert(files.value(i).to_string(), n.value(i) as u64);
        }
    }
    Ok(counts)
}
