//! A run and what happened in it: each flow's event (its figures, the source it covered, the
//! events it dropped) and the check's lines.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Succeeded,
    Failed,
    /// Stopped by a learner or the instructor; the next run recovers as after a crash.
    Canceled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Canceled => "canceled",
        }
    }

    /// The status stored as `text`, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Running, Self::Succeeded, Self::Failed, Self::Canceled]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as the history lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub lab: String,
    /// cli, api, button, schedule, send-and-run, play.
    pub started_by: String,
    /// Resets of the lab before this run.
    pub generation: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub error: Option<String>,
}

/// How one flow's part of a run ended (the event log's `status`, PIPELINES §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FlowStatus {
    /// It read something new and committed what it made of it.
    Completed,
    /// Nothing was new: it read and committed nothing.
    Idle,
    Failed,
    /// An earlier flow of the run failed, so this one did not start.
    Skipped,
}

impl FlowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowStatus::Completed => "COMPLETED",
            FlowStatus::Idle => "IDLE",
            FlowStatus::Failed => "FAILED",
            FlowStatus::Skipped => "SKIPPED",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Completed, Self::Idle, Self::Failed, Self::Skipped]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Kafka offsets (first and last, inclusive) a bronze run read from one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRange {
    pub partition: i32,
    pub first: i64,
    pub last: i64,
}

/// Which part of its source a flow run covered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceRange {
    Offsets {
        topic: String,
        partitions: Vec<PartitionRange>,
    },
    Versions {
        table: String,
        first: i64,
        last: i64,
    },
    #[default]
    Nothing,
}

/// Why a flow read an event and did not count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DropReason {
    /// Behind the watermark: its hour was final before it came.
    Late,
    /// A second copy of an event counted within the watermark.
    Duplicate,
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::Late => "late",
            DropReason::Duplicate => "duplicate",
        })
    }
}

/// An event a flow read but did not count, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedEvent {
    pub order_id: i64,
    pub status: String,
    pub event_time: String,
    pub partition: i32,
    pub offset: i64,
    pub reason: DropReason,
}

/// A file a flow read (PIPELINES §3), or found changed after it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRead {
    /// Relative to the data folder.
    pub path: String,
    pub rows: u64,
    /// Rows with something kept in `_rescued_data`.
    pub rescued: u64,
    /// Changed after it was loaded: not read again.
    pub changed: bool,
}

/// One expectation's counts in one flow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleCount {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
}

/// What one flow run counted (SPEC §3). A new figure goes here (with `#[serde(default)]` on the
/// struct, history rows written before it read back as zero), in the flow that fills it, and on
/// the page that shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Figures {
    pub rows_read: u64,
    pub rows_written: u64,
    pub rows_late: u64,
    pub rows_duplicate: u64,
    pub rows_rejected: u64,
    pub source: SourceRange,
    /// The table version the run committed, `None` when it committed nothing.
    pub table_version: Option<i64>,
    pub watermark_before: Option<String>,
    pub watermark_after: Option<String>,
    pub hours_closed: Vec<String>,
    /// Rows not written because a rule dropped them (a row failing two rules counts once).
    pub rows_dropped: u64,
    /// Per expectation: rows that passed and failed it.
    pub expectations: Vec<RuleCount>,
    /// The files a flow read (or found changed) this run.
    pub files: Vec<FileRead>,
    /// Per table read as a stream: the versions read, first and last.
    pub source_versions: std::collections::BTreeMap<String, (i64, i64)>,
    /// AUTO CDC: target rows inserted or rewritten, and rows removed (PIPELINES §6).
    pub rows_upserted: u64,
    pub rows_deleted: u64,
    /// Where the flow's time went, by stage, in ms (AUTO CDC: events, replay, write).
    pub stages_ms: std::collections::BTreeMap<String, u64>,
    /// The flow's definition differs from the one its last commit was made with (PIPELINES §2).
    pub definition_changed: bool,
}

/// One flow's event in a run: the event log's entry (PIPELINES §6), and the run record SPEC §3
/// asks of each stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowRun {
    /// bronze, silver, gold, check. Named `stream` in the JSON since the course's first runs,
    /// whose three flows are its streams.
    #[serde(rename = "stream")]
    pub flow: String,
    /// The table it writes; `None` for the check.
    #[serde(default)]
    pub target: Option<String>,
    pub status: FlowStatus,
    #[serde(flatten)]
    pub figures: Figures,
    /// The first events it dropped (late or duplicate), for explanations; all are counted.
    #[serde(default)]
    pub dropped: Vec<DroppedEvent>,
    pub started_at: String,
    pub duration_ms: u64,
    #[serde(default)]
    pub error: Option<String>,
}

impl FlowRun {
    /// A flow starting now, with nothing counted yet.
    pub fn starting(flow: &str, target: Option<&str>, started_at: String) -> Self {
        Self {
            flow: flow.into(),
            target: target.map(Into::into),
            status: FlowStatus::Idle,
            figures: Figures::default(),
            dropped: vec![],
            started_at,
            duration_ms: 0,
            error: None,
        }
    }
}

impl fmt::Display for FlowRun {
    /// The line `reckon run` prints for a flow.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.figures;
        write!(
            f,
            "{:<7}read {}, wrote {}",
            self.flow, n.rows_read, n.rows_written
        )?;
        for (count, word) in [
            (n.rows_late, "late"),
            (n.rows_duplicate, "duplicate"),
            (n.rows_rejected, "rejected"),
        ] {
            if count > 0 {
                write!(f, ", {word} {count}")?;
            }
        }
        match &n.source {
            SourceRange::Nothing => write!(f, "; nothing new")?,
            SourceRange::Offsets { topic, partitions } => {
                write!(f, "; {topic}")?;
                for p in partitions {
                    write!(f, " p{}:{}..{}", p.partition, p.first, p.last)?;
                }
            }
            SourceRange::Versions { table, first, last } => {
                write!(f, "; {table} v{first}..v{last}")?
            }
        }
        if let Some(v) = n.table_version {
            write!(f, "; committed v{v}")?;
        }
        if n.watermark_before.is_some() || n.watermark_after.is_some() {
            let show = |w: &Option<String>| w.clone().unwrap_or_else(|| "unset".into());
            write!(
                f,
                "; watermark {} -> {}",
                show(&n.watermark_before),
                show(&n.watermark_after)
            )?;
        }
        if !n.hours_closed.is_empty() {
            write!(f, "; closed {}", n.hours_closed.join(", "))?;
        }
        write!(f, " ({:.2} s)", self.duration_ms as f64 / 1000.0)
    }
}

/// A check line's verdict (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Note,
    Waiting,
    Late,
    Problem,
}

impl Verdict {
    /// The word the check's printed line starts with: `PROBLEM` shouts, the rest do not.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Note => "note",
            Verdict::Late => "late",
            Verdict::Problem => "PROBLEM",
            Verdict::Waiting => "waiting",
        }
    }

    /// The verdict as stored and sent (its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Problem => "problem",
            other => other.word(),
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Ok,
            Self::Note,
            Self::Waiting,
            Self::Late,
            Self::Problem,
        ]
        .into_iter()
        .find(|v| v.as_str() == text)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of a check, with the hour's figures on hour lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckLine {
    pub verdict: Verdict,
    /// The line after the verdict word.
    pub text: String,
    /// Window start, RFC 3339 UTC; set on hour lines, as are the figures below.
    pub hour: Option<String>,
    /// What gold wrote for the hour; `None` while it is not written.
    pub orders: Option<i64>,
    pub revenue: Option<String>,
    /// The recount of bronze's distinct placed events in the hour.
    pub bronze_orders: Option<i64>,
    pub bronze_revenue: Option<String>,
}

impl CheckLine {
    /// A line that is not about one hour.
    pub fn says(verdict: Verdict, text: String) -> Self {
        Self {
            verdict,
            text,
            hour: None,
            orders: None,
            revenue: None,
            bronze_orders: None,
            bronze_revenue: None,
        }
    }
}

impl fmt::Display for CheckLine {
    /// The line as `reckon check` prints it (SPEC §4).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8}{}", self.verdict.word(), self.text)
    }
}

/// A run with every flow's event and the check's lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: RunSummary,
    /// The flows that write tables, in the order they ran.
    pub streams: Vec<FlowRun>,
    /// The check's own event, when the run checked.
    #[serde(default)]
    pub check: Option<FlowRun>,
    pub findings: Vec<CheckLine>,
}

/// One flow's bar on the runs timeline: its event, placed on the run's time axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamBar {
    /// Milliseconds after the run started.
    pub offset_ms: i64,
    #[serde(flatten)]
    pub flow: FlowRun,
}

/// A row of the runs timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineRun {
    #[serde(flatten)]
    pub run: RunSummary,
    pub duration_ms: Option<i64>,
    pub streams: Vec<StreamBar>,
    /// The check's worst verdict in this run, if it ran one: ok, late or problem.
    pub check: Option<Verdict>,
}

/// A page of the runs timeline, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunsPage {
    pub runs: Vec<TimelineRun>,
    /// Pass as `before` for the next (older) page; `None` on the last page.
    pub older: Option<i64>,
}

/// What `POST /api/runs` and the run button answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStarted {
    pub id: i64,
    pub status: RunStatus,
    pub error: Option<String>,
}
