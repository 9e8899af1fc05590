//! What each page shows besides runs and labs: the reconciliation, the produce page, the topic,
//! a table, the pipeline graph.

use serde::{Deserialize, Serialize};

use super::{RunStarted, Verdict};

/// An hour's verdict in one earlier run's check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictAt {
    pub run_id: i64,
    pub verdict: Verdict,
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
    pub verdict: Verdict,
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
    /// The lab's consumer groups on the topic (the course's demo of offsets), by name.
    #[serde(default)]
    pub groups: Vec<super::GroupView>,
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
    /// Every table of the lab's pipeline, for the page's tabs.
    #[serde(default)]
    pub tables: Vec<String>,
    /// Rows the filter keeps (all of them without one), of which `rows` is page `wanted.page`.
    #[serde(default)]
    pub matching_rows: usize,
    /// Rows a page shows, at most.
    #[serde(default)]
    pub page_size: usize,
    /// What was asked for: the filter and the page.
    #[serde(default)]
    pub wanted: RowsWanted,
}

/// Which rows of a table the page shows: those whose `column` compares to `value` by `op`
/// (`=`, `!=`, `<`, `<=`, `>`, `>=`, or `contains` for text), a page at a time (from 0). Reckon
/// builds the comparison itself: no text a learner types is read as SQL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowsWanted {
    pub column: Option<String>,
    pub op: Option<String>,
    pub value: Option<String>,
    #[serde(default)]
    pub page: usize,
}

impl RowsWanted {
    /// The comparisons a filter may use.
    pub const OPS: [&'static str; 7] = ["=", "!=", "<", "<=", ">", ">=", "contains"];
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
    /// The course's streams, when the lab runs them.
    pub nodes: Vec<PipelineNode>,
    /// The lab's declarative project, when it runs one.
    #[serde(default)]
    pub project: Option<super::ProjectGraph>,
}
