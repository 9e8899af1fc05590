//! What the course's hand-made streams and a project's streaming flows share: reading Kafka
//! exactly once (`kafka.rs`), the watermark's rules (`watermark.rs`), tumbling windows with
//! their duplicates and late rows (`tumbling.rs`), and a project's windows as cells
//! (`window.rs`).

pub mod kafka;
pub mod tumbling;
pub mod watermark;
pub mod window;
