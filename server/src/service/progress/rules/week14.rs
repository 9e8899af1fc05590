//! Week 14's milestones: a declarative pipeline with expectations, incremental loads, bad rows
//! set aside, SCD 2 by AUTO CDC, a run started on its own, a consumer group's offsets, and the
//! writing tasks.

use std::collections::BTreeSet;

use super::{Facts, Proof, completed, ended};
use crate::store::{Evidence, FlowEvidence, RunEvidence};
use app::model::Verdict;

pub(super) fn expectations(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs).find_map(|r| {
        let flow = completed(r).find(|f| !f.figures.expectations.is_empty())?;
        let rules: Vec<&str> = (flow.figures.expectations.iter())
            .map(|x| x.name.as_str())
            .collect();
        Some(Proof {
            at: None,
            run: Some(r.id),
            evidence: format!("run #{}: {} checked {}", r.id, flow.flow, rules.join(", ")),
        })
    })
}

/// A run that read files into a table that an earlier run of the same generation had read
/// files into, every one of them new: none read before, none changed since it was read.
pub(super) fn incremental(e: &Evidence, _: &Facts) -> Option<Proof> {
    let runs: Vec<&RunEvidence> = ended(&e.runs).collect();
    for (i, later) in runs.iter().enumerate() {
        for flow in completed(later).filter(|f| !f.figures.files.is_empty()) {
            let earlier: Vec<&FlowEvidence> = runs[..i]
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
                    at: None,
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

pub(super) fn bad_rows(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs).find_map(|r| {
        let flow = completed(r).find(|f| f.figures.rows_dropped > 0)?;
        let rules: Vec<String> = (flow.figures.expectations.iter())
            .filter(|x| x.failed > 0)
            .map(|x| format!("{} {}", x.name, x.failed))
            .collect();
        Some(Proof {
            at: None,
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

pub(super) fn scd2(e: &Evidence, facts: &Facts) -> Option<Proof> {
    for (target, closed) in facts.closed_versions.iter().filter(|(_, n)| *n > 0) {
        let said = format!("{target} has the history of");
        let run = e.runs.iter().rev().find(|r| {
            r.findings
                .iter()
                .any(|l| l.verdict == Verdict::Ok && l.text.starts_with(&said))
        });
        if let Some(r) = run {
            return Some(Proof {
                at: None,
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

pub(super) fn triggered(e: &Evidence, _: &Facts) -> Option<Proof> {
    ended(&e.runs)
        .find(|r| matches!(r.started_by.as_str(), "schedule" | "file-arrival"))
        .map(|r| Proof {
            at: None,
            run: Some(r.id),
            evidence: format!("run #{} was started by the {}", r.id, r.started_by),
        })
}

/// A group read, more events sent, then the same group resumed where it had committed.
pub(super) fn kafka_offsets(e: &Evidence, _: &Facts) -> Option<Proof> {
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
                at: Some(later.at.clone()),
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

/// The newest text of `task`, and when it was saved.
fn written<'e>(e: &'e Evidence, task: &str) -> Option<(&'e str, &'e str)> {
    (e.writings.iter())
        .find(|(t, _, _)| t == task)
        .map(|(_, text, at)| (text.as_str(), at.as_str()))
}

pub(super) fn note(e: &Evidence, _: &Facts) -> Option<Proof> {
    let (text, at) = written(e, "note")?;
    let words = app::model::words(text).len();
    if words < 100 {
        return None;
    }
    let jargon = app::model::jargon(text);
    let said = match jargon.len() {
        0 => "no jargon".to_string(),
        n => format!("{n} jargon term(s)"),
    };
    Some(Proof {
        run: None,
        at: Some(at.to_string()),
        evidence: format!("the note has {words} words, {said}"),
    })
}

pub(super) fn check_answered(e: &Evidence, _: &Facts) -> Option<Proof> {
    let tasks = [
        "check.1",
        "check.2",
        "check.3",
        "check.4",
        "check.5",
        "teachback",
    ];
    let mut last = "";
    for task in tasks {
        let (text, at) = written(e, task)?;
        if app::model::words(text).len() < 10 {
            return None;
        }
        last = last.max(at);
    }
    Some(Proof {
        run: None,
        at: Some(last.to_string()),
        evidence: "the five check questions and the teach-back answered".into(),
    })
}
