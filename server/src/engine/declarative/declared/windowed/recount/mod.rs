//! A windowed flow worked out again for the check (PIPELINES §9): its query run as a batch,
//! without the watermark, over every row its sources gave up to its last commit (the files,
//! table versions and offsets that commit recorded), each event counted once however often it
//! was sent. Beside each window's recount: what the table holds for it, and, where they differ,
//! the recount without the events that only ever came late (the `_late` ledger's rows) and the
//! events read more than once, so the check can tell `late` from a `PROBLEM`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

mod events;
mod reading;

use events::event_keys;
use reading::{cell_text, ledger, stored, texts};

use super::super::late;
use super::super::so_far::{self, SoFar};
use super::{Columns, output_schema};
use crate::engine::declarative::graph::streaming::DEDUP_WITHIN_WATERMARK;
use crate::engine::declarative::graph::{FlowSpec, Graph};
use crate::engine::declarative::sql::window::{Output, WindowPlan};
use crate::engine::flow::{FlowContext, FlowError};
use crate::engine::streaming::watermark::window_start;
use crate::engine::streaming::window::{Acc, Aggregate, Cell};

/// The source property that names an event's columns instead.
pub const DISTINCT_ON: &str = "reckon.check.distinctOn";

/// One window (and group keys) as the table holds it and as the events count it.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub start: i64,
    /// The group keys, as text.
    pub keys: Vec<String>,
    /// The aggregates of each row the table holds for it (one, unless written twice).
    pub written: Vec<Vec<String>>,
    /// The aggregates over every event in it; `None`: no event falls in it.
    pub all: Option<Vec<String>>,
    /// Where `written` differs from `all`: the aggregates over the events with a copy that was
    /// not late, how many such events, the late rows, and the events read more than once.
    pub on_time: Option<Vec<String>>,
    pub on_time_events: usize,
    pub late: Vec<String>,
    /// Rows on time the flow's duplicate keys dropped (a key seen before).
    pub dropped: Vec<String>,
    pub repeated: Vec<(String, usize)>,
}

/// A windowed table worked out again.
#[derive(Debug, Clone)]
pub struct Recount {
    pub table: String,
    pub width: i64,
    pub delay: i64,
    /// The watermark the table's last commit left.
    pub watermark: Option<i64>,
    /// The aggregates' column names, and which of them counts rows (the first count).
    pub columns: Vec<String>,
    pub count: Option<usize>,
    pub windows: Vec<Window>,
    /// Rows the sources gave, and how many of them repeat an event.
    pub rows: usize,
    pub repeats: usize,
}

/// The recount of `flow`, or `None` before its table's first commit.
pub async fn recount(
    cx: &FlowContext,
    graph: &Graph,
    flow: &FlowSpec,
    plan: &WindowPlan,
) -> Result<Option<Recount>, FlowError> {
    let target = flow.target.as_str();
    let Some(SoFar { table, state, ctx }) = so_far::read(cx, flow).await? else {
        return Ok(None);
    };
    let property = graph
        .dataset(target)
        .and_then(|d| d.properties.get(DEDUP_WITHIN_WATERMARK));
    let dedup = super::dedup_columns(property);
    let (input, batches) = so_far::collect(&ctx, &plan.input_sql(&dedup, true), target).await?;
    let hidden = plan.hidden(&dedup);
    let distinct_on = graph
        .datasets
        .iter()
        .filter(|d| flow.query.reads.iter().any(|r| r.name == d.name))
        .find_map(|d| d.properties.get(DISTINCT_ON));
    // Process: each event once, in its window.
    let mut groups: BTreeMap<(i64, Vec<Cell>), Group> = BTreeMap::new();
    let mut rows = 0;
    for (b, batch) in batches.iter().enumerate() {
        let columns = Columns::of(batch, plan, dedup.len())?;
        let events = event_keys(batch, hidden, distinct_on, target)?;
        for (i, event) in events.into_iter().enumerate() {
            let row = columns.row(i);
            let (Some(time), true) = (row.time, row.kept) else {
                continue;
            };
            rows += 1;
            let copy = Copy {
                at: (b as u32, i as u32),
                inputs: row.inputs,
                dedup: row.dedup,
            };
            let group = groups
                .entry((window_start(time, plan.width), row.keys))
                .or_default();
            group.events.entry(event).or_default().push(copy);
        }
    }
    let out = output_schema(plan, &input)?;
    let aggregates: Vec<Aggregate> = plan.aggregates.iter().map(|(a, _)| *a).collect();
    let count = aggregates.iter().position(|a| {
        matches!(
            a,
            Aggregate::CountAll | Aggregate::Count | Aggregate::CountIf
        )
    });
    let written = stored(&table, plan, target).await?;
    // The copies the ledger says came late, found in the windows it names.
    let mut owed = ledger(cx, target, &flow.name).await?;
    let mut late_copies: BTreeSet<(u32, u32)> = BTreeSet::new();
    for ((start, _), group) in &groups {
        let Some(owed) = owed.get_mut(start) else {
            continue;
        };
        for copy in group.events.values().flatten() {
            let batch = &batches[copy.at.0 as usize];
            let (id, _) = late::identity(batch, hidden, copy.at.1 as usize)?;
            if let Some(n) = owed.get_mut(&id).filter(|n| **n > 0) {
                *n -= 1;
                late_copies.insert(copy.at);
            }
        }
    }
    // With duplicates dropped within the watermark, the first copy on time of each key counts.
    let mut firsts: HashMap<&[Cell], (u32, u32)> = HashMap::new();
    if !dedup.is_empty() {
        for copy in groups.values().flat_map(|g| g.events.values().flatten()) {
            if !late_copies.contains(&copy.at) {
                let first = firsts.entry(&copy.dedup).or_insert(copy.at);
                *first = (*first).min(copy.at);
            }
        }
    }
    let counted = |copy: &Copy| {
        !late_copies.contains(&copy.at)
            && (dedup.is_empty() || firsts.get(copy.dedup.as_slice()) == Some(&copy.at))
    };
    let mut keys: BTreeSet<(i64, Vec<Cell>)> = groups.keys().cloned().collect();
    keys.extend(written.keys().cloned());
    let mut windows = vec![];
    let mut repeats = 0;
    for key in keys {
        let group = groups.get(&key);
        repeats += group.map_or(0, |g| g.events.values().map(|c| c.len() - 1).sum());
        let all = group.map(|g| g.add_up(&aggregates, |_| true));
        let all_text = match &all {
            Some(accs) => Some(texts(plan, &out, &key, accs, target)?),
            None => None,
        };
        let held = written.get(&key).cloned().unwrap_or_default();
        let mut window = Window {
            start: key.0,
            keys: key.1.iter().map(cell_text).collect(),
            written: held.clone(),
            all: all_text.clone(),
            ..Window::default()
        };
        if held.as_slice() != all_text.as_slice()
            && let Some(group) = group
        {
            let name = |copy: &Copy| -> Result<String, FlowError> {
                let batch = &batches[copy.at.0 as usize];
                let (_, json) = late::identity(batch, hidden, copy.at.1 as usize)?;
                Ok(late::described(&json))
            };
            for copy in group.events.values().flatten() {
                if late_copies.contains(&copy.at) {
                    window.late.push(name(copy)?);
                } else if !counted(copy) {
                    window.dropped.push(name(copy)?);
                }
            }
            let on_time = group.add_up(&aggregates, |copies| copies.iter().any(counted));
            window.on_time = Some(texts(plan, &out, &key, &on_time, target)?);
            window.on_time_events = group
                .events
                .values()
                .filter(|c| c.iter().any(counted))
                .count();
            for copies in group.events.values().filter(|c| c.len() > 1) {
                window.repeated.push((name(&copies[0])?, copies.len()));
            }
        }
        windows.push(window);
    }
    let standing = state.windows.get(&flow.name);
    Ok(Some(Recount {
        table: target.to_string(),
        width: plan.width,
        delay: plan.watermark.delay,
        watermark: standing.and_then(|s| s.watermark),
        columns: plan
            .outputs
            .iter()
            .filter(|(_, o)| matches!(o, Output::Aggregate(_)))
            .map(|(name, _)| name.clone())
            .collect(),
        count: count.and_then(|c| {
            plan.outputs
                .iter()
                .filter(|(_, o)| matches!(o, Output::Aggregate(_)))
                .position(|(_, o)| *o == Output::Aggregate(c))
        }),
        windows,
        rows,
        repeats,
    }))
}

/// One copy of an event: where it is in the input (batch, row), its aggregates' inputs and its
/// duplicate key.
struct Copy {
    at: (u32, u32),
    inputs: Vec<Cell>,
    dedup: Vec<Cell>,
}

/// The events of one window: each event's copies, in source order.
#[derive(Default)]
struct Group {
    events: HashMap<String, Vec<Copy>>,
}

impl Group {
    /// The aggregates over the events `counts` keeps, each by its first copy.
    fn add_up(&self, aggregates: &[Aggregate], counts: impl Fn(&[Copy]) -> bool) -> Vec<Acc> {
        let mut accs: Vec<Acc> = aggregates.iter().map(|a| a.start()).collect();
        // In source order, as the flow added them (a sum of floats depends on it).
        let mut firsts: Vec<&Copy> = self
            .events
            .values()
            .filter(|copies| counts(copies))
            .map(|copies| &copies[0])
            .collect();
        firsts.sort_by_key(|copy| copy.at);
        for Copy { inputs, .. } in firsts {
            for ((aggregate, acc), value) in aggregates.iter().zip(accs.iter_mut()).zip(inputs) {
                aggregate.add(acc, value);
            }
        }
        accs
    }
}
