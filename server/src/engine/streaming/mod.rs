//! What the course's hand-made streams and a project's streaming flows share: reading Kafka
//! exactly once (`kafka.rs`). The watermark, windows and duplicate keys move here as projects
//! learn them (PIPELINES §8).

pub mod kafka;
