//! What a declarative pipeline's pages and commands show beyond the event log: the history of
//! one key of an AUTO CDC target.

use serde::{Deserialize, Serialize};

/// One key of an AUTO CDC target: its rows, oldest first (SCD 2: one per version).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyHistory {
    pub table: String,
    /// The key's values, joined by `,`.
    pub key: String,
    pub versions: Vec<KeyVersion>,
}

/// One row of the key, and the change events that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyVersion {
    /// Column and value, as the table shows them (`__START_AT`/`__END_AT` apart).
    pub values: Vec<(String, String)>,
    /// SCD 2: where the version starts and ends (`None`: still current).
    pub start: Option<String>,
    pub end: Option<String>,
    pub events: Vec<ChangeEvent>,
    /// `start` and `end` as numbers (a timestamp's microseconds), for a time axis.
    #[serde(default)]
    pub start_n: Option<i64>,
    #[serde(default)]
    pub end_n: Option<i64>,
}

/// A change event as the flow applied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeEvent {
    pub sequence: String,
    /// `UPSERT` or `DELETE`.
    pub op: String,
    /// `landing/accounts/2026-10-03.json:4`, or the table and version it was streamed from.
    pub source: String,
    /// The target's commit (its `txn` version) that applied it.
    pub commit: i64,
    /// Set when the event arrived after an event of the key with a greater sequence: that
    /// sequence. Such an event splits the version it falls in.
    pub late_after: Option<String>,
    /// The sequence as a number (a timestamp's microseconds), for a time axis.
    #[serde(default)]
    pub sequence_n: Option<i64>,
}

/// Which pipeline a lab runs: the course's Kafka streams (the default), or a declarative
/// project of its own (week 14), kept in the lab's `project/` folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PipelineKind {
    #[default]
    Course,
    Project,
}

/// The example projects a lab can start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Example {
    /// Week 14's support tickets, from landed files.
    #[default]
    Support,
    /// Module 9 written in SQL: the shop's orders from the lab's topic.
    Shop,
    /// Week 14's guided lab in the course's own Python, as printed (reading Parquet).
    SupportPython,
}

impl Example {
    pub fn as_str(self) -> &'static str {
        match self {
            Example::Support => "support",
            Example::Shop => "shop",
            Example::SupportPython => "support_python",
        }
    }

    /// `support`, `support_python` or `shop`, or why not.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "support" | "" => Ok(Example::Support),
            "shop" => Ok(Example::Shop),
            "support_python" => Ok(Example::SupportPython),
            other => Err(format!("support, support_python or shop, not {other:?}")),
        }
    }
}

/// A lab's pipeline code: its project's files, or none while it runs the course's streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ProjectCode {
    pub kind: PipelineKind,
    /// `spark-pipeline.yml` first, then the `.sql` files, by path.
    pub files: Vec<ProjectFile>,
    /// The lab has tables: switching pipelines resets them, so it asks first.
    pub has_tables: bool,
    /// What analysing its flows found, when a save or "Validate" just did.
    #[serde(default)]
    pub validation: Option<Validation>,
}

/// What analysing every flow of a project found, without reading a row (PIPELINES section 2,
/// `reckon pipeline validate`): a save keeps a project that does not resolve and says so; a run
/// refuses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Validation {
    /// Flows whose query resolved over their sources' columns.
    pub resolved: Vec<String>,
    /// Flows reading a source whose columns are not known yet (no file landed): `(flow,
    /// source)`, resolved by name only until their first run.
    pub by_name_only: Vec<(String, String)>,
    /// The first flow that does not resolve: runs refuse the project until it does.
    pub unresolved: Option<Unresolved>,
}

/// A flow whose query does not resolve, at its file, line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unresolved {
    pub flow: String,
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// One file of a project, by its path inside the project folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectFile {
    pub path: String,
    pub text: String,
}

/// A file in the lab's `landing/` folder, and what the runs made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandedFile {
    /// Under `landing/`, `/`-separated.
    pub path: String,
    pub size: u64,
    /// When it was written (its modification time), RFC 3339 UTC.
    pub landed_at: String,
    /// The run that loaded it; `None`: not read yet.
    pub read_by_run: Option<i64>,
    pub rows: Option<u64>,
    /// Rows with something kept in `_rescued_data`.
    pub rescued: Option<u64>,
    /// Rows of this file a rule dropped (found in `_quarantine`).
    pub dropped: u64,
    /// Changed after it was loaded: not read again.
    pub changed_after_load: bool,
}

/// A project's graph as the pipeline page draws it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectGraph {
    pub name: String,
    pub nodes: Vec<GraphNode>,
    /// From dataset to dataset (`files` for a file source).
    pub edges: Vec<(String, String)>,
    /// Width and height of the drawing, in its units.
    pub width: u32,
    pub height: u32,
}

/// A dataset of the graph, where the layout put it, and what its last run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    pub name: String,
    /// streaming table, materialized view, view, AUTO CDC target, files.
    pub kind: String,
    pub rows: Option<i64>,
    /// The last run's status of the flows writing it (`None`: never ran, or a view).
    pub status: Option<super::FlowStatus>,
    /// Counted over the flows writing it, in the last run that did something for each.
    pub rows_in: u64,
    pub rows_out: u64,
    /// Rows a drop rule set aside.
    pub dropped: u64,
    /// Rows dropped as duplicates of a key already written.
    #[serde(default)]
    pub duplicates: u64,
    /// When the last run had nothing new for it: the run the counts are from, and when it
    /// started.
    #[serde(default)]
    pub counted_run: Option<i64>,
    #[serde(default)]
    pub counted_at: Option<String>,
    /// Its expectations, with the counts of that run.
    pub expectations: Vec<super::RuleCount>,
    /// Where the layout put it: top-left corner and size, in the drawing's units.
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// The event log (PIPELINES §6), newest run first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventLog {
    pub runs: Vec<RunEvents>,
}

/// One run's events, in the order its flows ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEvents {
    pub run: i64,
    pub events: Vec<super::FlowRun>,
    /// When each event started, in ms after the run's first: the timeline's bars.
    pub offsets_ms: Vec<i64>,
}

/// A lab's Reconciliation page: the course's hours beside bronze, or its project's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reconciliation {
    Course(Vec<super::HourRow>),
    Project(ProjectCheck),
}

/// A project's check (PIPELINES §9): every line, and each window of its windowed tables as the
/// table holds it beside the recount of every event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ProjectCheck {
    pub lines: Vec<super::CheckLine>,
    pub windows: Vec<WindowCheck>,
    /// Why the check could not run (the project does not read, a table cannot be read).
    pub error: Option<String>,
}

/// One window (and group keys) of a windowed table, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowCheck {
    pub table: String,
    /// RFC 3339 UTC.
    pub start: String,
    pub keys: Vec<String>,
    /// What the table says (`orders 3, revenue 68.50`); `None`: not written.
    pub said: Option<String>,
    /// What every event says; `None`: no event falls in it.
    pub events: Option<String>,
    /// What the learner's recount job (a materialized view marked `reckon.recountOf`) says.
    #[serde(default)]
    pub recount_job: Option<String>,
    pub verdict: super::Verdict,
    /// The check's line after the window's name: why.
    pub why: String,
}

/// The late ledger (PIPELINES §9): the rows windowed tables read after their window had
/// closed, which the watermark left out of them, newest event first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LateLedger {
    pub rows: Vec<LateRow>,
    /// Late rows not shown (the page shows 500).
    pub more: u64,
    /// The lab's windowed tables, each with the delay its watermark keeps (`1 hour`).
    pub tables: Vec<(String, String)>,
}

/// One late row: what it says, its window, and why it was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateRow {
    pub table: String,
    pub flow: String,
    /// The run that read it.
    pub run: Option<i64>,
    /// RFC 3339 UTC.
    pub event_time: String,
    pub window_start: String,
    pub window_end: String,
    /// The watermark when the run read it (at or past the window's end).
    pub watermark: Option<String>,
    /// What it says and where it landed, in words.
    pub row: String,
    /// The table and version it was read from, when it came from a table.
    pub source: Option<String>,
}

/// Data quality: each rule's counts per run, and the rows rules set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quality {
    pub rules: Vec<RuleHistory>,
    pub quarantined: Vec<QuarantinedRow>,
    /// Quarantined rows not shown (the page shows the newest 200).
    pub more_quarantined: u64,
}

/// One expectation of one table, run by run (oldest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleHistory {
    pub table: String,
    pub rule: String,
    pub condition: String,
    /// `warn`, `drop row` or `fail update`.
    pub action: String,
    pub runs: Vec<RuleRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRun {
    pub run: i64,
    pub passed: u64,
    pub failed: u64,
}

/// A row a rule dropped, where it came from, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedRow {
    pub run: Option<i64>,
    pub table: String,
    /// The rules it failed, joined by `, `.
    pub rules: String,
    pub reason: String,
    /// The row as JSON.
    pub row: String,
    pub file: Option<String>,
    pub line: Option<i64>,
    /// Read from a table rather than a file: the table and the version that added the row
    /// (`bronze_tickets version 2`).
    #[serde(default)]
    pub source: Option<String>,
}
