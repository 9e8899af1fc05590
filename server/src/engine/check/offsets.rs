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
    let mut problems = vec![];
    let twice = query(ctx, &format!(
        r#"SELECT "partition", "offset" FROM ({LANDED}) GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 1, 2"#
    ))
    .await?;
    for (p, o) in pairs(&twice)? {
        problems.push(format!("partition {p}: offset {o} stored twice"));
    }
    let gaps = query(ctx, &format!(
        r#"SELECT "partition", "offset" + 1 AS first, next - 1 AS last FROM (
               SELECT "partition", "offset", lead("offset") OVER (PARTITION BY "partition" ORDER BY "offset") AS next
               FROM (SELECT DISTINCT "partition", "offset" FROM ({LANDED})))
           WHERE next > "offset" + 1 ORDER BY 1, 2"#
    ))
    .await?;
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
    let highest = query(
        ctx,
        &format!(r#"SELECT "partition", max("offset") AS "offset" FROM ({LANDED}) GROUP BY 1"#),
    )
    .await?;
    let highest: BTreeMap<i32, i64> = pairs(&highest)?.into_iter().collect();
    if let Some(bronze) = cx.tables.open(TableName::BronzeOrders).await? {
        let known: BTreeSet<i32> = highest.keys().copied().chain(0..cx.partitions).collect();
        for p in known {
            let app_id = bronze::app_id(TableName::BronzeOrders, &cx.topic, p);
            if let Some(read) = tables::txn_version(&bronze, &app_id).await? {
                let held = highest.get(&p).copied().unwrap_or(-1);
                if read > held {
                    missing.entry(p).or_default().push((held + 1, read));
                }
            }
        }
    }
    for (p, ranges) in missing {
        for (first, last) in ranges {
            problems.push(format!("partition {p}: offsets {first}..{last} missing"));
        }
    }
    Ok(problems)
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
