//! What Spark's append mode refuses in a streaming table (PIPELINES §8), refused when the
//! project is read: an aggregation without a window over its watermark, a watermark where
//! nothing streams, and `reckon.dropDuplicatesWithinWatermark` without a watermark.

use super::{FlowKind, FlowSpec};
use crate::engine::declarative::parse::Dataset;

/// The property that drops duplicates within the watermark.
pub const DEDUP_WITHIN_WATERMARK: &str = "reckon.dropDuplicatesWithinWatermark";

/// Why `flow`, writing `target`, cannot run as a stream; `None` when it can.
pub fn refusal(flow: &FlowSpec, target: Option<&Dataset>) -> Option<String> {
    let (name, query) = (&flow.name, &flow.query);
    let dedup = target.and_then(|t| t.properties.get(DEDUP_WITHIN_WATERMARK));
    let streams = flow.reads().any(|r| r.stream);
    if query.watermark.is_some() && (flow.kind != FlowKind::Append || !streams) {
        return Some(format!(
            "flow {name} has a WATERMARK but does not stream: a watermark belongs to a streaming \
             table reading STREAM(...)"
        ));
    }
    if flow.kind == FlowKind::Append && streams && query.aggregates && query.window.is_none() {
        return Some(format!(
            "flow {name} aggregates a stream without a window: Spark's append mode writes each \
             window once, when the watermark passes it; add WATERMARK col DELAY OF INTERVAL n unit \
             after the source and GROUP BY window(col, 'n unit'), or make {} a materialized view",
            flow.target
        ));
    }
    match (dedup, &query.window) {
        (Some(_), None) if query.watermark.is_none() => Some(format!(
            "{DEDUP_WITHIN_WATERMARK} on {} needs a watermark in flow {name}: WATERMARK col DELAY \
             OF INTERVAL n unit after its source",
            flow.target
        )),
        (Some(_), None) => Some(format!(
            "{DEDUP_WITHIN_WATERMARK} is supported on a windowed table for now; flow {name} has no \
             window"
        )),
        (Some(keys), Some(_)) if keys.split(',').all(|k| k.trim().is_empty()) => Some(format!(
            "{DEDUP_WITHIN_WATERMARK} names the columns of a duplicate: 'order_id, status'"
        )),
        _ => None,
    }
}
