//! A class made in one step (issue "The classroom"): a pasted list, a lab and a learner token
//! per line, shown once.

use serde::{Deserialize, Serialize};

/// What making (or adding to) a class did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClassMade {
    pub class: String,
    /// The labs made now, each with its learner token (shown once).
    pub labs: Vec<ClassLab>,
    /// Lines made into labs before (matched as pasted): nothing new was made for them.
    pub seen_before: Vec<String>,
    /// The sheet as CSV: `name,email,lab,token`.
    pub csv: String,
}

/// One line of the list and the lab it became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassLab {
    /// The line as pasted.
    pub line: String,
    pub name: String,
    pub email: Option<String>,
    pub lab: String,
    pub token: String,
    /// Why the lab's name is not the person's: made safe, or made unique.
    pub note: Option<String>,
}

/// Which course a milestone belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Course {
    /// Module 9: Kafka, the medallion streams, the watermark and the check.
    Module9,
    /// Week 14: declarative pipelines, expectations, AUTO CDC.
    Week14,
}

impl Course {
    pub fn label(self) -> &'static str {
        match self {
            Course::Module9 => "module 9",
            Course::Week14 => "week 14",
        }
    }
}

/// One milestone of a course, for one lab: proved from what the lab did (its runs, checks,
/// resets and tables), never ticked by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Milestone {
    /// Stable id: `m9.built`, `w14.incremental`, ...
    pub id: String,
    pub course: Course,
    /// What it is, as the course says it.
    pub title: String,
    /// How to reach it.
    pub how: String,
    pub done: bool,
    /// When it first held (RFC 3339): the end of the proving run.
    pub since: Option<String>,
    /// The run that proves it.
    pub run: Option<i64>,
    /// What the evidence is, in words (`run #4 read 5 new files, none read before`).
    pub evidence: Option<String>,
    /// Accepted by the instructor by hand, with why (beside `done`, which only evidence sets).
    #[serde(default)]
    pub accepted: Option<Accepted>,
}

/// A milestone the instructor accepted by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub note: String,
    pub at: String,
}

/// A lab's milestones, each course's in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LabProgress {
    pub lab: String,
    pub milestones: Vec<Milestone>,
    /// The lab's project against the examples, as it stands now: "the week-14 example as
    /// given", "module 9 in SQL with 12 line(s) changed"; `None` for the course's streams.
    #[serde(default)]
    pub project: Option<String>,
}

/// A class's board: each lab's milestones, and how many labs reached each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClassProgress {
    pub class: String,
    /// Each lab with the line of the class list it was made from.
    pub labs: Vec<ClassRow>,
}

/// One lab of a class on the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassRow {
    /// The line as pasted.
    pub line: String,
    pub progress: LabProgress,
}

impl ClassProgress {
    /// How many labs reached milestone `id`.
    pub fn reached(&self, id: &str) -> usize {
        self.labs
            .iter()
            .filter(|row| (row.progress.milestones.iter()).any(|m| m.id == id && m.done))
            .count()
    }
}
