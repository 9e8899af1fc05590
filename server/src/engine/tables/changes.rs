//! What commits of a table added: its change feed's inserted rows, each with the
//! `_commit_version` it came in. The tables Reckon streams from only append.

use std::sync::Arc;

use datafusion::dataframe::DataFrame;
use datafusion::prelude::{SessionContext, col, lit};
use deltalake::DeltaTable;
use deltalake::delta_datafusion::DeltaCdfTableProvider;

use super::{TableError, table_name};

/// The rows commits `first..=last` of `table` inserted, as a frame of `ctx` (nothing is read
/// until it runs), with the feed's `_change_type`, `_commit_version` and `_commit_timestamp`.
pub fn inserted(
    ctx: &SessionContext,
    table: &DeltaTable,
    (first, last): (i64, i64),
) -> Result<DataFrame, TableError> {
    let name = table_name(table);
    let delta = |source| TableError::Delta {
        table: name.clone(),
        source,
    };
    super::know(ctx, table)?;
    let cdf = table
        .clone()
        .scan_cdf()
        .with_starting_version(first as u64)
        .with_ending_version(last as u64);
    let provider = DeltaCdfTableProvider::try_new(cdf).map_err(delta)?;
    // The filter keeps the append-only assumption out of every query that reads the rows.
    ctx.read_table(Arc::new(provider))
        .and_then(|df| df.filter(col("_change_type").eq(lit("insert"))))
        .map_err(|source| TableError::Query {
            table: name.clone(),
            source,
        })
}
