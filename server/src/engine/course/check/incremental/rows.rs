//! The rows of table files the incremental check has not counted yet, read straight from their
//! Parquet files (which files are new is the tables' logs' to say: `log.rs`).

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use deltalake::DeltaTable;

use crate::engine::columns::Columns;
use crate::engine::course::check::recount::Events;
use crate::engine::tables::{TableError, table_name};

/// A bronze row as the check counts it; amounts in cents.
pub struct BronzeRow {
    pub order_id: i64,
    pub customer_id: String,
    pub status: String,
    pub amount: i64,
    pub event_time: i64,
    /// When its bronze run read it: one time per run, so runs are told apart in the order
    /// bronze committed them.
    pub ingested: i64,
    pub partition: i32,
    pub offset: i64,
}

/// A row of `orders`; any column may be NULL if another writer left one.
pub struct SilverRow {
    pub order_id: Option<i64>,
    pub customer_id: Option<String>,
    pub status: Option<String>,
    pub amount: Option<i64>,
    pub event_time: Option<i64>,
}

/// A row of `hourly_sales`: one write of an hour.
pub struct HourRow {
    pub hour: i64,
    pub orders: i64,
    pub revenue: i64,
}

/// Every file of a table now, sorted: what a count from scratch reads.
pub fn all_files(table: Option<&DeltaTable>) -> Result<Vec<String>, TableError> {
    let Some(t) = table else {
        return Ok(vec![]);
    };
    let mut files: Vec<String> = t
        .get_file_uris()
        .map_err(|source| TableError::Delta {
            table: table_name(t),
            source,
        })?
        .collect();
    files.sort();
    Ok(files)
}

fn cents(v: i128, what: &str) -> Result<i64, TableError> {
    i64::try_from(v).map_err(|_| TableError::Column {
        what: what.to_string(),
        column: "amount".into(),
        detail: format!("{v} cents is beyond what the check counts"),
    })
}

pub fn bronze(batches: &[RecordBatch]) -> Result<Vec<BronzeRow>, TableError> {
    const WHAT: &str = "bronze_orders' new files";
    let mut out = vec![];
    for b in batches {
        let e = Events::of(b, WHAT)?;
        let c = Columns::of(b, WHAT);
        let ingested = c.primitive::<TimestampMicrosecondType>("ingested_at")?;
        let partition = c.primitive::<Int32Type>("partition")?;
        let offset = c.primitive::<Int64Type>("offset")?;
        for i in 0..b.num_rows() {
            out.push(BronzeRow {
                ingested: ingested.value(i),
                order_id: e.order_id.value(i),
                customer_id: e.customer_id.value(i).to_string(),
                status: e.status.value(i).to_string(),
                amount: cents(e.amount.value(i), WHAT)?,
                event_time: e.event_time.value(i),
                partition: partition.value(i),
                offset: offset.value(i),
            });
        }
    }
    Ok(out)
}

/// (partition, offset) of each row.
pub fn offsets(batches: &[RecordBatch], what: &str) -> Result<Vec<(i32, i64)>, TableError> {
    let mut out = vec![];
    for b in batches {
        let c = Columns::of(b, what);
        let partition = c.primitive::<Int32Type>("partition")?;
        let offset = c.primitive::<Int64Type>("offset")?;
        out.extend((0..b.num_rows()).map(|i| (partition.value(i), offset.value(i))));
    }
    Ok(out)
}

pub fn silver(batches: &[RecordBatch]) -> Result<Vec<SilverRow>, TableError> {
    const WHAT: &str = "orders' new files";
    let mut out = vec![];
    for b in batches {
        let Events {
            order_id,
            customer_id,
            status,
            amount,
            event_time,
        } = Events::of(b, WHAT)?;
        for i in 0..b.num_rows() {
            let text =
                |a: &arrow::array::StringArray| (!a.is_null(i)).then(|| a.value(i).to_string());
            out.push(SilverRow {
                order_id: (!order_id.is_null(i)).then(|| order_id.value(i)),
                customer_id: text(&customer_id),
                status: text(&status),
                amount: if amount.is_null(i) {
                    None
                } else {
                    Some(cents(amount.value(i), WHAT)?)
                },
                event_time: (!event_time.is_null(i)).then(|| event_time.value(i)),
            });
        }
    }
    Ok(out)
}

pub fn hours(batches: &[RecordBatch]) -> Result<Vec<HourRow>, TableError> {
    const WHAT: &str = "hourly_sales' new files";
    let mut out = vec![];
    for b in batches {
        let c = Columns::of(b, WHAT);
        let hour = c.primitive::<TimestampMicrosecondType>("hour")?;
        let orders = c.primitive::<Int64Type>("orders")?;
        let revenue = c.primitive::<Decimal128Type>("revenue")?;
        for i in 0..b.num_rows() {
            out.push(HourRow {
                hour: hour.value(i),
                orders: orders.value(i),
                revenue: cents(revenue.value(i), WHAT)?,
            });
        }
    }
    Ok(out)
}
