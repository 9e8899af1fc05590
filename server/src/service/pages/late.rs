//! The late ledger (PIPELINES §9): what the watermark left out of a lab's windowed tables, and
//! why, read from the pipeline's `_late` (each row with its window, the watermark when it was
//! read, the run and where it came from).

use app::api::ApiError;
use app::model::{LateLedger, LateRow, PipelineKind};
use arrow::array::Array;
use arrow::datatypes::Int64Type;

use crate::engine::columns::Columns;
use crate::engine::declarative::declared::late::{LATE, described};
use crate::engine::event::format_micros;
use crate::engine::tables;
use crate::service::error::{failed, refused};
use crate::service::lab::Lab;

/// Late rows the page shows.
const ROWS_SHOWN: usize = 500;

/// The lab's late rows (table `table`'s alone when given), newest event first.
pub async fn ledger(lab: &Lab, table: Option<&str>) -> Result<LateLedger, ApiError> {
    let mut ledger = LateLedger::default();
    // A lab that runs a project knows its windowed tables; a project run from the command line
    // in another lab is known by what its windowed tables left in `_late`.
    if lab.kind() == PipelineKind::Project {
        let graph = lab.project_graph().await.map_err(refused)?;
        for flow in &graph.flows {
            if let Some(plan) = &flow.query.window {
                let minutes = plan.watermark.delay / 60_000_000;
                ledger
                    .tables
                    .push((flow.target.clone(), delay_text(minutes)));
            }
        }
    }
    let kept = lab.tables.open_named(LATE).await.map_err(failed)?;
    let mut written: Vec<String> = vec![];
    if let Some(kept) = &kept {
        let ctx = tables::session(kept, "late").await.map_err(failed)?;
        let sql = "SELECT DISTINCT \"table\" FROM late ORDER BY 1";
        for batch in tables::query(&ctx, LATE, sql).await.map_err(failed)? {
            let names = Columns::of(&batch, LATE).strings("table").map_err(failed)?;
            written.extend(names.iter().flatten().map(String::from));
        }
    }
    if let Some(name) = table
        && !ledger.tables.iter().any(|(t, _)| t == name)
        && !written.iter().any(|t| t == name)
    {
        let mut known: Vec<&str> = ledger.tables.iter().map(|(t, _)| t.as_str()).collect();
        known.extend(written.iter().map(String::as_str));
        known.dedup();
        return Err(ApiError::field(
            "table",
            format!(
                "{name} is not a windowed table of this lab (those are: {})",
                match known.is_empty() {
                    true => "none".to_string(),
                    false => known.join(", "),
                }
            ),
        ));
    }
    let Some(kept) = kept else {
        return Ok(ledger);
    };
    let ctx = tables::session(&kept, "late").await.map_err(failed)?;
    let only = match table {
        Some(t) => format!("WHERE \"table\" = '{}'", t.replace('\'', "''")),
        None => String::new(),
    };
    let counted = tables::query(
        &ctx,
        LATE,
        &format!("SELECT count(*) AS n FROM late {only}"),
    )
    .await
    .map_err(failed)?;
    let total = match counted.first().filter(|b| b.num_rows() > 0) {
        Some(b) => Columns::of(b, LATE)
            .primitive::<Int64Type>("n")
            .map_err(failed)?
            .value(0) as u64,
        None => 0,
    };
    let micros = |c: &str| format!("CAST({c} AS BIGINT) AS {c}");
    let sql = format!(
        "SELECT \"table\", flow, run, {}, {}, {}, {}, \"row\", source_table, source_version \
         FROM late {only} ORDER BY event_time DESC, run DESC LIMIT {ROWS_SHOWN}",
        micros("event_time"),
        micros("window_start"),
        micros("window_end"),
        micros("watermark")
    );
    for batch in tables::query(&ctx, LATE, &sql).await.map_err(failed)? {
        let c = Columns::of(&batch, LATE);
        let number = |n| c.primitive::<Int64Type>(n).map_err(failed);
        let text = |n| c.strings(n).map_err(failed);
        let (runs, times, starts, ends, marks, versions) = (
            number("run")?,
            number("event_time")?,
            number("window_start")?,
            number("window_end")?,
            number("watermark")?,
            number("source_version")?,
        );
        let (tables, flows, rows, sources) = (
            text("table")?,
            text("flow")?,
            text("row")?,
            text("source_table")?,
        );
        for i in 0..batch.num_rows() {
            let at = |a: &arrow::array::Int64Array| (!a.is_null(i)).then(|| a.value(i));
            ledger.rows.push(LateRow {
                table: tables.value(i).to_string(),
                flow: flows.value(i).to_string(),
                run: at(&runs),
                event_time: at(&times).map(format_micros).unwrap_or_default(),
                window_start: at(&starts).map(format_micros).unwrap_or_default(),
                window_end: at(&ends).map(format_micros).unwrap_or_default(),
                watermark: at(&marks).map(format_micros),
                row: described(rows.value(i)),
                source: match (sources.is_null(i), at(&versions)) {
                    (false, Some(v)) => Some(format!("{} version {v}", sources.value(i))),
                    _ => None,
                },
            });
        }
    }
    ledger.more = total.saturating_sub(ledger.rows.len() as u64);
    Ok(ledger)
}

/// `60` minutes as `1 hour`, `90` as `90 minutes`.
fn delay_text(minutes: i64) -> String {
    match (minutes % 60, minutes / 60) {
        (0, 1) => "1 hour".into(),
        (0, h) if h > 1 => format!("{h} hours"),
        _ if minutes == 1 => "1 minute".into(),
        _ => format!("{minutes} minutes"),
    }
}

/// The version of every table in the lab's tables folder: what a project's check depends on.
pub async fn tables_stamp(lab: &Lab) -> Result<Vec<(String, i64)>, ApiError> {
    let mut out = vec![];
    let root = lab.tables.root().to_path_buf();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(out);
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().join("_delta_log").is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if let Some(table) = lab.tables.open_named(&name).await.map_err(failed)? {
            out.push((name, tables::version(&table)));
        }
    }
    Ok(out)
}
