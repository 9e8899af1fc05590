//! The `reckon` command line: its arguments, the config they make, and one file per command
//! (`main.rs` only dispatches).

pub mod args;
pub mod broker;
pub mod check;
pub mod class;
pub mod config;
pub mod consume;
pub mod freshness;
pub mod pipeline;
pub mod play;
pub mod produce;
pub mod progress;
pub mod run;
pub mod serve;
pub mod table;
pub mod whatif;
