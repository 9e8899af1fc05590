//! Each rule on evidence written by hand: where it must hold, and where it must not.

use std::collections::BTreeMap;

use app::model::{CheckLine, Figures, FileRead, FlowStatus, ResumedAt, Verdict};

use super::*;
use crate::store::{FlowEvidence, GroupReadEvidence};

fn run(
    id: i64,
    generation: i64,
    flows: Vec<FlowEvidence>,
    findings: Vec<CheckLine>,
) -> RunEvidence {
    RunEvidence {
        id,
        started_by: "button".into(),
        generation,
        finished_at: Some(format!("2026-12-07T10:00:0{id}Z")),
        succeeded: true,
        flows,
        findings,
    }
}

fn reading(target: &str, files: &[&str]) -> FlowEvidence {
    FlowEvidence {
        flow: target.into(),
        target: Some(target.into()),
        status: FlowStatus::Completed,
        figures: Figures {
            files: files
                .iter()
                .map(|p| FileRead {
                    path: (*p).into(),
                    rows: 10,
                    rescued: 0,
                    changed: false,
                })
                .collect(),
            ..Figures::default()
        },
    }
}

fn line(verdict: Verdict, hour: &str, text: &str) -> CheckLine {
    CheckLine {
        hour: Some(hour.into()),
        ..CheckLine::says(verdict, text.into())
    }
}

fn holds(id: &str, e: &Evidence) -> Option<Proof> {
    let rule = RULES
        .iter()
        .find(|r| r.id == id)
        .expect("a rule of that id");
    (rule.proved)(e, &Facts::default())
}

#[test]
fn incremental_loads_hold_for_new_files_only() {
    let mut e = Evidence {
        runs: vec![
            run(1, 0, vec![reading("bronze", &["a.json", "b.json"])], vec![]),
            run(2, 0, vec![reading("bronze", &["c.json"])], vec![]),
        ],
        ..Evidence::default()
    };
    assert_eq!(holds("w14.incremental", &e).map(|p| p.run), Some(Some(2)));
    // A full refresh read a.json again: the second run proves nothing.
    e.runs[1] = run(2, 0, vec![reading("bronze", &["a.json", "c.json"])], vec![]);
    assert_eq!(holds("w14.incremental", &e), None);
    // One run alone proves nothing either.
    e.runs.truncate(1);
    assert_eq!(holds("w14.incremental", &e), None);
}

#[test]
fn the_double_count_is_fixed_only_by_a_replay_that_checks_the_same_hours() {
    let twice = line(
        Verdict::Problem,
        "2026-03-02T11:00:00Z",
        "11:00 counted 2 orders, 36.50, but bronze has 1 order: an event counted twice",
    );
    let ok = line(Verdict::Ok, "2026-03-02T11:00:00Z", "11:00 1 order, 18.25");
    let other = line(Verdict::Ok, "2026-03-02T10:00:00Z", "10:00 2 orders, 55.00");
    let caught = run(1, 0, vec![], vec![twice]);
    // The same hours clean, but without a replay (the same generation): not fixed.
    let e = Evidence {
        runs: vec![caught.clone(), run(2, 0, vec![], vec![ok.clone()])],
        ..Evidence::default()
    };
    assert!(holds("m9.double_caught", &e).is_some());
    assert_eq!(holds("m9.double_fixed", &e), None);
    // After a reset, a check without that hour: not fixed.
    let e = Evidence {
        runs: vec![caught.clone(), run(2, 1, vec![], vec![other.clone()])],
        ..Evidence::default()
    };
    assert_eq!(holds("m9.double_fixed", &e), None);
    // After a reset, the hour checked with no PROBLEM but nothing dropped as a duplicate (the
    // batch was not sent twice): not fixed.
    let e = Evidence {
        runs: vec![
            caught.clone(),
            run(2, 1, vec![], vec![other.clone(), ok.clone()]),
        ],
        ..Evidence::default()
    };
    assert_eq!(holds("m9.double_fixed", &e), None);
    // With the duplicate dropped in that replay: fixed, by that run.
    let mut gold = reading("hourly_sales", &[]);
    gold.figures.rows_duplicate = 1;
    let e = Evidence {
        runs: vec![caught, run(2, 1, vec![gold], vec![other, ok])],
        ..Evidence::default()
    };
    assert_eq!(holds("m9.double_fixed", &e).map(|p| p.run), Some(Some(2)));
}

#[test]
fn a_consumer_demo_needs_more_sent_and_a_resume_at_the_commit() {
    let read = |sent_before, from: &str, offset, committed, messages| GroupReadEvidence {
        at: "2026-12-07T10:00:00Z".into(),
        group: "demo".into(),
        resumed: vec![ResumedAt {
            partition: 0,
            offset,
            from: from.into(),
        }],
        committed: BTreeMap::from([(0, committed)]),
        messages,
        sent_before,
    };
    let mut e = Evidence {
        group_reads: vec![read(5, "beginning", 0, 5, 5), read(5, "committed", 5, 5, 0)],
        ..Evidence::default()
    };
    assert_eq!(
        holds("w14.kafka_offsets", &e),
        None,
        "nothing more was sent"
    );
    e.group_reads[1] = read(8, "committed", 5, 8, 3);
    assert!(holds("w14.kafka_offsets", &e).is_some());
    e.group_reads[1] = read(8, "end", 8, 8, 0);
    assert_eq!(
        holds("w14.kafka_offsets", &e),
        None,
        "it did not resume at its commit"
    );
}

#[test]
fn a_run_started_by_a_file_or_the_schedule_is_triggered() {
    let mut by_hand = run(1, 0, vec![], vec![]);
    let e = Evidence {
        runs: vec![by_hand.clone()],
        ..Evidence::default()
    };
    assert_eq!(holds("w14.triggered", &e), None);
    by_hand.started_by = "file-arrival".into();
    let e = Evidence {
        runs: vec![by_hand],
        ..Evidence::default()
    };
    assert!(holds("w14.triggered", &e).is_some());
}
