//! Reckon's settings: one struct, filled once from the command line and the environment, passed down.

use std::path::PathBuf;
use std::time::Duration;

use app::model::DEFAULT_LAB;

use crate::crash::CrashPoint;

mod serving;

pub use serving::{LEAST_TOKEN, Rates, RunLimits, Serving};

/// The Kafka version whose jars `kafka/fetch-jars.sh` fetches; the local broker runs from them.
pub const KAFKA_VERSION: &str = "4.1.1";

/// Everything a command needs to know about where it works.
#[derive(Debug, Clone)]
pub struct Config {
    /// The lab's name: `default`, or one made with `POST /api/labs` (see [`Config::for_lab`]).
    pub lab: String,
    /// The lab's folder: tables, gold state, the lock, and (by default) the local broker's home.
    pub data_dir: PathBuf,
    /// The history database every lab of the data folder shares (`<data>/history.sqlite`).
    pub history: PathBuf,
    /// Kafka bootstrap servers given by the user; `None` means the local broker.
    pub brokers: Option<String>,
    /// The topic the lab reads and writes.
    pub topic: String,
    /// Partitions of the topic when Reckon creates it.
    pub partitions: i32,
    /// How long a run waits for another run of the same lab before it gives up.
    pub lock_wait: Duration,
    /// The local broker, used when `brokers` is `None`.
    pub local_broker: LocalBroker,
    /// A table is compacted after a check once a pack of more than this many of its small files
    /// can be made (0: never); see `engine::tables::compact`.
    pub compact_after: usize,
    /// After a check, the files `orders` and `hourly_sales` stopped using longer ago than
    /// this are deleted (`None`: never); see `engine::tables::vacuum`.
    pub vacuum_after: Option<Duration>,
    /// Where to abort the process on purpose: crash tests only.
    pub crash_at: Option<CrashPoint>,
    /// How `reckon serve` serves the labs (the defaults elsewhere).
    pub serving: Serving,
}

/// Small files a pack must take before a check's compaction makes it: a run adds one or two a
/// table, so a table is compacted about every eight runs.
pub const COMPACT_AFTER: usize = 8;

/// Hours a file out of use is kept before a vacuum deletes it: Delta's own default (a week), so
/// earlier versions stay readable as long as in Spark's Delta. It is also the most: a table's
/// checkpoints keep the record of a replaced file for a week (its
/// `delta.deletedFileRetentionDuration`), and past that the full vacuum knows the file only by
/// when it was written.
pub const VACUUM_AFTER_HOURS: f64 = 168.0;

/// The least time kept, but for never (0): a page reads a table without the lab's lock, so a
/// file just replaced may still be read by it.
pub const VACUUM_AFTER_LEAST_HOURS: f64 = 0.1;

/// `--vacuum-after HOURS` as the time kept: `None` (never) for 0; otherwise the hours, which
/// must lie between [`VACUUM_AFTER_LEAST_HOURS`] and [`VACUUM_AFTER_HOURS`].
pub fn vacuum_after(hours: f64) -> Result<Option<Duration>, ConfigError> {
    if hours == 0.0 {
        return Ok(None);
    }
    if !(VACUUM_AFTER_LEAST_HOURS..=VACUUM_AFTER_HOURS).contains(&hours) {
        return Err(invalid(
            "vacuum-after",
            format!(
                "expected 0 (never) or hours from {VACUUM_AFTER_LEAST_HOURS} to \
                 {VACUUM_AFTER_HOURS}, got {hours}"
            ),
        ));
    }
    Ok(Some(Duration::from_secs_f64(hours * 3600.0)))
}

/// A time kept in hours, as a person writes it: "168 hours", "1.5 hours".
pub fn hours_text(kept: Duration) -> String {
    let hours = kept.as_secs_f64() / 3600.0;
    format!("{} hours", (hours * 100.0).round() / 100.0)
}

/// How to run the machine's local Apache Kafka.
#[derive(Debug, Clone)]
pub struct LocalBroker {
    /// Client port on 127.0.0.1.
    pub port: u16,
    /// KRaft controller port on 127.0.0.1.
    pub controller_port: u16,
    /// Storage, configuration and log of the broker.
    pub home: PathBuf,
    /// Folder holding Kafka's jars (see `kafka/fetch-jars.sh`).
    pub kafka_libs: PathBuf,
    /// The `java` binary (Java 17 or later).
    pub java: PathBuf,
}

impl Config {
    /// A config with Reckon's defaults for a lab in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        let home = data_dir.join("kafka");
        Self {
            lab: DEFAULT_LAB.into(),
            history: data_dir.join("history.sqlite"),
            data_dir,
            brokers: None,
            topic: "orders".into(),
            partitions: 3,
            lock_wait: Duration::from_secs(60),
            local_broker: LocalBroker {
                port: 9092,
                controller_port: 9093,
                home,
                kafka_libs: default_kafka_libs(),
                java: PathBuf::from("java"),
            },
            compact_after: COMPACT_AFTER,
            vacuum_after: vacuum_after(VACUUM_AFTER_HOURS).expect("the default is in bounds"),
            crash_at: None,
            serving: Serving::default(),
        }
    }

    /// The `reckon` global arguments that make this config again in another process (a run's
    /// child):
    /// the data folder (the one holding the history), the lab, its broker and settings.
    pub fn global_args(&self) -> Vec<std::ffi::OsString> {
        let config = self;
        let root = config
            .history
            .parent()
            .map_or_else(|| config.data_dir.clone(), |p| p.to_path_buf());
        let topic = config.topic_named();
        let hours = config
            .vacuum_after
            .map_or(0.0, |d| d.as_secs_f64() / 3600.0);
        let mut args: Vec<std::ffi::OsString> = vec![
            "--data".into(),
            root.into(),
            "--lab".into(),
            config.lab.clone().into(),
            "--topic".into(),
            topic.as_str().into(),
            "--partitions".into(),
            config.partitions.to_string().into(),
            "--compact-after".into(),
            config.compact_after.to_string().into(),
            "--vacuum-after".into(),
            hours.to_string().into(),
            "--lock-wait".into(),
            config.lock_wait.as_secs().to_string().into(),
            "--broker-port".into(),
            config.local_broker.port.to_string().into(),
            "--broker-home".into(),
            config.local_broker.home.clone().into(),
            "--kafka-libs".into(),
            config.local_broker.kafka_libs.clone().into(),
        ];
        if let Some(brokers) = &config.brokers {
            args.extend(["--brokers".into(), brokers.into()]);
        }
        if let Some(point) = &config.crash_at {
            args.extend(["--crash-at".into(), point.to_string().into()]);
        }
        args
    }

    /// The config of lab `name` in this (the default lab's) data folder: its own folder
    /// `<data>/labs/<name>` and topic `<topic>.<name>` (SPEC §1: `orders.<lab>`); the same
    /// broker and history. `default` is this config itself.
    pub fn for_lab(&self, name: &str) -> Config {
        if name == DEFAULT_LAB {
            return self.clone();
        }
        Config {
            lab: name.into(),
            data_dir: self.data_dir.join("labs").join(name),
            topic: format!("{}.{name}", self.topic),
            ..self.clone()
        }
    }

    /// The lab's topic as a learner names it: `orders` for `orders.<lab>` (SPEC §1's mapping).
    pub fn topic_named(&self) -> String {
        let suffix = format!(".{}", self.lab);
        match self.lab.as_str() {
            DEFAULT_LAB => self.topic.clone(),
            _ => self
                .topic
                .strip_suffix(&suffix)
                .unwrap_or(&self.topic)
                .to_string(),
        }
    }

    /// The lab's state folder: the flows' state files, the check's store, the last vacuum's time.
    pub fn state_dir(&self) -> PathBuf {
        self.data_dir.join("state")
    }

    /// The bootstrap servers to connect to: the user's, or the local broker's.
    pub fn bootstrap_servers(&self) -> String {
        self.brokers
            .clone()
            .unwrap_or_else(|| format!("127.0.0.1:{}", self.local_broker.port))
    }

    /// Whether the lab talks to the local broker that Reckon itself starts and stops.
    pub fn uses_local_broker(&self) -> bool {
        self.brokers.is_none()
    }
}

/// A setting that cannot be: which one, and why (the command line names the field as its flag,
/// the API as its field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct ConfigError {
    pub field: &'static str,
    pub why: String,
}

pub(crate) fn invalid(field: &'static str, why: impl Into<String>) -> ConfigError {
    ConfigError {
        field,
        why: why.into(),
    }
}

/// Checks a lab's name: it becomes a folder, a topic suffix and a part of URLs.
pub fn validate_lab_name(name: &str) -> Result<(), ConfigError> {
    if name.is_empty() || name.len() > 32 {
        return Err(invalid("name", "must be 1 to 32 characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(
            "name",
            format!("must start with a lowercase letter, got {name:?}"),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_')))
    {
        return Err(invalid(
            "name",
            format!("{bad:?} is not allowed; use lowercase letters, digits, '-' and '_'"),
        ));
    }
    Ok(())
}

/// Where `kafka/fetch-jars.sh` puts the jars unless `RECKON_KAFKA_LIBS` says otherwise.
pub fn default_kafka_libs() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache/reckon")
        .join(format!("kafka-{KAFKA_VERSION}"))
        .join("libs")
}

/// Checks a topic name the way Kafka does, so a typo is refused before anything is created.
pub fn validate_topic(topic: &str) -> Result<(), ConfigError> {
    if topic.is_empty() || topic.len() > 249 {
        return Err(invalid("topic", "must be 1 to 249 characters"));
    }
    if topic == "." || topic == ".." {
        return Err(invalid("topic", "cannot be \".\" or \"..\""));
    }
    if let Some(bad) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(invalid(
            "topic",
            format!("{bad:?} is not allowed; use letters, digits, '.', '_' and '-'"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vacuum_after_is_never_at_0_and_otherwise_hours_within_a_tenth_and_a_week() {
        assert_eq!(vacuum_after(0.0), Ok(None));
        assert_eq!(
            vacuum_after(168.0),
            Ok(Some(Duration::from_secs(7 * 24 * 3600)))
        );
        assert_eq!(vacuum_after(0.5), Ok(Some(Duration::from_secs(1800))));
        for bad in [0.01, 168.5, -1.0, f64::NAN, f64::INFINITY] {
            let refused = vacuum_after(bad).unwrap_err();
            assert_eq!(refused.field, "vacuum-after");
            assert!(
                refused.why.contains("hours from 0.1 to 168"),
                "{bad}: {refused}"
            );
        }
        assert_eq!(hours_text(Duration::from_secs(168 * 3600)), "168 hours");
        assert_eq!(hours_text(Duration::from_secs(5400)), "1.5 hours");
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_topic("orders").is_ok());
        assert!(validate_topic("orders.ann_2-b").is_ok());
        assert_eq!(validate_topic("").unwrap_err().field, "topic");
        assert!(validate_topic("a b").unwrap_err().why.contains("' '"));
        assert!(validate_topic(&"x".repeat(250)).is_err());
    }

    #[test]
    fn lab_names_are_safe_in_paths_topics_and_urls() {
        assert!(validate_lab_name("ann").is_ok());
        assert!(validate_lab_name("team-7_b").is_ok());
        for bad in [
            "",
            "Ann",
            "7ann",
            "a/b",
            "..",
            "a.b",
            "ann lee",
            &"a".repeat(33),
        ] {
            assert_eq!(validate_lab_name(bad).unwrap_err().field, "name", "{bad}");
        }
    }

    #[test]
    fn a_lab_has_its_own_folder_and_topic_and_shares_the_history() {
        let root = Config::new("/d");
        let ann = root.for_lab("ann");
        assert_eq!(ann.topic, "orders.ann");
        assert_eq!(ann.data_dir, PathBuf::from("/d/labs/ann"));
        assert_eq!(ann.history, root.history);
        assert_eq!(ann.local_broker.home, root.local_broker.home);
        assert_eq!(root.for_lab("default").topic, "orders");
    }
}
