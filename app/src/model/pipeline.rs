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
}
