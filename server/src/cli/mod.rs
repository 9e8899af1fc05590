//! Commands of the `reckon` binary that need more than a line or two, beside `main.rs`.

pub mod args;
pub mod broker;
pub mod consume;
pub mod pipeline;
pub mod whatif;
