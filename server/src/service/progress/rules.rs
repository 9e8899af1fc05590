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
    /// `None` when what proves it is not a run (a consumer group's reads).
    pub run: Option<i64>,
    pub evidence: String,
}

pub struct Rule {
    pub id: &'static str,
    pub course: Course,
    pub title: &'static str,
    pub how: &'static str,
    pub proved: fn(&Evidence, &Facts) -> Option<Proof>,
}

/// Every milestone, each course's in the order a learner meets them.
pub const RULES: [Rule; 12] = [
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
        proved: expectations,
    },
    Rule {
        id: "w14.incremental",
        course: Course::Week14,
        title: "Incremental loads proven",
        how: "Land more days and run again: the run reads only the files landed since, none read before.",
        proved: incremental,
    },
    Rule {
        id: "w14.bad_rows",
        course: Course::Week14,
        title: "Bad rows dropped and counted",
        how: "Land the bad rows and run: rows that break an expect_or_drop rule go to _quarantine, counted per rule.",
        proved: bad_rows,
    },
    Rule {
        id: "w14.scd2",
        course: Course::Week14,
        title: "SCD2 via AUTO CDC working",
        how: "Run the challenge (AUTO CDC ... STORED AS SCD TYPE 2) on the accounts: a key that changed has a closed version, and the check says its history is right.",
        proved: scd2,
    },
    Rule {
        id: "w14.triggered",
        course: Course::Week14,
        title: "The pipeline scheduled or triggered by file arrival",
        how: "Turn on run-on-arrival (Landing) or a schedule (Settings), then land a file: a run starts on its own.",
        proved: triggered,
    },
    Rule {
        id: "w14.kafka_offsets",
        course: Course::Week14,
        title: "A Kafka consumer demo with offsets",
        how: "On the Topic page, read with a consumer group, send more events, then read with the same group: it resumes at the offset it committed.",
        proved: kafka_offsets,
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
        // A later generation (a replay from a new topic) whose check has those hours, clean.
        let fixed = ended(&e.runs)
            .filter(|r| r.id > caught.id && r.generation > caught.generation)
            .find(|r| {
                clean(&r.findings)
                    && hours
                        .iter()
                        .all(|h| r.findings.iter().any(|l| about(l) == *h))
            });
        if let Some(r) = fixed {
            return Some(Proof {
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
            run: Some(r.id),
            evidence: format!("run #{}'s check: {}", r.id, late.text),
        })
    })
}

fn expectations(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs).find_map(|r| {
        let flow = completed(r).find(|f| !f.figures.expectations.is_empty())?;
        let rules: Vec<&str> = (flow.figures.expectations.iter())
            .map(|x| x.name.as_str())
            .collect();
        Some(Proof {
            run: Some(r.id),
            evidence: format!("run #{}: {} checked {}", r.id, flow.flow, rules.join(", ")),
        })
    })
}

/// A run that read files into a table that an earlier run of the same generation had read
/// files into, every one of them new: none read before, none changed since it was read.
fn incremental(e: &Evidence, _: &Facts) -> Option<Proof> {
    let runs: Vec<&RunEvidence> = ended(&e.runs).collect();
    for (i, later) in runs.iter().enumerate() {
        for flow in completed(later).filter(|f| !f.figures.files.is_empty()) {
            let earlier: Vec<&crate::store::FlowEvidence> = runs[..i]
                .iter()
                .filter(|r| r.generation == later.generation)
                .flat_map(|r| completed(r))
                .filter(|f| f.target == flow.target && !f.figures.files.is_empty())
                .collect();
            if earlier.is_empty() {
                continue;
            }
            let read_before: BTreeSet<&str> = (earlier.iter())
                .flat_map(|f| f.figures.files.iter().map(|x| x.path.as_str()))
                .collect();
            let files = &flow.figures.files;
            if files
                .iter()
                .all(|f| !f.changed && !read_before.contains(f.path.as_str()))
            {
                return Some(Proof {
                    run: Some(later.id),
                    evidence: format!(
                        "run #{} read {} new file(s) into {}, none of the {} read before",
                        later.id,
                        files.len(),
                        flow.target.as_deref().unwrap_or(&flow.flow),
                        read_before.len()
                    ),
                });
            }
        }
    }
    None
}

fn bad_rows(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs).find_map(|r| {
        let flow = completed(r).find(|f| f.figures.rows_dropped > 0)?;
        let rules: Vec<String> = (flow.figures.expectations.iter())
            .filter(|x| x.failed > 0)
            .map(|x| format!("{} {}", x.name, x.failed))
            .collect();
        Some(Proof {
            run: Some(r.id),
            evidence: format!(
                "run #{}: {} dropped {} row(s) into _quarantine ({})",
                r.id,
                flow.flow,
                flow.figures.rows_dropped,
                rules.join(", ")
            ),
        })
    })
}

fn scd2(e: &Evidence, facts: &Facts) -> Option<Proof> {
    for (target, closed) in facts.closed_versions.iter().filter(|(_, n)| *n > 0) {
        let said = format!("{target} has the history of");
        let run = e.runs.iter().rev().find(|r| {
            r.findings
                .iter()
                .any(|l| l.verdict == Verdict::Ok && l.text.starts_with(&said))
        });
        if let Some(r) = run {
            return Some(Proof {
                run: Some(r.id),
                evidence: format!(
                    "{target} holds {closed} closed version(s); run #{}'s check: its history is right",
                    r.id
                ),
            });
        }
    }
    None
}

fn triggered(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs)
        .find(|r| matches!(r.started_by.as_str(), "schedule" | "file-arrival"))
        .map(|r| Proof {
            run: Some(r.id),
            evidence: format!("run #{} was started by the {}", r.id, r.started_by),
        })
}

/// A group read, more events sent, then the same group resumed where it had committed.
fn kafka_offsets(e: &Evidence, _: &Facts) -> Option<Proof> {
    for (i, later) in e.group_reads.iter().enumerate() {
        if later.messages == 0 {
            continue;
        }
        let before = e.group_reads[..i]
            .iter()
            .rev()
            .find(|r| r.group == later.group && r.sent_before < later.sent_before);
        let Some(before) = before else { continue };
        let resumed = later.resumed.iter().find(|r| {
            r.from == "committed" && before.committed.get(&r.partition) == Some(&r.offset)
        });
        if let Some(at) = resumed {
            return Some(Proof {
                run: None,
                evidence: format!(
                    "group {} read, more events were sent, and it resumed on partition {} at \
                     offset {}, where it had committed",
                    later.group, at.partition, at.offset
                ),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests;
