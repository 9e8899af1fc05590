//! The check's first test: bronze and its rejects hold every offset bronze read, each once.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::RecordBatch;
use arrow::datatypes::{Int32Type, Int64Type};
use datafusion::prelude::SessionContext;

use super::query;
use crate::engine::columns::Columns;
use crate::engine::flow::FlowContext;
use crate::engine::flows::{FlowError, bronze};
use crate::engine::tables::{self, TableError, TableName};

/// Offsets held twice, and gaps between the first offset held and the last bronze has read.
pub(super) async fn problems(
    ctx: &SessionContext,
    cx: &FlowContext,
) -> Result<Vec<String>, FlowError> {
    const LANDED: &str = r#"SELECT "partition", "offset" FROM bronze_orders UNION ALL SELECT "partition", "offset" FROM bronze_rejects"#;
    let twice = query(ctx, &format!(
        r#"SELECT "partition", "offset" FROM ({LANDED}) GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2"#
    ))
    .await?;
    // Per partition: the highest offset held, the lowest, and how many distinct. A partition
    // holding every offset between the two has no gap, and needs no search for one.
    let spans = query(
        ctx,
        &format!(
            r#"SELECT "partition", max("offset") AS "offset", min("offset") AS lowest,
                  count(DISTINCT "offset") AS held
           FROM ({LANDED}) GROUP BY 1"#
        ),
    )
    .await?;
    let gaps = match gapped(&spans)? {
        false => vec![],
        true => query(ctx, &format!(
            r#"SELECT "partition", "offset" + 1 AS first, next - 1 AS last FROM (
                   SELECT "partition", "offset", lead("offset") OVER (PARTITION BY "partition" ORDER BY "offset") AS next
                   FROM (SELECT DISTINCT "partition", "offset" FROM ({LANDED})))
               WHERE next > "offset" + 1 ORDER BY 1, 2"#
        ))
        .await?,
    };
    let mut missing: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for b in &gaps {
        let c = Columns::of(b, "the check's offset gaps");
        let (p, first, last) = (
            c.primitive::<Int32Type>("partition")?,
            c.primitive::<Int64Type>("first")?,
            c.primitive::<Int64Type>("last")?,
        );
        for i in 0..b.num_rows() {
            missing
                .entry(p.value(i))
                .or_default()
                .push((first.value(i), last.value(i)));
        }
    }
    // The tail: offsets bronze says it read but neither table holds.
    let highest: BTreeMap<i32, i64> = pairs(&spans)?.into_iter().collect();
    let bronze = cx.tables.open(TableName::BronzeOrders).await?;
    let read_to = read_to(cx, bronze.as_ref(), highest.keys().copied()).await?;
    Ok(describe(&pairs(&twice)?, missing, &highest, &read_to))
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

/// Whether some partition of the spans query holds fewer distinct offsets than its lowest to
/// its highest span.
fn gapped(spans: &[RecordBatch]) -> Result<bool, TableError> {
    for b in spans {
        let c = Columns::of(b, "the check's offset spans");
        let (highest, lowest, held) = (
            c.primitive::<Int64Type>("offset")?,
            c.primitive::<Int64Type>("lowest")?,
            c.primitive::<Int64Type>("held")?,
        );
        if (0..b.num_rows()).any(|i| held.value(i) < highest.value(i) - lowest.value(i) + 1) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// (partition, offset) pairs of a query's rows.
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
