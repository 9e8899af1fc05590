//! A key's rows from all its change events, replayed in sequence order (PIPELINES §5). The same
//! replay runs whether the events came in one run or many, so a late event splits the version it
//! falls in exactly as if it had come in time.
//!
//! Events of one key with the same sequence count once: a delete if any of them is one (the last
//! read), else the upsert read last. Then, in sequence order:
//! - SCD 1: an upsert sets the row (with `IGNORE NULL UPDATES`, a NULL keeps the value before);
//!   a delete removes it, and a later upsert brings it back.
//! - SCD 2: an upsert whose tracked columns equal the open version's updates that version in
//!   place (every column, `__START_AT` stays); any other opens a version at its sequence and
//!   closes the open one there; a delete closes the open version at its sequence.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, DynComparator, RecordBatch, UInt32Array, make_comparator,
};
use arrow::compute::{SortOptions, take};
use arrow::datatypes::{Field, Int64Type, Schema};
use arrow::error::ArrowError;
use arrow::row::{OwnedRow, RowConverter, SortField};

use crate::engine::declarative::graph::DELETE;
use crate::engine::declarative::parse::Scd;

/// The column holding each event's place in reading order.
pub const ARRIVAL: &str = "__arrival";
pub const START_AT: &str = "__START_AT";
pub const END_AT: &str = "__END_AT";

/// What the replay needs to know of a flow.
pub struct Spec {
    pub keys: Vec<String>,
    pub sequence: String,
    pub scd: Scd,
    pub ignore_null_updates: bool,
    /// The target's columns (without `__START_AT`/`__END_AT`), in order.
    pub columns: Vec<String>,
    /// SCD 2: the columns whose change opens a version.
    pub tracked: Vec<String>,
}

/// One row of the result: per target column, the event that gives its value.
struct Version {
    from: Vec<usize>,
    start: usize,
    end: Option<usize>,
}

fn column<'a>(events: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, ArrowError> {
    events
        .column_by_name(name)
        .ok_or_else(|| ArrowError::SchemaError(format!("the change events have no column {name}")))
}

/// Each key's events (row numbers of `events`), keys in order.
pub fn by_key(
    events: &RecordBatch,
    keys: &[String],
) -> Result<BTreeMap<OwnedRow, Vec<usize>>, ArrowError> {
    let columns: Vec<ArrayRef> = keys
        .iter()
        .map(|k| column(events, k).cloned())
        .collect::<Result<_, _>>()?;
    let converter = RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&columns)?;
    let mut out: BTreeMap<OwnedRow, Vec<usize>> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        out.entry(row.owned()).or_default().push(i);
    }
    Ok(out)
}

/// The target's rows for every key in `events` (which holds all their events so far).
pub fn replay(events: &RecordBatch, spec: &Spec) -> Result<RecordBatch, ArrowError> {
    let sequence = column(events, &spec.sequence)?;
    let by_sequence = make_comparator(sequence, sequence, SortOptions::default())?;
    let arrival = column(events, ARRIVAL)?.as_primitive::<Int64Type>().clone();
    let delete = column(events, DELETE)?.as_boolean().clone();
    let values: Vec<&ArrayRef> = spec
        .columns
        .iter()
        .map(|c| column(events, c))
        .collect::<Result<_, _>>()?;
    let tracked: Vec<(usize, DynComparator)> = spec
        .tracked
        .iter()
        .map(|t| {
            let at = spec.columns.iter().position(|c| c == t).ok_or_else(|| {
                ArrowError::SchemaError(format!("tracked column {t} is not among the target's"))
            })?;
            Ok((
                at,
                make_comparator(values[at], values[at], SortOptions::default())?,
            ))
        })
        .collect::<Result<_, ArrowError>>()?;
    let mut versions: Vec<Version> = vec![];
    for (_, mut rows) in by_key(events, &spec.keys)? {
        rows.sort_by(|&a, &b| by_sequence(a, b).then(arrival.value(a).cmp(&arrival.value(b))));
        let mut open: Option<Version> = None;
        let mut closed: Vec<Version> = vec![];
        for event in effective(&rows, &by_sequence, &delete) {
            if delete.value(event) {
                if let Some(mut v) = open.take() {
                    v.end = Some(event);
                    if spec.scd == Scd::Type2 {
                        closed.push(v);
                    }
                }
                continue;
            }
            let from: Vec<usize> = (0..values.len())
                .map(|c| match &open {
                    Some(v) if spec.ignore_null_updates && values[c].is_null(event) => v.from[c],
                    _ => event,
                })
                .collect();
            open = Some(match open.take() {
                Some(mut v)
                    if spec.scd == Scd::Type1
                        || tracked
                            .iter()
                            .all(|(c, cmp)| cmp(from[*c], v.from[*c]) == Ordering::Equal) =>
                {
                    v.from = from;
                    v
                }
                previous => {
                    if let Some(mut v) = previous {
                        v.end = Some(event);
                        closed.push(v);
                    }
                    Version {
                        from,
                        start: event,
                        end: None,
                    }
                }
            });
        }
        versions.extend(closed);
        versions.extend(open);
    }
    build(events, spec, &values, sequence, &versions)
}

/// Per run of equal sequences, the one event that counts.
fn effective(
    rows: &[usize],
    by_sequence: &DynComparator,
    delete: &arrow::array::BooleanArray,
) -> Vec<usize> {
    let mut out: Vec<usize> = vec![];
    for &row in rows {
        match out.last_mut() {
            // Sorted by arrival within a sequence: a later event replaces an earlier one unless
            // the earlier one is a delete and the later one is not.
            Some(last) if by_sequence(*last, row) == Ordering::Equal => {
                if delete.value(row) || !delete.value(*last) {
                    *last = row;
                }
            }
            _ => out.push(row),
        }
    }
    out
}

fn build(
    events: &RecordBatch,
    spec: &Spec,
    values: &[&ArrayRef],
    sequence: &ArrayRef,
    versions: &[Version],
) -> Result<RecordBatch, ArrowError> {
    let index = |pick: &dyn Fn(&Version) -> Option<usize>| {
        UInt32Array::from(
            versions
                .iter()
                .map(|v| pick(v).map(|i| i as u32))
                .collect::<Vec<_>>(),
        )
    };
    let mut fields = vec![];
    let mut columns = vec![];
    for (c, name) in spec.columns.iter().enumerate() {
        let field = events.schema().field_with_name(name)?.clone();
        fields.push(field.with_nullable(true));
        columns.push(take(
            values[c].as_ref(),
            &index(&|v| Some(v.from[c])),
            None,
        )?);
    }
    if spec.scd == Scd::Type2 {
        for (name, pick) in [
            (
                START_AT,
                &(|v: &Version| Some(v.start)) as &dyn Fn(&Version) -> Option<usize>,
            ),
            (END_AT, &|v: &Version| v.end),
        ] {
            fields.push(Field::new(name, sequence.data_type().clone(), true));
            columns.push(take(sequence.as_ref(), &index(pick), None)?);
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Int64Array, StringArray};

    /// Events of key `k`: (sequence, plan, seats, delete), read in this order.
    fn events(rows: &[(i64, Option<&str>, i64, bool)]) -> RecordBatch {
        let n = rows.len();
        RecordBatch::try_from_iter(vec![
            ("k", Arc::new(StringArray::from(vec!["a"; n])) as ArrayRef),
            (
                "seq",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            ),
            (
                "plan",
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ),
            (
                "seats",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            ),
            (
                DELETE,
                Arc::new(BooleanArray::from(
                    rows.iter().map(|r| r.3).collect::<Vec<_>>(),
                )),
            ),
            (ARRIVAL, Arc::new(Int64Array::from_iter_values(0..n as i64))),
        ])
        .unwrap()
    }

    fn spec(scd: Scd) -> Spec {
        Spec {
            keys: vec!["k".into()],
            sequence: "seq".into(),
            scd,
            ignore_null_updates: false,
            columns: vec!["k".into(), "seq".into(), "plan".into(), "seats".into()],
            tracked: vec!["plan".into()],
        }
    }

    /// (plan, seats, seq, start, end) per row.
    fn rows(batch: &RecordBatch) -> Vec<(Option<String>, i64, i64, Option<i64>, Option<i64>)> {
        let int = |name: &str, i: usize| {
            let c = batch.column_by_name(name)?.as_primitive::<Int64Type>();
            c.is_valid(i).then(|| c.value(i))
        };
        (0..batch.num_rows())
            .map(|i| {
                let plan = batch.column_by_name("plan").unwrap().as_string::<i32>();
                (
                    plan.is_valid(i).then(|| plan.value(i).to_string()),
                    int("seats", i).unwrap(),
                    int("seq", i).unwrap(),
                    int(START_AT, i),
                    int(END_AT, i),
                )
            })
            .collect()
    }

    fn v(
        plan: &str,
        seats: i64,
        seq: i64,
        start: i64,
        end: Option<i64>,
    ) -> (Option<String>, i64, i64, Option<i64>, Option<i64>) {
        (Some(plan.into()), seats, seq, Some(start), end)
    }

    #[test]
    fn a_late_event_splits_the_version_it_falls_in() {
        let on_time = events(&[(1, Some("free"), 1, false), (5, Some("pro"), 1, false)]);
        assert_eq!(
            rows(&replay(&on_time, &spec(Scd::Type2)).unwrap()),
            [v("free", 1, 1, 1, Some(5)), v("pro", 1, 5, 5, None)]
        );
        let late = events(&[
            (1, Some("free"), 1, false),
            (5, Some("pro"), 1, false),
            (3, Some("team"), 2, false),
        ]);
        assert_eq!(
            rows(&replay(&late, &spec(Scd::Type2)).unwrap()),
            [
                v("free", 1, 1, 1, Some(3)),
                v("team", 2, 3, 3, Some(5)),
                v("pro", 1, 5, 5, None)
            ]
        );
    }

    #[test]
    fn an_untracked_change_updates_in_place_and_a_repeat_adds_nothing() {
        let e = events(&[
            (1, Some("free"), 1, false),
            (2, Some("free"), 3, false),
            (3, Some("free"), 3, false),
        ]);
        assert_eq!(
            rows(&replay(&e, &spec(Scd::Type2)).unwrap()),
            [v("free", 3, 3, 1, None)]
        );
    }

    #[test]
    fn a_delete_closes_and_wins_a_tie_and_a_comeback_opens_again() {
        let e = events(&[
            (1, Some("free"), 1, false),
            (4, None, 0, true),
            (4, Some("pro"), 1, false),
            (6, Some("pro"), 1, false),
        ]);
        assert_eq!(
            rows(&replay(&e, &spec(Scd::Type2)).unwrap()),
            [v("free", 1, 1, 1, Some(4)), v("pro", 1, 6, 6, None)]
        );
        // A comeback with a lower sequence than the delete does not bring the key back.
        let e = events(&[
            (1, Some("free"), 1, false),
            (4, None, 0, true),
            (3, Some("pro"), 1, false),
        ]);
        assert_eq!(
            rows(&replay(&e, &spec(Scd::Type2)).unwrap()),
            [v("free", 1, 1, 1, Some(3)), v("pro", 1, 3, 3, Some(4))]
        );
        assert!(rows(&replay(&e, &spec(Scd::Type1)).unwrap()).is_empty());
    }

    #[test]
    fn scd1_keeps_the_greatest_sequence_and_may_keep_values_from_before() {
        let e = events(&[
            (2, Some("pro"), 5, false),
            (1, Some("free"), 1, false),
            (3, None, 7, false),
        ]);
        let out = rows(&replay(&e, &spec(Scd::Type1)).unwrap());
        assert_eq!(out, [(None, 7, 3, None, None)]);
        let mut keep = spec(Scd::Type1);
        keep.ignore_null_updates = true;
        let out = rows(&replay(&e, &keep).unwrap());
        assert_eq!(out, [(Some("pro".into()), 7, 3, None, None)]);
    }
}
