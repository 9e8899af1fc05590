//! A table's commits read back from its log one at a time: the source version each commit's
//! `txn` action says it covers, and when the commit was made. Replays (the what-if) follow these
//! to read a source in the very batches a stream read it.

use deltalake::DeltaTable;
use deltalake::kernel::Action;
use deltalake::logstore::get_actions;

use super::{TableError, table_name, version};

/// One commit that stored a stream's progress under an app id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnCommit {
    /// The table version the commit made.
    pub version: i64,
    /// The source version it says the table now covers.
    pub covers: i64,
    /// Milliseconds since the epoch, from the commit's info.
    pub timestamp_ms: Option<i64>,
}

/// Every commit of `table` that stored progress under `app_id`, oldest first. A log whose early
/// commits were cleaned up is an error naming the first missing version: a replay from there on
/// would start from the wrong state.
pub async fn txn_commits(table: &DeltaTable, app_id: &str) -> Result<Vec<TxnCommit>, TableError> {
    let mut commits = vec![];
    for v in 0..=version(table) {
        let Some(read) = read_commit(table, v, app_id).await? else {
            return Err(TableError::Column {
                what: format!("table {}", table_name(table)),
                column: "_delta_log".into(),
                detail: format!(
                    "commit {v} is no longer in the log (cleaned up), so its history cannot be replayed"
                ),
            });
        };
        commits.extend(read);
    }
    Ok(commits)
}

/// The newest commit of `table` that stored progress under `app_id`, read from the newest
/// version down; `None` when none is in the log.
pub async fn last_txn_commit(
    table: &DeltaTable,
    app_id: &str,
) -> Result<Option<TxnCommit>, TableError> {
    for v in (0..=version(table)).rev() {
        match read_commit(table, v, app_id).await? {
            Some(Some(commit)) => return Ok(Some(commit)),
            Some(None) => {}
            None => break,
        }
    }
    Ok(None)
}

/// Commit `v` of `table`: `None` when the log no longer holds it; else the progress it stored
/// under `app_id`, if any.
async fn read_commit(
    table: &DeltaTable,
    v: i64,
    app_id: &str,
) -> Result<Option<Option<TxnCommit>>, TableError> {
    let delta = |source| TableError::Delta {
        table: table_name(table),
        source,
    };
    let store = table.log_store();
    let Some(bytes) = store.read_commit_entry(v as u64).await.map_err(delta)? else {
        return Ok(None);
    };
    let mut covers = None;
    let mut timestamp_ms = None;
    for action in get_actions(v as u64, &bytes).map_err(delta)? {
        match action {
            Action::Txn(txn) if txn.app_id == app_id => covers = Some(txn.version),
            Action::CommitInfo(info) => timestamp_ms = info.timestamp,
            _ => {}
        }
    }
    Ok(Some(covers.map(|covers| TxnCommit {
        version: v,
        covers,
        timestamp_ms,
    })))
}
