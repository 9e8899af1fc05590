//! The check of a flow that does not aggregate (PIPELINES §9): its query run again as a batch
//! over every row its sources gave up to its table's last commit (a table read whole, as that
//! commit read it), then `reckon.dropDuplicates` and the drop rules, as a run does. Every row
//! that gives must be in the table, in `_quarantine` under its rules, or a duplicate; a row the
//! table or the quarantine holds that it does not give came from no source row.

use std::collections::{BTreeSet, HashMap};

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;

use super::expectations::{self, Origin, row_json, source_of, visible};
use super::late::{self, described};
use super::side::{self, QUARANTINED};
use super::so_far::{self, Segment};
use super::{QUARANTINE, streamed_table};
use crate::engine::columns::row_keys;
use crate::engine::declarative::graph::{FlowKind, FlowSpec};
use crate::engine::declarative::parse::{Dataset, Violation};
use crate::engine::flow::{FlowContext, FlowError, Refusal};
use crate::engine::tables::{self, TableError};

/// How many rows of each kind a finding names at most.
const NAMED: usize = 5;

/// Where every row of one flow went, and the rows that do not add up.
#[derive(Debug, Clone, Default)]
pub struct Accounting {
    pub table: String,
    pub materialized: bool,
    /// Rows the query gives over every source row read so far.
    pub read: u64,
    pub kept: u64,
    pub duplicates: u64,
    /// Per drop rule, the rows it kept out.
    pub dropped: Vec<(String, u64)>,
    /// Rows the query gives that are neither in the table nor set aside, named with their
    /// source; and how many in all.
    pub went_nowhere: (Vec<String>, u64),
    /// Table rows the query does not give, named with the version that added them.
    pub unsourced: (Vec<String>, u64),
    /// Rows a drop rule kept out that `_quarantine` lacks, and rows it holds for none.
    pub quarantine_missing: (Vec<String>, u64),
    pub quarantine_extra: (Vec<String>, u64),
}

impl Accounting {
    pub fn adds_up(&self) -> bool {
        [
            &self.went_nowhere,
            &self.unsourced,
            &self.quarantine_missing,
            &self.quarantine_extra,
        ]
        .iter()
        .all(|(_, n)| *n == 0)
    }
}

/// The accounting of `flows`, every flow filling `dataset`, or `None` before their first
/// commit. When a flow's definition changed, each part of what it read is processed by the
/// definition that read it (its query, rules and duplicate keys), as the runs did.
pub async fn account(
    cx: &FlowContext,
    flows: &[&FlowSpec],
    dataset: &Dataset,
) -> Result<Option<Accounting>, FlowError> {
    let target = dataset.name.as_str();
    let mut table = None;
    let mut segments = vec![];
    for &flow in flows {
        if let Some((t, s)) = so_far::segments(cx, flow).await? {
            table = Some(t);
            segments.extend(s);
        }
    }
    let Some(table) = table else {
        return Ok(None);
    };
    let mut out = Accounting {
        table: target.to_string(),
        materialized: flows.iter().any(|f| f.kind == FlowKind::Materialize),
        ..Accounting::default()
    };
    let parts = segments.len();
    let (mut kept, mut kept_out) = (vec![], vec![]);
    // Which flow gave each part of the kept rows, to name a row's source.
    let mut owners: Vec<(usize, Origin)> = vec![];
    let mut dropped: Vec<(String, u64)> = vec![];
    // Keys seen by `reckon.dropDuplicates` carry from one definition to the next, as in the runs.
    let mut seen = BTreeSet::new();
    for Segment {
        flow,
        dataset: then,
        ctx,
    } in &segments
    {
        let dataset = then.as_ref().unwrap_or(dataset);
        let origin = Origin {
            run: None,
            table: target,
            flow: &flow.name,
            source_table: streamed_table(flow),
        };
        // Process, as a run does.
        let (schema, batches) = so_far::collect(ctx, &flow.query.sql, target).await?;
        let rows = concat_batches(&schema, &batches).map_err(arrow_error(target))?;
        out.read += rows.num_rows() as u64;
        let (rows, duplicates) = match dataset.properties.get("reckon.dropDuplicates") {
            Some(keys) if flow.kind == FlowKind::Append => {
                let keys: Vec<String> = keys.split(',').map(|k| k.trim().to_string()).collect();
                expectations::drop_duplicates(&rows, &keys, &mut seen, target)?
            }
            _ => (rows, 0),
        };
        out.duplicates += duplicates;
        let sorted = expectations::apply(rows, &dataset.expectations, &origin).await?;
        let rules = sorted.rules.iter().zip(&dataset.expectations);
        for (rule, _) in rules.filter(|(r, e)| e.on_violation == Violation::Drop && r.failed > 0) {
            match dropped.iter_mut().find(|(name, _)| *name == rule.name) {
                Some((_, n)) => *n += rule.failed,
                None => dropped.push((rule.name.clone(), rule.failed)),
            }
        }
        // Parts written by other flows or definitions meet in the table's columns.
        let rows = match parts {
            1 => sorted.kept,
            _ => super::columns::align(&table, sorted.kept, target, &flow.name)?,
        };
        let end = owners.last().map_or(0, |(e, _)| *e) + rows.num_rows();
        owners.push((end, origin));
        kept.push(rows);
        kept_out.extend(sorted.quarantined);
    }
    out.dropped = dropped;
    let kept = super::columns::meet(&kept).map_err(arrow_error(target))?;
    let origin_of = |i: usize| &owners[owners.partition_point(|(end, _)| *end <= i)].1;
    out.kept = kept.num_rows() as u64;
    // What the table holds, against what the query gives.
    let expected = visible(&kept).map_err(arrow_error(target))?;
    let names: Vec<String> = expected
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let held = read_all(&table, target).await?;
    let held = project(&held, &names, target)?;
    let (missing, extra) = differ(
        &row_keys(expected.columns(), target)?,
        &row_keys(held.columns(), target)?,
    );
    out.went_nowhere = named(&missing, |i| {
        Ok(format!(
            "{} ({})",
            described(&row_json(&kept, i)?),
            source_of(&kept, i, origin_of(i))
        ))
    })?;
    let versions = match extra.is_empty() || out.materialized {
        true => HashMap::new(),
        false => added_in(&table, &names, target).await?,
    };
    let held_keys = row_keys(held.columns(), target)?;
    out.unsourced = named(&extra, |i| {
        let version = versions.get(&held_keys[i]).map_or(String::new(), |v| {
            format!(" (added in {target} version {v})")
        });
        Ok(format!("{}{version}", described(&row_json(&held, i)?)))
    })?;
    // What `_quarantine` holds for this flow, against what the rules kept out.
    let kept_out = one_batch(&kept_out)?;
    let mut stored = vec![];
    for flow in flows {
        stored.push(quarantined(cx, target, &flow.name).await?);
    }
    let stored = one_batch(&stored)?;
    let (missing, extra) = differ(
        &side::row_ids(&kept_out, &QUARANTINED)?,
        &side::row_ids(&stored, &QUARANTINED)?,
    );
    let quarantine_row = |batch: &RecordBatch, i: usize| -> Result<String, FlowError> {
        let text = |name: &str| {
            let column = late::texts(batch, name)?;
            arrow::array::Array::is_valid(&column, i).then(|| column.value(i).to_string())
        };
        Ok(format!(
            "{} by {}",
            described(&text("row").unwrap_or_default()),
            text("rules").unwrap_or_default()
        ))
    };
    out.quarantine_missing = named(&missing, |i| quarantine_row(&kept_out, i))?;
    out.quarantine_extra = named(&extra, |i| quarantine_row(&stored, i))?;
    Ok(Some(out))
}

/// The positions in `a` of rows `b` lacks, and in `b` of rows `a` lacks (as multisets).
fn differ(a: &[String], b: &[String]) -> (Vec<usize>, Vec<usize>) {
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for key in a {
        *counts.entry(key).or_default() += 1;
    }
    for key in b {
        *counts.entry(key).or_default() -= 1;
    }
    let mut pick = |keys: &[String], sign: i64| -> Vec<usize> {
        let mut out = vec![];
        for (i, key) in keys.iter().enumerate() {
            let n = counts.get_mut(key.as_str()).expect("counted");
            if *n * sign > 0 {
                *n -= sign;
                out.push(i);
            }
        }
        out
    };
    let only_a = pick(a, 1);
    let only_b = pick(b, -1);
    (only_a, only_b)
}

/// The first [`NAMED`] of `rows` in words, and how many there are.
fn named(
    rows: &[usize],
    name: impl Fn(usize) -> Result<String, FlowError>,
) -> Result<(Vec<String>, u64), FlowError> {
    let names = rows
        .iter()
        .take(NAMED)
        .map(|&i| name(i))
        .collect::<Result<_, _>>()?;
    Ok((names, rows.len() as u64))
}

/// Every row the table holds now.
async fn read_all(table: &deltalake::DeltaTable, target: &str) -> Result<RecordBatch, FlowError> {
    let ctx = tables::session(table, "target").await?;
    let df = ctx.table("target").await.map_err(query_error(target))?;
    let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.map_err(query_error(target))?;
    concat_batches(&schema, &batches).map_err(arrow_error(target))
}

/// `batch`'s columns `names`, in that order; a column it lacks is refused, naming it.
fn project(batch: &RecordBatch, names: &[String], target: &str) -> Result<RecordBatch, FlowError> {
    let schema = batch.schema();
    let mut at = vec![];
    for name in names {
        let i = schema.index_of(name).map_err(|_| {
            FlowError::from(Refusal::SchemaClash(format!(
                "{target} has no column {name}, which its query gives"
            )))
        })?;
        at.push(i);
    }
    batch.project(&at).map_err(arrow_error(target))
}

/// Per row (as its key over `names`), the latest table version that added it: from its change
/// feed.
async fn added_in(
    table: &deltalake::DeltaTable,
    names: &[String],
    target: &str,
) -> Result<HashMap<String, i64>, FlowError> {
    let ctx = tables::in_order();
    let last = tables::version(table);
    let df = tables::changes::inserted(&ctx, table, (0, last))?;
    let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.map_err(query_error(target))?;
    let all = concat_batches(&schema, &batches).map_err(arrow_error(target))?;
    let rows = project(&all, names, target)?;
    let versions = arrow::compute::cast(
        all.column_by_name("_commit_version")
            .ok_or_else(|| FlowError::from(Refusal::SchemaClash("no _commit_version".into())))?,
        &arrow::datatypes::DataType::Int64,
    )
    .map_err(arrow_error(target))?;
    let versions = arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(&versions);
    // A row held twice: the later copy is the one no source row gave.
    let mut out: HashMap<String, i64> = HashMap::new();
    for (key, version) in row_keys(rows.columns(), target)?
        .into_iter()
        .zip(versions.values().iter().copied())
    {
        let latest = out.entry(key).or_insert(version);
        *latest = (*latest).max(version);
    }
    Ok(out)
}

/// Quarantine rows as one batch in the quarantine's own columns (a batch read back from the
/// table holds its texts as views).
fn one_batch(batches: &[RecordBatch]) -> Result<RecordBatch, FlowError> {
    let schema = (QUARANTINED.schema)();
    let mut same = vec![];
    for batch in batches {
        let columns = (schema.fields().iter())
            .map(|f| match batch.column_by_name(f.name()) {
                Some(c) => arrow::compute::cast(c, f.data_type()),
                None => Ok(arrow::array::new_null_array(
                    f.data_type(),
                    batch.num_rows(),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(arrow_error(QUARANTINE))?;
        same.push(RecordBatch::try_new(schema.clone(), columns).map_err(arrow_error(QUARANTINE))?);
    }
    concat_batches(&schema, &same).map_err(arrow_error(QUARANTINE))
}

/// `_quarantine`'s rows of `target`'s flow `flow`.
async fn quarantined(cx: &FlowContext, target: &str, flow: &str) -> Result<RecordBatch, FlowError> {
    one_batch(&side::of_flow(cx, &QUARANTINED, target, flow).await?)
}

fn query_error(target: &str) -> impl Fn(datafusion::error::DataFusionError) -> FlowError + '_ {
    move |source| {
        FlowError::Table(TableError::Query {
            table: target.to_string(),
            source,
        })
    }
}

fn arrow_error(target: &str) -> impl Fn(arrow::error::ArrowError) -> FlowError + '_ {
    move |source| {
        FlowError::Table(TableError::Arrow {
            table: target.to_string(),
            source,
        })
    }
}
