//! The engine: what a pipeline does to its data. The flows (bronze, silver, gold) and the check,
//! the runner that runs them, the Delta tables they read and write, and the events they carry.
//! Nothing here knows about labs, the history or the pages.

pub mod columns;
pub mod course;
pub mod declarative;
pub mod event;
pub mod flow;
pub mod render;
pub mod rng;
pub mod scenario;
pub mod state;
pub mod streaming;
pub mod tables;
