//! A lab: one data directory (tables, gold state, lock) and one topic. Everything a command does
//! to a pipeline goes through here: produce, run the flows and the check (`pipeline.rs`), reset,
//! play a scenario. The lab owns its lock and its history; the flows below it see only a
//! [`FlowContext`](crate::engine::flow::FlowContext).

use std::path::PathBuf;
use std::sync::Arc;

use app::model::SentAt;

use crate::config::Config;
use crate::engine::course::check::Report;
use crate::engine::event::OrderEvent;
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;
use crate::engine::scenario::{Scenario, ScenarioError, Step};
use crate::engine::tables::{TableError, Tables};
use crate::kafka::broker::{BrokerError, Started};
use crate::kafka::{Kafka, KafkaError, Producer, SharedClients};
use crate::store::{History, HistoryError};

mod lock;
mod pipeline;
pub mod project;
pub mod reading;
mod tidy;
pub mod workspace;

pub use lock::LabLock;

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
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Broker(#[from] BrokerError),
    #[error(transparent)]
    Kafka(#[from] KafkaError),
    #[error(transparent)]
    Flow(#[from] FlowError),
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("instructor token: {0}")]
    Auth(String),
    #[error("lab {lab} was deleted")]
    Deleted { lab: String },
}

/// Which streams a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    All,
    Bronze,
    Silver,
    Gold,
}

#[derive(Clone)]
pub struct Lab {
    pub config: Config,
    pub tables: Tables,
    /// Where runs are recorded; `None` for engine-only uses (benchmarks).
    history: Option<History>,
    /// Who starts what this handle does, for the history: cli, api, schedule, ...
    started_by: &'static str,
    /// Set when the server deletes the lab: a run or send already under way stops at the lock
    /// (or before sending) instead of bringing back its folder, topic or history.
    retired: Arc<std::sync::atomic::AtomicBool>,
    /// The Kafka connection, producer and bronze consumers this lab's runs and sends use: the
    /// server's labs share one; a lab made alone has its own, kept as long as the lab.
    shared: Arc<SharedClients>,
    /// Set on the server's labs: pipelines read files only from the lab's landing/ folder.
    landing_only: bool,
    /// How its project is read into a graph, and the last graph read (`reading.rs`).
    reading: Arc<reading::Reading>,
}

impl Lab {
    /// A lab without a history: nothing is recorded.
    pub fn new(config: Config) -> Self {
        let tables = Tables::new(config.data_dir.join("tables"), config.crash_at.clone());
        Self {
            config,
            tables,
            history: None,
            started_by: "cli",
            retired: Default::default(),
            shared: Default::default(),
            landing_only: false,
            reading: Default::default(),
        }
    }

    /// A lab that records its runs, checks, sends and resets in its history database.
    pub async fn open(config: Config) -> Result<Self, LabError> {
        let history = History::open(&config.history).await?;
        Ok(Self::with_history(config, history))
    }

    /// A lab recording in a history already open (the server's labs share one).
    pub fn with_history(config: Config, history: History) -> Self {
        Self {
            history: Some(history),
            ..Self::new(config)
        }
    }

    /// The same lab as the server holds it: using the server's shared Kafka clients, its
    /// pipelines reading files only from its landing/ folder.
    pub fn sharing(self, shared: Arc<SharedClients>) -> Self {
        Self {
            shared,
            landing_only: true,
            ..self
        }
    }

    /// The same lab, with what it does recorded as started by `who`.
    pub fn started_by(&self, who: &'static str) -> Self {
        Self {
            started_by: who,
            ..self.clone()
        }
    }

    /// Who starts what this handle does, as the history names it.
    pub fn started_by_name(&self) -> &'static str {
        self.started_by
    }

    /// Marks the lab deleted (every handle of it shares the mark, and refuses to go on), then
    /// takes its lock once the run that may hold it ends. Undone by [`Lab::unretire`].
    pub fn retire_and_lock(&self) -> Result<LabLock, LabError> {
        self.retired
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.lock_file().inspect_err(|_| self.unretire())
    }

    /// The delete failed: the lab goes on.
    pub fn unretire(&self) {
        self.retired
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn refuse_if_retired(&self) -> Result<(), LabError> {
        match self.is_retired() {
            true => Err(LabError::Deleted {
                lab: self.config.lab.clone(),
            }),
            false => Ok(()),
        }
    }

    pub fn history(&self) -> Option<&History> {
        self.history.as_ref()
    }

    /// What the lab's flows may touch: its tables, topic, state folder and crash point.
    pub fn flows(&self) -> FlowContext {
        FlowContext {
            tables: self.tables.clone(),
            topic: self.config.topic.clone(),
            partitions: self.config.partitions,
            state_dir: self.config.state_dir(),
            data_dir: self.config.data_dir.clone(),
            landing_only: self.landing_only,
            lab: self.config.lab.clone(),
            brokers: self.config.bootstrap_servers(),
            kafka: None,
            crash_at: self.config.crash_at.clone(),
        }
    }

    /// Writes to the history; a failure there is reported, never allowed to undo a run.
    async fn record<F, Fut>(&self, what: &str, write: F)
    where
        F: FnOnce(History) -> Fut,
        Fut: std::future::Future<Output = Result<(), HistoryError>>,
    {
        if let Some(history) = self.history.clone()
            && let Err(e) = write(history).await
        {
            tracing::warn!("could not record {what} in the history: {e}");
        }
    }

    /// The lab's connection to Kafka (shared, made at first use), starting the local broker if
    /// it is the one and nothing listens.
    pub async fn kafka(&self) -> Result<Arc<Kafka>, LabError> {
        self.ensure_broker().await?;
        Ok(self.shared.kafka(&self.config.bootstrap_servers()).await?)
    }

    /// Starts the local broker if it is the lab's and nothing listens on its port.
    async fn ensure_broker(&self) -> Result<(), LabError> {
        if self.config.uses_local_broker()
            && !self.config.local_broker.listening()
            && let Started::Now { pid } = self.config.local_broker.start().await?
        {
            eprintln!(
                "started the local Kafka broker on 127.0.0.1:{} (pid {pid})",
                self.config.local_broker.port
            );
        }
        Ok(())
    }

    /// Takes the lab's lock, waiting up to `lock_wait` for a run that holds it.
    pub fn lock(&self) -> Result<LabLock, LabError> {
        self.refuse_if_retired()?;
        let lock = self.lock_file()?;
        // Deleted while this waited for the lock: nothing more happens to it.
        self.refuse_if_retired()?;
        Ok(lock)
    }

    /// The lab's lock if no run holds it now, without waiting: `None` while one does.
    pub fn try_lock(&self) -> Result<Option<LabLock>, LabError> {
        self.refuse_if_retired()?;
        match lock::take(&self.config.data_dir, std::time::Duration::ZERO) {
            Ok(lock) => Ok(Some(lock)),
            Err(LabError::Busy { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn lock_file(&self) -> Result<LabLock, LabError> {
        lock::take(&self.config.data_dir, self.config.lock_wait)
    }

    /// Sends events to the lab's topic (created if missing); returns where each landed.
    /// `source` says what sent them (form, api, scenario:course:3, ...), for the history.
    pub async fn produce(
        &self,
        events: &[OrderEvent],
        source: &str,
    ) -> Result<Vec<SentAt>, LabError> {
        let kafka = self.kafka().await?;
        let producer = self.shared.producer(&kafka).await?;
        self.produce_with(&kafka, producer, events, source).await
    }

    async fn produce_with(
        &self,
        kafka: &Kafka,
        producer: &Producer,
        events: &[OrderEvent],
        source: &str,
    ) -> Result<Vec<SentAt>, LabError> {
        self.refuse_if_retired()?;
        kafka
            .ensure_topic(&self.config.topic, self.config.partitions)
            .await?;
        let messages: Vec<(String, String)> = events
            .iter()
            .map(|e| (e.order_id.to_string(), e.to_json()))
            .collect();
        let sent = producer.send_all(&self.config.topic, &messages).await?;
        let (lab, topic, landed) = (&self.config.lab, &self.config.topic, &sent);
        self.record("sent events", |h| async move {
            h.record_produced(lab, topic, source, events, landed).await
        })
        .await;
        Ok(sent)
    }

    /// SPEC §5: the topic deleted (and really gone) and recreated, the tables and state removed.
    pub async fn reset(&self, force: bool) -> Result<(), LabError> {
        let kafka = self.kafka().await?;
        let _lock = self.lock()?;
        self.reset_locked(&kafka, force).await
    }

    async fn reset_locked(&self, kafka: &Kafka, force: bool) -> Result<(), LabError> {
        if !self.config.uses_local_broker() && !force {
            return Err(LabError::ResetRefused {
                topic: self.config.topic.clone(),
                brokers: kafka.brokers().into(),
            });
        }
        self.tables.remove_all()?;
        let state = self.flows().state_dir;
        match std::fs::remove_dir_all(&state) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(LabError::Io {
                    path: state,
                    source: e,
                });
            }
            _ => {}
        }
        kafka.delete_topic(&self.config.topic).await?;
        kafka
            .ensure_topic(&self.config.topic, self.config.partitions)
            .await?;
        let (lab, topic) = (&self.config.lab, &self.config.topic);
        self.record(
            "a reset",
            |h| async move { h.record_reset(lab, topic).await },
        )
        .await;
        Ok(())
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
        let producer = self.shared.producer(&kafka).await?;
        let _lock = self.lock()?;
        self.reset_locked(&kafka, force).await?;
        for step in &scenario.steps {
            match step {
                Step::Send(batch) => {
                    let source = format!("scenario:{}:{batch}", scenario.name);
                    let sent = self
                        .produce_with(&kafka, producer, scenario.batch(batch)?, &source)
                        .await?;
                    progress(&format!("sent batch {batch}: {} events", sent.len()));
                }
                Step::Run => {
                    let (events, _) = self
                        .run_recorded(Some(&kafka), Some(Streams::All), dedup, false, |_| {})
                        .await?;
                    events.iter().for_each(|event| progress(&event.to_string()));
                }
            }
        }
        self.check_locked().await
    }
}
