//! Reading a run's ranges: this thread polls the consumer and copies each message out of it, in
//! chunks; a decoder for each other core takes the chunks as they come and decodes each straight
//! into Arrow columns of its own, so decoding runs beside the polling; a writer thread
//! (`write.rs`) puts the chunks' columns back in the order they were polled (a partition's rows
//! stay in offset order) and streams them into the run's Parquet file as they come.

use std::collections::BTreeMap;
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;
use deltalake::kernel::Add;
use deltalake::writer::RecordBatchWriter;
use rdkafka::consumer::BaseConsumer;
use rdkafka::message::Message;

use super::batch::{OrderRows, Rejected, rejects_batch};
use super::{FlowError, Range, ms, write};
use crate::engine::event::EventRef;
use crate::engine::tables::TableError;
use crate::kafka::KafkaError;
use crate::process::cpu::{Clock, used as cpu};

use crate::engine::streaming::kafka::STALL_TIMEOUT;
/// Messages handed to a decoder at a time.
const CHUNK: usize = 4096;
/// Decoders at most, however many cores the machine has.
const MAX_DECODERS: usize = 4;

/// What one run read: the files its rows were written to (not committed yet), and the rejects.
pub struct Read {
    pub(super) files: Vec<Add>,
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
    /// Its place among the run's chunks, in polling order.
    index: usize,
    bytes: Vec<u8>,
    messages: Vec<Polled>,
}

impl Chunk {
    fn with_capacity(index: usize, n: usize) -> Self {
        Self {
            index,
            bytes: Vec::with_capacity(n * 128),
            messages: Vec::with_capacity(n),
        }
    }
}

/// One chunk decoded: its rows (a batch per partition, for the writer), its rejects and its
/// counts.
struct Decoded {
    index: usize,
    rows: Result<Vec<RecordBatch>, TableError>,
    rejects: Vec<Rejected>,
    good: u64,
    rejected: u64,
    new_rejects: u64,
}

impl Decoded {
    /// Decodes a chunk's messages into rows, or rejects (counted as new unless stored already).
    fn of(chunk: &Chunk, ingested_at: i64) -> Self {
        // Each partition's builders sized to its messages in the chunk (most of them parse).
        let mut counts: BTreeMap<i32, usize> = BTreeMap::new();
        for m in &chunk.messages {
            *counts.entry(m.partition).or_default() += 1;
        }
        let mut rows: BTreeMap<i32, OrderRows> = counts
            .into_iter()
            .map(|(partition, n)| (partition, OrderRows::with_capacity(n)))
            .collect();
        let mut out = Self {
            index: chunk.index,
            rows: Ok(vec![]),
            rejects: vec![],
            good: 0,
            rejected: 0,
            new_rejects: 0,
        };
        let mut start = 0;
        for m in &chunk.messages {
            let value = &chunk.bytes[start..m.end];
            start = m.end;
            match EventRef::parse(value) {
                Ok(event) => {
                    out.good += 1;
                    if let Some(rows) = rows.get_mut(&m.partition) {
                        let (offset, timestamp) = (m.offset, m.kafka_timestamp);
                        rows.append(m.partition, offset, timestamp, ingested_at, &event);
                    }
                }
                Err(invalid) => {
                    out.rejected += 1;
                    if m.rejects_done.is_none_or(|done| m.offset > done) {
                        out.new_rejects += 1;
                        out.rejects.push(Rejected {
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
        // A partition whose messages in the chunk were all rejects has no rows to add.
        out.rows = rows
            .into_iter()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(_, rows)| rows.finish())
            .collect();
        out
    }
}

impl Read {
    /// The run's new rejects as one batch of `bronze_rejects`.
    pub(super) fn rejects_batch(&self) -> Result<RecordBatch, TableError> {
        rejects_batch(&self.rejects, self.ingested_at)
    }

    /// The chunks' counts and rejects put together in polling order, with the files written.
    fn gather(
        mut decoded: Vec<Decoded>,
        files: Vec<Add>,
        ingested_at: i64,
    ) -> Result<Self, TableError> {
        decoded.sort_by_key(|d| d.index);
        let mut read = Self {
            files,
            rejects: vec![],
            ingested_at,
            good: 0,
            rejected: 0,
            new_rejects: 0,
        };
        for d in decoded {
            d.rows?;
            read.rejects.extend(d.rejects);
            read.good += d.good;
            read.rejected += d.rejected;
            read.new_rejects += d.new_rejects;
        }
        Ok(read)
    }
}

/// Reads every range of `ranges` with work, decoding beside the polling on every core and
/// writing the rows with `writer` as they are decoded.
pub(super) fn read(
    reader: &BaseConsumer,
    topic: &str,
    ranges: &[Range],
    ingested_at: i64,
    writer: RecordBatchWriter,
) -> Result<Read, FlowError> {
    // The polling keeps a core busy: one decoder fewer than the cores, so that on 2 cores the
    // poller, one decoder and the writer are not three threads taking turns on two (a second
    // decoder made bronze 8 % slower there: 1.06 and 1.08 s against 0.96 and 0.99 s).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let decoders = (cores - 1).clamp(1, MAX_DECODERS);
    let (chunks, to_decode) = mpsc::sync_channel::<Chunk>(2 * decoders);
    let to_decode = Mutex::new(to_decode);
    let (rows, to_write) = mpsc::channel();
    std::thread::scope(|scope| {
        // Named, so a profile or a debugger tells bronze's threads apart.
        let named = |name: &str| std::thread::Builder::new().name(name.into());
        let writing = named("bronze-write")
            .spawn_scoped(scope, move || {
                let files = write::write_in_order(writer, to_write);
                (files, cpu(Clock::Thread))
            })
            .expect("cannot start bronze's writer thread");
        let workers: Vec<_> = (0..decoders)
            .map(|_| {
                let to_decode = &to_decode;
                let rows = rows.clone();
                let decoder = named("bronze-decode").spawn_scoped(scope, move || {
                    let mut done = vec![];
                    loop {
                        // The lock is held only to take the next chunk, never while decoding.
                        let next = to_decode.lock().expect("bronze's chunk queue").recv();
                        let Ok(chunk) = next else {
                            return (done, cpu(Clock::Thread));
                        };
                        let mut decoded = Decoded::of(&chunk, ingested_at);
                        let batches = match &mut decoded.rows {
                            Ok(batches) => std::mem::take(batches),
                            Err(_) => vec![],
                        };
                        // The writer stops early only on an error, which its join reports.
                        let _ = rows.send((decoded.index, batches));
                        done.push(decoded);
                    }
                });
                decoder.expect("cannot start a decoder thread of bronze")
            })
            .collect();
        drop(rows);
        let started = Instant::now();
        let (process_cpu, poll_cpu) = (cpu(Clock::Process), cpu(Clock::Thread));
        let mut first = None;
        let polled = poll(reader, topic, ranges, |chunk| {
            first.get_or_insert_with(|| started.elapsed());
            // A decoder only stops early by panicking, which the join below reports.
            let _ = chunks.send(chunk);
        });
        let polling = started.elapsed();
        let poll_cpu = cpu(Clock::Thread).saturating_sub(poll_cpu);
        drop(chunks);
        let (mut done, mut decode_cpu) = (vec![], Duration::ZERO);
        for worker in workers {
            let (decoded, took) = worker.join().expect("a decoder thread of bronze panicked");
            done.extend(decoded);
            decode_cpu += took;
        }
        let decoding = started.elapsed();
        let (files, write_cpu) = writing.join().expect("bronze's writer thread panicked");
        // Where a read's time goes: the polling (to the first full chunk, and to the last
        // message), then the decoding and the writing still to finish after it; and the CPU
        // time of each part, and of the whole process (librdkafka's threads among the rest).
        // The machine's busy time (the broker's too) is the runner's, logged per step.
        tracing::debug!(
            flow = "bronze",
            messages = done.iter().map(|d| d.good + d.rejected).sum::<u64>(),
            first_chunk_ms = first.map_or(f64::NAN, ms),
            polled_ms = ms(polling),
            decoded_ms = ms(decoding),
            written_ms = ms(started.elapsed()),
            poll_cpu_ms = ms(poll_cpu),
            decode_cpu_ms = ms(decode_cpu),
            write_cpu_ms = ms(write_cpu),
            process_cpu_ms = ms(cpu(Clock::Process).saturating_sub(process_cpu)),
        );
        polled?;
        Ok(Read::gather(done, files?, ingested_at)?)
    })
}

/// One partition's place in its range while it is polled.
struct Owed {
    partition: i32,
    /// The last offset of its range.
    last: i64,
    /// The offset read last (its range's next offset - 1 before any).
    at: i64,
    rejects_done: Option<i64>,
}

/// Polls each range from its next offset to its end (the reader is assigned at least those),
/// handing the messages to `hand` in chunks. Per message it only looks its partition up among
/// a handful and copies the value: this loop runs on one core while the decoders use the rest.
fn poll(
    reader: &BaseConsumer,
    topic: &str,
    ranges: &[Range],
    mut hand: impl FnMut(Chunk),
) -> Result<(), FlowError> {
    let mut owed: Vec<Owed> = ranges
        .iter()
        .filter(|r| r.next < r.end)
        .map(|r| Owed {
            partition: r.partition,
            last: r.end - 1,
            at: r.next - 1,
            rejects_done: r.rejects_done,
        })
        .collect();
    let mut next_chunk = 0;
    let mut chunk = Chunk::with_capacity(next_chunk, CHUNK);
    // Since when nothing came: the clock is read only while waiting, never per message.
    let mut idle_since = None;
    while !owed.is_empty() {
        let Some(message) = reader.poll(Duration::from_millis(500)) else {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() > STALL_TIMEOUT {
                let stalled = &owed[0];
                return Err(FlowError::Stalled {
                    topic: topic.into(),
                    partition: stalled.partition,
                    at: stalled.at + 1,
                    end: stalled.last + 1,
                });
            }
            continue;
        };
        idle_since = None;
        let message = message.map_err(KafkaError::from)?;
        let (partition, offset) = (message.partition(), message.offset());
        let Some(place) = owed.iter().position(|o| o.partition == partition) else {
            continue;
        };
        let o = &mut owed[place];
        // Past the range, or read already (a reused consumer may hold what it fetched before).
        if offset > o.last || offset <= o.at {
            continue;
        }
        o.at = offset;
        chunk
            .bytes
            .extend_from_slice(message.payload().unwrap_or_default());
        chunk.messages.push(Polled {
            partition,
            offset,
            kafka_timestamp: message.timestamp().to_millis().map(|ms| ms * 1000),
            rejects_done: o.rejects_done,
            end: chunk.bytes.len(),
        });
        if offset == o.last {
            owed.swap_remove(place);
        }
        if chunk.messages.len() == CHUNK {
            next_chunk += 1;
            hand(std::mem::replace(
                &mut chunk,
                Chunk::with_capacity(next_chunk, CHUNK),
            ));
        }
    }
    if !chunk.messages.is_empty() {
        hand(chunk);
    }
    Ok(())
}
