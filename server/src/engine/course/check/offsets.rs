//! The check's first test: bronze and its rejects hold every offset bronze read, each once.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::columns::Columns;
use crate::engine::course::bronze;
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;
use crate::engine::tables::{TableError, TableName};
use arrow::array::RecordBatch;
use arrow::datatypes::{Int32Type, Int64Type};

/// Offsets held twice, and gaps between the first offset held and the last bronze has read, from
/// the `partition` and `offset` columns of every row of bronze and its rejects (`landed`).
pub(super) async fn problems(
    landed: &[RecordBatch],
    cx: &FlowContext,
) -> Result<Vec<String>, FlowError> {
    let held = scan(by_partition(landed)?);
    // The tail: offsets bronze says it read but neither table holds.
    let bronze = cx.tables.open(TableName::BronzeOrders).await?;
    let read_to = read_to(cx, bronze.as_ref(), held.highest.keys().copied()).await?;
    Ok(describe(&held.twice, held.missing, &held.highest, &read_to))
}

/// What the offsets held say: each held twice, the gaps between them, the highest per partition.
#[derive(Debug, Default, PartialEq, Eq)]
struct Held {
    twice: Vec<(i32, i64)>,
    missing: BTreeMap<i32, Vec<(i64, i64)>>,
    highest: BTreeMap<i32, i64>,
}

/// Reads each partition's offsets in order. A partition's offsets are nearly always dense (every
/// offset from the first to the last, a few twice or missing): they are counted into a slot per
/// offset, one pass with no sort. Sparse ones (a topic's log trimmed between runs) are sorted.
fn scan(partitions: BTreeMap<i32, Vec<i64>>) -> Held {
    let mut held = Held::default();
    for (p, mut offsets) in partitions {
        let (Some(&low), Some(&high)) = (offsets.iter().min(), offsets.iter().max()) else {
            continue;
        };
        held.highest.insert(p, high);
        let mut gap = |from: i64, to: i64| held.missing.entry(p).or_default().push((from, to));
        let span = (high - low) as u64 + 1;
        if span <= 2 * offsets.len() as u64 + 1024 {
            let mut seen = vec![0u8; span as usize];
            for o in &offsets {
                let slot = &mut seen[(o - low) as usize];
                *slot = slot.saturating_add(1);
            }
            let mut gap_from = None;
            for (i, &n) in seen.iter().enumerate() {
                let o = low + i as i64;
                match (n, gap_from) {
                    (0, None) => gap_from = Some(o),
                    (0, Some(_)) => {}
                    (_, Some(from)) => {
                        gap(from, o - 1);
                        gap_from = None;
                    }
                    _ => {}
                }
                if n > 1 {
                    held.twice.push((p, o));
                }
            }
        } else {
            offsets.sort_unstable();
            for pair in offsets.windows(2) {
                let (o, next) = (pair[0], pair[1]);
                if next == o && held.twice.last() != Some(&(p, o)) {
                    held.twice.push((p, o));
                } else if next > o + 1 {
                    gap(o + 1, next - 1);
                }
            }
        }
    }
    held
}

/// The last offset bronze says it read (its `txn` versions), for each partition that holds an
/// offset (`holding`) and each the topic is made with.
pub(super) async fn read_to(
    cx: &FlowContext,
    bronze: Option<&deltalake::DeltaTable>,
    holding: impl Iterator<Item = i32>,
) -> Result<BTreeMap<i32, i64>, FlowError> {
    let mut out = BTreeMap::new();
    let Some(bronze) = bronze else {
        return Ok(out);
    };
    let known: BTreeSet<i32> = holding.chain(0..cx.partitions).collect();
    for p in known {
        let app_id = bronze::app_id(TableName::BronzeOrders, &cx.topic, p);
        if let Some(read) = cx.tables.txn_version(bronze, &app_id).await? {
            out.insert(p, read);
        }
    }
    Ok(out)
}

/// The offset lines: each offset held twice, each gap between held offsets, and the tail that
/// bronze says it read but neither table holds.
pub(super) fn describe(
    twice: &[(i32, i64)],
    mut missing: BTreeMap<i32, Vec<(i64, i64)>>,
    highest: &BTreeMap<i32, i64>,
    read_to: &BTreeMap<i32, i64>,
) -> Vec<String> {
    let mut problems: Vec<String> = twice
        .iter()
        .map(|(p, o)| format!("partition {p}: offset {o} stored twice"))
        .collect();
    // Past the last offset bronze says it read, only rejects can be held: a run that committed
    // them and then failed before bronze's own commit. Its rerun reads the rows around them, so
    // the offsets between are not missing, only not read yet.
    for (p, ranges) in missing.iter_mut() {
        let read = read_to.get(p).copied().unwrap_or(-1);
        ranges.retain_mut(|(first, last)| {
            *last = (*last).min(read);
            *first <= read
        });
    }
    for (&p, &read) in read_to {
        let held = highest.get(&p).copied().unwrap_or(-1);
        if read > held {
            missing.entry(p).or_default().push((held + 1, read));
        }
    }
    for (p, ranges) in missing {
        for (first, last) in ranges {
            problems.push(format!("partition {p}: offsets {first}..{last} missing"));
        }
    }
    problems
}

/// Each partition's offsets, from the rows' `partition` and `offset` columns.
fn by_partition(batches: &[RecordBatch]) -> Result<BTreeMap<i32, Vec<i64>>, TableError> {
    let mut out: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for b in batches {
        let c = Columns::of(b, "the check's offsets");
        let p = c.primitive::<Int32Type>("partition")?;
        let o = c.primitive::<Int64Type>("offset")?;
        for i in 0..b.num_rows() {
            out.entry(p.value(i)).or_default().push(o.value(i));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::Rng;

    /// The offsets sorted, then read pair by pair: the plain reading the scan must agree with.
    fn sorted_reading(partitions: &BTreeMap<i32, Vec<i64>>) -> Held {
        let mut all: Vec<(i32, i64)> = partitions
            .iter()
            .flat_map(|(p, offsets)| offsets.iter().map(|o| (*p, *o)))
            .collect();
        all.sort_unstable();
        let mut held = Held::default();
        for (i, &(p, o)) in all.iter().enumerate() {
            match all.get(i + 1) {
                Some(&(q, next)) if q == p => {
                    if next == o && held.twice.last() != Some(&(p, o)) {
                        held.twice.push((p, o));
                    } else if next > o + 1 {
                        held.missing.entry(p).or_default().push((o + 1, next - 1));
                    }
                }
                _ => {
                    held.highest.insert(p, o);
                }
            }
        }
        held
    }

    #[test]
    fn dense_and_sparse_offsets_read_as_when_sorted() {
        let mut rng = Rng(7);
        for case in 0..300 {
            let mut partitions: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
            for p in 0..3 {
                // Dense with a few twice and a few missing, or sparse (every 5,000th offset).
                let sparse = rng.percent(20);
                let start = rng.below(1000) as i64;
                let mut offsets = vec![];
                for k in 0..rng.below(400) as i64 {
                    let o = if sparse { start + k * 5000 } else { start + k };
                    if !rng.percent(3) {
                        offsets.push(o);
                    }
                    if rng.percent(3) {
                        offsets.push(o);
                    }
                }
                // Stored in no particular order, as files and partitions interleave.
                for i in (1..offsets.len()).rev() {
                    offsets.swap(i, rng.below(i as u64 + 1) as usize);
                }
                partitions.insert(p, offsets);
            }
            let want = sorted_reading(&partitions);
            assert_eq!(
                scan(partitions.clone()),
                want,
                "case {case}: {partitions:?}"
            );
        }
    }

    #[test]
    fn rejects_committed_ahead_of_bronze_leave_no_gap_only_what_is_not_read_yet() {
        // Bronze read partition 0 to offset 4; a failed run committed the reject at 7 first.
        let missing = BTreeMap::from([(0, vec![(5, 6)])]);
        let highest = BTreeMap::from([(0, 7)]);
        let read_to = BTreeMap::from([(0, 4)]);
        assert!(describe(&[], missing, &highest, &read_to).is_empty());
        // A gap below what bronze read is missing, and one across it up to it.
        let missing = BTreeMap::from([(0, vec![(1, 2), (4, 6)])]);
        assert_eq!(
            describe(&[], missing, &highest, &read_to),
            [
                "partition 0: offsets 1..2 missing",
                "partition 0: offsets 4..4 missing"
            ]
        );
        // A partition bronze never committed holds only rejects ahead of it.
        let missing = BTreeMap::from([(1, vec![(0, 2)])]);
        let highest = BTreeMap::from([(0, 4), (1, 3)]);
        assert!(describe(&[], missing, &highest, &read_to).is_empty());
    }
}
