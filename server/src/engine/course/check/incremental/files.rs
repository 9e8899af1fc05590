//! The table files the incremental check's state has counted (`covered`), the version it
//! counted each table to, and compactions followed: which files now hold rows counted before.

use std::collections::BTreeSet;

use sqlx::{QueryBuilder, Sqlite};

use super::store::{CHUNK, Tx};

/// Which of `uris` the state has counted as files of `table`.
pub async fn which_covered<'a>(
    tx: &mut Tx,
    table: &str,
    uris: impl Iterator<Item = &'a str>,
) -> Result<BTreeSet<String>, sqlx::Error> {
    let mut out = BTreeSet::new();
    for uri in uris {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT path FROM covered WHERE tbl = ? AND path = ?")
                .bind(table)
                .bind(uri)
                .fetch_optional(&mut **tx)
                .await?;
        out.extend(row.map(|(p,)| p));
    }
    Ok(out)
}

/// Follows compactions of `table`'s files: each pack's files are no longer covered, the file
/// holding their rows now is, and the rows of `orders` kept by file are found in it (one row of
/// `silver_file` for each file first counted, whatever its rows' number).
pub async fn move_files(
    tx: &mut Tx,
    table: &str,
    moves: &[(Vec<String>, String)],
) -> Result<(), sqlx::Error> {
    for (from, to) in moves {
        for path in from {
            sqlx::query("UPDATE silver_file SET now = ? WHERE now = ?")
                .bind(to)
                .bind(path)
                .execute(&mut **tx)
                .await?;
        }
        cover(tx, table, std::slice::from_ref(to), from).await?;
    }
    Ok(())
}

/// The counter holding the version the state counted `table` to.
pub fn version_counter(table: &str) -> String {
    format!("version {table}")
}

/// Marks `added` as counted and `gone` as no longer there.
pub async fn cover(
    tx: &mut Tx,
    table: &str,
    added: &[String],
    gone: &[String],
) -> Result<(), sqlx::Error> {
    for path in gone {
        sqlx::query("DELETE FROM covered WHERE tbl = ? AND path = ?")
            .bind(table)
            .bind(path)
            .execute(&mut **tx)
            .await?;
    }
    for chunk in added.chunks(CHUNK) {
        let mut q = QueryBuilder::<Sqlite>::new("INSERT INTO covered (tbl, path) ");
        q.push_values(chunk, |mut b, path| {
            b.push_bind(table).push_bind(path);
        });
        q.build().execute(&mut **tx).await?;
    }
    Ok(())
}
