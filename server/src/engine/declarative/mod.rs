//! Declarative pipelines (PIPELINES.md): a project of `.sql` statements read into a graph of
//! datasets and flows (`parse`, `sql`, `graph`), files landed in the data folder read
//! incrementally (`files`), and each flow run by the same runner as the course's streams.

pub mod check;
pub mod declared;
pub mod example;
pub mod files;
pub mod graph;
pub mod key_history;
pub mod parse;
pub mod python;
pub mod sql;
