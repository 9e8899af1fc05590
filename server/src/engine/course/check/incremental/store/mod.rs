//! The incremental check's state: a SQLite file beside gold's state (`state/check.sqlite`) with
//! what the check has counted so far and the table files it has counted, changed in one
//! transaction per check. A check that fails half-way leaves the state as the last one committed.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Sqlite, SqlitePool, Transaction};

use super::rows::{BronzeRow, HourRow, SilverRow};
use crate::engine::course::HOUR_MICROS;
use crate::engine::course::check::hours::HourFigures;
use crate::engine::flow::FlowError;

/// The state's tables. `covered`: files counted, per table; `counters`: figures, and the version
/// each table was counted to. `held`: ranges of offsets bronze and its rejects hold; `twice`:
/// offsets held more than once; `read_to`: the last offset bronze said it read, per partition.
/// `events`: bronze's distinct events with their first copy (by bronze run, partition, offset); `newest`:
/// each order's newest event; `silver`: the rows of `orders`, by the file they were counted in,
/// and `silver_file` the file each such file's rows are in now (a compaction moves many files'
/// rows into one); `differing`: orders whose silver row is not their newest event; `recount`
/// and `written`: placed events per hour, and what gold wrote per hour.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS covered (tbl TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (tbl, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS held (part INTEGER NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL, PRIMARY KEY (part, first)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS twice (part INTEGER NOT NULL, off INTEGER NOT NULL, PRIMARY KEY (part, off)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS read_to (part INTEGER PRIMARY KEY, off INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (order_id INTEGER NOT NULL, status TEXT NOT NULL, event_time INTEGER NOT NULL,
    ing INTEGER NOT NULL, part INTEGER NOT NULL, off INTEGER NOT NULL, amount INTEGER NOT NULL, PRIMARY KEY (order_id, status, event_time)) WITHOUT ROWID;
DROP INDEX IF EXISTS placed_by_time;
CREATE TABLE IF NOT EXISTS newest (order_id INTEGER PRIMARY KEY, customer_id TEXT, status TEXT, amount INTEGER,
    event_time INTEGER, ing INTEGER NOT NULL, part INTEGER NOT NULL, off INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS silver (path TEXT NOT NULL, order_id INTEGER, customer_id TEXT, status TEXT, amount INTEGER, event_time INTEGER);
CREATE INDEX IF NOT EXISTS silver_by_order ON silver (order_id);
CREATE INDEX IF NOT EXISTS silver_by_path ON silver (path);
CREATE TABLE IF NOT EXISTS silver_file (path TEXT PRIMARY KEY, now TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS silver_file_now ON silver_file (now);
CREATE TABLE IF NOT EXISTS differing (order_id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS recount (hour INTEGER PRIMARY KEY, orders INTEGER NOT NULL, revenue INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS written (hour INTEGER PRIMARY KEY, orders INTEGER NOT NULL, revenue INTEGER NOT NULL, writes INTEGER NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS stage (order_id INTEGER NOT NULL, customer_id TEXT NOT NULL, status TEXT NOT NULL,
    amount INTEGER NOT NULL, event_time INTEGER NOT NULL, ing INTEGER NOT NULL, part INTEGER NOT NULL, off INTEGER NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS touched (order_id INTEGER PRIMARY KEY);
"#;

/// Every table of the state emptied, for a count from scratch.
const WIPE: &str = "DELETE FROM covered; DELETE FROM counters; DELETE FROM held; DELETE FROM twice; \
    DELETE FROM read_to; DELETE FROM events; DELETE FROM newest; DELETE FROM silver; DELETE FROM silver_file; \
    DELETE FROM differing; DELETE FROM recount; DELETE FROM written;";

/// Rows bound per multi-row INSERT (SQLite allows 32,766 variables).
pub(super) const CHUNK: usize = 2000;

/// The state file, open, with one transaction under way.
pub struct Store {
    path: String,
    pool: SqlitePool,
}

/// What the state holds, read back for the check's lines.
pub struct Counted {
    pub events: i64,
    pub distinct: i64,
    pub rejected: i64,
    pub orders: i64,
    pub differing: Vec<i64>,
    pub hours: Vec<HourFigures>,
    pub twice: Vec<(i32, i64)>,
    /// Per partition, the ranges of offsets held, in order.
    pub held: BTreeMap<i32, Vec<(i64, i64)>>,
    pub read_to: BTreeMap<i32, i64>,
    pub watermark: Option<i64>,
}

/// The state's layout, kept as SQLite's `user_version`. A state of an older layout is emptied
/// when opened, so the next check counts every table from scratch into the new one. 2: events
/// keep the bronze run that stored them (`ing`), which ties are broken by first.
const FORMAT: i64 = 2;

impl Store {
    /// Empties a state of an older layout (its tables dropped) and marks it with [`FORMAT`].
    async fn upgrade(&self) -> Result<(), sqlx::Error> {
        let (format,): (i64,) = sqlx::query_as("PRAGMA user_version")
            .fetch_one(&self.pool)
            .await?;
        if format >= FORMAT {
            return Ok(());
        }
        let tables: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table'")
                .fetch_all(&self.pool)
                .await?;
        for (table,) in tables {
            // The names are the state's own tables, read from its schema just above.
            let drop = format!("DROP TABLE IF EXISTS \"{}\"", table.replace('"', "\"\""));
            sqlx::raw_sql(sqlx::AssertSqlSafe(drop))
                .execute(&self.pool)
                .await?;
        }
        let mark = format!("PRAGMA user_version = {FORMAT}");
        sqlx::raw_sql(sqlx::AssertSqlSafe(mark))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Opens (creating) the state at `path`, for a check.
    pub async fn open(path: &Path) -> Result<Self, FlowError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| FlowError::State {
                path: dir.display().to_string(),
                detail: e.to_string(),
            })?;
        }
        let store = Self::connect(path, false).await?;
        store.upgrade().await.map_err(|e| store.error(e))?;
        sqlx::raw_sql(SCHEMA)
            .execute(&store.pool)
            .await
            .map_err(|e| store.error(e))?;
        Ok(store)
    }

    /// Opens the state for reading its last commit only: it takes no lock, so a check under way
    /// (WAL mode) is not waited for.
    pub async fn open_read_only(path: &Path) -> Result<Self, FlowError> {
        Self::connect(path, true).await
    }

    async fn connect(path: &Path, read_only: bool) -> Result<Self, FlowError> {
        let shown = path.display().to_string();
        let err = |e: sqlx::Error| FlowError::State {
            path: shown.clone(),
            detail: e.to_string(),
        };
        let mut options = SqliteConnectOptions::from_str(&format!("sqlite://{shown}"))
            .map_err(err)?
            .busy_timeout(Duration::from_secs(30))
            // Each check opens the state anew, with a cold page cache: mapped, its pages are read
            // from the OS's cache without a system call each (a run's 1,000 events touch
            // thousands of pages of a state of a million).
            .pragma("mmap_size", "1073741824");
        options = match read_only {
            true => options.read_only(true),
            false => options
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal),
        };
        // One connection: the temporary staging tables live in it.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(err)?;
        Ok(Self { path: shown, pool })
    }

    pub fn error(&self, e: sqlx::Error) -> FlowError {
        FlowError::State {
            path: self.path.clone(),
            detail: e.to_string(),
        }
    }

    pub async fn begin(&self) -> Result<Transaction<'static, Sqlite>, FlowError> {
        self.pool.begin().await.map_err(|e| self.error(e))
    }

    /// What the last committed check counted.
    pub async fn counted(&self) -> Result<Counted, FlowError> {
        let mut conn = self.pool.acquire().await.map_err(|e| self.error(e))?;
        counted(&mut conn).await.map_err(|e| self.error(e))
    }

    pub async fn close(self) {
        self.pool.close().await;
    }
}

pub(super) type Tx = Transaction<'static, Sqlite>;

/// Empties the state, for a count from scratch.
pub async fn wipe(tx: &mut Tx) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(WIPE).execute(&mut **tx).await?;
    Ok(())
}

pub async fn counter(tx: &mut Tx, name: &str) -> Result<Option<i64>, sqlx::Error> {
    let row: Option<(Option<i64>,)> = sqlx::query_as("SELECT value FROM counters WHERE name = ?")
        .bind(name)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(row.and_then(|(v,)| v))
}

pub async fn set_counter(tx: &mut Tx, name: &str, value: Option<i64>) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
        .bind(name)
        .bind(value)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn add_counter(tx: &mut Tx, name: &str, by: i64) -> Result<(), sqlx::Error> {
    let now = counter(tx, name).await?.unwrap_or(0);
    set_counter(tx, name, Some(now + by)).await
}

/// Counts bronze's new rows: distinct events (first copy kept), each order's newest event, the
/// placed events per hour; the orders they touch are marked.
pub async fn add_bronze(tx: &mut Tx, rows: &[BronzeRow]) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM stage").execute(&mut **tx).await?;
    for chunk in rows.chunks(CHUNK) {
        let mut q = QueryBuilder::<Sqlite>::new(
            "INSERT INTO stage (order_id, customer_id, status, amount, event_time, ing, part, off) ",
        );
        q.push_values(chunk, |mut b, r| {
            b.push_bind(r.order_id)
                .push_bind(&r.customer_id)
                .push_bind(&r.status)
                .push_bind(r.amount)
                .push_bind(r.event_time)
                .push_bind(r.ingested)
                .push_bind(r.partition)
                .push_bind(r.offset);
        });
        q.build().execute(&mut **tx).await?;
    }
    let (new_distinct,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (SELECT DISTINCT order_id, status, event_time FROM stage) s \
         WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.order_id = s.order_id AND e.status = s.status AND e.event_time = s.event_time)",
    )
    .fetch_one(&mut **tx)
    .await?;
    add_counter(tx, "distinct", new_distinct).await?;
    add_counter(tx, "events", rows.len() as i64).await?;
    // Placed events per hour, moved by what the new rows change before they go in: a new event
    // adds one and its amount; a copy stored before the one counted swaps its amount in. So a
    // late event costs its own row, not a recount of its hour.
    sqlx::query(
        "INSERT INTO recount (hour, orders, revenue) \
         SELECT f.event_time - ((f.event_time % ?1) + ?1) % ?1 AS hour, \
             sum(e.order_id IS NULL), \
             sum(CASE WHEN e.order_id IS NULL THEN f.amount \
                 WHEN (f.ing, f.part, f.off) < (e.ing, e.part, e.off) THEN f.amount - e.amount \
                 ELSE 0 END) \
         FROM (SELECT order_id, status, event_time, ing, part, off, amount, \
                 row_number() OVER (PARTITION BY order_id, status, event_time ORDER BY ing, part, off) AS n \
               FROM stage WHERE status = 'placed') f \
         LEFT JOIN events e ON e.order_id = f.order_id AND e.status = f.status AND e.event_time = f.event_time \
         WHERE f.n = 1 GROUP BY hour \
         ON CONFLICT (hour) DO UPDATE SET orders = recount.orders + excluded.orders, \
             revenue = recount.revenue + excluded.revenue",
    )
    .bind(HOUR_MICROS)
    .execute(&mut **tx)
    .await?;
    // The first copy of an event, by bronze run, partition and offset, is the one counted (the
    // full check's `first_value(amount ORDER BY ingested_at, partition, offset)`, gold's read).
    sqlx::query(
        "INSERT INTO events (order_id, status, event_time, ing, part, off, amount) \
         SELECT order_id, status, event_time, ing, part, off, amount FROM stage WHERE true \
         ON CONFLICT (order_id, status, event_time) DO UPDATE SET ing = excluded.ing, part = excluded.part, \
             off = excluded.off, amount = excluded.amount \
         WHERE (excluded.ing, excluded.part, excluded.off) < (events.ing, events.part, events.off)",
    )
    .execute(&mut **tx)
    .await?;
    // The newest event of an order: the latest event time; of a tie, the first stored.
    sqlx::query(
        "INSERT INTO newest (order_id, customer_id, status, amount, event_time, ing, part, off) \
         SELECT order_id, customer_id, status, amount, event_time, ing, part, off FROM stage WHERE true \
         ON CONFLICT (order_id) DO UPDATE SET customer_id = excluded.customer_id, status = excluded.status, \
             amount = excluded.amount, event_time = excluded.event_time, ing = excluded.ing, \
             part = excluded.part, off = excluded.off \
         WHERE excluded.event_time > newest.event_time OR (excluded.event_time = newest.event_time \
             AND (excluded.ing, excluded.part, excluded.off) < (newest.ing, newest.part, newest.off))",
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query("INSERT OR IGNORE INTO touched (order_id) SELECT order_id FROM stage")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Files of `orders` gone and added: their rows leave and join the mirror; their orders are
/// touched.
pub async fn change_silver(
    tx: &mut Tx,
    gone: &[String],
    added: &[(String, Vec<SilverRow>)],
) -> Result<(), sqlx::Error> {
    let mut delta = 0i64;
    for path in gone {
        // The files first counted whose rows are in `path` now.
        sqlx::query("INSERT OR IGNORE INTO touched (order_id) SELECT order_id FROM silver WHERE path IN (SELECT path FROM silver_file WHERE now = ?) AND order_id IS NOT NULL")
            .bind(path)
            .execute(&mut **tx)
            .await?;
        let removed = sqlx::query(
            "DELETE FROM silver WHERE path IN (SELECT path FROM silver_file WHERE now = ?)",
        )
        .bind(path)
        .execute(&mut **tx)
        .await?;
        delta -= removed.rows_affected() as i64;
        sqlx::query("DELETE FROM silver_file WHERE now = ?")
            .bind(path)
            .execute(&mut **tx)
            .await?;
    }
    for (path, rows) in added {
        sqlx::query("INSERT INTO silver_file (path, now) VALUES (?1, ?1)")
            .bind(path)
            .execute(&mut **tx)
            .await?;
        for chunk in rows.chunks(CHUNK) {
            let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO silver (path, order_id, customer_id, status, amount, event_time) ",
            );
            q.push_values(chunk, |mut b, r| {
                b.push_bind(path)
                    .push_bind(r.order_id)
                    .push_bind(&r.customer_id)
                    .push_bind(&r.status)
                    .push_bind(r.amount)
                    .push_bind(r.event_time);
            });
            q.build().execute(&mut **tx).await?;
        }
        sqlx::query("INSERT OR IGNORE INTO touched (order_id) SELECT order_id FROM silver WHERE path = ? AND order_id IS NOT NULL")
            .bind(path)
            .execute(&mut **tx)
            .await?;
        delta += rows.len() as i64;
    }
    add_counter(tx, "orders", delta).await
}

/// Re-decides, for every touched order, whether `orders` differs from its newest event (as the
/// full check's `SILVER_DIFFERENCES`, NULLs compared with `IS NOT`).
pub async fn settle_touched(tx: &mut Tx) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM differing WHERE order_id IN (SELECT order_id FROM touched)")
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO differing (order_id) SELECT t.order_id FROM touched t LEFT JOIN newest n ON n.order_id = t.order_id \
         WHERE (SELECT count(*) FROM silver s WHERE s.order_id = t.order_id) > 1 \
            OR (n.order_id IS NULL) <> NOT EXISTS (SELECT 1 FROM silver s WHERE s.order_id = t.order_id) \
            OR EXISTS (SELECT 1 FROM silver s WHERE s.order_id = t.order_id AND n.order_id IS NOT NULL \
                AND (s.customer_id IS NOT n.customer_id OR s.status IS NOT n.status \
                     OR s.amount IS NOT n.amount OR s.event_time IS NOT n.event_time))",
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM touched")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Gold's new rows: each is one write of its hour.
pub async fn add_written(tx: &mut Tx, rows: &[HourRow]) -> Result<(), sqlx::Error> {
    for r in rows {
        sqlx::query(
            "INSERT INTO written (hour, orders, revenue, writes) VALUES (?, ?, ?, 1) \
             ON CONFLICT (hour) DO UPDATE SET orders = written.orders + excluded.orders, \
                 revenue = written.revenue + excluded.revenue, writes = written.writes + 1",
        )
        .bind(r.hour)
        .bind(r.orders)
        .bind(r.revenue)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Everything the check's lines need, as the state holds it.
pub async fn counted(c: &mut sqlx::SqliteConnection) -> Result<Counted, sqlx::Error> {
    let counters: Vec<(String, Option<i64>)> = sqlx::query_as("SELECT name, value FROM counters")
        .fetch_all(&mut *c)
        .await?;
    let counters: BTreeMap<String, Option<i64>> = counters.into_iter().collect();
    let get = |name: &str| counters.get(name).copied().flatten().unwrap_or(0);
    let differing: Vec<(i64,)> = sqlx::query_as("SELECT order_id FROM differing ORDER BY order_id")
        .fetch_all(&mut *c)
        .await?;
    let hours: Vec<(i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>)> = sqlx::query_as(
        "SELECT h.hour, w.orders, w.revenue, w.writes, r.orders, r.revenue \
         FROM (SELECT hour FROM recount WHERE orders > 0 UNION SELECT hour FROM written) h \
         LEFT JOIN written w ON w.hour = h.hour LEFT JOIN recount r ON r.hour = h.hour ORDER BY h.hour",
    )
    .fetch_all(&mut *c)
    .await?;
    let twice: Vec<(i32, i64)> = sqlx::query_as("SELECT part, off FROM twice ORDER BY part, off")
        .fetch_all(&mut *c)
        .await?;
    let held: Vec<(i32, i64, i64)> =
        sqlx::query_as("SELECT part, first, last FROM held ORDER BY part, first")
            .fetch_all(&mut *c)
            .await?;
    let read_to: Vec<(i32, i64)> = sqlx::query_as("SELECT part, off FROM read_to")
        .fetch_all(&mut *c)
        .await?;
    let mut ranges: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for (p, first, last) in held {
        ranges.entry(p).or_default().push((first, last));
    }
    Ok(Counted {
        events: get("events"),
        distinct: get("distinct"),
        rejected: get("rejected"),
        orders: get("orders"),
        differing: differing.into_iter().map(|(o,)| o).collect(),
        hours: hours
            .into_iter()
            .map(
                |(hour, orders, revenue, writes, known, known_revenue)| HourFigures {
                    hour,
                    counted: orders
                        .map(|o| (o, i128::from(revenue.unwrap_or(0)), writes.unwrap_or(0))),
                    known: (known.unwrap_or(0), i128::from(known_revenue.unwrap_or(0))),
                },
            )
            .collect(),
        twice,
        held: ranges,
        read_to: read_to.into_iter().collect(),
        watermark: counters.get("watermark").copied().flatten(),
    })
}

#[cfg(test)]
mod tests;
