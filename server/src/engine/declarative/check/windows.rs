//! The check's lines for a windowed table (PIPELINES §9): each window beside the recount of its
//! events (`declared/windowed/recount.rs`), with SPEC §4's verdicts generalized: `ok`; `late`
//! (the difference is exactly rows that came after the window was written, named); `PROBLEM`
//! (counted twice, missing, written from nothing or twice); `waiting` (not written yet, with the
//! event time that closes it).

use std::collections::HashMap;

use app::model::{CheckLine, Verdict, WindowCheck};
use arrow::array::{Array, AsArray};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use chrono::{DateTime, Utc};

use crate::engine::declarative::declared::windowed::recount::{self, Recount, Window};
use crate::engine::declarative::graph::Graph;
use crate::engine::event::format_micros;
use crate::engine::flow::{FlowContext, FlowError};

/// How many rows a line names at most.
const NAMED: usize = 3;

/// The lines of every windowed table of `graph`, and its windows as the page shows them.
pub async fn tables(
    cx: &FlowContext,
    graph: &Graph,
) -> Result<(Vec<CheckLine>, Vec<WindowCheck>), FlowError> {
    let (mut lines, mut windows) = (vec![], vec![]);
    for flow in &graph.flows {
        let Some(plan) = &flow.query.window else {
            continue;
        };
        if let Some(recount) = recount::recount(cx, graph, flow, plan).await? {
            let (l, mut w) = self::lines(&recount);
            let jobs = recount_jobs(cx, graph, &recount, plan).await?;
            for window in &mut w {
                window.recount_job = jobs.get(&window.start).cloned();
            }
            lines.extend(l);
            windows.extend(w);
        }
    }
    Ok((lines, windows))
}

/// One table's lines: a note on events sent more than once, then its windows in order; and
/// each window beside its recount.
pub fn lines(r: &Recount) -> (Vec<CheckLine>, Vec<WindowCheck>) {
    let mut out = vec![];
    if r.repeats > 0 {
        out.push(CheckLine::says(
            Verdict::Note,
            format!(
                "{}: {} of the {} rows its windows read repeat an event sent before (counted once)",
                r.table, r.repeats, r.rows
            ),
        ));
    }
    let days: std::collections::BTreeSet<i64> = r
        .windows
        .iter()
        .map(|w| w.start.div_euclid(86_400_000_000))
        .collect();
    let at = |t: i64| {
        let t = DateTime::<Utc>::from_timestamp_micros(t).unwrap_or_default();
        match days.len() <= 1 {
            true => t.format("%H:%M").to_string(),
            false => t.format("%Y-%m-%d %H:%M").to_string(),
        }
    };
    let mut windows = vec![];
    let shown = |values: &[String]| figures(r, values);
    for w in &r.windows {
        let mut label = format!("{} {}", r.table, at(w.start));
        for key in &w.keys {
            label.push(' ');
            label.push_str(key);
        }
        let (verdict, text) = verdict(r, w, &label, &at);
        windows.push(WindowCheck {
            table: r.table.clone(),
            start: format_micros(w.start),
            keys: w.keys.clone(),
            said: match w.written.as_slice() {
                [] => None,
                rows => Some(rows.iter().map(|v| shown(v)).collect::<Vec<_>>().join("; ")),
            },
            events: w.all.as_deref().map(shown),
            recount_job: None,
            verdict,
            why: text
                .strip_prefix(label.as_str())
                .unwrap_or(&text)
                .trim_start_matches(':')
                .trim()
                .to_string(),
        });
        let mut line = CheckLine::says(verdict, text);
        line.hour = Some(format_micros(w.start));
        out.push(line);
    }
    (out, windows)
}

fn verdict(r: &Recount, w: &Window, label: &str, at: &dyn Fn(i64) -> String) -> (Verdict, String) {
    let shown = |values: &[String]| figures(r, values);
    match (w.written.as_slice(), &w.all) {
        ([_, _, ..], _) => (
            Verdict::Problem,
            format!(
                "{label} written {} times: a window is written once",
                w.written.len()
            ),
        ),
        ([one], None) => (
            Verdict::Problem,
            format!(
                "{label} counted {}, but no event falls in that window",
                shown(one)
            ),
        ),
        ([one], Some(all)) if one == all => (Verdict::Ok, format!("{label}: {}", shown(one))),
        ([one], Some(all)) => {
            let (counted, say) = (shown(one), shown(all));
            if w.on_time.as_ref() == Some(one) && !(w.late.is_empty() && w.dropped.is_empty()) {
                return (
                    Verdict::Late,
                    format!(
                        "{label} counted {counted}; the events say {say}: {}",
                        explained(w)
                    ),
                );
            }
            let more = r.count.is_some_and(|c| number(&one[c]) > number(&all[c]));
            match more {
                true => {
                    let repeated: Vec<String> = w
                        .repeated
                        .iter()
                        .map(|(row, n)| format!("{row} sent {n} times"))
                        .collect();
                    (
                        Verdict::Problem,
                        format!(
                            "{label} counted {counted}, but the events say {say}: an event \
                             counted twice{}",
                            match repeated.is_empty() {
                                true => String::new(),
                                false => format!(": {}", named(&repeated)),
                            }
                        ),
                    )
                }
                false => (
                    Verdict::Problem,
                    format!(
                        "{label} counted {counted}, but the events say {say}: rows are missing \
                         that were not late"
                    ),
                ),
            }
        }
        ([], Some(all)) => {
            let end = w.start + r.width;
            let passed = r.watermark.is_some_and(|wm| wm >= end);
            match (passed, w.on_time_events) {
                (true, 0) => (
                    Verdict::Late,
                    format!("{label} not written: {}: {}", shown(all), explained(w)),
                ),
                (true, _) => (
                    Verdict::Problem,
                    format!(
                        "{label} not written although the watermark passed its end: the events \
                         say {}",
                        shown(all)
                    ),
                ),
                (false, _) => (
                    Verdict::Waiting,
                    format!(
                        "{label} is not written yet: it closes when an event at or after {} arrives",
                        at(end + r.delay)
                    ),
                ),
            }
        }
        ([], None) => (Verdict::Ok, format!("{label}: nothing")),
    }
}

/// Why events are not in a window: rows that came late, rows the duplicate keys dropped.
fn explained(w: &Window) -> String {
    let mut parts = vec![];
    if !w.late.is_empty() {
        parts.push(format!(
            "{} arrived after the window was written: {}",
            w.late.len(),
            named(&w.late)
        ));
    }
    if !w.dropped.is_empty() {
        parts.push(format!(
            "{} dropped as the duplicate of an earlier row with the same duplicate keys: {}",
            w.dropped.len(),
            named(&w.dropped)
        ));
    }
    parts.join("; ")
}

/// What a learner's recount job says of each window of `r`'s table (PIPELINES §9): a
/// materialized view marked `'reckon.recountOf' = 'TABLE'`, its rows matched to windows by the
/// column named as the table's window start (or its first timestamp), its figures by the
/// aggregates' names. Windows with group keys are not matched.
async fn recount_jobs(
    cx: &FlowContext,
    graph: &Graph,
    r: &Recount,
    plan: &crate::engine::declarative::sql::window::WindowPlan,
) -> Result<HashMap<String, String>, FlowError> {
    use arrow::datatypes::{DataType, TimeUnit};
    let mut out = HashMap::new();
    let start_name = plan.outputs.iter().find_map(|(n, o)| match o {
        crate::engine::declarative::sql::window::Output::Start => Some(n.clone()),
        _ => None,
    });
    if !plan.keys.is_empty() {
        return Ok(out);
    }
    let jobs = graph
        .datasets
        .iter()
        .filter(|d| d.properties.get(RECOUNT_OF) == Some(&r.table));
    for job in jobs {
        let Some(table) = cx.tables.open_named(&job.name).await? else {
            continue;
        };
        let ctx = crate::engine::tables::session(&table, "job").await?;
        let batches = crate::engine::tables::query(&ctx, &job.name, "SELECT * FROM job").await?;
        let options = FormatOptions::default().with_null("NULL");
        for batch in &batches {
            let schema = batch.schema();
            let start = start_name
                .as_ref()
                .and_then(|n| schema.index_of(n).ok())
                .or_else(|| {
                    (0..schema.fields().len())
                        .find(|&i| matches!(schema.field(i).data_type(), DataType::Timestamp(..)))
                });
            let Some(start) = start else { continue };
            let Ok(starts) = arrow::compute::cast(
                batch.column(start),
                &DataType::Timestamp(TimeUnit::Microsecond, None),
            ) else {
                continue;
            };
            let starts = starts.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
            for row in 0..batch.num_rows() {
                if starts.is_null(row) {
                    continue;
                }
                let figures: Vec<String> = r
                    .columns
                    .iter()
                    .filter_map(|c| {
                        let column = batch.column_by_name(c)?;
                        let shown = ArrayFormatter::try_new(column.as_ref(), &options).ok()?;
                        Some(format!("{c} {}", shown.value(row)))
                    })
                    .collect();
                let said = format!("{} ({})", figures.join(", "), job.name);
                out.insert(format_micros(starts.value(row)), said);
            }
        }
    }
    Ok(out)
}

/// The property that marks a materialized view as a windowed table's recount job.
pub const RECOUNT_OF: &str = "reckon.recountOf";

/// A window's aggregates with their columns' names: `orders 3, revenue 68.50`.
fn figures(r: &Recount, values: &[String]) -> String {
    r.columns
        .iter()
        .zip(values)
        .map(|(c, v)| format!("{c} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Up to [`NAMED`] rows, and how many more.
fn named(rows: &[String]) -> String {
    let mut text = rows
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if rows.len() > NAMED {
        text.push_str(&format!(" and {} more", rows.len() - NAMED));
    }
    text
}

fn number(text: &str) -> f64 {
    text.parse().unwrap_or(f64::NAN)
}
