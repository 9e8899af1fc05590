//! The run history in SQLite (`<data>/history.sqlite`): every run with its flows' events and the
//! check's lines ([`runs`], read back for the pages by [`timeline`]), and every event sent
//! through Reckon ([`sent`]). A record only: nothing here decides what a flow processes; offsets
//! and state live in the Delta tables. The registry of labs and tokens shares the database and
//! belongs to the access code (`access::registry`).

mod runs;
mod sent;
mod timeline;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

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
