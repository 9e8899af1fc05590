//! What a table's commits since the check last counted it changed, read from the table's log
//! (Delta's own streaming source reads it this way) rather than from its whole list of files:
//! the files whose rows are new, the files whose rows only moved (a compaction, `dataChange =
//! false`; Reckon's put a pack's rows in one file, so even `orders`, whose rows the state keeps
//! by file, follows them without a read) and the files gone. Whatever else the log of a table
//! that only appends shows (rows removed, a commit cleaned up, the table recreated) makes the
//! check count everything from scratch.

use std::collections::BTreeSet;

use deltalake::kernel::Action;
use deltalake::logstore::get_actions;
use deltalake::{DeltaTable, Path};

use crate::engine::tables::{TableError, TableName, version};

/// A file an add or remove action names, by the URI the table's file list gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAction {
    pub uri: String,
    pub added: bool,
    pub data_change: bool,
}

/// One commit's file actions.
pub type Commit = (i64, Vec<FileAction>);

/// A table's commits since the version counted, or why they cannot be followed.
pub enum Log {
    Commits(Vec<Commit>),
    Recount(String),
}

/// What a table's new commits changed, or why everything must be counted again.
#[derive(Debug, PartialEq, Eq)]
pub enum Since {
    Changes(Changes),
    Recount(String),
}

/// Files, each list sorted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Files whose rows the check has not counted: to be read.
    pub added: Vec<String>,
    /// Files holding rows counted in the files they replaced: covered without a read.
    pub moved: Vec<String>,
    /// Compactions into one file, in commit order: the files packed, and the file now holding
    /// their rows (the state's rows of those files move to it).
    pub moves: Vec<(Vec<String>, String)>,
    /// Counted files no longer in the table.
    pub gone: Vec<String>,
}

/// The version a table counted nothing of (it did not exist when the check ran).
pub const NONE_COUNTED: i64 = -1;

/// The commits of `table` after `counted_to`, the version the check counted it to (`None`
/// when the state has never counted it by version).
pub async fn commits(
    name: TableName,
    table: Option<&DeltaTable>,
    counted_to: Option<i64>,
) -> Result<Log, TableError> {
    let (table, from) = match (table, counted_to) {
        (None, None | Some(NONE_COUNTED)) => return Ok(Log::Commits(vec![])),
        (None, Some(_)) => return Ok(Log::Recount(format!("table {name} is gone"))),
        (Some(_), None) => {
            return Ok(Log::Recount(format!(
                "the state does not say to which version it counted {name}"
            )));
        }
        (Some(table), Some(from)) => (table, from),
    };
    let now = version(table);
    if now < from {
        return Ok(Log::Recount(format!(
            "{name} is at version {now}, before the {from} counted: it was made again"
        )));
    }
    let delta = |source| TableError::Delta {
        table: name.to_string(),
        source,
    };
    let store = table.log_store();
    let mut out = vec![];
    for v in from + 1..=now {
        let Some(bytes) = store.read_commit_entry(v as u64).await.map_err(delta)? else {
            return Ok(Log::Recount(format!(
                "commit {v} of {name} is no longer in its log"
            )));
        };
        let file = |path: &str, added, data_change| FileAction {
            uri: store.to_uri(&Path::parse(path).unwrap_or_else(|_| Path::from(path))),
            added,
            data_change,
        };
        let actions = get_actions(v as u64, &bytes).map_err(delta)?;
        let files = actions.iter().filter_map(|action| match action {
            Action::Add(a) => Some(file(&a.path, true, a.data_change)),
            Action::Remove(r) => Some(file(&r.path, false, r.data_change)),
            _ => None,
        });
        out.push((v, files.collect()));
    }
    Ok(Log::Commits(out))
}

/// The files `commits` remove: those the caller looks up among the files counted.
pub fn removed(commits: &[Commit]) -> impl Iterator<Item = &str> {
    commits
        .iter()
        .flat_map(|(_, files)| files.iter())
        .filter(|f| !f.added)
        .map(|f| f.uri.as_str())
}

/// What `commits` changed for a table whose `counted` files (among those they remove) the
/// check has counted. `rewrites`: the table's rows are rewritten (`orders`, by MERGE), so any
/// file may go and every new file is read; otherwise the table only appends.
pub fn classify(
    name: TableName,
    commits: &[Commit],
    rewrites: bool,
    counted: &BTreeSet<String>,
) -> Since {
    let (mut added, mut moved, mut gone) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let (mut moves, mut targets, mut left) = (vec![], BTreeSet::new(), BTreeSet::new());
    for (v, files) in commits {
        let recount = |what: &str| Since::Recount(format!("commit {v} of {name} {what}"));
        let adds: Vec<&FileAction> = files.iter().filter(|f| f.added).collect();
        let (mut froms, mut uncounted) = (vec![], false);
        // A commit's removes first: a compaction's new files replace the files it removes.
        for f in files.iter().filter(|f| !f.added) {
            let uri = &f.uri;
            if added.remove(uri) {
                uncounted = true;
            } else if targets.remove(uri)
                || moved.remove(uri)
                || (counted.contains(uri) && left.insert(uri.clone()))
            {
                if f.data_change && !rewrites {
                    return recount("removed rows from a table that only appends");
                }
                froms.push(uri.clone());
            } else {
                return recount(&format!("removed {uri}, a file the check never counted"));
            }
        }
        if uncounted && !rewrites {
            return recount("moved or removed rows the check had not counted yet");
        }
        let quiet = files.iter().all(|f| !f.data_change);
        if quiet && !uncounted && !froms.is_empty() && adds.len() == 1 {
            targets.insert(adds[0].uri.clone());
            moves.push((froms, adds[0].uri.clone()));
            continue;
        }
        gone.extend(froms);
        for f in adds {
            match rewrites || f.data_change {
                true => added.insert(f.uri.clone()),
                false => moved.insert(f.uri.clone()),
            };
        }
    }
    Since::Changes(Changes {
        added: added.into_iter().collect(),
        moved: moved.into_iter().collect(),
        moves,
        gone: gone.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(uri: &str, data_change: bool) -> FileAction {
        FileAction {
            uri: uri.into(),
            added: true,
            data_change,
        }
    }

    fn remove(uri: &str, data_change: bool) -> FileAction {
        FileAction {
            added: false,
            ..add(uri, data_change)
        }
    }

    fn counted(uris: &[&str]) -> BTreeSet<String> {
        uris.iter().map(|u| u.to_string()).collect()
    }

    fn changes(added: &[&str], moves: &[(&[&str], &str)], gone: &[&str]) -> Since {
        let v = |l: &[&str]| l.iter().map(|u| u.to_string()).collect();
        Since::Changes(Changes {
            added: v(added),
            moved: vec![],
            moves: moves
                .iter()
                .map(|(from, to)| (v(from), to.to_string()))
                .collect(),
            gone: v(gone),
        })
    }

    const BRONZE: TableName = TableName::BronzeOrders;

    #[test]
    fn a_compaction_of_counted_files_moves_them_without_a_read() {
        let log = vec![
            (5, vec![add("c", true)]),
            (
                6,
                vec![remove("a", false), remove("b", false), add("ab", false)],
            ),
        ];
        let got = classify(BRONZE, &log, false, &counted(&["a", "b"]));
        assert_eq!(got, changes(&["c"], &[(&["a", "b"], "ab")], &[]));
        // Compacted again in a later commit: moved on.
        let again = vec![
            log[1].clone(),
            (
                7,
                vec![remove("ab", false), remove("d", false), add("abd", false)],
            ),
        ];
        let got = classify(BRONZE, &again, false, &counted(&["a", "b", "d"]));
        let moves: &[(&[&str], &str)] = &[(&["a", "b"], "ab"), (&["ab", "d"], "abd")];
        assert_eq!(got, changes(&[], moves, &[]));
        // A compaction that took in `c`, whose rows the check has not counted: from scratch.
        let mut early = log;
        early.push((
            7,
            vec![remove("ab", false), remove("c", false), add("abc", false)],
        ));
        let got = classify(BRONZE, &early, false, &counted(&["a", "b"]));
        assert!(matches!(got, Since::Recount(why) if why.contains("commit 7")));
        // Several files out of one compaction: covered, nothing read.
        let split = vec![(
            4,
            vec![remove("a", false), add("x", false), add("y", false)],
        )];
        let got = classify(BRONZE, &split, false, &counted(&["a"]));
        let want = Changes {
            moved: vec!["x".into(), "y".into()],
            gone: vec!["a".into()],
            ..Changes::default()
        };
        assert_eq!(got, Since::Changes(want));
    }

    #[test]
    fn an_append_only_table_that_loses_rows_or_moves_uncounted_ones_is_recounted() {
        let deleted = vec![(3, vec![remove("a", true)])];
        assert!(matches!(
            classify(BRONZE, &deleted, false, &counted(&["a"])),
            Since::Recount(why) if why.contains("commit 3") && why.contains("only appends")
        ));
        let unknown = vec![(3, vec![remove("z", false), add("y", false)])];
        assert!(matches!(
            classify(BRONZE, &unknown, false, &counted(&["a"])),
            Since::Recount(why) if why.contains("never counted")
        ));
        let fresh = vec![(3, vec![add("n", true)]), (4, vec![remove("n", false)])];
        assert!(matches!(
            classify(BRONZE, &fresh, false, &counted(&[])),
            Since::Recount(_)
        ));
    }

    #[test]
    fn a_rewritten_table_reads_every_new_file_and_follows_its_compactions() {
        let log = vec![
            (2, vec![remove("a", true), add("a2", true)]),
            (
                3,
                vec![remove("b", false), remove("d", false), add("bd", false)],
            ),
            (
                4,
                vec![remove("a2", false), remove("e", false), add("ae", false)],
            ),
            (5, vec![remove("bd", true), add("bd2", true)]),
        ];
        let orders = TableName::Orders;
        let got = classify(orders, &log, true, &counted(&["a", "b", "d", "e"]));
        // a2 was never counted: its compaction's file is read; bd's rows go with it.
        let moves: &[(&[&str], &str)] = &[(&["b", "d"], "bd")];
        assert_eq!(got, changes(&["ae", "bd2"], moves, &["a", "bd", "e"]));
    }
}
