//! The versions streams store in a table's `txn` actions, known per table as its commits come.
//! delta-rs answers each question by replaying the table's log since its last checkpoint (every
//! commit's JSON, each time), and a run asks a dozen questions of tables that grow a commit or
//! more a run: the cost grew with the table's age. Here a question about an app id not asked
//! before is answered that way once; the answers are kept with the table version they hold at,
//! and brought up to date by reading only the commits made since.

use std::collections::HashMap;

use deltalake::kernel::Action;
use deltalake::logstore::get_actions;
use deltalake::{DeltaTable, DeltaTableError};

use super::kept::{Known, KnownTxns, stamp};

/// The version stored under `app_id` in `table` as of its current version.
pub(super) async fn version(
    known: &KnownTxns,
    table: &DeltaTable,
    app_id: &str,
) -> Result<Option<i64>, DeltaTableError> {
    let snapshot = table.snapshot()?;
    let at = snapshot.version() as i64;
    // An app id's version can expire under this property; the log replay applies it.
    let expires = snapshot
        .table_config()
        .set_transaction_retention_duration
        .is_some();
    let folder = table.table_url().to_file_path().ok();
    let Some((folder, now)) = folder
        .and_then(|f| stamp(&f).map(|s| (f, s)))
        .filter(|_| !expires)
    else {
        return replay(table, app_id).await;
    };
    let held = known
        .lock()
        .get(&folder)
        .filter(|k| k.stamp == now)
        .cloned();
    let mut k = match held {
        Some(k) if k.at <= at => k,
        // Asked through a handle older than what is known: answered for that handle alone.
        Some(_) => return replay(table, app_id).await,
        None => Known {
            stamp: now,
            at,
            versions: HashMap::new(),
        },
    };
    if k.at < at && catch_up(table, &mut k, at).await.is_err() {
        // A commit unreadable here (cleaned up): start again from the log replay.
        k = Known {
            stamp: now,
            at,
            versions: HashMap::new(),
        };
    }
    let version = match k.versions.get(app_id) {
        Some(v) => *v,
        None => {
            let v = replay(table, app_id).await?;
            k.versions.insert(app_id.to_string(), v);
            v
        }
    };
    let mut all = known.lock();
    // Another question may have brought it further meanwhile: the newest knowledge stays.
    if all
        .get(&folder)
        .is_none_or(|held| held.stamp != now || held.at <= k.at)
    {
        all.insert(folder, k);
    }
    Ok(version)
}

/// Applies the `txn` actions of the commits after `k.at` up to `at`, oldest first.
async fn catch_up(table: &DeltaTable, k: &mut Known, at: i64) -> Result<(), DeltaTableError> {
    let store = table.log_store();
    for v in (k.at + 1)..=at {
        let bytes = store
            .read_commit_entry(v as u64)
            .await?
            .ok_or_else(|| DeltaTableError::Generic(format!("commit {v} is not in the log")))?;
        for action in get_actions(v as u64, &bytes)? {
            if let Action::Txn(txn) = action {
                k.versions.insert(txn.app_id, Some(txn.version));
            }
        }
    }
    k.at = at;
    Ok(())
}

/// delta-rs's answer: a replay of the log.
async fn replay(table: &DeltaTable, app_id: &str) -> Result<Option<i64>, DeltaTableError> {
    table
        .snapshot()?
        .transaction_version(table.log_store().as_ref(), app_id)
        .await
}

#[cfg(test)]
mod tests {
    use deltalake::kernel::Transaction;

    use crate::engine::tables::{self, TableName, Tables};

    /// Answers kept from one handle follow commits made through others, a handle behind them
    /// gets its own version's answer, and a folder made again forgets them.
    #[tokio::test]
    async fn known_versions_follow_new_commits_and_never_answer_for_another_version() {
        let dir = tempfile::tempdir().unwrap();
        let tables = Tables::new(dir.path(), None);
        let made = tables.open_or_create(TableName::Orders).await.unwrap();
        let first = tables::append(made, vec![], vec![Transaction::new("a", 1)])
            .await
            .unwrap();
        assert_eq!(tables.txn_version(&first, "a").await.unwrap(), Some(1));
        assert_eq!(tables.txn_version(&first, "b").await.unwrap(), None);
        // Two commits through a handle of another lab object: one moves a, one stores b.
        let other = Tables::new(dir.path(), None);
        let table = other.open(TableName::Orders).await.unwrap().unwrap();
        let table = tables::append(table, vec![], vec![Transaction::new("a", 5)])
            .await
            .unwrap();
        let newest = tables::append(table, vec![], vec![Transaction::new("b", 9)])
            .await
            .unwrap();
        assert_eq!(tables.txn_version(&newest, "a").await.unwrap(), Some(5));
        assert_eq!(tables.txn_version(&newest, "b").await.unwrap(), Some(9));
        // The old handle still stands at version 1.
        assert_eq!(tables.txn_version(&first, "a").await.unwrap(), Some(1));
        assert_eq!(tables.txn_version(&first, "b").await.unwrap(), None);
        // Made again, the folder's table knows neither.
        std::fs::remove_dir_all(dir.path().join("orders")).unwrap();
        let remade = Tables::new(dir.path(), None);
        let table = remade.open_or_create(TableName::Orders).await.unwrap();
        let table = tables::append(table, vec![], vec![Transaction::new("c", 1)])
            .await
            .unwrap();
        let table = tables::append(table, vec![], vec![Transaction::new("c", 2)])
            .await
            .unwrap();
        let table = tables::append(table, vec![], vec![Transaction::new("c", 3)])
            .await
            .unwrap();
        assert_eq!(tables::version(&table), 3);
        assert_eq!(tables.txn_version(&table, "a").await.unwrap(), None);
        assert_eq!(tables.txn_version(&table, "b").await.unwrap(), None);
        assert_eq!(tables.txn_version(&table, "c").await.unwrap(), Some(3));
    }
}
