//! Sessions that keep rows in their order: whatever pairs a row with something computed per
//! row (a first row per key, a source line, a rule's verdict downstream) reads and writes
//! through one.

/// A session whose queries give rows in their input's order: one partition, so no operator
/// spreads rows over threads and merges them back in the order they finish. Whatever pairs rows
/// with something computed per row (a first row per key, a source line) reads through one.
pub fn in_order() -> datafusion::prelude::SessionContext {
    let config = datafusion::prelude::SessionConfig::new().with_target_partitions(1);
    datafusion::prelude::SessionContext::new_with_config(config)
}

/// A session for delta-rs writes that keep their rows' order: one partition, so one writer and
/// one file (several writers store the rows in several files, in the order they finished).
pub fn in_order_writes() -> std::sync::Arc<dyn datafusion::catalog::Session> {
    let one = std::collections::HashMap::from([(
        "datafusion.execution.target_partitions".to_string(),
        "1".to_string(),
    )]);
    let ctx = deltalake::delta_datafusion::DeltaSessionContext::new_with_session_overrides(&one)
        .expect("one partition is a valid setting");
    std::sync::Arc::new(ctx.state())
}
