//! What happens to a flow's rows before they are written: `reckon.dropDuplicates` keeps the first
//! row of each key across runs (PIPELINES §2), then every expectation sees every row (§4): a
//! warning counts, a drop rule keeps the row out (in `_quarantine`, with the rules and its
//! source), a fail rule stops the flow naming the table, the rule, the row and where it came from.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::engine::columns::row_keys;
use app::model::RuleCount;
use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::prelude::SessionContext;

use super::sources::VERSION;
use crate::engine::declarative::files::decode::{FILE, LINE};
use crate::engine::declarative::graph::DELETE;
use crate::engine::declarative::parse::{Expectation, Violation};
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::TableError;

/// The pipeline's quarantine table: the rows drop rules kept out, with why and where from.
pub const QUARANTINE: &str = "_quarantine";

pub fn quarantine_schema() -> SchemaRef {
    let text = |name| Field::new(name, DataType::Utf8, true);
    let number = |name| Field::new(name, DataType::Int64, true);
    Arc::new(Schema::new(vec![
        number("run"),
        text("table"),
        text("flow"),
        text("rules"),
        text("reason"),
        text("row"),
        text("source_file"),
        number("source_line"),
        text("source_table"),
        number("source_version"),
    ]))
}

/// Where a row came from, and the run that dropped it, for the quarantine.
pub struct Origin<'a> {
    pub run: Option<i64>,
    pub table: &'a str,
    pub flow: &'a str,
    /// The table a streamed row came from, when it came from one.
    pub source_table: Option<&'a str>,
}

/// The rows to write and the rows kept out, with the counts the event log shows.
pub struct Sorted {
    pub kept: RecordBatch,
    pub quarantined: Option<RecordBatch>,
    pub dropped: u64,
    pub rules: Vec<RuleCount>,
}

/// The columns Reckon adds to a flow's rows for its own use: a row's file and line, the source
/// version it was read at, and whether an AUTO CDC event is a delete.
const HIDDEN: [&str; 4] = [FILE, LINE, VERSION, DELETE];

/// The columns a dataset holds: the hidden ones left out (a learner's own `__` columns, and an
/// SCD 2 table's `__START_AT` and `__END_AT` read by a view, stay).
pub fn visible(batch: &RecordBatch) -> Result<RecordBatch, arrow::error::ArrowError> {
    batch.project(&visible_columns(&batch.schema()))
}

/// The columns a dataset holds of rows with `schema`: the hidden ones left out, as [`visible`].
pub fn visible_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = visible_columns(schema)
        .into_iter()
        .map(|i| schema.field(i).clone())
        .collect();
    Arc::new(Schema::new(fields))
}

/// The positions of `schema`'s columns that are not hidden.
fn visible_columns(schema: &Schema) -> Vec<usize> {
    (0..schema.fields().len())
        .filter(|&i| !HIDDEN.contains(&schema.field(i).name().as_str()))
        .collect()
}

/// Drops rows whose key was seen before (in this run or any earlier one), remembering new keys.
pub fn drop_duplicates(
    batch: &RecordBatch,
    keys: &[String],
    seen: &mut BTreeSet<String>,
    table: &str,
) -> Result<(RecordBatch, u64), FlowError> {
    let mut columns = vec![];
    for key in keys {
        let column = batch.column_by_name(key).ok_or_else(|| {
            FlowError::from(Refusal::SchemaClash(format!(
                "{table}: reckon.dropDuplicates names column {key}, which its flows do not give"
            )))
        })?;
        columns.push(column.clone());
    }
    let keep: Vec<bool> = row_keys(&columns, table)?
        .into_iter()
        .map(|key| seen.insert(key))
        .collect();
    let duplicates = keep.iter().filter(|k| !**k).count() as u64;
    let kept =
        filter_record_batch(batch, &BooleanArray::from(keep)).map_err(|e| arrow_error(table, e))?;
    Ok((kept, duplicates))
}

/// Evaluates every rule on every row and sorts the rows (see the module's text).
pub async fn apply(
    batch: RecordBatch,
    rules: &[Expectation],
    origin: &Origin<'_>,
) -> Result<Sorted, FlowError> {
    let rows = batch.num_rows();
    let mut sorted = Sorted {
        kept: batch.clone(),
        quarantined: None,
        dropped: 0,
        rules: vec![],
    };
    if rules.is_empty() || rows == 0 {
        sorted.rules = rules
            .iter()
            .map(|r| RuleCount {
                name: r.name.clone(),
                passed: 0,
                failed: 0,
            })
            .collect();
        return Ok(sorted);
    }
    let passes = evaluate(&batch, rules, origin.table).await?;
    let mut keep = vec![true; rows];
    let mut broken: Vec<Vec<&str>> = vec![vec![]; rows];
    for (rule, pass) in rules.iter().zip(&passes) {
        let failed = pass.iter().filter(|p| !**p).count() as u64;
        sorted.rules.push(RuleCount {
            name: rule.name.clone(),
            passed: rows as u64 - failed,
            failed,
        });
        for row in (0..rows).filter(|&r| !pass[r]) {
            match rule.on_violation {
                Violation::Warn => {}
                Violation::Drop => {
                    keep[row] = false;
                    broken[row].push(&rule.name);
                }
                Violation::Fail => {
                    return Err(FlowError::from(Refusal::ExpectationFailed(format!(
                        "{}: rule {} (ON VIOLATION FAIL UPDATE) failed on row {} from {}; nothing was written",
                        origin.table,
                        rule.name,
                        row_json(&batch, row)?,
                        source_of(&batch, row, origin)
                    ))));
                }
            }
        }
    }
    let dropped: Vec<usize> = (0..rows).filter(|&r| !keep[r]).collect();
    sorted.dropped = dropped.len() as u64;
    if !dropped.is_empty() {
        let reasons: Vec<(String, String)> = dropped
            .iter()
            .map(|&r| {
                (
                    broken[r].join(", "),
                    format!("dropped by {}", broken[r].join(" and ")),
                )
            })
            .collect();
        sorted.quarantined = Some(quarantine(&batch, &dropped, &reasons, origin)?);
        sorted.kept = filter_record_batch(&batch, &BooleanArray::from(keep))
            .map_err(|e| arrow_error(origin.table, e))?;
    }
    Ok(sorted)
}

/// Per rule, per row: whether the condition is true (false and NULL fail). A row on which the
/// condition cannot be computed (a text that is not a number, compared with one) fails it, as
/// Spark's NULL from a failed cast would; a condition that does not plan fails the flow.
///
/// The condition is evaluated on the rows themselves, as an expression over the batch, never as
/// a query: a query's output may come in another order than its input (DataFusion spreads rows
/// over partitions), and a verdict must stay with its row.
async fn evaluate(
    batch: &RecordBatch,
    rules: &[Expectation],
    table: &str,
) -> Result<Vec<Vec<bool>>, FlowError> {
    let ctx = SessionContext::new();
    let mut out = vec![];
    for rule in rules {
        let what = format!("{table}: rule {}", rule.name);
        let condition = Condition::plan(&ctx, batch.schema(), &rule.condition, &what)?;
        let mut pass = Vec::with_capacity(batch.num_rows());
        // Halves of the rows that did not compute, until each failing row stands alone.
        let mut pending = vec![(0, batch.num_rows())];
        let mut results: Vec<(usize, Vec<bool>)> = vec![];
        while let Some((offset, len)) = pending.pop() {
            match condition.passes(&batch.slice(offset, len)) {
                Some(p) => results.push((offset, p)),
                None if len == 1 => results.push((offset, vec![false])),
                None => {
                    pending.push((offset + len / 2, len - len / 2));
                    pending.push((offset, len / 2));
                }
            }
        }
        results.sort_by_key(|(offset, _)| *offset);
        results.into_iter().for_each(|(_, p)| pass.extend(p));
        out.push(pass);
    }
    Ok(out)
}

/// A rule's condition, planned once for a batch's columns as `(condition) IS TRUE`.
struct Condition(Arc<dyn datafusion::physical_expr::PhysicalExpr>);

impl Condition {
    fn plan(
        ctx: &SessionContext,
        schema: SchemaRef,
        condition: &str,
        what: &str,
    ) -> Result<Self, FlowError> {
        let error = |source| TableError::Query {
            table: what.to_string(),
            source,
        };
        let schema =
            datafusion::common::DFSchema::try_from(schema.as_ref().clone()).map_err(error)?;
        let expr = ctx
            .parse_sql_expr(&format!("({condition}) IS TRUE"), &schema)
            .map_err(error)?;
        Ok(Self(
            ctx.create_physical_expr(expr, &schema).map_err(error)?,
        ))
    }

    /// Each row's verdict, in row order, or `None` when the condition failed on some row.
    fn passes(&self, rows: &RecordBatch) -> Option<Vec<bool>> {
        let value = self.0.evaluate(rows).ok()?;
        let array = value.into_array(rows.num_rows()).ok()?;
        // One verdict per row, or none: a verdict must never shift onto another row.
        let verdicts = array
            .as_boolean_opt()
            .filter(|v| v.len() == rows.num_rows())?;
        Some(verdicts.iter().map(|v| v == Some(true)).collect())
    }
}

fn arrow_error(table: &str, source: arrow::error::ArrowError) -> FlowError {
    FlowError::Table(TableError::Arrow {
        table: table.to_string(),
        source,
    })
}

/// One row's visible columns as a JSON object.
pub(super) fn row_json(batch: &RecordBatch, row: usize) -> Result<String, FlowError> {
    let one = visible(&batch.slice(row, 1)).map_err(|e| arrow_error("row", e))?;
    let mut writer = arrow::json::LineDelimitedWriter::new(Vec::new());
    writer.write(&one).map_err(|e| arrow_error("row", e))?;
    writer.finish().map_err(|e| arrow_error("row", e))?;
    Ok(String::from_utf8_lossy(&writer.into_inner())
        .trim()
        .to_string())
}

/// Every row of `batch` as JSON, written at once (JSON escapes a newline inside a text, so the
/// lines are the rows).
pub(super) fn rows_json(batch: &RecordBatch) -> Result<Vec<String>, FlowError> {
    let shown = visible(batch).map_err(|e| arrow_error("row", e))?;
    let mut writer = arrow::json::LineDelimitedWriter::new(Vec::new());
    writer.write(&shown).map_err(|e| arrow_error("row", e))?;
    writer.finish().map_err(|e| arrow_error("row", e))?;
    let text = String::from_utf8_lossy(&writer.into_inner()).into_owned();
    Ok(text.lines().map(|l| l.trim().to_string()).collect())
}

fn text_at(batch: &RecordBatch, name: &str, row: usize) -> Option<String> {
    let c = batch.column_by_name(name)?;
    c.as_string_opt::<i32>()
        .filter(|a| a.is_valid(row))
        .map(|a| a.value(row).to_string())
}

pub(super) fn number_at(batch: &RecordBatch, name: &str, row: usize) -> Option<i64> {
    let c = batch.column_by_name(name)?;
    c.as_primitive_opt::<Int64Type>()
        .filter(|a| a.is_valid(row))
        .map(|a| a.value(row))
}

/// The columns through which a dataset keeps where its rows came from, for the flows reading
/// it: `_metadata.file_path AS source_file, _metadata.line_number AS source_line` (the names
/// `_quarantine` gives them).
pub const KEPT_FILE: &str = "source_file";
pub const KEPT_LINE: &str = "source_line";

/// The file row `row` came from: read from it in this flow, or kept by the dataset it streams.
pub(super) fn file_of(batch: &RecordBatch, row: usize) -> Option<String> {
    text_at(batch, FILE, row).or_else(|| text_at(batch, KEPT_FILE, row))
}

pub(super) fn line_of(batch: &RecordBatch, row: usize) -> Option<i64> {
    number_at(batch, LINE, row).or_else(|| number_at(batch, KEPT_LINE, row))
}

/// Where row `row` came from, in words: `landing/x.json:12` or `bronze_tickets version 3`.
pub(super) fn source_of(batch: &RecordBatch, row: usize, origin: &Origin<'_>) -> String {
    match (file_of(batch, row), line_of(batch, row)) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        _ => match (origin.source_table, number_at(batch, VERSION, row)) {
            (Some(t), Some(v)) => format!("{t} version {v}"),
            (Some(t), None) => t.to_string(),
            _ => format!("from flow {}'s query", origin.flow),
        },
    }
}

/// The quarantine's rows for rows `rows` of `batch`, each with its (rules, reason).
pub fn quarantine(
    batch: &RecordBatch,
    rows: &[usize],
    reasons: &[(String, String)],
    origin: &Origin<'_>,
) -> Result<RecordBatch, FlowError> {
    let n = rows.len();
    let same = |v: &str| StringArray::from(vec![Some(v.to_string()); n]);
    let mut row_texts = vec![];
    for &r in rows {
        row_texts.push(Some(row_json(batch, r)?));
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![origin.run; n])),
        Arc::new(same(origin.table)),
        Arc::new(same(origin.flow)),
        Arc::new(StringArray::from(
            reasons
                .iter()
                .map(|(rules, _)| Some(rules.clone()))
                .collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            reasons
                .iter()
                .map(|(_, why)| Some(why.clone()))
                .collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(row_texts)),
        Arc::new(StringArray::from(
            rows.iter().map(|&r| file_of(batch, r)).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|&r| line_of(batch, r)).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            rows.iter()
                .map(|&r| number_at(batch, VERSION, r).and(origin.source_table.map(String::from)))
                .collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter()
                .map(|&r| number_at(batch, VERSION, r))
                .collect::<Vec<_>>(),
        )),
    ];
    RecordBatch::try_new(quarantine_schema(), columns).map_err(|e| arrow_error(QUARANTINE, e))
}
