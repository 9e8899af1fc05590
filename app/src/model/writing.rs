//! The lab's writing tasks (week 14, sections 4 to 6; issue "The classroom"): the note to a
//! director, the check's questions and the teach-back. Each is saved with its time; the word
//! count and the jargon a director would not follow are counted the same way in the browser, as
//! the learner types, and on the server, for the milestones.

use serde::{Deserialize, Serialize};

/// The most a saved text may hold, in bytes.
pub const MAX_WRITING: usize = 20_000;

/// Each task: its id and what the course asks.
pub const TASKS: [(&str, &str); 7] = [
    (
        "note",
        "Communicating trade-offs: a 150-word note to a non-technical director explaining why real-time support dashboards would cost about 4× more than hourly ones, and what they'd gain. No jargon. One recommendation and one alternative.",
    ),
    ("check.1", "What belongs in bronze vs silver vs gold?"),
    (
        "check.2",
        "What does expect_or_drop do differently from expect?",
    ),
    ("check.3", "What's a consumer offset in Kafka?"),
    (
        "check.4",
        "Why are declarative pipelines easier to backfill?",
    ),
    (
        "check.5",
        "Streaming table vs materialised view: when would you use each?",
    ),
    (
        "teachback",
        "Teach-back: bronze, silver, gold, a pipeline explained as a kitchen.",
    ),
];

/// Words of the week's and the module's vocabulary a director would not follow.
pub const JARGON: [&str; 40] = [
    "watermark",
    "kafka",
    "offset",
    "offsets",
    "streaming",
    "stream",
    "streams",
    "bronze",
    "silver",
    "gold",
    "delta",
    "spark",
    "medallion",
    "schema",
    "partition",
    "partitions",
    "consumer",
    "producer",
    "topic",
    "checkpoint",
    "idempotent",
    "scd",
    "scd2",
    "cdc",
    "upsert",
    "merge",
    "dag",
    "latency",
    "throughput",
    "lakehouse",
    "etl",
    "cluster",
    "backfill",
    "materialized",
    "materialised",
    "sql",
    "api",
    "databricks",
    "pipeline",
    "ingestion",
];

/// A writing task as the lab holds it: the newest text saved, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writing {
    pub task: String,
    pub prompt: String,
    pub text: String,
    /// When it was last saved (RFC 3339); `None`: never.
    pub at: Option<String>,
}

/// The prompt of task `task`, if it is one.
pub fn prompt(task: &str) -> Option<&'static str> {
    TASKS.iter().find(|(id, _)| *id == task).map(|(_, p)| *p)
}

/// The words of `text`: runs of letters, digits, `'` and `-`.
pub fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(['\'', '-']))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect()
}

/// The jargon `text` uses, each term with how often, in the order first used.
pub fn jargon(text: &str) -> Vec<(String, usize)> {
    let mut found: Vec<(String, usize)> = vec![];
    for word in words(text) {
        let lower = word.to_lowercase();
        if !JARGON.contains(&lower.as_str()) {
            continue;
        }
        match found.iter_mut().find(|(w, _)| *w == lower) {
            Some((_, n)) => *n += 1,
            None => found.push((lower, 1)),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_jargon_are_counted_as_a_reader_would() {
        let text = "Real-time dashboards cost 4x more: the Kafka stream's offset... Kafka!";
        assert_eq!(words(text).len(), 10, "{:?}", words(text));
        assert_eq!(
            jargon(text),
            [("kafka".to_string(), 2), ("offset".to_string(), 1)]
        );
        assert!(words("  — ... ").is_empty());
    }
}
