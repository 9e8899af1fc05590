//! The tables page: a table's rows at a version, and its commits.

use app::api::ApiError;
use app::model::{PipelineKind, RowsWanted, TableVersion, TableView};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::Value;

use crate::engine::declarative::declared::QUARANTINE;
use crate::engine::declarative::declared::late::LATE;
use crate::engine::declarative::parse::Kind;
use crate::engine::render;
use crate::engine::tables::{self, TableName, vacuum};
use crate::service::error::{failed, refused};
use crate::service::lab::Lab;

mod rows;

/// Rows the tables page shows of a table.
const TABLE_ROWS_SHOWN: usize = 200;
/// Commits the tables page lists.
const VERSIONS_SHOWN: usize = 50;
/// Characters of a cell the page shows; a longer one is cut, ending with "…".
pub const CELL_SHOWN: usize = 1_000;
/// Table pages read at once across the server's labs: a page reads its rows whole (a landed
/// 60 MiB line is a 60 MiB cell), so readers past these wait their turn instead of each holding
/// their own copy.
const READS_AT_ONCE: usize = 2;

static READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(READS_AT_ONCE);

/// `text` cut to its first [`CELL_SHOWN`] characters, with "…" when it was longer.
fn cell(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(CELL_SHOWN) {
        text.truncate(at);
        text.push('…');
        text.shrink_to_fit();
    }
    text
}

/// The tables a lab may show, in the order data flows: the course's, or its project's (and
/// `_quarantine`).
async fn lab_tables(lab: &Lab) -> Result<Vec<String>, ApiError> {
    match lab.kind() {
        PipelineKind::Course => Ok(TableName::ALL.map(|t| t.as_str().to_string()).to_vec()),
        PipelineKind::Project => project_tables(lab).await,
    }
}

/// A project's tables in the graph's order (views have none), then `_quarantine` (and `_late`
/// when a flow keeps windows).
pub async fn project_tables(lab: &Lab) -> Result<Vec<String>, ApiError> {
    let graph = lab.project_graph().await.map_err(refused)?;
    let mut names: Vec<String> = graph
        .datasets
        .iter()
        .filter(|d| d.kind != Kind::TemporaryView)
        .map(|d| d.name.clone())
        .collect();
    names.push(QUARANTINE.to_string());
    if graph.flows.iter().any(|f| f.query.window.is_some()) {
        names.push(LATE.to_string());
    }
    Ok(names)
}

/// A table's rows at `version` (the latest when `None`) and its commits.
/// An empty `name` is the first table.
pub async fn page(
    lab: &Lab,
    name: &str,
    version: Option<i64>,
    wanted: &RowsWanted,
) -> Result<TableView, ApiError> {
    let all = lab_tables(lab).await?;
    let name = match name {
        "" => all.first().map_or("", String::as_str),
        name => name,
    };
    if !all.iter().any(|t| t == name) {
        return Err(ApiError::field(
            "table",
            format!("one of {}, not {name:?}", all.join(", ")),
        ));
    }
    let course = TableName::parse(name)
        .ok()
        .filter(|_| lab.kind() == PipelineKind::Course);
    let mut view = TableView {
        name: name.to_string(),
        version: None,
        latest_version: None,
        columns: course
            .map(|t| {
                t.schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect()
            })
            .unwrap_or_default(),
        rows: vec![],
        total_rows: 0,
        versions: vec![],
        tables: all.clone(),
        matching_rows: 0,
        page_size: TABLE_ROWS_SHOWN,
        wanted: wanted.clone(),
    };
    let opened = match course {
        Some(t) => lab.tables.open(t).await,
        None => lab.tables.open_named(name).await,
    };
    let Some(mut table) = opened.map_err(failed)? else {
        return Ok(view);
    };
    let latest = tables::version(&table);
    view.latest_version = Some(latest);
    let mut commits = vec![];
    {
        let mut history = table.history(Some(VERSIONS_SHOWN));
        let mut at = latest;
        while let Some(commit) = history.next().await {
            let commit =
                commit.map_err(|e| ApiError::Failed(format!("{name}: reading its log: {e}")))?;
            commits.push(TableVersion {
                version: at,
                timestamp: commit
                    .timestamp
                    .and_then(DateTime::<Utc>::from_timestamp_millis)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                operation: commit.operation,
            });
            at -= 1;
        }
    }
    view.versions = commits;
    if let Some(v) = version {
        if !(0..=latest).contains(&v) {
            return Err(ApiError::field(
                "version",
                format!("{name} has versions 0 to {latest}, not {v}"),
            ));
        }
        table
            .load_version(v as u64)
            .await
            .map_err(|e| ApiError::Failed(format!("{name} at version {v}: {e}")))?;
        if let Some(file) = first_missing(&table) {
            return Err(ApiError::field("version", gone(lab, name, v, &file)));
        }
    }
    view.version = Some(tables::version(&table));
    let _turn = READS
        .acquire()
        .await
        .map_err(|_| ApiError::Failed("the server is stopping".into()))?;
    view.total_rows = render::count_rows(&table, name).await.map_err(failed)? as usize;
    let schema = tables::arrow_schema(&table).map_err(failed)?;
    if course.is_none() {
        view.columns = schema.fields().iter().map(|f| f.name().clone()).collect();
    }
    // The course's tables by their key, a pipeline's by all its columns.
    let order: Vec<String> = match course {
        Some(t) => t.key().iter().map(|k| k.to_string()).collect(),
        None => view.columns.clone(),
    };
    let filter = rows::filter(&schema, wanted)?;
    let offset = wanted
        .page
        .checked_mul(TABLE_ROWS_SHOWN)
        .filter(|o| *o <= rows::MOST_OFFSET)
        .ok_or_else(|| ApiError::field("page", "past the table's last page"))?;
    let (batches, matching) =
        rows::page(&table, name, &order, filter, offset, TABLE_ROWS_SHOWN).await?;
    view.matching_rows = matching;
    // Each row's cells in the order of the columns shown: a row is keyed by column name, and
    // serde_json's map keeps its keys sorted, not in the table's order.
    view.rows = render::json_rows(&batches)
        .into_iter()
        .map(|mut row| {
            view.columns
                .iter()
                .map(|column| match row.remove(column) {
                    Some(Value::String(s)) => cell(s),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => cell(other.to_string()),
                })
                .collect()
        })
        .collect();
    Ok(view)
}

/// The first file `table`'s loaded version holds that is no longer in its folder, by name.
/// Lab tables are local: a file's path is the table's `file://` URL joined with its
/// (percent-encoded) path in the table.
fn first_missing(table: &deltalake::DeltaTable) -> Option<String> {
    let snapshot = table.snapshot().ok()?;
    let root = table.table_url();
    snapshot.log_data().into_iter().find_map(|file| {
        let path = file.object_store_path();
        let local = root.join(path.as_ref()).ok()?.to_file_path().ok()?;
        (!local.exists()).then(|| path.filename().unwrap_or(path.as_ref()).to_string())
    })
}

/// Why version `v` of `name` cannot be shown: a file it held is gone (the vacuum's doing for
/// the tables it vacuums).
fn gone(lab: &Lab, name: &str, v: i64, file: &str) -> String {
    let vacuumed =
        lab.kind() == PipelineKind::Course && vacuum::VACUUMED.iter().any(|t| t.as_str() == name);
    let kept = lab.config.vacuum_after.filter(|_| vacuumed);
    match kept {
        Some(keep) => format!(
            "{name} version {v} can no longer be read: its file {file} was deleted by the \
             vacuum, which keeps a file a later version stopped using for {} (`--vacuum-after`)",
            crate::config::hours_text(keep)
        ),
        None => format!("{name} version {v} can no longer be read: its file {file} is missing"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_cell_is_cut_at_a_character_with_an_ellipsis() {
        assert_eq!(super::cell("short".into()), "short");
        let long = "é".repeat(super::CELL_SHOWN + 5);
        let cut = super::cell(long);
        assert_eq!(cut.chars().count(), super::CELL_SHOWN + 1);
        assert!(cut.ends_with("é…"), "{cut}");
    }
}
