//! The pipeline page: topic -> bronze -> orders / hourly_sales -> check, each node with its rows
//! and how fresh it is.

use app::api::ApiError;
use app::model::{CheckOutcome, PipelineKind, PipelineNode, PipelineView};

use super::history;
use crate::engine::course::{gold, pending, silver};
use crate::engine::render;
use crate::engine::tables::{self, TableName};
use crate::service::error::{failed, refused};
use crate::service::lab::Lab;

/// The lab's pipeline: its project's graph, or the course's topic -> bronze -> orders /
/// hourly_sales -> check.
pub async fn page(lab: &Lab) -> Result<PipelineView, ApiError> {
    if lab.kind() == PipelineKind::Project {
        let graph = lab.project_graph().await.map_err(refused)?;
        return Ok(PipelineView {
            nodes: vec![],
            project: Some(super::graph::project_graph(lab, &graph).await?),
        });
    }
    let history = history(lab)?;
    let last = history.last_runs(&lab.config.lab).await.map_err(failed)?;
    let at = |stream: &str| last.get(stream).cloned();

    let topic = super::topic::counts(lab).await?;
    let last_send = history
        .produced(&lab.config.lab, 1)
        .await
        .map_err(failed)?
        .pop()
        .map(|e| e.produced_at);
    let mut nodes = vec![PipelineNode {
        name: "Kafka topic".into(),
        role: format!("{}: the shop's order events", lab.config.topic),
        rows: topic.map(|(messages, _)| messages),
        unit: Some("messages".into()),
        last_run_at: last_send,
        last_label: "last send".into(),
        freshness: match topic {
            None => "not created yet".into(),
            Some((_, 0)) => "bronze has read every message".into(),
            Some((_, lag)) => format!("{lag} message(s) not read by bronze yet"),
        },
    }];

    let bronze = lab
        .tables
        .open(TableName::BronzeOrders)
        .await
        .map_err(failed)?;
    let bronze_version = bronze.as_ref().map(tables::version);
    nodes.push(PipelineNode {
        name: "bronze_orders".into(),
        role: "every event, as it came".into(),
        rows: count(lab, TableName::BronzeOrders).await?,
        unit: Some("rows".into()),
        last_run_at: at("bronze"),
        last_label: "last run".into(),
        freshness: match topic {
            Some((_, lag)) if lag > 0 => format!("{lag} message(s) behind the topic"),
            _ => "up to date with the topic".into(),
        },
    });
    for (name, stream, app_id, role) in [
        (
            TableName::Orders,
            "silver",
            silver::APP_ID,
            "the newest state of each order",
        ),
        (
            TableName::HourlySales,
            "gold",
            gold::APP_ID,
            "orders and revenue per hour",
        ),
    ] {
        let processed = match lab.tables.open(name).await.map_err(failed)? {
            Some(t) => lab.tables.txn_version(&t, app_id).await.map_err(failed)?,
            None => None,
        };
        let freshness = match (&bronze, bronze_version) {
            (Some(b), Some(_)) => match pending(b, processed) {
                Some((first, last)) => format!("bronze versions {first} to {last} not read yet"),
                None => "up to date with bronze".into(),
            },
            _ => "nothing to read yet".into(),
        };
        nodes.push(PipelineNode {
            name: name.to_string(),
            role: role.into(),
            rows: count(lab, name).await?,
            unit: Some("rows".into()),
            last_run_at: at(stream),
            last_label: "last run".into(),
            freshness,
        });
    }
    let last_check = history.last_check(&lab.config.lab).await.map_err(failed)?;
    nodes.push(PipelineNode {
        name: "check".into(),
        role: "recounts silver and gold from bronze".into(),
        rows: None,
        unit: None,
        last_run_at: at("check"),
        last_label: "last check".into(),
        freshness: match last_check {
            None => "not run yet".into(),
            Some(CheckOutcome::Passed) => "the last check passed".into(),
            Some(CheckOutcome::Problem) => "the last check found a PROBLEM".into(),
        },
    });
    Ok(PipelineView {
        nodes,
        project: None,
    })
}

async fn count(lab: &Lab, name: TableName) -> Result<Option<i64>, ApiError> {
    match lab.tables.open(name).await.map_err(failed)? {
        Some(table) => Ok(Some(
            render::count_rows(&table, name.as_str())
                .await
                .map_err(failed)?,
        )),
        None => Ok(None),
    }
}
