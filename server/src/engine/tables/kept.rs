//! Tables kept open between flows and runs. Opening a table replays its log from the last
//! checkpoint; a table kept is brought up to date instead, reading only the commits since. A
//! table's folder can be removed and made again (a reset, another process): the table kept is
//! used only while the folder's first commit is the same file it was. A crash test's tables are
//! never kept (their commits are cut by the flow that opens them).

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use deltalake::DeltaTable;

/// What a lab keeps of its tables between flows and runs: the tables, by folder name; the
/// versions streams stored in them ([`super::txns`]); and the state flows committed beside them,
/// by the flow's name ([`Kept::state`]).
#[derive(Debug, Default)]
pub(super) struct Kept {
    tables: Mutex<HashMap<String, (DeltaTable, Stamp)>>,
    pub(super) txns: KnownTxns,
    states: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
}

/// The size and modification time of a table's first commit: which making of the table it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    len: u64,
    modified: SystemTime,
}

pub(super) fn stamp(folder: &Path) -> Option<Stamp> {
    let first = folder.join("_delta_log").join(format!("{:020}.json", 0));
    let meta = std::fs::metadata(first).ok()?;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok()?,
    })
}

impl Kept {
    fn tables(&self) -> std::sync::MutexGuard<'_, HashMap<String, (DeltaTable, Stamp)>> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The table kept for `name`, if it is still the one in `folder` (maybe behind it).
    pub(super) fn get(&self, name: &str, folder: &Path) -> Option<DeltaTable> {
        let now = stamp(folder)?;
        let mut tables = self.tables();
        match tables.get(name) {
            Some((table, kept)) if *kept == now => Some(table.clone()),
            Some(_) => {
                tables.remove(name);
                None
            }
            None => None,
        }
    }

    /// Keeps `table`, just opened, brought up to date or committed from `folder`, unless a
    /// newer handle of the same making of it is kept already.
    pub(super) fn keep(&self, name: &str, folder: &Path, table: &DeltaTable) {
        // A table whose first commit is gone (its log cleaned up) is opened anew each time.
        let Some(now) = stamp(folder) else { return };
        let mut tables = self.tables();
        let newer_kept = tables
            .get(name)
            .is_some_and(|(kept, at)| *at == now && kept.version() > table.version());
        if !newer_kept {
            tables.insert(name.to_string(), (table.clone(), now));
        }
    }

    pub(super) fn forget(&self, name: &str) {
        self.tables().remove(name);
    }

    pub(super) fn forget_all(&self) {
        self.tables().clear();
        self.states().clear();
    }

    fn states(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn Any + Send + Sync>>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state kept under `flow`, if it is a `T`; `take` removes it.
    pub(super) fn state<T: Any + Send + Sync>(&self, flow: &str, take: bool) -> Option<Arc<T>> {
        let mut states = self.states();
        let held = states.get(flow)?.clone().downcast::<T>().ok()?;
        if take {
            states.remove(flow);
        }
        Some(held)
    }

    pub(super) fn keep_state<T: Any + Send + Sync>(&self, flow: &str, state: Arc<T>) {
        self.states().insert(flow.to_string(), state);
    }
}

/// What is known of one table's app ids.
#[derive(Debug, Clone)]
pub(super) struct Known {
    /// Which making of the table (a reset makes it anew in the same folder).
    pub(super) stamp: Stamp,
    /// The table version the answers hold at.
    pub(super) at: i64,
    /// Each app id's newest stored version; `None`: it stored none. An app id not here is unknown.
    pub(super) versions: HashMap<String, Option<i64>>,
}

/// Every table of a lab asked about, by folder, kept with the lab's tables. A handful of app ids
/// each.
#[derive(Debug, Default)]
pub(super) struct KnownTxns(Mutex<HashMap<PathBuf, Known>>);

impl KnownTxns {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Known>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use deltalake::kernel::Transaction;

    use crate::engine::tables::{self, TableName, Tables};

    #[tokio::test]
    async fn a_table_kept_is_brought_up_to_date_and_dropped_when_its_folder_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let tables = Tables::new(dir.path(), None);
        let made = tables.open_or_create(TableName::Orders).await.unwrap();
        assert_eq!(tables::version(&made), 0);
        // Opened once: kept. A commit made through another handle is seen on the next open.
        tables.open(TableName::Orders).await.unwrap().unwrap();
        let other = Tables::new(dir.path(), None);
        let table = other.open(TableName::Orders).await.unwrap().unwrap();
        tables::append(table, vec![], vec![Transaction::new("t", 7)])
            .await
            .unwrap();
        let seen = tables.open(TableName::Orders).await.unwrap().unwrap();
        assert_eq!(tables::version(&seen), 1);
        assert_eq!(tables.txn_version(&seen, "t").await.unwrap(), Some(7));
        // Removed behind its back (another process's reset) and made again: the new one is read.
        std::fs::remove_dir_all(dir.path().join("orders")).unwrap();
        assert!(tables.open(TableName::Orders).await.unwrap().is_none());
        other.open_or_create(TableName::Orders).await.unwrap();
        let again = tables.open(TableName::Orders).await.unwrap().unwrap();
        assert_eq!(tables::version(&again), 0);
        assert_eq!(tables.txn_version(&again, "t").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_folder_made_again_between_two_opens_is_not_mistaken_for_the_table_kept() {
        let dir = tempfile::tempdir().unwrap();
        let tables = Tables::new(dir.path(), None);
        let first = tables.open_or_create(TableName::Orders).await.unwrap();
        tables::append(first, vec![], vec![Transaction::new("t", 1)])
            .await
            .unwrap();
        tables.open(TableName::Orders).await.unwrap().unwrap();
        // Gone and back between two opens of this handle, with a commit more than the kept one.
        std::fs::remove_dir_all(dir.path().join("orders")).unwrap();
        let other = Tables::new(dir.path(), None);
        let remade = other.open_or_create(TableName::Orders).await.unwrap();
        let remade = tables::append(remade, vec![], vec![Transaction::new("u", 2)])
            .await
            .unwrap();
        tables::append(remade, vec![], vec![Transaction::new("u", 3)])
            .await
            .unwrap();
        let seen = tables.open(TableName::Orders).await.unwrap().unwrap();
        assert_eq!(tables::version(&seen), 2);
        assert_eq!(tables.txn_version(&seen, "t").await.unwrap(), None);
        assert_eq!(tables.txn_version(&seen, "u").await.unwrap(), Some(3));
    }
}
