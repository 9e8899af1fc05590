//! Each milestone's rule over a lab's evidence (issue "The classroom"): pure functions of what
//! the history holds (runs, flows' figures, the check's lines, resets) and a few facts read
//! from the lab's tables, so every rule is tested on evidence written by hand as well as on
//! labs driven through the real pipeline.

use std::collections::BTreeSet;

use app::model::{CheckLine, Course, FlowStatus, Verdict};

use crate::store::{Evidence, RunEvidence};

/// What the lab's tables say that the history does not.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Per AUTO CDC target kept as SCD 2: how many of its rows are closed versions.
    pub closed_versions: Vec<(String, u64)>,
}

/// What proves a milestone: the run, and in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// `None` when what proves it is not a run (a consumer group's read, a text saved).
    pub run: Option<i64>,
    pub evidence: String,
    /// When it held, for a proof that is not a run.
    pub at: Option<String>,
}

pub struct Rule {
    pub id: &'static str,
    pub course: Course,
    pub title: &'static str,
    pub how: &'static str,
    pub proved: fn(&Evidence, &Facts) -> Option<Proof>,
}

/// Every milestone, each course's in the order a learner meets them.
pub const RULES: [Rule; 14] = [
    Rule {
        id: "m9.built",
        course: Course::Module9,
        title: "The pipeline built",
        how: "Send the course's batches and run the streams (or your own module-9 project): hourly_sales is written.",
        proved: built,
    },
    Rule {
        id: "m9.check_clean",
        course: Course::Module9,
        title: "A check with no PROBLEM",
        how: "Run the check after module 9's streams: every line ok, late or waiting.",
        proved: check_clean,
    },
    Rule {
        id: "m9.double_caught",
        course: Course::Module9,
        title: "The double count caught",
        how: "Send a batch twice without dropping duplicates and run the check: it names the hour counted twice.",
        proved: double_caught,
    },
    Rule {
        id: "m9.replay",
        course: Course::Module9,
        title: "A replay from a new topic",
        how: "Reset the lab (a new topic, nothing on disk), send the batches again and run.",
        proved: replay,
    },
    Rule {
        id: "m9.double_fixed",
        course: Course::Module9,
        title: "The double count fixed",
        how: "After catching it, drop duplicates within the watermark, replay from a new topic and check: the same hours with no PROBLEM.",
        proved: double_fixed,
    },
    Rule {
        id: "m9.late_seen",
        course: Course::Module9,
        title: "A late event seen",
        how: "Send an event older than the watermark (the course's batch 5) and check: its hour is late.",
        proved: late_seen,
    },
    Rule {
        id: "w14.expectations",
        course: Course::Week14,
        title: "A declarative pipeline running with expectations",
        how: "Start from the week-14 example (or write your own with CONSTRAINT ... EXPECT), land files and run.",
        proved: week14::expectations,
    },
    Rule {
        id: "w14.incremental",
        course: Course::Week14,
        title: "Incremental loads proven",
        how: "Land more days and run again: the run reads only the files landed since, none read before.",
        proved: week14::incremental,
    },
    Rule {
        id: "w14.bad_rows",
        course: Course::Week14,
        title: "Bad rows dropped and counted",
        how: "Land the bad rows and run: rows that break an expect_or_drop rule go to _quarantine, counted per rule.",
        proved: week14::bad_rows,
    },
    Rule {
        id: "w14.scd2",
        course: Course::Week14,
        title: "SCD2 via AUTO CDC working",
        how: "Run the challenge (AUTO CDC ... STORED AS SCD TYPE 2) on the accounts: a key that changed has a closed version, and the check says its history is right.",
        proved: week14::scd2,
    },
    Rule {
        id: "w14.triggered",
        course: Course::Week14,
        title: "The pipeline scheduled or triggered by file arrival",
        how: "Turn on run-on-arrival (Landing) or a schedule (Settings), then land a file: a run starts on its own.",
        proved: week14::triggered,
    },
    Rule {
        id: "w14.kafka_offsets",
        course: Course::Week14,
        title: "A Kafka consumer demo with offsets",
        how: "On the Topic page, read with a consumer group, send more events, then read with the same group: it resumes at the offset it committed.",
        proved: week14::kafka_offsets,
    },
    Rule {
        id: "w14.note",
        course: Course::Week14,
        title: "Director note written",
        how: "On the Writing page: the note to a non-technical director, at least 100 words (150 asked); the jargon it uses is marked as you type.",
        proved: week14::note,
    },
    Rule {
        id: "w14.check",
        course: Course::Week14,
        title: "Check and teach-back done",
        how: "On the Writing page: each of the five check questions and the teach-back answered, at least 10 words each.",
        proved: week14::check_answered,
    },
];

fn ended(runs: &[RunEvidence]) -> impl Iterator<Item = &RunEvidence> {
    runs.iter().filter(|r| r.succeeded)
}

fn completed(run: &RunEvidence) -> impl Iterator<Item = &crate::store::FlowEvidence> {
    run.flows
        .iter()
        .filter(|f| f.status == FlowStatus::Completed)
}

fn built(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs).find_map(|r| {
        let gold = completed(r).find(|f| f.target.as_deref() == Some("hourly_sales"))?;
        Some(Proof {
            at: None,
            run: Some(r.id),
            evidence: format!(
                "run #{} wrote hourly_sales ({} rows read)",
                r.id, gold.figures.rows_read
            ),
        })
    })
}

/// A check's lines with something to say: no PROBLEM, and at least one ok or late line.
fn clean(findings: &[CheckLine]) -> bool {
    !findings.iter().any(|l| l.verdict == Verdict::Problem)
        && findings
            .iter()
            .any(|l| matches!(l.verdict, Verdict::Ok | Verdict::Late))
}

/// Whether `run` wrote module 9's gold, `hourly_sales`.
fn writes_gold(run: &RunEvidence) -> bool {
    completed(run).any(|f| f.target.as_deref() == Some("hourly_sales"))
}

/// A clean check of module 9's tables: after a run that wrote hourly_sales, in its generation.
fn check_clean(e: &Evidence, _: &Facts) -> Option<Proof> {
    let runs: Vec<&RunEvidence> = ended(&e.runs).collect();
    let checked = runs.iter().enumerate().find(|(i, r)| {
        clean(&r.findings)
            && runs[..=*i]
                .iter()
                .any(|b| b.generation == r.generation && writes_gold(b))
    });
    checked.map(|(_, r)| Proof {
        at: None,
        run: Some(r.id),
        evidence: format!(
            "run #{}'s check: {} line(s), none a PROBLEM",
            r.id,
            r.findings.len()
        ),
    })
}

/// The hour (or window) a line is about: its hour, or its text up to " counted".
fn about(line: &CheckLine) -> String {
    match &line.hour {
        Some(hour) => hour.clone(),
        None => line
            .text
            .split(" counted")
            .next()
            .unwrap_or(&line.text)
            .to_string(),
    }
}

fn counted_twice(run: &RunEvidence) -> Vec<&CheckLine> {
    run.findings
        .iter()
        .filter(|l| l.verdict == Verdict::Problem && l.text.contains("counted twice"))
        .collect()
}

fn double_caught(e: &Evidence, _: &Facts) -> Option<Proof> {
    e.runs.iter().find_map(|r| {
        let twice = counted_twice(r);
        let first = twice.first()?;
        Some(Proof {
            at: None,
            run: Some(r.id),
            evidence: format!("run #{}'s check: {}", r.id, first.text),
        })
    })
}

/// The first succeeded run after a reset that read rows.
fn replay(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs)
        .filter(|r| r.generation > 0)
        .find(|r| completed(r).any(|f| f.figures.rows_read > 0))
        .map(|r| Proof {
            at: None,
            run: Some(r.id),
            evidence: format!(
                "after reset {} (a new topic), run #{} read the events again",
                r.generation, r.id
            ),
        })
}

fn double_fixed(e: &Evidence, _: &Facts) -> Option<Proof> {
    for caught in &e.runs {
        let hours: BTreeSet<String> = counted_twice(caught).into_iter().map(about).collect();
        if hours.is_empty() {
            continue;
        }
        // A later generation (a replay from a new topic) that dropped duplicates, whose check
        // has those hours, clean: a replay that only did not send the batch twice fixes nothing.
        let dropped = |generation: i64| {
            ended(&e.runs)
                .filter(|r| r.generation == generation)
                .any(|r| completed(r).any(|f| f.figures.rows_duplicate > 0))
        };
        let fixed = ended(&e.runs)
            .filter(|r| r.id > caught.id && r.generation > caught.generation)
            .filter(|r| dropped(r.generation))
            .find(|r| {
                clean(&r.findings)
                    && hours
                        .iter()
                        .all(|h| r.findings.iter().any(|l| about(l) == *h))
            });
        if let Some(r) = fixed {
            return Some(Proof {
                at: None,
                run: Some(r.id),
                evidence: format!(
                    "run #{} counted {} twice; after a replay, run #{}'s check has {} with no PROBLEM",
                    caught.id,
                    hours.iter().cloned().collect::<Vec<_>>().join(", "),
                    r.id,
                    match hours.len() {
                        1 => "it",
                        _ => "them",
                    }
                ),
            });
        }
    }
    None
}

fn late_seen(e: &Evidence, _: &Facts) -> Option<Proof> {
    e.runs.iter().find_map(|r| {
        let late = r.findings.iter().find(|l| l.verdict == Verdict::Late)?;
        Some(Proof {
            at: None,
            run: Some(r.id),
            evidence: format!("run #{}'s check: {}", r.id, late.text),
        })
    })
}

mod week14;

#[cfg(test)]
mod tests;
