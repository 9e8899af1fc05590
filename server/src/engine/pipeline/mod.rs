//! Declarative pipelines (PIPELINES.md): a project of `.sql` statements read into a graph of
//! datasets and flows, each flow run by the same runner as the course's streams.

pub mod graph;
pub mod parse;
pub mod sql;
