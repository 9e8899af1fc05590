//! The teaching views' shapes: gold replayed with another watermark delay (the what-if), and
//! consumer groups on the lab's topic, beside bronze's own offsets.

use serde::{Deserialize, Serialize};

/// One of gold's commits as the what-if replays it: the bronze commits it read, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedRun {
    /// 1-based, in commit order: "gold's run 3".
    pub number: usize,
    /// The `hourly_sales` version that commit made.
    pub gold_version: i64,
    /// The lab's run (its history id) in which gold made the commit, when the history has it.
    pub run_id: Option<i64>,
    pub bronze_first: i64,
    pub bronze_last: i64,
    /// When the commit was made, RFC 3339 UTC.
    pub at: String,
}

/// An hour as one delay counts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountedHour {
    pub orders: i64,
    pub revenue: String,
    /// The replayed run (1-based) after which the hour was final (written); `None`: still open.
    pub final_after: Option<usize>,
}

/// One event-time hour: counted with today's delay, and with the asked one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatIfHour {
    /// Window start, RFC 3339 UTC.
    pub hour: String,
    pub now: Option<CountedHour>,
    pub with_delay: Option<CountedHour>,
}

/// What happened to one placed event under one delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventFate {
    /// Counted in its hour.
    Counted,
    /// Dropped: at or behind the watermark when it was read.
    Late,
    /// Dropped: the same (order, status) already counted within the watermark.
    Duplicate,
}

impl EventFate {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counted => "counted",
            Self::Late => "dropped as late",
            Self::Duplicate => "dropped as a duplicate",
        }
    }
}

/// A placed event the two delays treat differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedEvent {
    pub order_id: i64,
    pub event_time: String,
    pub partition: i32,
    pub offset: i64,
    /// The replayed run that read it.
    pub run: usize,
    pub now: EventFate,
    pub with_delay: EventFate,
}

/// Gold's logic replayed over bronze's placed events, in the batches gold's commits read them,
/// with another watermark delay: a result in memory, never a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatIf {
    pub delay_minutes: i64,
    /// The delay gold runs with (SPEC §3).
    pub actual_delay_minutes: i64,
    pub dedup: bool,
    pub runs: Vec<ReplayedRun>,
    pub hours: Vec<WhatIfHour>,
    /// The first of the changed events, in the order gold read them.
    pub changed: Vec<ChangedEvent>,
    pub changed_total: usize,
    /// The replay with today's delay wrote exactly the rows `hourly_sales` holds.
    pub matches_table: bool,
    /// Bronze commits gold has not read yet, left out of the replay.
    pub bronze_not_read: i64,
    /// In plain words: what the delay changes.
    pub sentences: Vec<String>,
}

impl WhatIf {
    /// How the page and the sentences name replayed run `n`: the history's "run #12" when known.
    pub fn run_label(&self, n: usize) -> String {
        match self.runs.get(n.wrapping_sub(1)).and_then(|r| r.run_id) {
            Some(id) => format!("run #{id}"),
            None => format!("gold's run {n}"),
        }
    }
}

/// A consumer group of the lab, and where it stands on each partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupView {
    /// The name the learner gave; Kafka knows it as `group_id`.
    pub name: String,
    pub group_id: String,
    pub partitions: Vec<GroupPartition>,
}

/// A group's committed offset on one partition, and how far behind the log's end it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPartition {
    pub partition: i32,
    /// The next offset the group reads; `None` before its first commit there.
    pub committed: Option<i64>,
    pub lag: i64,
}

/// Where a consumer started on one partition, and why there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumedAt {
    pub partition: i32,
    pub offset: i64,
    /// `committed` (the group's commit), `beginning` or `end` (no commit yet).
    pub from: String,
}

/// A message as a consumer read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumedMessage {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    pub value: String,
}

/// One read of a consumer group: where it resumed, what it read, what it committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRead {
    pub group: String,
    pub group_id: String,
    pub topic: String,
    pub resumed: Vec<ResumedAt>,
    pub messages: Vec<ConsumedMessage>,
    /// Per partition, the next offset the group will read.
    pub committed: std::collections::BTreeMap<i32, i64>,
    /// In plain words: where it resumed and why, and how bronze differs.
    pub sentences: Vec<String>,
}

/// What the topic page's "start a consumer" asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumeRequest {
    pub group: String,
    pub max: usize,
    #[serde(default)]
    pub from_beginning: bool,
}
