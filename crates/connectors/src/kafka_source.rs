//! A Kafka topic partition as a direct source (`docs/design/group-scheduling.md`).
//!
//! ```text
//!  prefetch thread ── Fetch (net) ──▶ buffered records (bounded) ──read at batch close──▶ batch
//!                                                              └──▶ SourceRange::Offsets
//! ```
//!
//! A thread per partition keeps fetching ahead of the batch clock into a bounded buffer, so
//! that when a batch closes its records are mostly in memory already. The batch then takes
//! what the buffer holds (at most `max_records_per_partition_per_batch`) and reports the
//! offset range it covers. After a failure the driver hands the ranges of the batches to
//! re-run back (`KafkaSourceSpec::replay`), and each such batch ends exactly where its first
//! run did. Decoding the records' JSON
//! is left to the cpu monotask that follows.
//!
//! A broker that is down is waited for (the batch is empty and says why); a position that
//! is no longer on the broker, a corrupt batch, or a topic that vanished stop the job with
//! an error naming the topic, partition and offset.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sleet_exec::RawRecords;
use sleet_kafka::fetch::{FetchSettings, PartitionReader};
use sleet_kafka::offsets::{OffsetQuery, READ_COMMITTED, READ_UNCOMMITTED};
use sleet_kafka::KafkaError;
use sleet_monotask::{EventWait, Resource};
use sleet_plan::{EventTimeSource, KafkaSourceSpec, KafkaStart, SourceRange};

use crate::error::ConnectorError;
use crate::source::Source;

/// How long a fetch waits at the broker for new data: short, so a batch closing just after
/// records arrive finds them buffered.
const FETCH_WAIT_MS: i32 = 5;
const FETCH_MAX_BYTES: i32 = 4 << 20;
/// Buffered ahead: a couple of batches' worth, and never more than this many bytes.
const PREFETCH_BATCHES: usize = 2;
const PREFETCH_BYTES_MAX: usize = 64 << 20;
const RETRY_BACKOFF: Duration = Duration::from_millis(200);
/// A re-run batch waits at most this long for its records (longer than a broker restart).
const REPLAY_WAIT_MAX: Duration = Duration::from_secs(90);

pub struct KafkaSource {
    spec: KafkaSourceSpec,
    partition: u32,
    shared: Arc<Shared>,
    prefetcher: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    buffer: Mutex<Buffer>,
    /// Signalled when the reader took records (room to fetch more) or asked to stop.
    room: Condvar,
}

#[derive(Default)]
struct Buffer {
    chunks: VecDeque<Chunk>,
    records: usize,
    bytes: usize,
    /// Where the next batch starts (set when the first read resolves the start).
    position: i64,
    /// The position the prefetcher has read up to (past gaps such as transaction markers).
    fetched_to: i64,
    /// A problem the prefetcher is waiting out (broker unreachable), for the status line.
    waiting: Option<String>,
    /// A problem waiting cannot fix; the next read fails with it.
    failed: Option<String>,
    stop: bool,
}

/// Records of one fetch, their values back to back and their offsets as positions.
struct Chunk {
    records: RawRecords,
    timestamps: Vec<i64>,
    /// Index of the first record not yet handed to a batch.
    taken: usize,
    /// What it counts for against `PREFETCH_BYTES_MAX`.
    bytes: usize,
}

impl KafkaSource {
    pub fn new(spec: &KafkaSourceSpec, partition: u32) -> Self {
        KafkaSource {
            spec: spec.clone(),
            partition,
            shared: Arc::new(Shared { buffer: Mutex::default(), room: Condvar::new() }),
            prefetcher: Mutex::new(None),
        }
    }

    /// On the first read: where to start (asked of the broker unless the spec gives offsets),
    /// then the prefetcher.
    fn ensure_started(&self) -> Result<(), ConnectorError> {
        let mut prefetcher = self.prefetcher.lock().expect("prefetcher lock");
        if prefetcher.is_none() {
            let mut reader =
                PartitionReader::new(&self.spec.brokers, &self.spec.topic, self.partition, fetch_settings(&self.spec));
            let start =
                start_offset(&self.spec, self.partition, &mut reader).map_err(|error| self.error(error.to_string()))?;
            {
                let mut buffer = self.shared.buffer.lock().expect("buffer lock");
                buffer.position = start;
                buffer.fetched_to = start;
            }
            let shared = Arc::clone(&self.shared);
            let spec = self.spec.clone();
            let handle = std::thread::Builder::new()
                .name(format!("kafka-{}-{}", spec.topic, self.partition))
                .spawn(move || prefetch(&spec, reader, &shared))
                .expect("spawning a prefetch thread");
            *prefetcher = Some(handle);
        }
        Ok(())
    }

    fn error(&self, reason: String) -> ConnectorError {
        ConnectorError::External { what: format!("Kafka {}/{}", self.spec.topic, self.partition), reason }
    }

    /// Where the batch ending at `end_ms` must end, when it re-runs a batch of a failed
    /// attempt.
    fn replay_end(&self, end_ms: i64) -> Option<i64> {
        let replay = self.spec.replay.iter().find(|replay| replay.partition == self.partition)?;
        let at = replay.ends.binary_search_by_key(&end_ms, |(batch_end_ms, _)| *batch_end_ms).ok()?;
        Some(replay.ends[at].1)
    }

    /// The buffer, once the prefetcher has read up to `target`: the records of a past batch
    /// are on the broker already, so this is a short wait unless the broker is down.
    fn fetched_through(&self, target: i64) -> Result<std::sync::MutexGuard<'_, Buffer>, ConnectorError> {
        let deadline = Instant::now() + REPLAY_WAIT_MAX;
        loop {
            let buffer = self.shared.buffer.lock().expect("buffer lock");
            if buffer.fetched_to >= target || buffer.failed.is_some() {
                return Ok(buffer);
            }
            if Instant::now() > deadline {
                return Err(self.error(format!(
                    "re-reading a lost batch up to offset {target} got no further than {} in {} s",
                    buffer.fetched_to,
                    REPLAY_WAIT_MAX.as_secs()
                )));
            }
            drop(buffer);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for KafkaSource {
    fn drop(&mut self) {
        self.shared.buffer.lock().expect("buffer lock").stop = true;
        self.shared.room.notify_all();
        if let Some(handle) = self.prefetcher.lock().expect("prefetcher lock").take() {
            let _ = handle.join();
        }
    }
}

impl Source for KafkaSource {
    fn resource(&self) -> Resource {
        Resource::Net
    }

    fn read(&self, _start_ms: i64, end_ms: i64, out: &mut RawRecords) -> Result<SourceRange, ConnectorError> {
        self.ensure_started()?;
        let replay_end = self.replay_end(end_ms);
        let mut buffer = match replay_end {
            Some(target) => self.fetched_through(target)?,
            None => self.shared.buffer.lock().expect("buffer lock"),
        };
        if let Some(reason) = &buffer.failed {
            return Err(self.error(reason.clone()));
        }
        let start = buffer.position;
        if replay_end.is_some_and(|target| target < start) {
            return Err(self.error(format!(
                "a re-run batch must end at offset {} but this partition is already at {start} (internal)",
                replay_end.unwrap_or_default()
            )));
        }
        // A replayed batch takes exactly its first run's records, which respected the limit.
        let limit = match replay_end {
            Some(_) => usize::MAX,
            None => self.spec.max_records_per_partition_per_batch as usize,
        };
        let record_timestamp = match &self.spec.event_time {
            EventTimeSource::RecordTimestamp(column) => Some(column.as_str()),
            EventTimeSource::Field => None,
        };
        let mut taken = 0;
        let mut timestamp_sum_ms: i64 = 0;
        while taken < limit {
            let Some(chunk) = buffer.chunks.front_mut() else { break };
            let available = chunk.records.len() - chunk.taken;
            let below_end = match replay_end {
                Some(target) => chunk.records.positions[chunk.taken..].partition_point(|position| *position < target),
                None => available,
            };
            let take = below_end.min(limit - taken);
            timestamp_sum_ms = chunk.timestamps[chunk.taken..chunk.taken + take]
                .iter()
                .fold(timestamp_sum_ms, |sum, timestamp| sum.wrapping_add(*timestamp));
            match record_timestamp {
                // The whole chunk: hand over its buffers instead of copying them.
                None if chunk.taken == 0 && take == available && out.is_empty() => {
                    *out = std::mem::take(&mut chunk.records)
                }
                None => out.extend_from(&chunk.records, chunk.taken..chunk.taken + take),
                Some(column) => {
                    for index in chunk.taken..chunk.taken + take {
                        push_with_timestamp(out, chunk.records.get(index), column, chunk.timestamps[index]);
                        out.positions.push(chunk.records.positions[index]);
                    }
                }
            }
            chunk.taken += take;
            taken += take;
            buffer.records -= take;
            if take == available {
                let chunk = buffer.chunks.pop_front().expect("front exists");
                buffer.bytes -= chunk.bytes;
            } else {
                break;
            }
        }
        // A replay ends where its first run did. Otherwise: stopped by the limit, the range
        // ends at the first record left behind; if not, at what the prefetcher has read,
        // which may lie past the last record (markers, gaps).
        let end = match (replay_end, buffer.chunks.front()) {
            (Some(target), _) => target,
            (None, Some(front)) => front.records.positions[front.taken],
            (None, None) => buffer.fetched_to,
        };
        buffer.position = end;
        drop(buffer);
        self.shared.room.notify_all();
        // Each record's wait from its Kafka timestamp (the producer's create time, or the
        // broker's append time) to the batch's close: the breakdown's wait_for_close,
        // measured without decoding a value.
        if taken > 0 {
            out.event_wait = Some(EventWait::from_time_sum(end_ms, taken as u64, timestamp_sum_ms));
        }
        Ok(SourceRange::Offsets { start, end })
    }

    fn locate(&self, position: i64) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "topic": self.spec.topic, "partition": self.partition, "offset": position }))
    }

    fn waiting(&self) -> Option<String> {
        self.shared.buffer.lock().expect("buffer lock").waiting.clone()
    }
}

/// `{"a":1}` with timestamp 5 becomes `{"<column>":5,"a":1}`; anything not an object is
/// kept as it is, for the decoder to turn into a dead letter.
fn push_with_timestamp(out: &mut RawRecords, value: &[u8], column: &str, timestamp: i64) {
    let start = value.iter().position(|byte| !byte.is_ascii_whitespace());
    match start {
        Some(at) if value[at] == b'{' => {
            out.data.extend_from_slice(b"{\"");
            out.data.extend_from_slice(column.as_bytes());
            out.data.extend_from_slice(b"\":");
            out.data.extend_from_slice(timestamp.to_string().as_bytes());
            let rest = &value[at + 1..];
            let empty = rest.iter().all(|byte| byte.is_ascii_whitespace() || *byte == b'}');
            if !empty {
                out.data.push(b',');
            }
            out.data.extend_from_slice(rest);
            out.finish_record();
        }
        _ => out.push(value),
    }
}

fn fetch_settings(spec: &KafkaSourceSpec) -> FetchSettings {
    FetchSettings {
        isolation_level: if spec.read_committed { READ_COMMITTED } else { READ_UNCOMMITTED },
        max_wait_ms: FETCH_WAIT_MS,
        max_bytes: FETCH_MAX_BYTES,
    }
}

/// The prefetch loop: fetch while there is room, until stopped.
fn prefetch(spec: &KafkaSourceSpec, mut reader: PartitionReader, shared: &Shared) {
    let room_records = spec.max_records_per_partition_per_batch as usize * PREFETCH_BATCHES;
    let mut waiting_since: Option<Instant> = None;
    let mut size_hint = (0, 0);
    loop {
        let (from, stop) = {
            let mut buffer = shared.buffer.lock().expect("buffer lock");
            while !buffer.stop && (buffer.records >= room_records || buffer.bytes >= PREFETCH_BYTES_MAX) {
                buffer = shared.room.wait(buffer).expect("buffer lock");
            }
            (buffer.fetched_to, buffer.stop)
        };
        if stop {
            return;
        }
        let result = fetch_chunk(&mut reader, from, shared, &mut size_hint);
        let mut buffer = shared.buffer.lock().expect("buffer lock");
        match result {
            Ok(()) => {
                buffer.waiting = None;
                waiting_since = None;
            }
            Err(error) if error.is_transient() => {
                let since = *waiting_since.get_or_insert_with(Instant::now);
                buffer.waiting = Some(format!("{error} (waiting {} s)", since.elapsed().as_secs()));
                drop(buffer);
                std::thread::sleep(RETRY_BACKOFF);
            }
            Err(error) => {
                buffer.failed = Some(error.to_string());
                return;
            }
        }
    }
}

fn start_offset(spec: &KafkaSourceSpec, partition: u32, reader: &mut PartitionReader) -> Result<i64, KafkaError> {
    match &spec.start {
        KafkaStart::Earliest => reader.offset(OffsetQuery::Earliest),
        KafkaStart::Latest => reader.offset(OffsetQuery::Latest),
        KafkaStart::Timestamp(ms) => reader.offset(OffsetQuery::Timestamp(*ms)),
        KafkaStart::Offsets(offsets) => Ok(offsets[partition as usize]),
    }
}

/// One fetch from `from`, appended to the buffer as a chunk. When nothing new arrived the
/// broker already waited `FETCH_WAIT_MS`, so the loop does not spin.
fn fetch_chunk(
    reader: &mut PartitionReader,
    from: i64,
    shared: &Shared,
    size_hint: &mut (usize, usize),
) -> Result<(), KafkaError> {
    // Sized like the previous fetch, with room to spare: growing a buffer of megabytes by
    // doubling would copy it again, and a backlog's fetches all come full.
    let (records_hint, bytes_hint) = *size_hint;
    let mut chunk = Chunk {
        records: RawRecords::with_capacity(records_hint + records_hint / 4, bytes_hint + bytes_hint / 4),
        timestamps: Vec::with_capacity(records_hint + records_hint / 4),
        taken: 0,
        bytes: 0,
    };
    chunk.records.positions.reserve(records_hint + records_hint / 4);
    let next_offset = reader.fetch(from, i64::MAX, &mut |record| {
        // A record without a value (a tombstone) is still a record of the range: it goes
        // to the decoder as empty and becomes a dead letter there, so the count stays exact.
        chunk.records.push(record.value.unwrap_or(&[]));
        chunk.records.positions.push(record.offset);
        chunk.timestamps.push(record.timestamp);
    })?;
    *size_hint = (chunk.records.len(), chunk.records.data.len());
    let mut buffer = shared.buffer.lock().expect("buffer lock");
    buffer.fetched_to = next_offset;
    if !chunk.records.is_empty() {
        chunk.bytes = chunk.records.data.capacity()
            + chunk.records.positions.capacity() * 12
            + chunk.timestamps.capacity() * std::mem::size_of::<i64>();
        buffer.records += chunk.records.len();
        buffer.bytes += chunk.bytes;
        buffer.chunks.push_back(chunk);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_timestamp_becomes_the_first_field_and_anything_else_is_left_alone() {
        let mut out = RawRecords::new();
        push_with_timestamp(&mut out, br#" {"a":1}"#, "ts", 1_700);
        push_with_timestamp(&mut out, b"{ }", "ts", 5);
        push_with_timestamp(&mut out, b"[1,2]", "ts", 5);
        push_with_timestamp(&mut out, b"", "ts", 5);
        let records: Vec<&[u8]> = out.iter().collect();
        assert_eq!(records, vec![&br#"{"ts":1700,"a":1}"#[..], br#"{"ts":5 }"#, b"[1,2]", b""]);
        for record in &records[..2] {
            serde_json::from_slice::<serde_json::Value>(record).expect("still JSON");
        }
    }
}
