//! Clients kept for a whole process: one connection to the cluster and one producer, made at
//! first use, and bronze's consumers between runs. Making them costs a connection and, for a
//! consumer, up to a tenth of a second to close: more than a 10-event run's reading.

use std::sync::{Arc, Mutex};

use rdkafka::TopicPartitionList;
use rdkafka::consumer::{BaseConsumer, Consumer};

use super::{Kafka, KafkaError, Producer};

/// The connection and the producer every run and send of a process (the server's labs, or one
/// command) goes through.
#[derive(Default)]
pub struct SharedClients {
    kafka: tokio::sync::OnceCell<Arc<Kafka>>,
    producer: tokio::sync::OnceCell<Producer>,
}

impl SharedClients {
    /// The shared connection, made to `brokers` the first time (every lab of a server names
    /// the same).
    pub async fn kafka(&self, brokers: &str) -> Result<Arc<Kafka>, KafkaError> {
        let kafka = self
            .kafka
            .get_or_try_init(|| async { Kafka::new(brokers).map(Arc::new) })
            .await?;
        Ok(kafka.clone())
    }

    /// The shared producer, made from `kafka` the first time.
    pub async fn producer(&self, kafka: &Kafka) -> Result<&Producer, KafkaError> {
        self.producer
            .get_or_try_init(|| async { kafka.producer() })
            .await
    }
}

/// Consumers not in use, none of them assigned.
#[derive(Default)]
pub(super) struct Pool {
    idle: Mutex<Vec<BaseConsumer>>,
}

impl Pool {
    /// An idle consumer, or a new one from `make`.
    pub(super) fn take(
        &self,
        make: impl FnOnce() -> Result<BaseConsumer, KafkaError>,
    ) -> Result<Reader<'_>, KafkaError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let consumer = match idle {
            Some(consumer) => consumer,
            None => make()?,
        };
        Ok(Reader {
            consumer: Some(consumer),
            pool: self,
        })
    }
}

/// A consumer taken from the pool; dropped, it is unassigned (it stops fetching) and goes back.
pub struct Reader<'a> {
    consumer: Option<BaseConsumer>,
    pool: &'a Pool,
}

impl Reader<'_> {
    /// Closes the consumer instead of putting it back: it may hold an answer (an error, a
    /// message) that belongs to this run only.
    pub fn discard(mut self) {
        self.consumer.take();
    }
}

impl std::ops::Deref for Reader<'_> {
    type Target = BaseConsumer;

    fn deref(&self) -> &BaseConsumer {
        self.consumer
            .as_ref()
            .expect("a reader holds its consumer until dropped")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        let Some(consumer) = self.consumer.take() else {
            return;
        };
        // One that cannot be unassigned is closed instead of kept.
        if consumer.assign(&TopicPartitionList::new()).is_ok() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.push(consumer);
        }
    }
}

/// Shows which cluster: the clients have nothing more to say.
impl std::fmt::Debug for super::Kafka {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kafka")
            .field("brokers", &self.brokers())
            .finish_non_exhaustive()
    }
}
