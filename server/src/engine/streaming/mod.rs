//! What the course's hand-made streams and a project's streaming flows share: reading Kafka
//! exactly once (`kafka.rs`), the watermark's rules (`watermark.rs`) and tumbling windows with
//! their duplicates and late rows (`window.rs`).

pub mod kafka;
pub mod watermark;
pub mod window;
