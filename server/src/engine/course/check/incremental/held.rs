//! The offsets bronze and its rejects hold, as ranges per partition (one range while nothing is
//! missing), the offsets held twice, and the last offset bronze said it read: the state behind the
//! check's first line.

use std::collections::{BTreeMap, BTreeSet};

use super::store::Tx;

/// The partitions the state holds offsets of.
pub async fn holding(tx: &mut Tx) -> Result<BTreeSet<i32>, sqlx::Error> {
    let rows: Vec<(i32,)> = sqlx::query_as("SELECT DISTINCT part FROM held")
        .fetch_all(&mut **tx)
        .await?;
    Ok(rows.into_iter().map(|(p,)| p).collect())
}

/// Offsets stored by bronze or its rejects: each joins its partition's ranges, or is held twice.
pub async fn add_offsets(tx: &mut Tx, offsets: &mut [(i32, i64)]) -> Result<(), sqlx::Error> {
    offsets.sort_unstable();
    let partitions: BTreeSet<i32> = offsets.iter().map(|(p, _)| *p).collect();
    for p in partitions {
        let rows: Vec<(i64, i64)> =
            sqlx::query_as("SELECT first, last FROM held WHERE part = ? ORDER BY first")
                .bind(p)
                .fetch_all(&mut **tx)
                .await?;
        let mut held: BTreeMap<i64, i64> = rows.into_iter().collect();
        let mut twice = vec![];
        for &(_, o) in offsets.iter().filter(|(q, _)| *q == p) {
            let below = held.range(..=o).next_back().map(|(f, l)| (*f, *l));
            if below.is_some_and(|(_, last)| o <= last) {
                twice.push(o);
                continue;
            }
            let mut first = o;
            let mut last = o;
            if let Some((f, l)) = below.filter(|(_, l)| *l + 1 == o) {
                held.remove(&f);
                first = f;
                last = l.max(o);
            }
            if let Some(next_last) = held.remove(&(o + 1)) {
                last = next_last;
            }
            held.insert(first, last);
        }
        sqlx::query("DELETE FROM held WHERE part = ?")
            .bind(p)
            .execute(&mut **tx)
            .await?;
        for (first, last) in held {
            sqlx::query("INSERT INTO held (part, first, last) VALUES (?, ?, ?)")
                .bind(p)
                .bind(first)
                .bind(last)
                .execute(&mut **tx)
                .await?;
        }
        for o in twice {
            sqlx::query("INSERT OR IGNORE INTO twice (part, off) VALUES (?, ?)")
                .bind(p)
                .bind(o)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

pub async fn set_read_to(tx: &mut Tx, read_to: &BTreeMap<i32, i64>) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM read_to")
        .execute(&mut **tx)
        .await?;
    for (p, o) in read_to {
        sqlx::query("INSERT INTO read_to (part, off) VALUES (?, ?)")
            .bind(p)
            .bind(o)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}
