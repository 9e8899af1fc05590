//! The engine: what a pipeline does to its data. The flows (bronze, silver, gold) and the check,
//! the Delta tables they read and write, the events they carry, and the crash points that test
//! them. Nothing here knows about labs, the history or the pages.

pub mod check;
pub mod columns;
pub mod crash;
pub mod event;
pub mod flow;
pub mod flows;
pub mod render;
pub mod scenario;
pub mod tables;
