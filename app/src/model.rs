//! The plain data the pages show, as the server sends it (JSON API and server functions alike).
//! No engine types here: the wasm build never sees Kafka, Delta or DataFusion.

use serde::{Deserialize, Serialize};

/// The statuses an order event may carry (SPEC §1), in the order the produce form lists them.
pub const STATUSES: [&str; 5] = ["placed", "paid", "shipped", "delivered", "cancelled"];

/// "Are the numbers final up to when?", for the home page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Freshness {
    /// `green`, `amber` or `red`.
    pub light: String,
    /// The last hour written to `hourly_sales` (RFC 3339): every hour up to it is final.
    pub final_through: Option<String>,
    /// The first hour not final yet.
    pub next_hour: Option<String>,
    /// The event time from which a placed order closes `next_hour`.
    pub closes_with_order_at: Option<String>,
    pub last_run_at: Option<String>,
    /// The last check's verdict: `passed` or `problem`.
    pub last_check: Option<String>,
    /// What the home page says, in plain words.
    pub sentences: Vec<String>,
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
    /// running, succeeded or failed.
    pub status: String,
    pub error: Option<String>,
}

/// One stream's bar on the runs timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamBar {
    pub stream: String,
    /// Milliseconds after the run started.
    pub offset_ms: i64,
    pub duration_ms: i64,
    pub rows_read: i64,
    pub rows_written: i64,
    pub rows_late: i64,
    pub rows_duplicate: i64,
    pub rows_rejected: i64,
    pub watermark_before: Option<String>,
    pub watermark_after: Option<String>,
}

/// A row of the runs timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineRun {
    #[serde(flatten)]
    pub run: RunSummary,
    pub duration_ms: Option<i64>,
    pub streams: Vec<StreamBar>,
    /// The check's worst verdict in this run, if it ran one: ok, late, problem.
    pub check: Option<String>,
}

/// A page of the runs timeline, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunsPage {
    pub runs: Vec<TimelineRun>,
    /// Pass as `before` for the next (older) page; `None` on the last page.
    pub older: Option<i64>,
}

/// Kafka offsets (first and last, inclusive) a bronze run read from one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRange {
    pub partition: i32,
    pub first: i64,
    pub last: i64,
}

/// Which part of its source a stream run covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    Nothing,
}

/// An event a stream read but did not count, and why (`late` or `duplicate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedEvent {
    pub order_id: i64,
    pub status: String,
    pub event_time: String,
    pub partition: i32,
    pub offset: i64,
    pub reason: String,
}

/// Every figure of one stream run (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamFigures {
    pub stream: String,
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
    #[serde(default)]
    pub hours_closed: Vec<String>,
    #[serde(default)]
    pub dropped: Vec<DroppedEvent>,
    pub started_at: String,
    pub duration_ms: u64,
}

/// One line of a check, with the hour's figures on hour lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckLine {
    /// ok, note, late, PROBLEM, waiting: the word that starts the line.
    pub verdict: String,
    pub text: String,
    pub hour: Option<String>,
    pub orders: Option<i64>,
    pub revenue: Option<String>,
    pub bronze_orders: Option<i64>,
    pub bronze_revenue: Option<String>,
}

/// A run with every stream's record and the check's lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: RunSummary,
    pub streams: Vec<StreamFigures>,
    pub findings: Vec<CheckLine>,
}

/// What `POST /api/runs` and the run button answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStarted {
    pub id: i64,
    /// running, succeeded or failed.
    pub status: String,
    pub error: Option<String>,
}

/// An hour's verdict in one earlier run's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictAt {
    pub run_id: i64,
    pub verdict: String,
}

/// One hour of the reconciliation: `hourly_sales` beside the bronze recount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourRow {
    /// Window start, RFC 3339 UTC (SPEC §2).
    pub hour: String,
    /// What gold wrote; `None` while the hour is not written.
    pub orders: Option<i64>,
    pub revenue: Option<String>,
    /// The recount of bronze's distinct placed events.
    pub bronze_orders: i64,
    pub bronze_revenue: String,
    /// ok, late, problem or waiting.
    pub verdict: String,
    /// Why, in a sentence true to what happened.
    pub explanation: String,
    /// This hour's verdict in earlier checks, oldest first, changes only.
    pub history: Vec<VerdictAt>,
}

/// Where Kafka stored a sent event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentAt {
    pub partition: i32,
    pub offset: i64,
}

/// What a send answers: where each event landed, and the run it started ("send and run").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    pub sent: Vec<SentAt>,
    pub run: Option<RunStarted>,
}

/// An event sent through Reckon, as the history recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducedEvent {
    pub id: i64,
    pub produced_at: String,
    /// form, api, cli, scenario:<name>:<batch>, send-again.
    pub source: String,
    pub partition: i32,
    pub offset: i64,
    pub order_id: i64,
    pub customer_id: String,
    pub status: String,
    pub amount: String,
    pub event_time: String,
}

/// What the produce page needs besides the form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducePage {
    pub recent: Vec<ProducedEvent>,
    /// Gold's watermark, RFC 3339.
    pub watermark: Option<String>,
    /// An event time behind the watermark, for the "late" preset.
    pub late_event_time: Option<String>,
    /// What the late preset will do, in a sentence.
    pub late_explanation: String,
    /// The course's batches, in order.
    pub batches: Vec<String>,
    /// An order id not used yet, for the form's default.
    pub next_order_id: i64,
    /// The server's clock, RFC 3339, for the "now" preset.
    pub now: String,
}

/// One partition of the lab's topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionView {
    pub partition: i32,
    pub log_start: i64,
    pub log_end: i64,
    /// The last offset bronze stored for this partition.
    pub bronze_offset: Option<i64>,
    /// Messages bronze has not read yet.
    pub lag: i64,
    pub last_messages: Vec<TopicMessage>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMessage {
    pub offset: i64,
    pub key: Option<String>,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicView {
    pub topic: String,
    pub brokers: String,
    /// `None` when the topic does not exist yet.
    pub partitions: Option<Vec<PartitionView>>,
}

/// One commit of a Delta table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableVersion {
    pub version: i64,
    pub timestamp: Option<String>,
    pub operation: Option<String>,
}

/// A table's rows (at `version`) and its commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableView {
    pub name: String,
    /// `None` when the table does not exist yet.
    pub version: Option<i64>,
    pub latest_version: Option<i64>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Rows the table holds; `rows` shows the first of them.
    pub total_rows: usize,
    pub versions: Vec<TableVersion>,
}

/// A node of the pipeline graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineNode {
    pub name: String,
    /// What the node is, in a few words.
    pub role: String,
    /// Rows (or messages) it holds; `None` when it does not exist yet (or holds none: the check).
    pub rows: Option<i64>,
    /// What `rows` counts: "rows", "messages"; `None` for a node that holds nothing.
    pub unit: Option<String>,
    /// When it last changed: the last run (or, for the topic, the last send through Reckon).
    pub last_run_at: Option<String>,
    /// How to say `last_run_at`: "last run", "last send", "last check".
    pub last_label: String,
    /// The node's state in a few words: "up to date", "3 messages not read yet", ...
    pub freshness: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineView {
    pub nodes: Vec<PipelineNode>,
}

/// The lab's settings, as the settings form and `POST /api/settings` change them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Seconds between scheduled runs; `None`: no schedule (the default).
    pub schedule_seconds: Option<u64>,
    /// Whether gold drops duplicates, from the next reset on.
    pub dedup: bool,
    /// Whether gold drops duplicates now (fixed when gold's state started).
    pub dedup_in_effect: bool,
    /// Whether anyone may read the lab's freshness and reconciliation pages without a token.
    pub public: bool,
}

/// Who the pages are showing to, so they offer only what that person may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    /// Whether the server asks for tokens (an instructor token is configured).
    pub auth: bool,
    /// `local` (no tokens asked), `instructor`, `learner`, `viewer` or `anonymous`.
    pub role: String,
    /// The lab a learner's or viewer's token opens.
    pub lab: Option<String>,
    /// The labs this person may open, `default` first: the lab picker.
    pub labs: Vec<String>,
    /// The token a signed-in browser's forms carry (CSRF protection); `None` without a session.
    pub csrf: Option<String>,
}

impl SessionView {
    /// Whether this person may produce, run and reset `lab`.
    pub fn may_write(&self, lab: &str) -> bool {
        match self.role.as_str() {
            "local" | "instructor" => true,
            "learner" => self.lab.as_deref() == Some(lab),
            _ => false,
        }
    }
}

/// A lab on the instructor's overview: where it stands, in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabSummary {
    pub name: String,
    pub topic: String,
    pub public: bool,
    /// `green`, `amber` or `red`, as on the lab's freshness page.
    pub light: String,
    pub final_through: Option<String>,
    /// The last check's verdict: `passed` or `problem`.
    pub last_check: Option<String>,
    pub last_run_at: Option<String>,
    /// Why the summary could not be read (the lab's tables are unreadable, ...).
    pub error: Option<String>,
}

/// A token, shown once: only its hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewToken {
    pub lab: String,
    /// `learner` or `viewer`.
    pub role: String,
    pub token: String,
}
