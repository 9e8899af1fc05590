//! The event log (PIPELINES §6, from the history) and data quality: each rule's counts run by
//! run (the history's events) and the rows rules set aside (`_quarantine`, with file and line).

use std::collections::BTreeMap;

use app::api::ApiError;
use app::model::{EventLog, FlowRun, Quality, QuarantinedRow, RuleHistory, RuleRun, RunEvents};
use arrow::array::Array;
use arrow::datatypes::Int64Type;
use chrono::DateTime;

use super::history;
use crate::engine::columns::Columns;
use crate::engine::declarative::declared::QUARANTINE;
use crate::engine::declarative::parse::Violation;
use crate::engine::tables;
use crate::service::error::{failed, refused};
use crate::service::lab::Lab;

/// Quarantined rows the page shows, newest run first.
const ROWS_SHOWN: usize = 200;

/// The event log, newest run first (run `run`'s alone when given).
pub async fn events(lab: &Lab, run: Option<i64>) -> Result<EventLog, ApiError> {
    let events = history(lab)?
        .events(&lab.config.lab, run)
        .await
        .map_err(failed)?;
    let mut by_run: BTreeMap<i64, Vec<_>> = BTreeMap::new();
    for (id, event) in events {
        by_run.entry(id).or_default().push(event);
    }
    Ok(EventLog {
        runs: by_run
            .into_iter()
            .rev()
            .map(|(run, events)| {
                let start = |e: &FlowRun| {
                    DateTime::parse_from_rfc3339(&e.started_at).map_or(0, |t| t.timestamp_millis())
                };
                let first = events.iter().map(start).min().unwrap_or(0);
                let offsets_ms = events.iter().map(|e| start(e) - first).collect();
                RunEvents {
                    run,
                    events,
                    offsets_ms,
                }
            })
            .collect(),
    })
}

/// Each rule's counts per run (run `run`'s alone when given), and the rows set aside (by rule
/// `rule`, `table.rule`, alone when given).
pub async fn quality(lab: &Lab, run: Option<i64>, rule: Option<&str>) -> Result<Quality, ApiError> {
    let graph = lab.project_graph().await.map_err(refused)?;
    let events = history(lab)?
        .events(&lab.config.lab, run)
        .await
        .map_err(failed)?;
    let mut rules = vec![];
    for dataset in &graph.datasets {
        for rule in &dataset.expectations {
            let runs = events
                .iter()
                .filter(|(_, e)| e.target.as_deref() == Some(dataset.name.as_str()))
                .filter_map(|(id, e)| {
                    let count = e
                        .figures
                        .expectations
                        .iter()
                        .find(|c| c.name == rule.name)?;
                    Some(RuleRun {
                        run: *id,
                        passed: count.passed,
                        failed: count.failed,
                    })
                })
                .collect();
            rules.push(RuleHistory {
                table: dataset.name.clone(),
                rule: rule.name.clone(),
                condition: rule.condition.clone(),
                action: match rule.on_violation {
                    Violation::Warn => "warn",
                    Violation::Drop => "drop row",
                    Violation::Fail => "fail update",
                }
                .into(),
                runs,
            });
        }
    }
    let only = match rule {
        Some(named) => {
            let known = rules
                .iter()
                .find(|r| format!("{}.{}", r.table, r.rule) == named)
                .ok_or_else(|| {
                    ApiError::field(
                        "rule",
                        format!("the project has no rule {named:?} (table.rule)"),
                    )
                })?;
            Some((known.table.clone(), known.rule.clone()))
        }
        None => None,
    };
    let (quarantined, total) = quarantined(lab, run, only).await?;
    Ok(Quality {
        rules,
        more_quarantined: total.saturating_sub(quarantined.len() as u64),
        quarantined,
    })
}

/// The newest quarantined rows (run `run`'s, and rule `rule`'s of its table, when given), and
/// how many there are in all.
async fn quarantined(
    lab: &Lab,
    run: Option<i64>,
    rule: Option<(String, String)>,
) -> Result<(Vec<QuarantinedRow>, u64), ApiError> {
    let Some(table) = lab.tables.open_named(QUARANTINE).await.map_err(failed)? else {
        return Ok((vec![], 0));
    };
    let ctx = tables::session(&table, "q").await.map_err(failed)?;
    let mut only = vec!["true".to_string()];
    if let Some(r) = run {
        only.push(format!("run = {r}"));
    }
    if let Some((table, rule)) = rule {
        // `rules` joins a row's broken rules with ", ".
        let quote = |s: &str| s.replace('\'', "''");
        let (t, r) = (quote(&table), quote(&rule));
        only.push(format!(
            "\"table\" = '{t}' AND array_has(string_to_array(rules, ', '), '{r}')"
        ));
    }
    let only = format!("WHERE {}", only.join(" AND "));
    let sql = format!("SELECT count(*) AS n FROM q {only}");
    let counted = tables::query(&ctx, QUARANTINE, &sql)
        .await
        .map_err(failed)?;
    let total = match counted.first().filter(|b| b.num_rows() > 0) {
        Some(b) => Columns::of(b, QUARANTINE)
            .primitive::<Int64Type>("n")
            .map_err(failed)?
            .value(0) as u64,
        None => 0,
    };
    let sql = format!(
        "SELECT run, \"table\", rules, reason, \"row\", source_file, source_line, source_table, \
         source_version FROM q {only} \
         ORDER BY run DESC NULLS LAST, source_file, source_line LIMIT {ROWS_SHOWN}"
    );
    let batches = tables::query(&ctx, QUARANTINE, &sql)
        .await
        .map_err(failed)?;
    let mut rows = vec![];
    for batch in &batches {
        let c = Columns::of(batch, QUARANTINE);
        let runs = c.primitive::<Int64Type>("run").map_err(failed)?;
        let lines = c.primitive::<Int64Type>("source_line").map_err(failed)?;
        let versions = c.primitive::<Int64Type>("source_version").map_err(failed)?;
        let [table, rules, reason, row, file, source] = [
            "table",
            "rules",
            "reason",
            "row",
            "source_file",
            "source_table",
        ]
        .map(|n| c.strings(n));
        let (table, rules, reason, row, file, source) = (
            table.map_err(failed)?,
            rules.map_err(failed)?,
            reason.map_err(failed)?,
            row.map_err(failed)?,
            file.map_err(failed)?,
            source.map_err(failed)?,
        );
        for i in 0..batch.num_rows() {
            let text = |a: &arrow::array::StringArray| match a.is_null(i) {
                true => String::new(),
                false => a.value(i).to_string(),
            };
            rows.push(QuarantinedRow {
                run: runs.is_valid(i).then(|| runs.value(i)),
                table: text(&table),
                rules: text(&rules),
                reason: text(&reason),
                row: text(&row),
                file: file.is_valid(i).then(|| file.value(i).to_string()),
                line: lines.is_valid(i).then(|| lines.value(i)),
                source: source.is_valid(i).then(|| match versions.is_valid(i) {
                    true => format!("{} version {}", source.value(i), versions.value(i)),
                    false => source.value(i).to_string(),
                }),
            });
        }
    }
    Ok((rows, total))
}
