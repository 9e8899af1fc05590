//! Reckon: streaming pipelines on Delta Lake with Spark's semantics, on one machine, proved right.
//!
//! The layers, top to bottom (each uses only those below it):
//! - [`web`]: axum routes, the JSON API, the guard every request passes; [`cli`]: the commands.
//! - [`service`]: the server's labs; per lab its runner, settings and the pages' backend.
//! - [`access`]: tokens, sessions, roles and the registry of labs and tokens.
//! - [`store`]: the run history in SQLite: runs, their flow events and check lines, sent events.
//! - [`engine`]: the flows (bronze, silver, gold), the check, the Delta tables, events.
//! - [`kafka`]: the Kafka client and the local broker.
//!
//! The plain types every layer shares with the pages live in `app::model`.

pub mod access;
pub mod bench;
pub mod cli;
pub mod config;
pub mod crash;
pub mod engine;
pub mod kafka;
pub mod limit;
pub mod process;
pub mod service;
pub mod store;
pub mod web;

pub use config::Config;
pub use service::lab::Lab;
