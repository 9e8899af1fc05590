//! Scenario files (the course's batches): named batches of order rows, and the order in which they
//! are sent and run. `course` is built into the binary so it works without `../shared`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::engine::event::OrderEvent;

/// The course scenario whose check output SPEC §4 quotes.
pub const COURSE: &str = include_str!("../../../scenarios/course.json");

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("scenario {name}: {source}")]
    Read {
        name: String,
        source: std::io::Error,
    },
    #[error("scenario {name}: not a scenario file: {source}")]
    Parse {
        name: String,
        source: serde_json::Error,
    },
    #[error("scenario {name}: batch {batch:?} row {row}: {detail}")]
    Row {
        name: String,
        batch: String,
        row: usize,
        detail: String,
    },
    #[error("scenario {name}: step {step}: {detail}")]
    Step {
        name: String,
        step: usize,
        detail: String,
    },
    #[error("scenario {name}: has no batch {batch:?} (it has {known})")]
    NoBatch {
        name: String,
        batch: String,
        known: String,
    },
    #[error("scenario {name}: give either `sends` or `steps`")]
    NoSteps { name: String },
}

/// One step of a play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Send(String),
    /// Run the three streams.
    Run,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub batches: BTreeMap<String, Vec<OrderEvent>>,
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
struct File {
    name: Option<String>,
    batches: BTreeMap<String, Vec<Vec<Value>>>,
    sends: Option<Vec<String>>,
    steps: Option<Vec<String>>,
}

impl Scenario {
    /// Loads `course` (built in) or a scenario file.
    pub fn load(name_or_path: &str) -> Result<Self, ScenarioError> {
        if name_or_path == "course" {
            return Self::parse("course", COURSE);
        }
        let text = std::fs::read_to_string(Path::new(name_or_path)).map_err(|source| {
            ScenarioError::Read {
                name: name_or_path.into(),
                source,
            }
        })?;
        Self::parse(name_or_path, &text)
    }

    pub fn parse(name: &str, text: &str) -> Result<Self, ScenarioError> {
        let file: File = serde_json::from_str(text).map_err(|source| ScenarioError::Parse {
            name: name.into(),
            source,
        })?;
        let name = file.name.unwrap_or_else(|| name.to_string());
        let mut batches = BTreeMap::new();
        for (batch, rows) in file.batches {
            let mut events = Vec::with_capacity(rows.len());
            for (i, row) in rows.iter().enumerate() {
                let row_err = |detail: String| ScenarioError::Row {
                    name: name.clone(),
                    batch: batch.clone(),
                    row: i + 1,
                    detail,
                };
                let [order_id, customer_id, status, amount, event_time] = row.as_slice() else {
                    return Err(row_err(format!(
                        "expected [order_id, customer_id, status, amount, event_time], got {} values",
                        row.len()
                    )));
                };
                let json = serde_json::json!({
                    "order_id": order_id, "customer_id": customer_id, "status": status,
                    "amount": amount, "event_time": event_time,
                });
                events.push(
                    OrderEvent::parse(json.to_string().as_bytes())
                        .map_err(|e| row_err(e.to_string()))?,
                );
            }
            batches.insert(batch, events);
        }
        let steps = match (file.sends, file.steps) {
            (Some(sends), None) => sends
                .into_iter()
                .flat_map(|b| [Step::Send(b), Step::Run])
                .collect(),
            (None, Some(steps)) => steps
                .iter()
                .enumerate()
                .map(|(i, s)| match s.split_once(':') {
                    _ if s == "run" => Ok(Step::Run),
                    Some(("send", batch)) => Ok(Step::Send(batch.to_string())),
                    _ => Err(ScenarioError::Step {
                        name: name.clone(),
                        step: i + 1,
                        detail: format!("{s:?} is neither \"run\" nor \"send:<batch>\""),
                    }),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(ScenarioError::NoSteps { name }),
        };
        let scenario = Self {
            name,
            batches,
            steps,
        };
        for step in &scenario.steps {
            if let Step::Send(batch) = step {
                scenario.batch(batch)?;
            }
        }
        Ok(scenario)
    }

    /// The events of one batch, or an error naming the batches there are.
    pub fn batch(&self, batch: &str) -> Result<&[OrderEvent], ScenarioError> {
        self.batches
            .get(batch)
            .map(Vec::as_slice)
            .ok_or_else(|| ScenarioError::NoBatch {
                name: self.name.clone(),
                batch: batch.to_string(),
                known: self.batches.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_course_sends_batch_3_twice() {
        let course = Scenario::load("course").unwrap();
        let sends: Vec<_> = course
            .steps
            .iter()
            .filter_map(|s| {
                if let Step::Send(b) = s {
                    Some(b.as_str())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(sends, ["1", "2", "3", "3", "4", "5"]);
        assert_eq!(course.steps.len(), 12);
        assert_eq!(course.batches.values().map(Vec::len).sum::<usize>(), 10);
    }

    #[test]
    fn bad_rows_and_steps_are_named() {
        let err = Scenario::parse("t", r#"{"batches": {"1": [[1, "C", "placed", "x", "2026-10-01T09:00:00Z"]]}, "sends": ["1"]}"#).unwrap_err();
        assert!(
            err.to_string().contains("batch \"1\" row 1: amount"),
            "{err}"
        );
        let err = Scenario::parse("t", r#"{"batches": {"1": []}, "sends": ["2"]}"#).unwrap_err();
        assert!(err.to_string().contains("no batch \"2\""), "{err}");
        let err = Scenario::parse(
            "t",
            r#"{"batches": {"1": []}, "steps": ["send:1", "walk"]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("step 2"), "{err}");
    }
}
