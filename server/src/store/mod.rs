//! The run history in SQLite (`<data>/history.sqlite`): every pipeline run, stream run, check
//! finding, produced event and reset. A record only: nothing here decides what a stream processes.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use app::model::{ProducedEvent, RunsPage, StreamBar, TimelineRun, VerdictAt};

use crate::config::DEFAULT_LAB;
use crate::engine::check::Report;
use crate::engine::event::{OrderEvent, format_cents, format_micros};
use crate::engine::flows::StreamRun;
use crate::kafka::Sent;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database {path}: {source}")]
    Open { path: String, source: sqlx::Error },
    #[error("history database: migrating: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("history database: {0}")]
    Query(#[from] sqlx::Error),
}

/// A run as the history lists it (the dashboard's type: the pages show it as it is).
pub use app::model::RunSummary;

/// A run with every stream's record and the check's lines.
#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: RunSummary,
    pub streams: Vec<serde_json::Value>,
    pub findings: Vec<serde_json::Value>,
}

#[derive(Clone)]
pub struct History {
    pool: SqlitePool,
}

fn now() -> String {
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

    /// A write transaction that takes SQLite's write lock at once (`BEGIN IMMEDIATE`): a deferred
    /// one that reads first would fail with "database is locked" when another writer came
    /// between its read and its write, instead of waiting its turn.
    async fn write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// Resets of the lab so far.
    async fn generation(&self, lab: &str) -> Result<i64, HistoryError> {
        Ok(sqlx::query("SELECT count(*) FROM resets WHERE lab = ?")
            .bind(lab)
            .fetch_one(&self.pool)
            .await?
            .get(0))
    }

    /// Records the start of a run; returns its id.
    pub async fn start_run(&self, lab: &str, started_by: &str) -> Result<i64, HistoryError> {
        let generation = self.generation(lab).await?;
        let done = sqlx::query(
            "INSERT INTO runs (lab, started_by, generation, started_at, status) VALUES (?, ?, ?, ?, 'running')",
        )
        .bind(lab)
        .bind(started_by)
        .bind(generation)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(done.last_insert_rowid())
    }

    /// Records how a run ended, with what its streams and check reported.
    pub async fn finish_run(
        &self,
        id: i64,
        streams: &[StreamRun],
        report: Option<&Report>,
        error: Option<&str>,
    ) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        for run in streams {
            sqlx::query(
                "INSERT INTO stream_runs (run_id, stream, rows_read, rows_written, rows_late, rows_duplicate, \
                 rows_rejected, table_version, watermark_before, watermark_after, duration_ms, record) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(run.stream)
            .bind(run.rows_read as i64)
            .bind(run.rows_written as i64)
            .bind(run.rows_late as i64)
            .bind(run.rows_duplicate as i64)
            .bind(run.rows_rejected as i64)
            .bind(run.table_version)
            .bind(&run.watermark_before)
            .bind(&run.watermark_after)
            .bind(run.duration_ms as i64)
            .bind(serde_json::to_string(run).unwrap_or_default())
            .execute(&mut *tx)
            .await?;
        }
        for (line, finding) in report
            .map(|r| r.findings.as_slice())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let figures = finding.figures.as_ref();
            sqlx::query(
                "INSERT INTO check_findings (run_id, line, verdict, text, hour, orders, revenue, bronze_orders, \
                 bronze_revenue) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(line as i64)
            .bind(finding.verdict.to_string())
            .bind(&finding.text)
            .bind(figures.map(|f| f.hour.clone()))
            .bind(figures.and_then(|f| f.orders))
            .bind(figures.and_then(|f| f.revenue.clone()))
            .bind(figures.map(|f| f.bronze_orders))
            .bind(figures.map(|f| f.bronze_revenue.clone()))
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("UPDATE runs SET finished_at = ?, status = ?, error = ? WHERE id = ?")
            .bind(now())
            .bind(if error.is_some() {
                "failed"
            } else {
                "succeeded"
            })
            .bind(error)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records events sent to the lab's topic and where they landed.
    pub async fn record_produced(
        &self,
        lab: &str,
        topic: &str,
        source: &str,
        events: &[OrderEvent],
        sent: &[Sent],
    ) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        let at = now();
        for (event, sent) in events.iter().zip(sent) {
            sqlx::query(
                "INSERT INTO produced_events (lab, produced_at, source, topic, \"partition\", \"offset\", event) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(lab)
            .bind(&at)
            .bind(source)
            .bind(topic)
            .bind(sent.partition)
            .bind(sent.offset)
            .bind(event.to_json())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Marks a reset: later runs belong to the next generation.
    pub async fn record_reset(&self, lab: &str, topic: &str) -> Result<(), HistoryError> {
        sqlx::query("INSERT INTO resets (lab, at, topic) VALUES (?, ?, ?)")
            .bind(lab)
            .bind(now())
            .bind(topic)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The labs recorded on this server, by name (`default` only once its settings were saved).
    pub async fn labs(&self) -> Result<Vec<LabRecord>, HistoryError> {
        let rows = sqlx::query("SELECT name, created_at, public FROM labs ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| LabRecord {
                name: r.get(0),
                created_at: r.get(1),
                public: r.get::<i64, _>(2) != 0,
            })
            .collect())
    }

    /// Records a new lab with its learner token; `false` if a lab of that name exists.
    pub async fn create_lab(
        &self,
        name: &str,
        learner: &StoredToken,
    ) -> Result<bool, HistoryError> {
        let mut tx = self.write().await?;
        let created = sqlx::query("INSERT OR IGNORE INTO labs (name, created_at) VALUES (?, ?)")
            .bind(name)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if created {
            // Tokens a lab of this name had before (a delete racing a late insert) open nothing.
            sqlx::query("DELETE FROM tokens WHERE lab = ?")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            insert_token(&mut tx, name, learner).await?;
        }
        tx.commit().await?;
        Ok(created)
    }

    /// Forgets a lab: its row, its tokens and every history row of it (runs, findings, sends,
    /// resets), so a new lab of the same name starts clean.
    pub async fn delete_lab(&self, name: &str) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        for statement in [
            "DELETE FROM stream_runs WHERE run_id IN (SELECT id FROM runs WHERE lab = ?)",
            "DELETE FROM check_findings WHERE run_id IN (SELECT id FROM runs WHERE lab = ?)",
            "DELETE FROM runs WHERE lab = ?",
            "DELETE FROM produced_events WHERE lab = ?",
            "DELETE FROM resets WHERE lab = ?",
            "DELETE FROM tokens WHERE lab = ?",
            "DELETE FROM labs WHERE name = ?",
        ] {
            sqlx::query(statement).bind(name).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Opens (or closes) a lab's public pages; `default` gets a row the first time. `false` if
    /// the lab is gone.
    pub async fn set_public(&self, lab: &str, public: bool) -> Result<bool, HistoryError> {
        let done = if lab == DEFAULT_LAB {
            sqlx::query(
                "INSERT INTO labs (name, created_at, public) VALUES (?, ?, ?) \
                 ON CONFLICT (name) DO UPDATE SET public = excluded.public",
            )
            .bind(lab)
            .bind(now())
            .bind(public as i64)
            .execute(&self.pool)
            .await?
        } else {
            sqlx::query("UPDATE labs SET public = ? WHERE name = ?")
                .bind(public as i64)
                .bind(lab)
                .execute(&self.pool)
                .await?
        };
        Ok(done.rows_affected() == 1)
    }

    /// Adds a token to a lab that exists (`default` always does); `false` if the lab is gone.
    pub async fn add_token(&self, lab: &str, token: &StoredToken) -> Result<bool, HistoryError> {
        let mut tx = self.write().await?;
        let exists = lab == DEFAULT_LAB
            || sqlx::query("SELECT 1 FROM labs WHERE name = ?")
                .bind(lab)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
        if exists {
            insert_token(&mut tx, lab, token).await?;
        }
        tx.commit().await?;
        Ok(exists)
    }

    /// The token with this id, if any.
    pub async fn token(&self, id: &str) -> Result<Option<(String, StoredToken)>, HistoryError> {
        let row = sqlx::query("SELECT lab, role, hash FROM tokens WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| {
            (
                r.get(0),
                StoredToken {
                    id: id.to_string(),
                    role: r.get(1),
                    hash: r.get(2),
                },
            )
        }))
    }

    /// Runs of a lab, newest first, `limit` of them with ids below `before` (paging).
    pub async fn runs(
        &self,
        lab: &str,
        limit: i64,
        before: Option<i64>,
    ) -> Result<Vec<RunSummary>, HistoryError> {
        let rows = sqlx::query(
            "SELECT id, lab, started_by, generation, started_at, finished_at, status, error FROM runs \
             WHERE lab = ? AND id < ? ORDER BY id DESC LIMIT ?",
        )
        .bind(lab)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(summary).collect())
    }

    /// The lab's last run that is not running any more, `None` before any.
    pub async fn last_finished_run(&self, lab: &str) -> Result<Option<RunSummary>, HistoryError> {
        let row = sqlx::query(
            "SELECT id, lab, started_by, generation, started_at, finished_at, status, error FROM runs \
             WHERE lab = ? AND status <> 'running' ORDER BY id DESC LIMIT 1",
        )
        .bind(lab)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.as_ref().map(summary))
    }

    /// Whether the lab's last check found a PROBLEM; `None` before any check.
    pub async fn last_check_found_problem(&self, lab: &str) -> Result<Option<bool>, HistoryError> {
        let row = sqlx::query(
            "SELECT max(f.verdict = 'PROBLEM') FROM check_findings f WHERE f.run_id = \
             (SELECT max(run_id) FROM check_findings JOIN runs ON runs.id = run_id WHERE runs.lab = ?)",
        )
        .bind(lab)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.get::<Option<i64>, _>(0).map(|problem| problem == 1))
    }

    /// A page of the runs timeline, newest first: each run with its streams' bars and the
    /// check's worst verdict. Three queries whatever the page size.
    pub async fn timeline(
        &self,
        lab: &str,
        limit: i64,
        before: Option<i64>,
    ) -> Result<RunsPage, HistoryError> {
        let runs = self.runs(lab, limit + 1, before).await?;
        let older = (runs.len() as i64 > limit).then(|| runs[limit as usize - 1].id);
        let runs = &runs[..runs.len().min(limit as usize)];
        let (Some(newest), Some(oldest)) = (runs.first(), runs.last()) else {
            return Ok(RunsPage {
                runs: vec![],
                older,
            });
        };
        let mut bars: HashMap<i64, Vec<(String, StreamBar)>> = HashMap::new();
        for r in sqlx::query(
            "SELECT run_id, stream, json_extract(record, '$.started_at'), duration_ms, rows_read, rows_written, \
             rows_late, rows_duplicate, rows_rejected, watermark_before, watermark_after FROM stream_runs \
             WHERE run_id BETWEEN ? AND ? ORDER BY run_id, rowid",
        )
        .bind(oldest.id)
        .bind(newest.id)
        .fetch_all(&self.pool)
        .await?
        {
            bars.entry(r.get(0)).or_default().push((
                r.get::<Option<String>, _>(2).unwrap_or_default(),
                StreamBar {
                    stream: r.get(1),
                    offset_ms: 0,
                    duration_ms: r.get(3),
                    rows_read: r.get(4),
                    rows_written: r.get(5),
                    rows_late: r.get(6),
                    rows_duplicate: r.get(7),
                    rows_rejected: r.get(8),
                    watermark_before: r.get(9),
                    watermark_after: r.get(10),
                },
            ));
        }
        let checks: HashMap<i64, i64> = sqlx::query(
            "SELECT run_id, max(CASE verdict WHEN 'PROBLEM' THEN 3 WHEN 'late' THEN 2 ELSE 1 END) \
             FROM check_findings WHERE run_id BETWEEN ? AND ? GROUP BY run_id",
        )
        .bind(oldest.id)
        .bind(newest.id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
        let runs = runs
            .iter()
            .map(|run| {
                let start = parse_time(&run.started_at);
                let streams = bars
                    .remove(&run.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(started_at, mut bar)| {
                        if let (Some(start), Some(at)) = (start, parse_time(&started_at)) {
                            bar.offset_ms = (at - start).num_milliseconds().max(0);
                        }
                        bar
                    })
                    .collect();
                let duration_ms = run
                    .finished_at
                    .as_deref()
                    .and_then(parse_time)
                    .zip(start)
                    .map(|(end, start)| (end - start).num_milliseconds().max(0));
                TimelineRun {
                    run: run.clone(),
                    duration_ms,
                    streams,
                    check: checks.get(&run.id).map(|worst| {
                        match worst {
                            3 => "problem",
                            2 => "late",
                            _ => "ok",
                        }
                        .to_string()
                    }),
                }
            })
            .collect();
        Ok(RunsPage { runs, older })
    }

    /// Events sent to the lab through Reckon, newest first.
    pub async fn produced(
        &self,
        lab: &str,
        limit: i64,
    ) -> Result<Vec<ProducedEvent>, HistoryError> {
        let rows = sqlx::query(
            "SELECT id, produced_at, source, \"partition\", \"offset\", event FROM produced_events \
             WHERE lab = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(lab)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let event = OrderEvent::parse(r.get::<&str, _>(5).as_bytes()).ok()?;
                Some(ProducedEvent {
                    id: r.get(0),
                    produced_at: r.get(1),
                    source: r.get(2),
                    partition: r.get(3),
                    offset: r.get(4),
                    order_id: event.order_id,
                    customer_id: event.customer_id,
                    status: event.status,
                    amount: format_cents(event.amount_cents),
                    event_time: format_micros(event.event_time_micros),
                })
            })
            .collect())
    }

    /// The JSON of an event sent to the lab before, by its id.
    pub async fn produced_event(&self, lab: &str, id: i64) -> Result<Option<String>, HistoryError> {
        Ok(
            sqlx::query("SELECT event FROM produced_events WHERE lab = ? AND id = ?")
                .bind(lab)
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .map(|r| r.get(0)),
        )
    }

    /// The largest order id sent to the lab through Reckon.
    pub async fn max_order_id(&self, lab: &str) -> Result<Option<i64>, HistoryError> {
        Ok(sqlx::query(
            "SELECT max(CAST(json_extract(event, '$.order_id') AS INTEGER)) FROM produced_events WHERE lab = ?",
        )
        .bind(lab)
        .fetch_one(&self.pool)
        .await?
        .get(0))
    }

    /// Each hour's verdict in the checks since the lab's last reset, oldest first, changes only.
    pub async fn hour_verdicts(
        &self,
        lab: &str,
    ) -> Result<HashMap<String, Vec<VerdictAt>>, HistoryError> {
        let generation = self.generation(lab).await?;
        let rows = sqlx::query(
            "SELECT f.hour, f.run_id, f.verdict FROM check_findings f JOIN runs ON runs.id = f.run_id \
             WHERE runs.lab = ? AND runs.generation = ? AND f.hour IS NOT NULL ORDER BY f.run_id",
        )
        .bind(lab)
        .bind(generation)
        .fetch_all(&self.pool)
        .await?;
        let mut verdicts: HashMap<String, Vec<VerdictAt>> = HashMap::new();
        for r in rows {
            let seen = verdicts.entry(r.get(0)).or_default();
            let verdict = r.get::<String, _>(2).to_lowercase();
            if seen.last().is_none_or(|last| last.verdict != verdict) {
                seen.push(VerdictAt {
                    run_id: r.get(1),
                    verdict,
                });
            }
        }
        Ok(verdicts)
    }

    /// Gold runs since the lab's last reset that dropped late events: run id and run record.
    pub async fn gold_runs_with_late(
        &self,
        lab: &str,
    ) -> Result<Vec<(i64, serde_json::Value)>, HistoryError> {
        let generation = self.generation(lab).await?;
        let rows = sqlx::query(
            "SELECT s.run_id, s.record FROM stream_runs s JOIN runs ON runs.id = s.run_id \
             WHERE runs.lab = ? AND runs.generation = ? AND s.stream = 'gold' AND s.rows_late > 0 ORDER BY s.run_id",
        )
        .bind(lab)
        .bind(generation)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.get(0), serde_json::from_str(r.get::<&str, _>(1)).ok()?)))
            .collect())
    }

    /// When each stream (and the check) of the lab last ran successfully.
    pub async fn last_runs(&self, lab: &str) -> Result<HashMap<String, String>, HistoryError> {
        let rows = sqlx::query(
            "SELECT s.stream, max(runs.started_at) FROM stream_runs s JOIN runs ON runs.id = s.run_id \
             WHERE runs.lab = ? GROUP BY s.stream \
             UNION ALL SELECT 'check', max(runs.started_at) FROM check_findings f JOIN runs ON runs.id = f.run_id \
             WHERE runs.lab = ?",
        )
        .bind(lab)
        .bind(lab)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.get(0), r.get::<Option<String>, _>(1)?)))
            .collect())
    }

    /// One run with its stream records and check lines.
    pub async fn run(&self, id: i64) -> Result<Option<RunDetail>, HistoryError> {
        let Some(row) = sqlx::query(
            "SELECT id, lab, started_by, generation, started_at, finished_at, status, error FROM runs WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let streams = sqlx::query("SELECT record FROM stream_runs WHERE run_id = ? ORDER BY rowid")
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .filter_map(|r| serde_json::from_str(r.get::<&str, _>(0)).ok())
            .collect();
        let findings = sqlx::query(
            "SELECT verdict, text, hour, orders, revenue, bronze_orders, bronze_revenue FROM check_findings \
             WHERE run_id = ? ORDER BY line",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            serde_json::json!({
                "verdict": r.get::<String, _>(0), "text": r.get::<String, _>(1), "hour": r.get::<Option<String>, _>(2),
                "orders": r.get::<Option<i64>, _>(3), "revenue": r.get::<Option<String>, _>(4),
                "bronze_orders": r.get::<Option<i64>, _>(5), "bronze_revenue": r.get::<Option<String>, _>(6),
            })
        })
        .collect();
        Ok(Some(RunDetail {
            run: summary(&row),
            streams,
            findings,
        }))
    }
}

fn parse_time(text: &str) -> Option<chrono::DateTime<Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn summary(row: &sqlx::sqlite::SqliteRow) -> RunSummary {
    RunSummary {
        id: row.get(0),
        lab: row.get(1),
        started_by: row.get(2),
        generation: row.get(3),
        started_at: row.get(4),
        finished_at: row.get(5),
        status: row.get(6),
        error: row.get(7),
    }
}

/// A lab made on this server, as the history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabRecord {
    pub name: String,
    pub created_at: String,
    /// Its freshness and reconciliation pages may be read without a token.
    pub public: bool,
}

/// A token as stored: its id, what it opens, and the argon2 hash of its secret (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub id: String,
    /// `learner` or `viewer`.
    pub role: String,
    pub hash: String,
}

async fn insert_token(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    lab: &str,
    token: &StoredToken,
) -> Result<(), HistoryError> {
    sqlx::query("INSERT INTO tokens (id, lab, role, hash, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(&token.id)
        .bind(lab)
        .bind(&token.role)
        .bind(&token.hash)
        .bind(now())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::flows::StreamRun;

    #[tokio::test]
    async fn a_run_is_recorded_with_its_streams_and_pages_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::open(&dir.path().join("h.sqlite")).await.unwrap();
        let first = history.start_run("default", "cli").await.unwrap();
        let mut record = StreamRun::new("bronze");
        record.rows_read = 3;
        history
            .finish_run(first, &[record], None, None)
            .await
            .unwrap();
        history.record_reset("default", "orders").await.unwrap();
        let second = history.start_run("default", "api").await.unwrap();
        history
            .finish_run(second, &[], None, Some("broker down"))
            .await
            .unwrap();

        let runs = history.runs("default", 10, None).await.unwrap();
        assert_eq!(
            runs.iter().map(|r| r.id).collect::<Vec<_>>(),
            [second, first]
        );
        assert_eq!((runs[0].status.as_str(), runs[0].generation), ("failed", 1));
        assert_eq!(runs[0].error.as_deref(), Some("broker down"));
        assert_eq!(
            history
                .runs("default", 10, Some(second))
                .await
                .unwrap()
                .len(),
            1
        );
        let detail = history.run(first).await.unwrap().unwrap();
        assert_eq!(detail.streams[0]["rows_read"], 3);
        assert_eq!(detail.run.status, "succeeded");
        assert!(history.run(999).await.unwrap().is_none());
    }
}
