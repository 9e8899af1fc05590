//! Delta tables in DataFusion: the one place a session learns a table (its object store, then
//! its provider), and the queries run over them.

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;

use super::{TableError, table_name};

/// Tells `ctx` where `table`'s files are, for a reader of it other than its provider (the
/// change feed's).
pub fn know(ctx: &SessionContext, table: &DeltaTable) -> Result<(), TableError> {
    table
        .update_datafusion_session(&ctx.state())
        .map_err(|source| TableError::Delta {
            table: table_name(table),
            source,
        })
}

/// `table` as it is now, for `ctx` to read.
pub async fn provider(
    ctx: &SessionContext,
    table: &DeltaTable,
) -> Result<Arc<dyn TableProvider>, TableError> {
    know(ctx, table)?;
    table
        .table_provider()
        .await
        .map_err(|source| TableError::Query {
            table: table_name(table),
            source,
        })
}

/// Registers `table` as it is now in `ctx` under `alias`.
pub async fn register(
    ctx: &SessionContext,
    table: &DeltaTable,
    alias: &str,
) -> Result<(), TableError> {
    let provider = provider(ctx, table).await?;
    ctx.register_table(alias, provider)
        .map(|_| ())
        .map_err(|source| TableError::Query {
            table: table_name(table),
            source,
        })
}

/// A session in which `alias` reads the table as it is now.
pub async fn session(table: &DeltaTable, alias: &str) -> Result<SessionContext, TableError> {
    let ctx = SessionContext::new();
    register(&ctx, table, alias).await?;
    Ok(ctx)
}

/// Runs `sql` in `ctx` and collects its rows; an error names `what` the query was about.
pub async fn query(
    ctx: &SessionContext,
    what: &str,
    sql: &str,
) -> Result<Vec<arrow::record_batch::RecordBatch>, TableError> {
    let error = |source| TableError::Query {
        table: what.to_string(),
        source,
    };
    ctx.sql(sql)
        .await
        .map_err(error)?
        .collect()
        .await
        .map_err(error)
}

/// Every row of the Parquet files `uris` (of a table's files); an error names `what` they are.
pub async fn read_files(
    uris: &[String],
    what: &str,
) -> Result<Vec<arrow::record_batch::RecordBatch>, TableError> {
    if uris.is_empty() {
        return Ok(vec![]);
    }
    let error = |source| TableError::Query {
        table: what.to_string(),
        source,
    };
    let ctx = SessionContext::new();
    let options = datafusion::prelude::ParquetReadOptions::default();
    ctx.read_parquet(uris.to_vec(), options)
        .await
        .map_err(error)?
        .collect()
        .await
        .map_err(error)
}
