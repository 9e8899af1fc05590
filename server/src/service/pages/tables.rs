//! The tables page: a table's rows at a version, and its commits.

use app::api::ApiError;
use app::model::{TableVersion, TableView};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::Value;

use crate::engine::render;
use crate::engine::tables::{self, TableName};
use crate::service::error::failed;
use crate::service::lab::Lab;

/// Rows the tables page shows of a table.
const TABLE_ROWS_SHOWN: usize = 200;
/// Commits the tables page lists.
const VERSIONS_SHOWN: usize = 50;

/// A table's rows at `version` (the latest when `None`) and its commits.
pub async fn page(lab: &Lab, name: TableName, version: Option<i64>) -> Result<TableView, ApiError> {
    let mut view = TableView {
        name: name.to_string(),
        version: None,
        latest_version: None,
        columns: name
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
        rows: vec![],
        total_rows: 0,
        versions: vec![],
    };
    let Some(mut table) = lab.tables.open(name).await.map_err(failed)? else {
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
    }
    view.version = Some(tables::version(&table));
    view.total_rows = render::count_rows(&table, name).await.map_err(failed)? as usize;
    let batches = render::sorted_rows(&table, name, Some(TABLE_ROWS_SHOWN))
        .await
        .map_err(failed)?;
    view.rows = render::json_rows(&batches)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(_, v)| match v {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    Ok(view)
}
