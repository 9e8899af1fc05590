//! Runs as the history records them: a run's start and end, one event per flow (the event log,
//! PIPELINES §6), the check's lines, and the lab's resets. Rows are read back into the shared
//! types; a row that does not read is an error naming its run, never a default.

use app::model::{
    CheckLine, DroppedEvent, Figures, FlowRun, FlowStatus, RunDetail, RunStatus, RunSummary,
    Verdict,
};

use super::{History, HistoryError, composed, now};

/// The columns of a run, in [`RunRow`]'s order.
pub(super) const RUN_COLUMNS: &str =
    "id, lab, started_by, generation, started_at, finished_at, status, error";
/// The columns of a flow event, in [`FlowRow`]'s order.
pub(super) const FLOW_COLUMNS: &str =
    "run_id, flow, target, status, started_at, duration_ms, error, figures, dropped";

#[derive(sqlx::FromRow)]
pub(super) struct RunRow {
    id: i64,
    lab: String,
    started_by: String,
    generation: i64,
    started_at: String,
    finished_at: Option<String>,
    status: String,
    error: Option<String>,
}

impl TryFrom<RunRow> for RunSummary {
    type Error = HistoryError;

    fn try_from(row: RunRow) -> Result<Self, HistoryError> {
        let status = RunStatus::parse(&row.status).ok_or_else(|| {
            HistoryError::unreadable(
                format!("run #{}", row.id),
                format!(
                    "status {:?} is not running, succeeded or failed",
                    row.status
                ),
            )
        })?;
        Ok(RunSummary {
            id: row.id,
            lab: row.lab,
            started_by: row.started_by,
            generation: row.generation,
            started_at: row.started_at,
            finished_at: row.finished_at,
            status,
            error: row.error,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct FlowRow {
    pub(super) run_id: i64,
    flow: String,
    target: Option<String>,
    status: String,
    started_at: String,
    duration_ms: i64,
    error: Option<String>,
    figures: String,
    dropped: String,
}

impl TryFrom<FlowRow> for FlowRun {
    type Error = HistoryError;

    fn try_from(row: FlowRow) -> Result<Self, HistoryError> {
        let what = || format!("run #{}'s {} event", row.run_id, row.flow);
        let status = FlowStatus::parse(&row.status)
            .ok_or_else(|| HistoryError::unreadable(what(), format!("status {:?}", row.status)))?;
        let figures: Figures = from_json(&row.figures)
            .map_err(|e| HistoryError::unreadable(what(), format!("figures: {e}")))?;
        let dropped: Vec<DroppedEvent> = from_json(&row.dropped)
            .map_err(|e| HistoryError::unreadable(what(), format!("dropped events: {e}")))?;
        Ok(FlowRun {
            flow: row.flow,
            target: row.target,
            status,
            figures,
            dropped,
            started_at: row.started_at,
            duration_ms: u64::try_from(row.duration_ms).unwrap_or_default(),
            error: row.error,
        })
    }
}

#[derive(sqlx::FromRow)]
struct LineRow {
    run_id: i64,
    line: i64,
    verdict: String,
    text: String,
    hour: Option<String>,
    orders: Option<i64>,
    revenue: Option<String>,
    bronze_orders: Option<i64>,
    bronze_revenue: Option<String>,
}

impl TryFrom<LineRow> for CheckLine {
    type Error = HistoryError;

    fn try_from(row: LineRow) -> Result<Self, HistoryError> {
        let verdict = Verdict::parse(&row.verdict).ok_or_else(|| {
            HistoryError::unreadable(
                format!("run #{}'s check line {}", row.run_id, row.line),
                format!("verdict {:?}", row.verdict),
            )
        })?;
        Ok(CheckLine {
            verdict,
            text: row.text,
            hour: row.hour,
            orders: row.orders,
            revenue: row.revenue,
            bronze_orders: row.bronze_orders,
            bronze_revenue: row.bronze_revenue,
        })
    }
}

/// JSON of a shared type; an error names the field that did not read (`rows_read: invalid type`).
pub(super) fn from_json<'a, T: serde::Deserialize<'a>>(
    json: &'a str,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json))
}

/// Reads rows into the shared type, failing on the first that does not read.
pub(super) fn read_all<R, T: TryFrom<R, Error = HistoryError>>(
    rows: Vec<R>,
) -> Result<Vec<T>, HistoryError> {
    rows.into_iter().map(T::try_from).collect()
}

impl History {
    /// Records the start of a run; returns its id.
    pub async fn start_run(&self, lab: &str, started_by: &str) -> Result<i64, HistoryError> {
        let generation = self.generation(lab).await?;
        let done = sqlx::query(
            "INSERT INTO runs (lab, started_by, generation, started_at, status) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(lab)
        .bind(started_by)
        .bind(generation)
        .bind(now())
        .bind(RunStatus::Running.as_str())
        .execute(self.pool())
        .await?;
        Ok(done.last_insert_rowid())
    }

    /// Records how a run ended, with its flows' events and the check's lines.
    pub async fn finish_run(
        &self,
        id: i64,
        events: &[FlowRun],
        findings: &[CheckLine],
        error: Option<&str>,
    ) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        for (seq, event) in events.iter().enumerate() {
            let json = |value: Result<String, serde_json::Error>| {
                value
                    .map_err(|e| HistoryError::unreadable(format!("run #{id}'s {}", event.flow), e))
            };
            sqlx::query(
                "INSERT INTO flow_events (run_id, seq, flow, target, status, started_at, duration_ms, error, \
                 figures, dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(seq as i64)
            .bind(&event.flow)
            .bind(&event.target)
            .bind(event.status.as_str())
            .bind(&event.started_at)
            .bind(event.duration_ms as i64)
            .bind(&event.error)
            .bind(json(serde_json::to_string(&event.figures))?)
            .bind(json(serde_json::to_string(&event.dropped))?)
            .execute(&mut *tx)
            .await?;
        }
        for (line, finding) in findings.iter().enumerate() {
            sqlx::query(
                "INSERT INTO check_findings (run_id, line, verdict, text, hour, orders, revenue, bronze_orders, \
                 bronze_revenue) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(line as i64)
            .bind(finding.verdict.as_str())
            .bind(&finding.text)
            .bind(&finding.hour)
            .bind(finding.orders)
            .bind(&finding.revenue)
            .bind(finding.bronze_orders)
            .bind(&finding.bronze_revenue)
            .execute(&mut *tx)
            .await?;
        }
        let status = match error {
            Some(_) => RunStatus::Failed,
            None => RunStatus::Succeeded,
        };
        sqlx::query("UPDATE runs SET finished_at = ?, status = ?, error = ? WHERE id = ?")
            .bind(now())
            .bind(status.as_str())
            .bind(error)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks a reset: later runs belong to the next generation.
    pub async fn record_reset(&self, lab: &str, topic: &str) -> Result<(), HistoryError> {
        sqlx::query("INSERT INTO resets (lab, at, topic) VALUES (?, ?, ?)")
            .bind(lab)
            .bind(now())
            .bind(topic)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Runs of a lab, newest first, `limit` of them with ids below `before` (paging).
    pub async fn runs(
        &self,
        lab: &str,
        limit: i64,
        before: Option<i64>,
    ) -> Result<Vec<RunSummary>, HistoryError> {
        let rows: Vec<RunRow> = sqlx::query_as(composed(format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE lab = ? AND id < ? ORDER BY id DESC LIMIT ?"
        )))
        .bind(lab)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        read_all(rows)
    }

    /// For each version of its table that flow `flow` of `lab` committed, the newest run that
    /// committed it (the figures' `table_version`).
    pub async fn runs_by_table_version(
        &self,
        lab: &str,
        flow: &str,
    ) -> Result<std::collections::HashMap<i64, i64>, HistoryError> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT json_extract(f.figures, '$.table_version') AS v, MAX(f.run_id) \
             FROM flow_events f JOIN runs r ON r.id = f.run_id \
             WHERE r.lab = ? AND f.flow = ? AND v IS NOT NULL GROUP BY v",
        )
        .bind(lab)
        .bind(flow)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// Records that run `id`, whose process ended without saying how it went, ended as `status`
    /// (failed or canceled) for `why`; a run already recorded as ended stays as it was.
    pub async fn end_run(&self, id: i64, status: RunStatus, why: &str) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        sqlx::query(
            "UPDATE runs SET finished_at = ?, status = ?, error = ? WHERE id = ? AND status = ?",
        )
        .bind(now())
        .bind(status.as_str())
        .bind(why)
        .bind(id)
        .bind(RunStatus::Running.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records every run of `lab` still marked running as ended by a crash: called while holding
    /// the lab's lock, when none of them can still be going on. How many there were.
    pub async fn end_crashed_runs(&self, lab: &str) -> Result<u64, HistoryError> {
        let mut tx = self.write().await?;
        let done = sqlx::query(
            "UPDATE runs SET finished_at = ?, status = ?, error = ? WHERE lab = ? AND status = ?",
        )
        .bind(now())
        .bind(RunStatus::Failed.as_str())
        .bind("ended by a crash: its process stopped before it could record how the run went")
        .bind(lab)
        .bind(RunStatus::Running.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }

    /// The lab's last run that is not running any more, `None` before any.
    pub async fn last_finished_run(&self, lab: &str) -> Result<Option<RunSummary>, HistoryError> {
        let row: Option<RunRow> = sqlx::query_as(composed(format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE lab = ? AND status <> ? ORDER BY id DESC LIMIT 1"
        )))
        .bind(lab)
        .bind(RunStatus::Running.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(RunSummary::try_from).transpose()
    }

    /// One run with its flows' events and the check's lines.
    pub async fn run(&self, id: i64) -> Result<Option<RunDetail>, HistoryError> {
        let row: Option<RunRow> = sqlx::query_as(composed(format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let flows: Vec<FlowRow> = sqlx::query_as(composed(format!(
            "SELECT {FLOW_COLUMNS} FROM flow_events WHERE run_id = ? ORDER BY seq"
        )))
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        let (check, streams): (Vec<FlowRun>, Vec<FlowRun>) = read_all::<_, FlowRun>(flows)?
            .into_iter()
            .partition(|f| f.flow == "check");
        let lines: Vec<LineRow> = sqlx::query_as(
            "SELECT run_id, line, verdict, text, hour, orders, revenue, bronze_orders, bronze_revenue \
             FROM check_findings WHERE run_id = ? ORDER BY line",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        Ok(Some(RunDetail {
            run: row.try_into()?,
            streams,
            check: check.into_iter().next(),
            findings: read_all(lines)?,
        }))
    }
}

/// Deletes every history row of a lab (runs, their events and lines, sends, resets) inside the
/// caller's transaction: the registry forgets a lab with its tokens in the same commit.
pub async fn forget_lab(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    lab: &str,
) -> Result<(), HistoryError> {
    for statement in [
        "DELETE FROM flow_events WHERE run_id IN (SELECT id FROM runs WHERE lab = ?)",
        "DELETE FROM check_findings WHERE run_id IN (SELECT id FROM runs WHERE lab = ?)",
        "DELETE FROM runs WHERE lab = ?",
        "DELETE FROM produced_events WHERE lab = ?",
        "DELETE FROM resets WHERE lab = ?",
        "DELETE FROM group_reads WHERE lab = ?",
        "DELETE FROM writings WHERE lab = ?",
        "DELETE FROM acceptances WHERE lab = ?",
    ] {
        sqlx::query(statement).bind(lab).execute(&mut **tx).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_is_recorded_with_its_flows_and_pages_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::open(&dir.path().join("h.sqlite")).await.unwrap();
        let first = history.start_run("default", "cli").await.unwrap();
        let mut event = FlowRun::starting("bronze", Some("bronze_orders"), now());
        event.figures.rows_read = 3;
        event.status = FlowStatus::Completed;
        let line = CheckLine::says(Verdict::Problem, "orders differs".into());
        history
            .finish_run(first, &[event.clone()], &[line.clone()], None)
            .await
            .unwrap();
        history.record_reset("default", "orders").await.unwrap();
        let second = history.start_run("default", "api").await.unwrap();
        history
            .finish_run(second, &[], &[], Some("broker down"))
            .await
            .unwrap();

        let runs = history.runs("default", 10, None).await.unwrap();
        assert_eq!(
            runs.iter().map(|r| r.id).collect::<Vec<_>>(),
            [second, first]
        );
        assert_eq!((runs[0].status, runs[0].generation), (RunStatus::Failed, 1));
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
        assert_eq!(detail.streams, [event]);
        assert_eq!(detail.findings, [line]);
        assert_eq!(detail.run.status, RunStatus::Succeeded);
        assert!(history.run(999).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_row_that_does_not_read_names_its_run() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::open(&dir.path().join("h.sqlite")).await.unwrap();
        let id = history.start_run("default", "cli").await.unwrap();
        let event = FlowRun::starting("gold", Some("hourly_sales"), now());
        history.finish_run(id, &[event], &[], None).await.unwrap();
        sqlx::query("UPDATE flow_events SET figures = '{\"rows_read\": \"many\"}'")
            .execute(history.pool())
            .await
            .unwrap();
        let error = history.run(id).await.unwrap_err().to_string();
        assert!(
            error.contains(&format!("run #{id}'s gold event")),
            "{error}"
        );
        assert!(error.contains("rows_read"), "{error}");
    }
}
