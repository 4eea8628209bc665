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
//! run did. Decoding the records' JSON is left to the cpu monotask that follows; each record's
//! Kafka timestamp travels beside its value (`RawRecords::timestamps`), for the decoder to
//! take as a column when the spec's `event_time` is `record_timestamp`.
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
use sleet_plan::{KafkaSourceSpec, KafkaStart, SourceRange};

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
    /// Backpressure's bound on a batch as the last read had it: the prefetcher keeps
    /// `PREFETCH_BATCHES` batches of it, not of the source's own limit, so a held-back job
    /// does not hold in memory what it cannot process yet.
    read_bound: Option<u32>,
}

/// Records of one fetch: their values back to back, their offsets as positions, and their
/// timestamps.
struct Chunk {
    records: RawRecords,
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

    fn read(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> Result<SourceRange, ConnectorError> {
        self.read_bounded(start_ms, end_ms, None, out)
    }

    fn read_bounded(
        &self,
        _start_ms: i64,
        end_ms: i64,
        bound: Option<u32>,
        out: &mut RawRecords,
    ) -> Result<SourceRange, ConnectorError> {
        self.ensure_started()?;
        let replay_end = self.replay_end(end_ms);
        let mut buffer = match replay_end {
            Some(target) => self.fetched_through(target)?,
            None => self.shared.buffer.lock().expect("buffer lock"),
        };
        if let Some(reason) = &buffer.failed {
            return Err(self.error(reason.clone()));
        }
        if replay_end.is_none() {
            buffer.read_bound = bound;
        }
        let start = buffer.position;
        if replay_end.is_some_and(|target| target < start) {
            return Err(self.error(format!(
                "a re-run batch must end at offset {} but this partition is already at {start} (internal)",
                replay_end.unwrap_or_default()
            )));
        }
        // A replayed batch takes exactly its first run's records, which respected the limit
        // and the bound of the day; the rest of the buffer waits for the next batch.
        let limit = match replay_end {
            Some(_) => usize::MAX,
            None => self.spec.max_records_per_partition_per_batch.min(bound.unwrap_or(u32::MAX)) as usize,
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
            timestamp_sum_ms = chunk.records.timestamps[chunk.taken..chunk.taken + take]
                .iter()
                .fold(timestamp_sum_ms, |sum, timestamp| sum.wrapping_add(*timestamp));
            if chunk.taken == 0 && take == available && out.is_empty() {
                // The whole chunk: hand over its buffers instead of copying them.
                *out = std::mem::take(&mut chunk.records);
            } else {
                out.extend_from(&chunk.records, chunk.taken..chunk.taken + take);
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

fn fetch_settings(spec: &KafkaSourceSpec) -> FetchSettings {
    FetchSettings {
        isolation_level: if spec.read_committed { READ_COMMITTED } else { READ_UNCOMMITTED },
        max_wait_ms: FETCH_WAIT_MS,
        max_bytes: FETCH_MAX_BYTES,
    }
}

/// The prefetch loop: fetch while there is room, until stopped.
fn prefetch(spec: &KafkaSourceSpec, mut reader: PartitionReader, shared: &Shared) {
    let mut waiting_since: Option<Instant> = None;
    let mut size_hint = (0, 0);
    loop {
        let (from, stop) = {
            let mut buffer = shared.buffer.lock().expect("buffer lock");
            while !buffer.stop && (buffer.records >= room_records(spec, &buffer) || buffer.bytes >= PREFETCH_BYTES_MAX)
            {
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

/// How many records the prefetcher may hold: `PREFETCH_BATCHES` batches at the bound reads
/// have now.
fn room_records(spec: &KafkaSourceSpec, buffer: &Buffer) -> usize {
    let batch = buffer
        .read_bound
        .map_or(spec.max_records_per_partition_per_batch, |bound| bound.min(spec.max_records_per_partition_per_batch));
    batch as usize * PREFETCH_BATCHES
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
        taken: 0,
        bytes: 0,
    };
    chunk.records.positions.reserve(records_hint + records_hint / 4);
    chunk.records.timestamps.reserve(records_hint + records_hint / 4);
    let next_offset = reader.fetch(from, i64::MAX, &mut |record| {
        // A record without a value (a tombstone) is still a record of the range: it goes
        // to the decoder as empty and becomes a dead letter there, so the count stays exact.
        chunk.records.push(record.value.unwrap_or(&[]));
        chunk.records.positions.push(record.offset);
        chunk.records.timestamps.push(record.timestamp);
    })?;
    *size_hint = (chunk.records.len(), chunk.records.data.len());
    let mut buffer = shared.buffer.lock().expect("buffer lock");
    buffer.fetched_to = next_offset;
    if !chunk.records.is_empty() {
        chunk.bytes = chunk.records.data.capacity()
            + chunk.records.positions.capacity() * 12
            + chunk.records.timestamps.capacity() * std::mem::size_of::<i64>();
        buffer.records += chunk.records.len();
        buffer.bytes += chunk.bytes;
        buffer.chunks.push_back(chunk);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sleet_plan::EventTimeSource;

    use super::*;

    /// A source whose prefetcher has already buffered `chunks` of `(offset, timestamp)`
    /// records, each valued by its offset; nothing is fetched from a broker.
    fn buffered(max_records: u32, chunks: &[&[(i64, i64)]]) -> KafkaSource {
        let spec = KafkaSourceSpec {
            brokers: "127.0.0.1:1".into(),
            topic: "t".into(),
            start: KafkaStart::Earliest,
            max_records_per_partition_per_batch: max_records,
            event_time: EventTimeSource::RecordTimestamp("ts".into()),
            read_committed: true,
            partitions: 1,
            replay: Vec::new(),
        };
        let source = KafkaSource::new(&spec, 0);
        *source.prefetcher.lock().expect("prefetcher lock") = Some(std::thread::spawn(|| {}));
        let mut buffer = source.shared.buffer.lock().expect("buffer lock");
        for records in chunks {
            let mut chunk = Chunk { records: RawRecords::new(), taken: 0, bytes: 1 };
            for &(offset, timestamp) in *records {
                chunk.records.push(format!(r#"{{"offset":{offset}}}"#).as_bytes());
                chunk.records.positions.push(offset);
                chunk.records.timestamps.push(timestamp);
            }
            buffer.records += records.len();
            buffer.bytes += 1;
            buffer.chunks.push_back(chunk);
        }
        buffer.position = chunks[0][0].0;
        buffer.fetched_to = chunks[chunks.len() - 1].last().expect("a record").0 + 1;
        drop(buffer);
        source
    }

    /// Each record taken, as (value's offset, position, timestamp): the three must stay
    /// together however a batch cuts the chunks.
    fn taken(records: &RawRecords) -> Vec<(String, i64, i64)> {
        assert_eq!(records.positions.len(), records.len());
        assert_eq!(records.timestamps.len(), records.len());
        records
            .iter()
            .zip(records.positions.iter().zip(&records.timestamps))
            .map(|(value, (position, timestamp))| (String::from_utf8_lossy(value).into_owned(), *position, *timestamp))
            .collect()
    }

    fn record(offset: i64, timestamp: i64) -> (String, i64, i64) {
        (format!(r#"{{"offset":{offset}}}"#), offset, timestamp)
    }

    #[test]
    fn timestamps_travel_beside_their_records_unchanged_across_chunk_cuts() {
        let source = buffered(3, &[&[(10, 500), (11, 400)], &[(13, 900), (14, -1), (15, 7)]]);
        let mut first = RawRecords::new();
        let range = source.read(0, 1_000, &mut first).expect("first batch");
        assert_eq!(range, SourceRange::Offsets { start: 10, end: 14 });
        assert_eq!(taken(&first), vec![record(10, 500), record(11, 400), record(13, 900)]);
        let mut second = RawRecords::new();
        let range = source.read(1_000, 2_000, &mut second).expect("second batch");
        assert_eq!(range, SourceRange::Offsets { start: 14, end: 16 });
        assert_eq!(taken(&second), vec![record(14, -1), record(15, 7)]);
    }

    #[test]
    fn a_read_bound_below_the_limit_leaves_the_rest_buffered_for_the_next_batch() {
        let source = buffered(100, &[&[(10, 1), (11, 2), (12, 3)], &[(13, 4), (14, 5)]]);
        let mut first = RawRecords::new();
        let range = source.read_bounded(0, 1_000, Some(2), &mut first).expect("first batch");
        assert_eq!(range, SourceRange::Offsets { start: 10, end: 12 });
        assert_eq!(taken(&first), vec![record(10, 1), record(11, 2)]);
        // A bound above the source's own limit is the limit; none is the limit too.
        let mut second = RawRecords::new();
        let range = source.read_bounded(1_000, 2_000, Some(1_000), &mut second).expect("second batch");
        assert_eq!(range, SourceRange::Offsets { start: 12, end: 15 });
        assert_eq!(taken(&second), vec![record(12, 3), record(13, 4), record(14, 5)]);
    }
}
