//! A lab: one data directory (tables, gold state, lock) and one topic. Everything a command does
//! to a pipeline goes through here: produce, run the streams, check, reset, play a scenario.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::broker::{BrokerError, Started};
use crate::check::{self, CheckError, Report};
use crate::config::Config;
use crate::event::OrderEvent;
use crate::kafka::{Kafka, KafkaError, Sent};
use crate::scenario::{Scenario, ScenarioError, Step};
use crate::streams::{self, StreamError, StreamRun};
use crate::tables::{TableError, Tables};

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "another run of this lab ({dir}) has held it for {seconds} s; try again when it ends \
         (or raise --lock-wait)"
    )]
    Busy { dir: PathBuf, seconds: u64 },
    #[error(
        "reset would delete topic {topic} on {brokers}, a broker Reckon does not manage; add --force if that is what you want"
    )]
    ResetRefused { topic: String, brokers: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Broker(#[from] BrokerError),
    #[error(transparent)]
    Kafka(#[from] KafkaError),
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Which streams a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    All,
    Bronze,
    Silver,
    Gold,
}

pub struct Lab {
    pub config: Config,
    pub tables: Tables,
}

/// Held while a run changes the lab; released when dropped (or when the process dies).
pub struct LabLock {
    _file: File,
}

impl Lab {
    pub fn new(config: Config) -> Self {
        let tables = Tables::new(config.data_dir.join("tables"), config.crash_at);
        Self { config, tables }
    }

    pub fn gold_state_dir(&self) -> PathBuf {
        self.config.data_dir.join("state").join("gold")
    }

    /// Connects to the lab's Kafka, starting the local broker if it is the one and nothing answers.
    pub async fn kafka(&self) -> Result<Kafka, LabError> {
        if self.config.uses_local_broker()
            && !self.config.local_broker.answers()
            && let Started::Now { pid } = self.config.local_broker.start().await?
        {
            eprintln!("started the local Kafka broker on 127.0.0.1:{} (pid {pid})", self.config.local_broker.port);
        }
        Ok(Kafka::new(&self.config.bootstrap_servers())?)
    }

    /// Takes the lab's lock, waiting up to `lock_wait` for a run that holds it.
    pub fn lock(&self) -> Result<LabLock, LabError> {
        let dir = &self.config.data_dir;
        let io = |source| LabError::Io { path: dir.clone(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path = dir.join("reckon.lock");
        let mut file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < self.config.lock_wait => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LabError::Busy { dir: dir.clone(), seconds: self.config.lock_wait.as_secs() });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        // For people looking at the file: who holds it.
        let _ = file.set_len(0).and_then(|_| writeln!(file, "{}", std::process::id()));
        Ok(LabLock { _file: file })
    }

    /// Runs streams in order (bronze, silver, gold), under the lab's lock.
    pub async fn run(&self, which: Streams, dedup: bool) -> Result<Vec<StreamRun>, LabError> {
        let kafka = match which {
            Streams::All | Streams::Bronze => Some(self.kafka().await?),
            _ => None,
        };
        let _lock = self.lock()?;
        self.run_locked(kafka.as_ref(), which, dedup).await
    }

    async fn run_locked(&self, kafka: Option<&Kafka>, which: Streams, dedup: bool) -> Result<Vec<StreamRun>, LabError> {
        let mut runs = vec![];
        if let (Streams::All | Streams::Bronze, Some(kafka)) = (which, kafka) {
            runs.push(streams::bronze::run(self, kafka).await?);
        }
        if matches!(which, Streams::All | Streams::Silver) {
            runs.push(streams::silver::run(self).await?);
        }
        if matches!(which, Streams::All | Streams::Gold) {
            runs.push(streams::gold::run(self, dedup).await?);
        }
        Ok(runs)
    }

    /// Sends events to the lab's topic (created if missing); returns where each landed.
    pub async fn produce(&self, events: &[OrderEvent]) -> Result<Vec<Sent>, LabError> {
        let kafka = self.kafka().await?;
        self.produce_with(&kafka, events).await
    }

    async fn produce_with(&self, kafka: &Kafka, events: &[OrderEvent]) -> Result<Vec<Sent>, LabError> {
        kafka.ensure_topic(&self.config.topic, self.config.partitions).await?;
        let producer = kafka.producer()?;
        let messages: Vec<(String, String)> = events.iter().map(|e| (e.order_id.to_string(), e.to_json())).collect();
        Ok(producer.send_all(&self.config.topic, &messages).await?)
    }

    /// SPEC §5: the topic deleted (and really gone) and recreated, the tables and state removed.
    pub async fn reset(&self, force: bool) -> Result<(), LabError> {
        let kafka = self.kafka().await?;
        let _lock = self.lock()?;
        self.reset_locked(&kafka, force).await
    }

    async fn reset_locked(&self, kafka: &Kafka, force: bool) -> Result<(), LabError> {
        if !self.config.uses_local_broker() && !force {
            return Err(LabError::ResetRefused { topic: self.config.topic.clone(), brokers: kafka.brokers().into() });
        }
        self.tables.remove_all()?;
        let state = self.config.data_dir.join("state");
        match std::fs::remove_dir_all(&state) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(LabError::Io { path: state, source: e }),
            _ => {}
        }
        kafka.delete_topic(&self.config.topic).await?;
        kafka.ensure_topic(&self.config.topic, self.config.partitions).await?;
        Ok(())
    }

    /// Checks the tables against bronze (SPEC §4), under the lab's lock: a check beside a run
    /// would compare bronze's new rows with silver and gold that have not read them yet.
    pub async fn check(&self) -> Result<Report, LabError> {
        let _lock = self.lock()?;
        Ok(check::run(self).await?)
    }

    /// Resets the lab, plays the scenario's steps, then checks; `progress` hears each step.
    pub async fn play(
        &self,
        scenario: &Scenario,
        dedup: bool,
        force: bool,
        mut progress: impl FnMut(&str),
    ) -> Result<Report, LabError> {
        let kafka = self.kafka().await?;
        let _lock = self.lock()?;
        self.reset_locked(&kafka, force).await?;
        for step in &scenario.steps {
            match step {
                Step::Send(batch) => {
                    let sent = self.produce_with(&kafka, scenario.batch(batch)?).await?;
                    progress(&format!("sent batch {batch}: {} events", sent.len()));
                }
                Step::Run => {
                    for run in self.run_locked(Some(&kafka), Streams::All, dedup).await? {
                        progress(&run.to_string());
                    }
                }
            }
        }
        Ok(check::run(self).await?)
    }
}
