//! Reading a run's ranges: this thread polls the consumer and copies each message out of it, in
//! chunks; a second thread decodes the chunks as they come, straight into Arrow builders, so decoding runs beside the polling
//! (on the machine's other core) instead of after it.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::batch::OrderRows;
use super::{FlowError, Range};
use crate::engine::event::EventRef;
use crate::kafka::KafkaError;

/// How long bronze waits for the next message of a range it knows exists.
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Messages handed to the decoder at a time.
const CHUNK: usize = 4096;

/// A landed message that did not parse.
pub(super) struct Rejected {
    pub(super) partition: i32,
    pub(super) offset: i64,
    pub(super) kafka_timestamp: Option<i64>,
    pub(super) value: String,
    pub(super) reason: String,
}

/// What one run read: per partition, its rows decoded straight into `bronze_orders`' columns in
/// offset order; and the rejects.
pub struct Read {
    pub(super) rows: BTreeMap<i32, OrderRows>,
    pub(super) rejects: Vec<Rejected>,
    pub(super) ingested_at: i64,
    pub(super) good: u64,
    pub(super) rejected: u64,
    pub(super) new_rejects: u64,
}

/// Where a polled message landed. Its value is `bytes[previous end..end]` of its chunk.
struct Polled {
    partition: i32,
    offset: i64,
    kafka_timestamp: Option<i64>,
    /// Rejects up to this offset of the partition are stored already.
    rejects_done: Option<i64>,
    end: usize,
}

/// Messages copied out of the consumer's buffers: their values end to end in one allocation.
struct Chunk {
    bytes: Vec<u8>,
    messages: Vec<Polled>,
}

impl Chunk {
    fn with_capacity(n: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(n * 128),
            messages: Vec::with_capacity(n),
        }
    }
}

impl Read {
    fn new(ranges: &[Range], ingested_at: i64) -> Self {
        let rows = ranges
            .iter()
            .filter(|r| r.next < r.end)
            .map(|r| {
                (
                    r.partition,
                    OrderRows::with_capacity((r.end - r.next) as usize),
                )
            })
            .collect();
        Self {
            rows,
            rejects: vec![],
            ingested_at,
            good: 0,
            rejected: 0,
            new_rejects: 0,
        }
    }

    /// Decodes a chunk's messages into rows, or rejects (counted as new unless stored already).
    fn decode(&mut self, chunk: &Chunk) {
        let mut start = 0;
        for m in &chunk.messages {
            let value = &chunk.bytes[start..m.end];
            start = m.end;
            match EventRef::parse(value) {
                Ok(event) => {
                    self.good += 1;
                    if let Some(rows) = self.rows.get_mut(&m.partition) {
                        rows.append(
                            m.partition,
                            m.offset,
                            m.kafka_timestamp,
                            self.ingested_at,
                            &event,
                        );
                    }
                }
                Err(invalid) => {
                    self.rejected += 1;
                    if m.rejects_done.is_none_or(|done| m.offset > done) {
                        self.new_rejects += 1;
                        self.rejects.push(Rejected {
                            partition: m.partition,
                            offset: m.offset,
                            kafka_timestamp: m.kafka_timestamp,
                            value: String::from_utf8_lossy(value).into_owned(),
                            reason: invalid.to_string(),
                        });
                    }
                }
            }
        }
    }
}

/// Reads every range of `ranges` with work, decoding beside the polling.
pub(super) fn read(
    reader: &BaseConsumer,
    topic: &str,
    ranges: &[Range],
    ingested_at: i64,
) -> Result<Read, FlowError> {
    let mut out = Read::new(ranges, ingested_at);
    let (chunks, decoded) = mpsc::sync_channel::<Chunk>(8);
    std::thread::scope(|scope| {
        let decoder = scope.spawn(move || {
            for chunk in decoded {
                out.decode(&chunk);
            }
            out
        });
        let polled = poll(reader, topic, ranges, |chunk| {
            // The decoder only stops early by panicking, which the join below reports.
            let _ = chunks.send(chunk);
        });
        drop(chunks);
        let out = decoder.join().expect("bronze's decoder thread panicked");
        polled.map(|()| out)
    })
}

/// Polls each range from its next offset to its end, handing the messages to `hand` in chunks.
fn poll(
    reader: &BaseConsumer,
    topic: &str,
    ranges: &[Range],
    mut hand: impl FnMut(Chunk),
) -> Result<(), FlowError> {
    let mut assignment = TopicPartitionList::new();
    // Last offset each partition still owes us.
    let mut owed: BTreeMap<i32, (i64, Option<i64>)> = BTreeMap::new();
    for r in ranges.iter().filter(|r| r.next < r.end) {
        assignment
            .add_partition_offset(topic, r.partition, Offset::Offset(r.next))
            .map_err(KafkaError::from)?;
        owed.insert(r.partition, (r.end - 1, r.rejects_done));
    }
    if owed.is_empty() {
        return Ok(());
    }
    reader.assign(&assignment).map_err(KafkaError::from)?;
    let mut position: BTreeMap<i32, i64> =
        ranges.iter().map(|r| (r.partition, r.next - 1)).collect();
    let mut chunk = Chunk::with_capacity(CHUNK);
    let mut last_message = Instant::now();
    while !owed.is_empty() {
        let Some(message) = reader.poll(Duration::from_millis(500)) else {
            if last_message.elapsed() > STALL_TIMEOUT {
                let (&partition, &(end, _)) = owed.iter().next().expect("owed is not empty");
                return Err(FlowError::Stalled {
                    topic: topic.into(),
                    partition,
                    at: position.get(&partition).copied().unwrap_or(-1) + 1,
                    end: end + 1,
                });
            }
            continue;
        };
        let message = message.map_err(KafkaError::from)?;
        last_message = Instant::now();
        let partition = message.partition();
        let offset = message.offset();
        let Some(&(last, rejects_done)) = owed.get(&partition) else {
            continue;
        };
        // Past the range, or read already (a reused consumer may hold what it fetched before).
        if offset > last || position.get(&partition).is_some_and(|&at| offset <= at) {
            continue;
        }
        position.insert(partition, offset);
        chunk
            .bytes
            .extend_from_slice(message.payload().unwrap_or_default());
        chunk.messages.push(Polled {
            partition,
            offset,
            kafka_timestamp: message.timestamp().to_millis().map(|ms| ms * 1000),
            rejects_done,
            end: chunk.bytes.len(),
        });
        if chunk.messages.len() == CHUNK {
            hand(std::mem::replace(&mut chunk, Chunk::with_capacity(CHUNK)));
        }
        if offset == last {
            owed.remove(&partition);
        }
    }
    if !chunk.messages.is_empty() {
        hand(chunk);
    }
    Ok(())
}
