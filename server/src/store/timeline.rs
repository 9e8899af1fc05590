//! What the pages read back from the runs: the runs timeline, each hour's verdicts across checks,
//! the gold runs that dropped late events, when each flow last ran, how the last check went.

use std::collections::HashMap;

use app::model::{CheckOutcome, FlowRun, RunsPage, StreamBar, TimelineRun, Verdict, VerdictAt};
use chrono::{DateTime, Utc};

use super::runs::{FLOW_COLUMNS, FlowRow, read_all};
use super::{History, HistoryError, composed};

impl History {
    /// A page of the runs timeline, newest first: each run with its flows' bars and the check's
    /// worst verdict. Three queries whatever the page size.
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
        // The bars leave out the dropped events: the run's own page lists them.
        let columns = FLOW_COLUMNS.replace("dropped", "'[]' AS dropped");
        let rows: Vec<FlowRow> = sqlx::query_as(composed(format!(
            "SELECT {columns} FROM flow_events WHERE run_id BETWEEN ? AND ? AND flow <> 'check' \
             ORDER BY run_id, seq"
        )))
        .bind(oldest.id)
        .bind(newest.id)
        .fetch_all(self.pool())
        .await?;
        let mut flows: HashMap<i64, Vec<FlowRun>> = HashMap::new();
        for row in rows {
            let run_id = row.run_id;
            flows.entry(run_id).or_default().push(row.try_into()?);
        }
        let verdicts: Vec<(i64, String)> = sqlx::query_as(
            "SELECT DISTINCT run_id, verdict FROM check_findings WHERE run_id BETWEEN ? AND ?",
        )
        .bind(oldest.id)
        .bind(newest.id)
        .fetch_all(self.pool())
        .await?;
        let mut worst: HashMap<i64, Verdict> = HashMap::new();
        for (run_id, verdict) in verdicts {
            // A run's check is ok unless a line was late or a PROBLEM.
            let shown = match parse_verdict(run_id, &verdict)? {
                v @ (Verdict::Late | Verdict::Problem) => v,
                _ => Verdict::Ok,
            };
            let entry = worst.entry(run_id).or_insert(Verdict::Ok);
            *entry = (*entry).max(shown);
        }
        let runs = runs
            .iter()
            .map(|run| {
                let start = parse_time(&run.started_at);
                let streams = flows
                    .remove(&run.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|flow| StreamBar {
                        offset_ms: start
                            .zip(parse_time(&flow.started_at))
                            .map_or(0, |(start, at)| (at - start).num_milliseconds().max(0)),
                        flow,
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
                    check: worst.get(&run.id).copied(),
                }
            })
            .collect();
        Ok(RunsPage { runs, older })
    }

    /// Each hour's verdict in the checks since the lab's last reset, oldest first, changes only.
    pub async fn hour_verdicts(
        &self,
        lab: &str,
    ) -> Result<HashMap<String, Vec<VerdictAt>>, HistoryError> {
        let generation = self.generation(lab).await?;
        let rows: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT f.hour, f.run_id, f.verdict FROM check_findings f JOIN runs ON runs.id = f.run_id \
             WHERE runs.lab = ? AND runs.generation = ? AND f.hour IS NOT NULL ORDER BY f.run_id",
        )
        .bind(lab)
        .bind(generation)
        .fetch_all(self.pool())
        .await?;
        let mut verdicts: HashMap<String, Vec<VerdictAt>> = HashMap::new();
        for (hour, run_id, verdict) in rows {
            let verdict = parse_verdict(run_id, &verdict)?;
            let seen = verdicts.entry(hour).or_default();
            if seen.last().is_none_or(|last| last.verdict != verdict) {
                seen.push(VerdictAt { run_id, verdict });
            }
        }
        Ok(verdicts)
    }

    /// Gold's events since the lab's last reset that dropped late events, with their run ids.
    pub async fn gold_runs_with_late(
        &self,
        lab: &str,
    ) -> Result<Vec<(i64, FlowRun)>, HistoryError> {
        let generation = self.generation(lab).await?;
        let rows: Vec<FlowRow> = sqlx::query_as(composed(format!(
            "SELECT {FLOW_COLUMNS} FROM flow_events WHERE flow = 'gold' \
             AND json_extract(figures, '$.rows_late') > 0 \
             AND run_id IN (SELECT id FROM runs WHERE lab = ? AND generation = ?) ORDER BY run_id"
        )))
        .bind(lab)
        .bind(generation)
        .fetch_all(self.pool())
        .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.run_id).collect();
        Ok(ids.into_iter().zip(read_all(rows)?).collect())
    }

    /// The lab's event log, oldest first: every flow's event with its run id (only run `run`'s
    /// when given).
    pub async fn events(
        &self,
        lab: &str,
        run: Option<i64>,
    ) -> Result<Vec<(i64, FlowRun)>, HistoryError> {
        let rows: Vec<FlowRow> = sqlx::query_as(composed(format!(
            "SELECT {FLOW_COLUMNS} FROM flow_events WHERE run_id IN (SELECT id FROM runs WHERE lab = ?) \
             AND (? IS NULL OR run_id = ?) ORDER BY run_id, seq"
        )))
        .bind(lab)
        .bind(run)
        .bind(run)
        .fetch_all(self.pool())
        .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.run_id).collect();
        Ok(ids.into_iter().zip(read_all(rows)?).collect())
    }

    /// Each flow's event in the last run where it did something (completed or failed, not idle
    /// or skipped): what the graph counts when the newest run had nothing new.
    pub async fn last_active_events(&self, lab: &str) -> Result<Vec<(i64, FlowRun)>, HistoryError> {
        let rows: Vec<FlowRow> = sqlx::query_as(composed(format!(
            "SELECT {FLOW_COLUMNS} FROM flow_events WHERE (flow, run_id) IN \
             (SELECT flow, max(run_id) FROM flow_events WHERE run_id IN \
             (SELECT id FROM runs WHERE lab = ?) AND status IN ('COMPLETED', 'FAILED') \
             GROUP BY flow) ORDER BY run_id, seq"
        )))
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.run_id).collect();
        Ok(ids.into_iter().zip(read_all(rows)?).collect())
    }

    /// When each flow of the lab (the check included) last ran without failing.
    pub async fn last_runs(&self, lab: &str) -> Result<HashMap<String, String>, HistoryError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT e.flow, max(runs.started_at) FROM flow_events e JOIN runs ON runs.id = e.run_id \
             WHERE runs.lab = ? AND e.status IN ('COMPLETED', 'IDLE') GROUP BY e.flow",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// The last check's findings that are not `ok`: problems first, then hours left short by
    /// late events, in the check's order.
    pub async fn last_check_findings(
        &self,
        lab: &str,
    ) -> Result<Vec<(Verdict, String)>, HistoryError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT f.run_id, f.verdict, f.text FROM check_findings f WHERE f.run_id = \
             (SELECT max(run_id) FROM check_findings JOIN runs ON runs.id = run_id WHERE runs.lab = ?) \
             AND f.verdict IN ('problem', 'late') ORDER BY f.verdict = 'late', f.line",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(run, verdict, text)| Ok((parse_verdict(run, &verdict)?, text)))
            .collect()
    }

    /// The durations (ms) of the lab's last `limit` runs that succeeded, of the course's streams
    /// (`course`) or of its project's flows: a cost figure rests on runs of one kind.
    pub async fn recent_durations(
        &self,
        lab: &str,
        course: bool,
        limit: i64,
    ) -> Result<Vec<u64>, HistoryError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT r.started_at, r.finished_at FROM runs r WHERE r.lab = ? AND r.status = 'succeeded' \
             AND r.finished_at IS NOT NULL AND EXISTS (SELECT 1 FROM flow_events e WHERE e.run_id = r.id \
             AND CASE WHEN ? THEN e.flow IN ('bronze', 'silver', 'gold') \
             ELSE e.flow NOT IN ('bronze', 'silver', 'gold', 'check') END) \
             ORDER BY r.id DESC LIMIT ?",
        )
        .bind(lab)
        .bind(course)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .iter()
            .filter_map(|(start, end)| {
                let (start, end) = (parse_time(start)?, parse_time(end)?);
                u64::try_from((end - start).num_milliseconds()).ok()
            })
            .collect())
    }

    /// How the lab's last check went; `None` before any check.
    pub async fn last_check(&self, lab: &str) -> Result<Option<CheckOutcome>, HistoryError> {
        let problem: Option<i64> = sqlx::query_scalar(
            "SELECT max(f.verdict = 'problem') FROM check_findings f WHERE f.run_id = \
             (SELECT max(run_id) FROM check_findings JOIN runs ON runs.id = run_id WHERE runs.lab = ?)",
        )
        .bind(lab)
        .fetch_one(self.pool())
        .await?;
        Ok(problem.map(|p| match p {
            1 => CheckOutcome::Problem,
            _ => CheckOutcome::Passed,
        }))
    }
}

fn parse_verdict(run_id: i64, text: &str) -> Result<Verdict, HistoryError> {
    Verdict::parse(text).ok_or_else(|| {
        HistoryError::unreadable(
            format!("run #{run_id}'s check"),
            format!("verdict {text:?}"),
        )
    })
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
