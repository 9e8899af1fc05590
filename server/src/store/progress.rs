//! What a lab did, as the classroom's milestones read it (issue "The classroom"): every run with
//! its flows' figures and the check's lines, and every reset of its topic, oldest first.

use std::collections::BTreeMap;

use app::model::{CheckLine, Figures, FlowStatus, GroupRead, ResumedAt, Verdict};

use super::runs::from_json;
use super::{History, HistoryError};

/// One run as evidence.
#[derive(Debug, Clone, Default)]
pub struct RunEvidence {
    pub id: i64,
    /// `cli`, `api`, `button`, `schedule`, `file-arrival`, ...
    pub started_by: String,
    pub generation: i64,
    pub finished_at: Option<String>,
    pub succeeded: bool,
    pub flows: Vec<FlowEvidence>,
    pub findings: Vec<CheckLine>,
}

/// One flow of a run: what it wrote and what it counted.
#[derive(Debug, Clone)]
pub struct FlowEvidence {
    pub flow: String,
    pub target: Option<String>,
    pub status: FlowStatus,
    pub figures: Figures,
}

/// A lab's runs and resets, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub runs: Vec<RunEvidence>,
    /// Each reset: when, and the topic the lab reads from then on.
    pub resets: Vec<(String, String)>,
    /// Each read of a consumer group from the Topic page.
    pub group_reads: Vec<GroupReadEvidence>,
    /// Each writing task's newest text: (task, text, when saved).
    pub writings: Vec<(String, String, String)>,
    /// Each milestone the instructor accepted by hand, newest: (milestone, note, when).
    pub accepted: Vec<(String, String, String)>,
}

/// A consumer group's read: where it resumed, what it committed, and how many events the lab
/// had sent by then.
#[derive(Debug, Clone, Default)]
pub struct GroupReadEvidence {
    pub at: String,
    pub group: String,
    pub resumed: Vec<ResumedAt>,
    pub committed: BTreeMap<i32, i64>,
    pub messages: i64,
    /// The lab's newest sent event's id when it read (0: none).
    pub sent_before: i64,
}

type RunRow = (i64, String, i64, Option<String>, String);
type FlowRow = (i64, String, Option<String>, String, String);
type FindingRow = (i64, String, String, Option<String>);

impl History {
    /// Everything lab `lab` did, for its milestones.
    pub async fn evidence(&self, lab: &str) -> Result<Evidence, HistoryError> {
        let runs: Vec<RunRow> = sqlx::query_as(
            "SELECT id, started_by, generation, finished_at, status FROM runs WHERE lab = ? ORDER BY id",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        let mut out = Evidence::default();
        for (id, started_by, generation, finished_at, status) in runs {
            out.runs.push(RunEvidence {
                id,
                started_by,
                generation,
                finished_at,
                succeeded: status == "succeeded",
                ..RunEvidence::default()
            });
        }
        let at = |runs: &mut Vec<RunEvidence>, id: i64| -> Option<usize> {
            runs.binary_search_by_key(&id, |r| r.id).ok()
        };
        let flows: Vec<FlowRow> = sqlx::query_as(
            "SELECT e.run_id, e.flow, e.target, e.status, e.figures FROM flow_events e \
             JOIN runs r ON r.id = e.run_id WHERE r.lab = ? ORDER BY e.run_id, e.seq",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        for (run, flow, target, status, figures) in flows {
            let what = || format!("run #{run}'s {flow}");
            let status = FlowStatus::parse(&status)
                .ok_or_else(|| HistoryError::unreadable(what(), format!("status {status:?}")))?;
            let figures: Figures =
                from_json(&figures).map_err(|e| HistoryError::unreadable(what(), e))?;
            if let Some(i) = at(&mut out.runs, run) {
                out.runs[i].flows.push(FlowEvidence {
                    flow,
                    target,
                    status,
                    figures,
                });
            }
        }
        let findings: Vec<FindingRow> = sqlx::query_as(
            "SELECT f.run_id, f.verdict, f.text, f.hour FROM check_findings f \
             JOIN runs r ON r.id = f.run_id WHERE r.lab = ? ORDER BY f.run_id, f.line",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        for (run, verdict, text, hour) in findings {
            let verdict = Verdict::parse(&verdict).ok_or_else(|| {
                HistoryError::unreadable(format!("run #{run}'s check"), format!("{verdict:?}"))
            })?;
            if let Some(i) = at(&mut out.runs, run) {
                let line = CheckLine::says(verdict, text);
                out.runs[i].findings.push(CheckLine { hour, ..line });
            }
        }
        out.resets = sqlx::query_as("SELECT at, topic FROM resets WHERE lab = ? ORDER BY id")
            .bind(lab)
            .fetch_all(self.pool())
            .await?;
        let reads: Vec<(i64, String, String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT id, at, group_name, resumed, committed, messages, sent_before FROM group_reads \
             WHERE lab = ? ORDER BY id",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        for (id, at, group, resumed, committed, messages, sent_before) in reads {
            let what = || format!("group read #{id}");
            out.group_reads.push(GroupReadEvidence {
                at,
                group,
                resumed: from_json(&resumed).map_err(|e| HistoryError::unreadable(what(), e))?,
                committed: from_json(&committed)
                    .map_err(|e| HistoryError::unreadable(what(), e))?,
                messages,
                sent_before,
            });
        }
        out.writings = self.writings(lab).await?;
        out.accepted = sqlx::query_as(
            "SELECT milestone, note, at FROM acceptances WHERE id IN \
             (SELECT max(id) FROM acceptances WHERE lab = ? GROUP BY milestone)",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?;
        Ok(out)
    }

    /// What changes whenever lab `lab`'s evidence does: its newest run, how many runs ended, its
    /// newest reset, group read, writing and acceptance. Equal stamps, equal evidence (and tables: only a
    /// run writes them).
    pub async fn evidence_stamp(&self, lab: &str) -> Result<[i64; 6], HistoryError> {
        let (a, b, c, d, e, f): (i64, i64, i64, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT coalesce(max(id), 0) FROM runs WHERE lab = ?1), \
                    (SELECT count(finished_at) FROM runs WHERE lab = ?1), \
                    (SELECT coalesce(max(id), 0) FROM resets WHERE lab = ?1), \
                    (SELECT coalesce(max(id), 0) FROM group_reads WHERE lab = ?1), \
                    (SELECT coalesce(max(id), 0) FROM writings WHERE lab = ?1), \
                    (SELECT coalesce(max(id), 0) FROM acceptances WHERE lab = ?1)",
        )
        .bind(lab)
        .fetch_one(self.pool())
        .await?;
        Ok([a, b, c, d, e, f])
    }

    /// Records that the instructor accepted milestone `milestone` of lab `lab`, with why.
    pub async fn record_acceptance(
        &self,
        lab: &str,
        milestone: &str,
        note: &str,
    ) -> Result<String, HistoryError> {
        let at = super::now();
        sqlx::query("INSERT INTO acceptances (lab, milestone, note, at) VALUES (?, ?, ?, ?)")
            .bind(lab)
            .bind(milestone)
            .bind(note)
            .bind(&at)
            .execute(self.pool())
            .await?;
        Ok(at)
    }

    /// Each writing task's newest text in lab `lab`: (task, text, when saved).
    pub async fn writings(&self, lab: &str) -> Result<Vec<(String, String, String)>, HistoryError> {
        Ok(sqlx::query_as(
            "SELECT task, text, at FROM writings WHERE id IN \
             (SELECT max(id) FROM writings WHERE lab = ? GROUP BY task) ORDER BY task",
        )
        .bind(lab)
        .fetch_all(self.pool())
        .await?)
    }

    /// Saves a writing task's text; when it was saved.
    pub async fn record_writing(
        &self,
        lab: &str,
        task: &str,
        text: &str,
    ) -> Result<String, HistoryError> {
        let at = super::now();
        sqlx::query("INSERT INTO writings (lab, task, text, at) VALUES (?, ?, ?, ?)")
            .bind(lab)
            .bind(task)
            .bind(text)
            .bind(&at)
            .execute(self.pool())
            .await?;
        Ok(at)
    }

    /// Records a consumer group's read from the Topic page, with how many events the lab had
    /// sent by then.
    pub async fn record_group_read(&self, lab: &str, read: &GroupRead) -> Result<(), HistoryError> {
        let json = |v: Result<String, serde_json::Error>| {
            v.map_err(|e| HistoryError::unreadable(format!("group {}'s read", read.group), e))
        };
        sqlx::query(
            "INSERT INTO group_reads (lab, at, group_name, resumed, committed, messages, sent_before) \
             VALUES (?, ?, ?, ?, ?, ?, \
             (SELECT coalesce(max(id), 0) FROM produced_events WHERE lab = ?))",
        )
        .bind(lab)
        .bind(super::now())
        .bind(&read.group)
        .bind(json(serde_json::to_string(&read.resumed))?)
        .bind(json(serde_json::to_string(&read.committed))?)
        .bind(read.messages.len() as i64)
        .bind(lab)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}
