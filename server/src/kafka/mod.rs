//! Talking to Kafka: topics (create, delete and wait, partitions, log offsets), the idempotent
//! producer, and the consumer settings bronze reads with. Bronze never commits offsets to a group;
//! `group.rs` reads in a consumer group for the course's demo of one.

pub mod broker;
pub mod group;
mod shared;

pub use shared::{Reader, SharedClients};

use std::time::{Duration, Instant};

use app::model::SentAt;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError as RdKafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

/// How long a metadata or offset request may take before Kafka counts as unreachable.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long topic creation and deletion may take to settle on the broker.
const TOPIC_SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    #[error("cannot reach Kafka at {brokers}: {source}")]
    Unreachable {
        brokers: String,
        source: RdKafkaError,
    },
    #[error("Kafka refused to {action} topic {topic}: {reason}")]
    Topic {
        action: &'static str,
        topic: String,
        reason: String,
    },
    #[error("topic {topic} did not {what} within {seconds} s")]
    Timeout {
        topic: String,
        what: &'static str,
        seconds: u64,
    },
    #[error("cannot read the log offsets of topic {topic}{}: {source}", partition.map(|p| format!(" partition {p}")).unwrap_or_default())]
    Offsets {
        topic: String,
        /// The partition whose answer failed; `None` when the request as a whole did.
        partition: Option<i32>,
        source: RdKafkaError,
    },
    #[error("cannot send to topic {topic}: {source}")]
    Send { topic: String, source: RdKafkaError },
    #[error("Kafka client: {0}")]
    Client(#[from] RdKafkaError),
}

/// A connection to one Kafka cluster.
pub struct Kafka {
    brokers: String,
    admin: AdminClient<DefaultClientContext>,
    /// Used only for metadata and log offsets; never assigned, never commits.
    metadata: BaseConsumer,
    /// Bronze's consumers between runs, unassigned: a run takes one instead of connecting anew.
    readers: shared::Pool,
}

impl Kafka {
    /// Connects lazily: the first request tells whether the brokers answer.
    pub fn new(brokers: &str) -> Result<Self, KafkaError> {
        let admin = base_config(brokers).create()?;
        let metadata = base_config(brokers)
            .set("group.id", "reckon-metadata")
            .set("enable.auto.commit", "false")
            .create()?;
        Ok(Self {
            brokers: brokers.to_string(),
            admin,
            metadata,
            readers: shared::Pool::default(),
        })
    }

    pub fn brokers(&self) -> &str {
        &self.brokers
    }

    /// Whether the cluster answers a metadata request within `timeout`.
    pub fn answers(&self, timeout: Duration) -> bool {
        blocking(|| self.metadata.fetch_metadata(None, timeout)).is_ok()
    }

    /// The partition ids of `topic`, or `None` when it does not exist.
    pub fn partitions(&self, topic: &str) -> Result<Option<Vec<i32>>, KafkaError> {
        let metadata = blocking(|| self.metadata.fetch_metadata(Some(topic), REQUEST_TIMEOUT))
            .map_err(|source| KafkaError::Unreachable {
                brokers: self.brokers.clone(),
                source,
            })?;
        let Some(t) = metadata.topics().iter().find(|t| t.name() == topic) else {
            return Ok(None);
        };
        if t.error().is_some() || t.partitions().is_empty() {
            return Ok(None);
        }
        let mut ids: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
        ids.sort_unstable();
        Ok(Some(ids))
    }

    /// Whether every partition of `topic` has a leader whose log answers, so produce and fetch
    /// will work.
    fn ready(&self, topic: &str, partitions: i32) -> bool {
        let Ok(metadata) = blocking(|| self.metadata.fetch_metadata(Some(topic), REQUEST_TIMEOUT))
        else {
            return false;
        };
        let led = metadata.topics().iter().any(|t| {
            t.name() == topic
                && t.error().is_none()
                && t.partitions().len() == partitions as usize
                && t.partitions()
                    .iter()
                    .all(|p| p.leader() >= 0 && p.error().is_none())
        });
        let ids: Vec<i32> = (0..partitions).collect();
        led && blocking(|| self.ask_log_ranges(topic, &ids).is_ok())
    }

    /// Creates `topic` unless it exists; returns its partitions once all have a leader.
    pub async fn ensure_topic(&self, topic: &str, partitions: i32) -> Result<Vec<i32>, KafkaError> {
        if let Some(existing) = self.partitions(topic)? {
            return Ok(existing);
        }
        let started = Instant::now();
        loop {
            let new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(-1));
            let options = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
            let results = self.admin.create_topics(&[new_topic], &options).await?;
            match results.into_iter().next() {
                Some(Ok(_)) | Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => break,
                // A topic being deleted cannot be created again until the deletion completes.
                Some(Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)))
                    if started.elapsed() < TOPIC_SETTLE_TIMEOUT =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Some(Err((_, code))) => {
                    return Err(KafkaError::Topic {
                        action: "create",
                        topic: topic.into(),
                        reason: code.to_string(),
                    });
                }
                None => break,
            }
        }
        let parts = self
            .partitions(topic)?
            .map_or(partitions, |p| p.len() as i32);
        self.wait(topic, "get a leader for every partition", || {
            self.ready(topic, parts)
        })
        .await?;
        Ok(self.partitions(topic)?.unwrap_or_default())
    }

    /// Deletes `topic` and returns once Kafka has really removed it.
    pub async fn delete_topic(&self, topic: &str) -> Result<(), KafkaError> {
        if self.partitions(topic)?.is_none() {
            return Ok(());
        }
        let options = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
        let results = self.admin.delete_topics(&[topic], &options).await?;
        if let Some(Err((_, code))) = results.into_iter().next()
            && code != RDKafkaErrorCode::UnknownTopicOrPartition
        {
            return Err(KafkaError::Topic {
                action: "delete",
                topic: topic.into(),
                reason: code.to_string(),
            });
        }
        self.wait(topic, "disappear after deletion", || {
            matches!(self.partitions(topic), Ok(None))
        })
        .await
    }

    async fn wait(
        &self,
        topic: &str,
        what: &'static str,
        done: impl Fn() -> bool,
    ) -> Result<(), KafkaError> {
        let started = Instant::now();
        while !done() {
            if started.elapsed() > TOPIC_SETTLE_TIMEOUT {
                return Err(KafkaError::Timeout {
                    topic: topic.into(),
                    what,
                    seconds: TOPIC_SETTLE_TIMEOUT.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// The log start and end offsets of each of `partitions`, in their order: the next offset
    /// to be written to a partition is its `end`. Two requests in all, the starts and the ends,
    /// each for every partition at once and both in flight together.
    ///
    /// A topic just created has leaders in the metadata a moment before its logs answer: the
    /// broker says "not leader" for that moment, so those answers are asked again, within the
    /// request timeout, instead of failing the run or page that asked first.
    pub fn log_ranges(
        &self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Vec<(i64, i64)>, KafkaError> {
        let started = Instant::now();
        blocking(|| {
            loop {
                match self.ask_log_ranges(topic, partitions) {
                    Err(KafkaError::Offsets { source, .. })
                        if leader_moving(&source) && started.elapsed() < REQUEST_TIMEOUT =>
                    {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    answer => break answer,
                }
            }
        })
    }

    /// The log start and end offsets of one partition (`log_ranges` for one).
    pub fn log_offsets(&self, topic: &str, partition: i32) -> Result<(i64, i64), KafkaError> {
        let ranges = self.log_ranges(topic, &[partition])?;
        Ok(ranges[0])
    }

    /// One try of `log_ranges`.
    fn ask_log_ranges(
        &self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Vec<(i64, i64)>, KafkaError> {
        if partitions.is_empty() {
            return Ok(vec![]);
        }
        // A "time" of `Offset::Beginning` asks for a log's first offset, `Offset::End` for its end.
        let ask = |at: Offset| -> Result<Vec<i64>, KafkaError> {
            let failed = |partition: Option<i32>| {
                move |source| KafkaError::Offsets {
                    topic: topic.into(),
                    partition,
                    source,
                }
            };
            let mut wanted = TopicPartitionList::with_capacity(partitions.len());
            for &p in partitions {
                wanted
                    .add_partition_offset(topic, p, at)
                    .map_err(failed(Some(p)))?;
            }
            let answered = self
                .metadata
                .offsets_for_times(wanted, REQUEST_TIMEOUT)
                .map_err(failed(None))?;
            partitions
                .iter()
                .map(|&p| {
                    let unanswered =
                        || RdKafkaError::OffsetFetch(RDKafkaErrorCode::UnknownPartition);
                    let elem = answered.find_partition(topic, p).ok_or_else(unanswered);
                    let elem = elem.map_err(failed(Some(p)))?;
                    elem.error().map_err(failed(Some(p)))?;
                    match elem.offset() {
                        Offset::Offset(n) => Ok(n),
                        _ => Err(failed(Some(p))(unanswered())),
                    }
                })
                .collect()
        };
        let (starts, ends) = std::thread::scope(|scope| {
            let ends = scope.spawn(|| ask(Offset::End));
            let starts = ask(Offset::Beginning);
            (starts, ends.join().expect("a log offsets request panicked"))
        });
        Ok(starts?.into_iter().zip(ends?).collect())
    }

    /// A producer as SPEC §1 asks: idempotent, keys partitioned as Kafka's Java client does.
    pub fn producer(&self) -> Result<Producer, KafkaError> {
        let inner = base_config(&self.brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("partitioner", "murmur2_random")
            .set("linger.ms", "5")
            .create()?;
        Ok(Producer { inner })
    }

    /// A consumer for bronze: assigned partitions only, no group commits, no automatic resets.
    /// One left by an earlier run is reused (connected already); it goes back when dropped.
    pub fn reader(&self) -> Result<Reader<'_>, KafkaError> {
        self.readers.take(|| self.new_reader())
    }

    fn new_reader(&self) -> Result<BaseConsumer, KafkaError> {
        Ok(base_config(&self.brokers)
            .set("group.id", "reckon-bronze")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "error")
            .set("enable.partition.eof", "false")
            .set("queued.min.messages", "200000")
            .set("fetch.max.bytes", "52428800")
            // A run knows where it ends, so the broker never needs to hold a fetch for data
            // to come; at librdkafka's 500 ms (its default for both), a fetch held over from
            // the run before, or a partition's backoff, made about one bronze run in sixty wait
            // half a second for its first messages (`first_chunk_ms` at debug level).
            .set("fetch.wait.max.ms", "20")
            .set("fetch.error.backoff.ms", "20")
            // A partition whose local queue holds `queued.min.messages` waits this long before
            // its next fetch: at librdkafka's 1,000 ms, a run reading a backlog of more than
            // that (a reset lab replaying its topic) stalled a second each time the fetcher got
            // ahead of the decoding, and the bench's one-pass raw consume of 1 M messages took
            // 1.2 s or 0.3 s by chance.
            .set("fetch.queue.backoff.ms", "20")
            .create()?)
    }
}

impl Kafka {
    /// The last `count` messages of a partition whose log spans `log_start..log_end`, oldest
    /// first, as (offset, key, value) text: for people looking at the topic.
    pub fn last_messages(
        &self,
        topic: &str,
        partition: i32,
        (log_start, log_end): (i64, i64),
        count: i64,
    ) -> Result<Vec<(i64, Option<String>, String)>, KafkaError> {
        let first = log_start.max(log_end - count);
        if first >= log_end {
            return Ok(vec![]);
        }
        let reader = self.reader()?;
        let mut assignment = TopicPartitionList::new();
        assignment.add_partition_offset(topic, partition, Offset::Offset(first))?;
        reader.assign(&assignment)?;
        let mut messages = vec![];
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        blocking(|| {
            while messages
                .last()
                .is_none_or(|(offset, _, _)| offset + 1 < log_end)
                && Instant::now() < deadline
            {
                let Some(message) = reader.poll(Duration::from_millis(200)) else {
                    continue;
                };
                let message = message?;
                let text =
                    |bytes: Option<&[u8]>| bytes.map(|b| String::from_utf8_lossy(b).into_owned());
                messages.push((
                    message.offset(),
                    text(message.key()),
                    text(message.payload()).unwrap_or_default(),
                ));
            }
            Ok(messages)
        })
    }
}

/// The producer every send goes through.
pub struct Producer {
    inner: FutureProducer,
}

impl Producer {
    /// Sends one message and returns where Kafka stored it.
    pub async fn send(&self, topic: &str, key: &str, value: &str) -> Result<SentAt, KafkaError> {
        let record = FutureRecord::to(topic).key(key).payload(value);
        self.inner
            .send(record, Duration::from_secs(30))
            .await
            .map(|d| SentAt {
                partition: d.partition,
                offset: d.offset,
            })
            .map_err(|(source, _)| KafkaError::Send {
                topic: topic.into(),
                source,
            })
    }

    /// Sends messages in order, all in flight at once, and returns where each landed.
    pub async fn send_all(
        &self,
        topic: &str,
        messages: &[(String, String)],
    ) -> Result<Vec<SentAt>, KafkaError> {
        let sends = messages
            .iter()
            .map(|(key, value)| self.send(topic, key, value));
        futures::future::try_join_all(sends).await
    }
}

/// Whether Kafka refused only because a partition's leader is still being settled.
fn leader_moving(error: &RdKafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::NotLeaderForPartition
                | RDKafkaErrorCode::LeaderNotAvailable
                | RDKafkaErrorCode::NotCoordinator
        )
    )
}

fn base_config(brokers: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("allow.auto.create.topics", "false")
        // librdkafka logs every refused connection; Reckon reports failures itself.
        .set("log_level", "3");
    config
}

/// Runs a blocking librdkafka call without stalling the async runtime's other tasks.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
