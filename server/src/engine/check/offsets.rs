//! The check's first test: bronze and its rejects hold every offset bronze read, each once.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::columns::Columns;
use crate::engine::flow::FlowContext;
use crate::engine::flows::{FlowError, bronze};
use crate::engine::tables::{self, TableError, TableName};
use arrow::array::RecordBatch;
use arrow::datatypes::{Int32Type, Int64Type};

/// Offsets held twice, and gaps between the first offset held and the last bronze has read, from
/// the `partition` and `offset` columns of every row of bronze and its rejects (`landed`): sorted
/// once, then read in order.
pub(super) async fn problems(
    landed: &[RecordBatch],
    cx: &FlowContext,
) -> Result<Vec<String>, FlowError> {
    let mut held = pairs(landed)?;
    held.sort_unstable();
    let mut twice = vec![];
    let mut missing: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    let mut highest = BTreeMap::new();
    for (i, &(p, o)) in held.iter().enumerate() {
        match held.get(i + 1) {
            Some(&(q, next)) if q == p => {
                if next == o && twice.last() != Some(&(p, o)) {
                    twice.push((p, o));
                } else if next > o + 1 {
                    missing.entry(p).or_default().push((o + 1, next - 1));
                }
            }
            _ => {
                highest.insert(p, o);
            }
        }
    }
    // The tail: offsets bronze says it read but neither table holds.
    let bronze = cx.tables.open(TableName::BronzeOrders).await?;
    let read_to = read_to(cx, bronze.as_ref(), highest.keys().copied()).await?;
    Ok(describe(&twice, missing, &highest, &read_to))
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
        if let Some(read) = tables::txn_version(bronze, &app_id).await? {
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

/// (partition, offset) pairs of rows.
fn pairs(batches: &[RecordBatch]) -> Result<Vec<(i32, i64)>, TableError> {
    let mut out = vec![];
    for b in batches {
        let c = Columns::of(b, "the check's offsets");
        let p = c.primitive::<Int32Type>("partition")?;
        let o = c.primitive::<Int64Type>("offset")?;
        out.extend((0..b.num_rows()).map(|i| (p.value(i), o.value(i))));
    }
    Ok(out)
}
