//! The pipeline end to end against the real broker: the course scenario both ways, everything in
//! one run, table shapes and another Delta reader (`course`); the bench's Reckon side, offset
//! order, ties on event time, a consumer group, a what-if (`streams`).

#[path = "../common/mod.rs"]
mod common;
mod course;
mod streams;

use app::model::{DropReason, FlowStatus, RunStatus, Verdict};
use common::{SEED_BLOCK, TestLab, stderr, stdout};
