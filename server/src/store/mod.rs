//! The run history in SQLite (`<data>/history.sqlite`): every run with its flows' events and the
//! check's lines ([`runs`], read back for the pages by [`timeline`]), and every event sent
//! through Reckon ([`sent`]). A record only: nothing here decides what a flow processes; offsets
//! and state live in the Delta tables. The registry of labs and tokens shares the database and
//! belongs to the access code (`access::registry`).

mod progress;
mod runs;
mod sent;
mod timeline;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

pub use progress::{Evidence, FlowEvidence, GroupReadEvidence, RunEvidence};
pub use runs::forget_lab;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database {path}: {source}")]
    Open { path: String, source: sqlx::Error },
    #[error("history database: migrating: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("history database: {0}")]
    Query(#[from] sqlx::Error),
    /// A row the history cannot read back: `what` names it (`run #7`, `sent event #12`).
    #[error("history database: {what} cannot be read: {detail}")]
    Unreadable { what: String, detail: String },
}

impl HistoryError {
    pub(crate) fn unreadable(what: impl Into<String>, detail: impl ToString) -> Self {
        HistoryError::Unreadable {
            what: what.into(),
            detail: detail.to_string(),
        }
    }
}

#[derive(Clone)]
pub struct History {
    pool: SqlitePool,
}

pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl History {
    /// Opens (creating if needed) the history database and applies the migrations.
    pub async fn open(path: &Path) -> Result<Self, HistoryError> {
        let shown = path.display().to_string();
        let open = |source| HistoryError::Open {
            path: shown.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| open(sqlx::Error::Io(e)))?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{shown}"))
            .map_err(open)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // The CLI and the server may write at once; SQLite serializes them.
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(open)?;
        sqlx::migrate!("../migrations").run(&pool).await?;
        Ok(Self { pool })
    }

    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A write transaction that takes SQLite's write lock at once (`BEGIN IMMEDIATE`): a deferred
    /// one that reads first would fail with "database is locked" when another writer came
    /// between its read and its write, instead of waiting its turn.
    pub(crate) async fn write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// Resets of the lab so far.
    async fn generation(&self, lab: &str) -> Result<i64, HistoryError> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM resets WHERE lab = ?")
                .bind(lab)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}

/// SQL composed from this module's constant column lists (never from input): safe to run as is.
pub(super) fn composed(sql: String) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(sql)
}

#[cfg(test)]
mod tests {
    use app::model::{DropReason, FlowStatus, SourceRange, Verdict};

    use super::*;

    /// A history written before the event log (stream runs with a JSON record, verdicts as
    /// printed) reads back, once migrated, as the same runs in the shared types.
    #[tokio::test]
    async fn a_history_from_before_the_event_log_reads_back_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .unwrap()
            .create_if_missing(true);
        let pool = SqlitePool::connect_with(options).await.unwrap();
        sqlx::migrate!("../migrations")
            .run_to(2, &pool)
            .await
            .unwrap();
        let record = r#"{"stream":"gold","rows_read":2,"rows_written":1,"rows_late":1,
            "rows_duplicate":0,"rows_rejected":0,
            "source":{"kind":"versions","table":"bronze_orders","first":3,"last":4},
            "table_version":5,"watermark_before":"2026-10-01T11:05:00Z",
            "watermark_after":"2026-10-01T11:10:00Z","hours_closed":["2026-10-01T10:00:00Z"],
            "dropped":[{"order_id":1006,"status":"placed","event_time":"2026-10-01T09:50:00Z",
                        "partition":0,"offset":11,"reason":"late"}],
            "started_at":"2026-10-01T12:00:00.100Z","duration_ms":40}"#;
        for statement in [
            "INSERT INTO runs VALUES (1, 'default', 'cli', 0, '2026-10-01T12:00:00.000Z', \
             '2026-10-01T12:00:01.000Z', 'succeeded', NULL)"
                .to_string(),
            format!(
                "INSERT INTO stream_runs VALUES (1, 'gold', 2, 1, 1, 0, 0, 5, \
                 '2026-10-01T11:05:00Z', '2026-10-01T11:10:00Z', 40, '{record}')"
            ),
            "INSERT INTO check_findings (run_id, line, verdict, text) \
             VALUES (1, 0, 'PROBLEM', 'orders differs')"
                .to_string(),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(statement))
                .execute(&pool)
                .await
                .unwrap();
        }
        pool.close().await;

        let history = History::open(&path).await.unwrap();
        let run = history.run(1).await.unwrap().unwrap();
        let gold = &run.streams[0];
        assert_eq!(
            (gold.flow.as_str(), gold.target.as_deref(), gold.status),
            ("gold", Some("hourly_sales"), FlowStatus::Completed)
        );
        assert_eq!(
            (gold.figures.rows_late, gold.figures.table_version),
            (1, Some(5))
        );
        assert_eq!(
            gold.figures.source,
            SourceRange::Versions {
                table: "bronze_orders".into(),
                first: 3,
                last: 4
            }
        );
        assert_eq!(gold.figures.hours_closed, ["2026-10-01T10:00:00Z"]);
        assert_eq!(gold.dropped[0].reason, DropReason::Late);
        assert_eq!(gold.started_at, "2026-10-01T12:00:00.100Z");
        assert_eq!(run.findings[0].verdict, Verdict::Problem);
        let check = run.check.as_ref().expect("the check's event");
        assert_eq!(
            (check.flow.as_str(), check.status),
            ("check", FlowStatus::Completed)
        );
        let page = history.timeline("default", 10, None).await.unwrap();
        assert_eq!(page.runs[0].check, Some(Verdict::Problem));
        assert_eq!(page.runs[0].streams[0].offset_ms, 100);
    }
}
