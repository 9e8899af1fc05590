//! Small files packed into one. Every run adds a file or two to each of a lab's tables, and
//! delta-rs pays for every file a table holds each time it opens the table or commits to it (it
//! rebuilds the snapshot's list of files), so without this a lab's runs grow dearer with its age
//! rather than with what they add. A compaction rewrites a pack of small files as one file, in a
//! commit that changes no data (`dataChange = false`, delta-rs's `OPTIMIZE` operation): the
//! streams reading bronze's change feed skip it, and the incremental check moves its bookkeeping
//! to the new file without reading its rows again.
//!
//! delta-rs's own `optimize` was the first choice, but it packs every file under its target
//! size, the large ones again and again, and into several files at once: the check could then
//! not tell which rows went where and would read them all again. Here a pack takes the
//! smallest files first and a file only as long as it is no larger than the pack so far (or
//! tiny), so each row is rewritten a few times at most, and the pack is always one file.

use arrow::compute::cast;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use deltalake::kernel::Action;
use deltalake::kernel::transaction::CommitBuilder;
use deltalake::protocol::DeltaOperation;
use deltalake::writer::DeltaWriter;

use super::{TableError, TableName, Tables, commit_properties, read_files, table_name, writer};

/// Files under this size are small: they may be packed.
pub const SMALL_BYTES: i64 = 8 << 20;
/// A table holding more than this many times a lab's `compact_after` small files is compacted
/// even when no pack of more than `compact_after` files can be made (files of a few MiB each).
const BACKSTOP: usize = 4;
/// The largest pack: at most this much is read and written by one compaction.
pub const PACK_BYTES: i64 = 16 << 20;
/// Files under this size join any pack (each run's own files are far smaller).
const TINY_BYTES: i64 = 1 << 20;

/// What a compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    pub files: usize,
    pub bytes: i64,
}

/// The files to pack out of a table's `(uri, size)` list, by index. A pack takes the small files
/// from the smallest up, each while it is tiny or no larger than the pack so far, within
/// [`PACK_BYTES`]: the first such run of two or more. It is made when it takes more than `after`
/// files, so a table's tiny files are rewritten once per `after` runs whatever else it holds (an
/// old lab's few larger files do not make every run compact), or when the table holds more than
/// [`BACKSTOP`] times `after` small files. Never when `after` is 0.
pub fn pack(files: &[(String, i64)], after: usize) -> Vec<usize> {
    let mut small: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].1 < SMALL_BYTES)
        .collect();
    if after == 0 || small.len() <= after {
        return vec![];
    }
    small.sort_by_key(|&i| (files[i].1, i));
    for start in 0..small.len() {
        let (mut picked, mut total) = (vec![], 0);
        for &i in &small[start..] {
            let size = files[i].1;
            let joins = picked.is_empty() || size <= total || size <= TINY_BYTES;
            if !joins || total + size > PACK_BYTES {
                break;
            }
            picked.push(i);
            total += size;
        }
        if picked.len() >= 2 {
            let worth = picked.len() > after || small.len() > BACKSTOP * after;
            return if worth { picked } else { vec![] };
        }
    }
    vec![]
}

/// Compacts table `name` when [`pack`] picks files out of it (never when `after` is 0).
pub async fn compact(
    tables: &Tables,
    name: TableName,
    after: usize,
) -> Result<Option<Compacted>, TableError> {
    let Some(table) = tables.open(name).await? else {
        return Ok(None);
    };
    let delta = |source| TableError::Delta {
        table: table_name(&table),
        source,
    };
    let snapshot = table.snapshot().map_err(delta)?;
    let store = table.log_store();
    let files: Vec<_> = snapshot.log_data().into_iter().collect();
    let sized: Vec<(String, i64)> = files
        .iter()
        .map(|f| (store.to_uri(&f.object_store_path()), f.size()))
        .collect();
    let picked = pack(&sized, after);
    if picked.is_empty() {
        return Ok(None);
    }
    let uris: Vec<String> = picked.iter().map(|&i| sized[i].0.clone()).collect();
    let batches = read_files(&uris, &format!("{name}'s small files")).await?;
    let mut actions: Vec<Action> = picked
        .iter()
        .map(|&i| Action::Remove(files[i].remove_action(false)))
        .collect();
    let mut writer = writer(&table)?;
    let schema = writer.arrow_schema();
    for batch in batches.into_iter().filter(|b| b.num_rows() > 0) {
        // DataFusion reads strings as views; the table's schema has plain strings.
        let arrow = |source| TableError::Arrow {
            table: name.to_string(),
            source,
        };
        let columns = schema
            .fields()
            .iter()
            .map(|field| match batch.column_by_name(field.name()) {
                Some(column) => cast(column, field.data_type()),
                None => Err(ArrowError::SchemaError(format!(
                    "a small file has no column {}",
                    field.name()
                ))),
            })
            .collect::<Result<Vec<_>, _>>();
        let batch = RecordBatch::try_new(schema.clone(), columns.map_err(arrow)?).map_err(arrow)?;
        writer.write(batch).await.map_err(delta)?;
    }
    for mut add in writer.flush().await.map_err(delta)? {
        add.data_change = false;
        actions.push(Action::Add(add));
    }
    let done = Compacted {
        files: picked.len(),
        bytes: picked.iter().map(|&i| sized[i].1).sum(),
    };
    let operation = DeltaOperation::Optimize {
        predicate: None,
        target_size: PACK_BYTES,
    };
    // No stream's progress moves: the commit carries no `txn` action.
    let committed = CommitBuilder::from(commit_properties(&table, vec![]))
        .with_actions(actions)
        .build(Some(snapshot), table.log_store(), operation)
        .await
        .map_err(delta)?;
    let mut table = table;
    table.state = Some(committed.snapshot());
    tables.keep_committed(&table);
    Ok(Some(done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(list: &[i64]) -> Vec<(String, i64)> {
        list.iter()
            .enumerate()
            .map(|(i, s)| (format!("f{i}"), *s))
            .collect()
    }

    const K: i64 = 1 << 10;
    const M: i64 = 1 << 20;

    #[test]
    fn a_pack_is_the_small_files_smallest_first_while_they_are_not_larger_than_it() {
        // Nine run files and an older 7 MiB pack: the run files are packed, the 7 MiB one waits.
        let mut files = vec![7 * M];
        files.extend([50 * K; 9]);
        assert_eq!(pack(&sizes(&files), 8), (1..=9).collect::<Vec<_>>());
        // Eight small files are not more than eight: nothing yet.
        assert!(pack(&sizes(&files[1..9]), 8).is_empty());
        // An old lab's seven files of a few MiB and two run files: the two wait for seven more,
        // as they would in a young lab.
        let mut files = vec![2 * M, 2 * M, 3 * M, 3 * M, 4 * M, 5 * M, 6 * M];
        files.extend([50 * K; 2]);
        assert!(pack(&sizes(&files), 8).is_empty());
        files.extend([50 * K; 7]);
        assert_eq!(pack(&sizes(&files), 8), (7..16).collect::<Vec<_>>());
        // Small files no pack of more than `after` can hold wait for the backstop: then the first
        // pack of two or more is made.
        let files = [7 * M; 8];
        assert!(pack(&sizes(&files), 2).is_empty());
        assert_eq!(pack(&sizes(&[7 * M; 9]), 2), vec![0, 1]);
        // A large file is never packed; a pack stays within 16 MiB.
        let files = [20 * M, 3 * M, 3 * M, 4 * M, 5 * M, 6 * M];
        assert_eq!(pack(&sizes(&files), 2), vec![1, 2, 3, 4]);
        // Never when compaction is off, and never one file alone.
        assert!(pack(&sizes(&[K, K, K]), 0).is_empty());
        // A smaller file that cannot join does not keep two larger ones apart.
        assert_eq!(pack(&sizes(&[2 * M, 7 * M, 7 * M]), 1), vec![1, 2]);
        assert!(pack(&sizes(&[2 * M, 5 * M]), 1).is_empty());
    }
}
