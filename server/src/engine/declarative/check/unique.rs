//! Every streaming table with `reckon.dropDuplicates` and one flow streaming one table: its
//! source read whole, commit by commit, through the flow's query; the first row of each key (in
//! source order) kept if it passes every drop rule. The table must hold exactly one row for each
//! such key and none for any other.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::engine::columns::row_keys;
use app::model::{CheckLine, Verdict};
use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::engine::declarative::graph::{FlowKind, Graph};
use crate::engine::declarative::parse::Violation;
use crate::engine::declarative::sql::Source;
use crate::engine::flow::FlowContext;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::{self, TableError};

fn query_error(table: &str) -> impl Fn(datafusion::error::DataFusionError) -> FlowError + '_ {
    move |source| {
        FlowError::Table(TableError::Query {
            table: table.to_string(),
            source,
        })
    }
}

/// Each row's key as text ([`row_keys`]), in row order.
fn keys_of(
    batches: &[RecordBatch],
    keys: &[String],
    table: &str,
) -> Result<Vec<String>, FlowError> {
    let mut out = vec![];
    for batch in batches {
        let columns = keys
            .iter()
            .map(|k| {
                let column = batch.column_by_name(k).ok_or_else(|| {
                    FlowError::from(Refusal::SchemaClash(format!(
                        "{table} has no column {k} to check"
                    )))
                })?;
                Ok(column.clone())
            })
            .collect::<Result<Vec<_>, FlowError>>()?;
        out.extend(row_keys(&columns, table)?);
    }
    Ok(out)
}

pub async fn tables(cx: &FlowContext, graph: &Graph) -> Result<Vec<CheckLine>, FlowError> {
    let mut lines = vec![];
    for dataset in &graph.datasets {
        let Some(keys) = dataset.properties.get("reckon.dropDuplicates") else {
            continue;
        };
        let keys: Vec<String> = keys.split(',').map(|k| k.trim().to_string()).collect();
        let flows: Vec<_> = graph
            .flows
            .iter()
            .filter(|f| f.target == dataset.name)
            .collect();
        let [flow] = flows.as_slice() else { continue };
        let (Some(read), true) = (flow.query.reads.first(), flow.query.reads.len() == 1) else {
            continue;
        };
        let Source::Table(source) = &read.source else {
            continue;
        };
        if !read.stream || flow.kind != FlowKind::Append || !flow.views.is_empty() {
            continue;
        }
        let (Some(source_table), Some(target_table)) = (
            cx.tables.open_named(source).await?,
            cx.tables.open_named(&dataset.name).await?,
        ) else {
            continue;
        };
        // The source in its order: commit by commit, each commit's rows as stored.
        let ctx = tables::in_order();
        let mut rows = vec![];
        for version in 0..=tables::version(&source_table) {
            let df = tables::changes::inserted(&ctx, &source_table, (version, version))?
                .drop_columns(&["_change_type", "_commit_version", "_commit_timestamp"])
                .map_err(query_error(source))?;
            rows.extend(df.collect().await.map_err(query_error(source))?);
        }
        let schema = match rows.first() {
            Some(b) => b.schema(),
            None => Arc::new(tables::arrow_schema(&source_table)?.as_ref().clone()),
        };
        let all = concat_batches(&schema, &rows).map_err(|source| {
            FlowError::Table(TableError::Arrow {
                table: dataset.name.clone(),
                source,
            })
        })?;
        let ctx = tables::in_order();
        let whole = MemTable::try_new(schema, vec![vec![all]]).map_err(query_error(source))?;
        ctx.register_table(read.name.as_str(), Arc::new(whole))
            .map_err(query_error(source))?;
        let output = tables::query(&ctx, &dataset.name, &flow.query.sql).await?;
        // The first row of each key, in order.
        let order = keys_of(&output, &keys, &dataset.name)?;
        let mut seen = BTreeSet::new();
        let first: Vec<bool> = order.iter().map(|k| seen.insert(k.clone())).collect();
        let mut firsts = vec![];
        let mut offset = 0;
        for batch in &output {
            let mask: arrow::array::BooleanArray = first[offset..offset + batch.num_rows()]
                .iter()
                .map(|b| Some(*b))
                .collect();
            offset += batch.num_rows();
            firsts.push(
                arrow::compute::filter_record_batch(batch, &mask).map_err(|source| {
                    FlowError::Table(TableError::Arrow {
                        table: dataset.name.clone(),
                        source,
                    })
                })?,
            );
        }
        let conditions: Vec<String> = dataset
            .expectations
            .iter()
            .filter(|e| e.on_violation == Violation::Drop)
            .map(|e| format!("({}) IS TRUE", e.condition))
            .collect();
        let firsts_schema = output.first().map(|b| b.schema());
        let expected: BTreeSet<String> = match firsts_schema {
            None => BTreeSet::new(),
            Some(s) => {
                let ctx = SessionContext::new();
                let table =
                    MemTable::try_new(s, vec![firsts]).map_err(query_error(&dataset.name))?;
                ctx.register_table("firsts", Arc::new(table))
                    .map_err(query_error(&dataset.name))?;
                let filter = match conditions.is_empty() {
                    true => String::new(),
                    false => format!(" WHERE {}", conditions.join(" AND ")),
                };
                let kept = tables::query(
                    &ctx,
                    &dataset.name,
                    &format!("SELECT * FROM firsts{filter}"),
                )
                .await?;
                keys_of(&kept, &keys, &dataset.name)?.into_iter().collect()
            }
        };
        let ctx = tables::session(&target_table, "target").await?;
        let stored = tables::query(&ctx, &dataset.name, "SELECT * FROM target").await?;
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for key in keys_of(&stored, &keys, &dataset.name)? {
            *counts.entry(key).or_default() += 1;
        }
        let wrong: Vec<String> = expected
            .iter()
            .filter(|k| counts.get(*k) != Some(&1))
            .chain(counts.keys().filter(|k| !expected.contains(*k)))
            .map(|k| k.replace('\u{0}', "").replace('\u{1}', ","))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let name = &dataset.name;
        lines.push(match wrong.as_slice() {
            [] => CheckLine::says(
                Verdict::Ok,
                format!(
                    "{name} holds one row for each of the {} keys whose first row passed its drop rules",
                    expected.len()
                ),
            ),
            some => CheckLine::says(
                Verdict::Problem,
                format!(
                    "{name} does not hold exactly one row for each key whose first row passed its \
                     drop rules: {} key(s) differ, e.g. {}",
                    some.len(),
                    some.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
                ),
            ),
        });
    }
    Ok(lines)
}
