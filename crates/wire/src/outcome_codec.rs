//! How a task's outcome travels inside its report: a mask of the `TaskStats` fields that
//! differ from their defaults, then those fields alone.
//!
//! A task fills a handful of its stats' sixteen fields (a stateless stage has no state
//! figures, most tasks write no snapshot and close no window), and the driver decodes the
//! report of every task of the cluster on one thread: written field by field, the defaults
//! were most of a report's varints and of the driver's time decoding it.

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::{TaskOutcome, TaskStats};

/// The mask's bit for a failed task, whose reason follows; the other bits are stats fields.
const FAILED: u32 = 1 << 31;
const SOURCE_RANGE: u32 = 1;
const SOURCE_WAITING: u32 = 1 << 1;
const RECORDS_IN: u32 = 1 << 2;
const DEAD_LETTERS: u32 = 1 << 3;
const ROWS_OUT: u32 = 1 << 4;
const BLOCKS: u32 = 1 << 5;
const LATE_ROWS_DROPPED: u32 = 1 << 6;
const UNMATCHED_LOOKUP_ROWS: u32 = 1 << 7;
const STATE: u32 = 1 << 8;
const STATE_FULL: u32 = 1 << 9;
const WINDOW_LATENCIES: u32 = 1 << 10;
const SINK_ROWS: u32 = 1 << 11;
const SINK_VISIBLE_AT: u32 = 1 << 12;
const SNAPSHOT: u32 = 1 << 13;
/// Set for a retained output; the bit is the whole field.
const RETAINED: u32 = 1 << 14;
const EVENT_WAIT: u32 = 1 << 15;
const EVENT_TIME: u32 = 1 << 16;
/// The most elements an outcome has: the mask and every field but the bare `retained` bit.
const ELEMENTS_MAX: usize = 17;

/// The elements of an outcome's tuple, counted for the error when one is missing.
struct Elements<A> {
    seq: A,
    read: usize,
}

impl<'de, A: SeqAccess<'de>> Elements<A> {
    fn next<T: Deserialize<'de>>(&mut self) -> Result<T, A::Error> {
        let index = self.read;
        self.read += 1;
        self.seq.next_element()?.ok_or_else(|| de::Error::invalid_length(index, &OutcomeVisitor))
    }
}

/// Serializes the outcome it borrows in the masked form.
pub(crate) struct OutcomeOnWire<'a>(pub &'a TaskOutcome);

impl Serialize for OutcomeOnWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let stats = match self.0 {
            TaskOutcome::Failed { reason } => {
                let mut tuple = serializer.serialize_tuple(2)?;
                tuple.serialize_element(&FAILED)?;
                tuple.serialize_element(reason)?;
                return tuple.end();
            }
            TaskOutcome::Succeeded(stats) => stats,
        };
        // Taken apart whole, so that a field added to `TaskStats` does not compile until it
        // has a bit here.
        let TaskStats {
            source_range,
            source_waiting,
            records_in,
            dead_letters,
            rows_out,
            blocks,
            late_rows_dropped,
            unmatched_lookup_rows,
            state,
            state_full,
            window_latencies_ms,
            sink_rows,
            sink_visible_at_us,
            snapshot,
            retained,
            event_wait,
            event_time_ms,
        } = stats;
        let present = [
            (SOURCE_RANGE, source_range.is_some()),
            (SOURCE_WAITING, source_waiting.is_some()),
            (RECORDS_IN, *records_in != 0),
            (DEAD_LETTERS, *dead_letters != 0),
            (ROWS_OUT, *rows_out != 0),
            (BLOCKS, !blocks.is_empty()),
            (LATE_ROWS_DROPPED, *late_rows_dropped != 0),
            (UNMATCHED_LOOKUP_ROWS, *unmatched_lookup_rows != 0),
            (STATE, *state != Default::default()),
            (STATE_FULL, state_full.is_some()),
            (WINDOW_LATENCIES, !window_latencies_ms.is_empty()),
            (SINK_ROWS, *sink_rows != 0),
            (SINK_VISIBLE_AT, sink_visible_at_us.is_some()),
            (SNAPSHOT, snapshot.is_some()),
            (RETAINED, *retained),
            (EVENT_WAIT, event_wait.is_some()),
            (EVENT_TIME, event_time_ms.is_some()),
        ];
        let mask = present.iter().filter(|(_, present)| *present).fold(0, |mask, (bit, _)| mask | bit);
        let values = (mask & !RETAINED).count_ones() as usize;
        let mut tuple = serializer.serialize_tuple(1 + values)?;
        tuple.serialize_element(&mask)?;
        if let Some(range) = source_range {
            tuple.serialize_element(range)?;
        }
        if let Some(waiting) = source_waiting {
            tuple.serialize_element(waiting)?;
        }
        for (bit, count) in [(RECORDS_IN, records_in), (DEAD_LETTERS, dead_letters), (ROWS_OUT, rows_out)] {
            if mask & bit != 0 {
                tuple.serialize_element(count)?;
            }
        }
        if mask & BLOCKS != 0 {
            tuple.serialize_element(blocks)?;
        }
        for (bit, count) in [(LATE_ROWS_DROPPED, late_rows_dropped), (UNMATCHED_LOOKUP_ROWS, unmatched_lookup_rows)] {
            if mask & bit != 0 {
                tuple.serialize_element(count)?;
            }
        }
        if mask & STATE != 0 {
            tuple.serialize_element(state)?;
        }
        if let Some(name) = state_full {
            tuple.serialize_element(name)?;
        }
        if mask & WINDOW_LATENCIES != 0 {
            tuple.serialize_element(window_latencies_ms)?;
        }
        if mask & SINK_ROWS != 0 {
            tuple.serialize_element(sink_rows)?;
        }
        if let Some(visible_at_us) = sink_visible_at_us {
            tuple.serialize_element(visible_at_us)?;
        }
        if let Some(snapshot) = snapshot {
            tuple.serialize_element(snapshot)?;
        }
        if let Some(wait) = event_wait {
            tuple.serialize_element(wait)?;
        }
        if let Some(event_time) = event_time_ms {
            tuple.serialize_element(event_time)?;
        }
        tuple.end()
    }
}

/// Deserializes an outcome written by `OutcomeOnWire`.
pub(crate) struct OutcomeFromWire(pub TaskOutcome);

impl<'de> Deserialize<'de> for OutcomeFromWire {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_tuple(ELEMENTS_MAX, OutcomeVisitor)
    }
}

struct OutcomeVisitor;

impl<'de> Visitor<'de> for OutcomeVisitor {
    type Value = OutcomeFromWire;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a task outcome: a field mask, then the fields it names")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OutcomeFromWire, A::Error> {
        let mut elements = Elements { seq, read: 0 };
        let mask: u32 = elements.next()?;
        if mask & FAILED != 0 {
            return Ok(OutcomeFromWire(TaskOutcome::Failed { reason: elements.next()? }));
        }
        if mask >= EVENT_TIME << 1 {
            return Err(de::Error::custom(format!("a task outcome's field mask {mask:#x} names unknown fields")));
        }
        let mut stats = TaskStats::default();
        let has = |bit: u32| mask & bit != 0;
        if has(SOURCE_RANGE) {
            stats.source_range = Some(elements.next()?);
        }
        if has(SOURCE_WAITING) {
            stats.source_waiting = Some(elements.next()?);
        }
        if has(RECORDS_IN) {
            stats.records_in = elements.next()?;
        }
        if has(DEAD_LETTERS) {
            stats.dead_letters = elements.next()?;
        }
        if has(ROWS_OUT) {
            stats.rows_out = elements.next()?;
        }
        if has(BLOCKS) {
            stats.blocks = elements.next()?;
        }
        if has(LATE_ROWS_DROPPED) {
            stats.late_rows_dropped = elements.next()?;
        }
        if has(UNMATCHED_LOOKUP_ROWS) {
            stats.unmatched_lookup_rows = elements.next()?;
        }
        if has(STATE) {
            stats.state = elements.next()?;
        }
        if has(STATE_FULL) {
            stats.state_full = Some(elements.next()?);
        }
        if has(WINDOW_LATENCIES) {
            stats.window_latencies_ms = elements.next()?;
        }
        if has(SINK_ROWS) {
            stats.sink_rows = elements.next()?;
        }
        if has(SINK_VISIBLE_AT) {
            stats.sink_visible_at_us = Some(elements.next()?);
        }
        if has(SNAPSHOT) {
            stats.snapshot = Some(elements.next()?);
        }
        stats.retained = has(RETAINED);
        if has(EVENT_WAIT) {
            stats.event_wait = Some(elements.next()?);
        }
        if has(EVENT_TIME) {
            stats.event_time_ms = Some(elements.next()?);
        }
        Ok(OutcomeFromWire(TaskOutcome::Succeeded(stats)))
    }
}

#[cfg(test)]
mod tests {
    use sleet_monotask::EventWait;
    use sleet_plan::{SourceRange, StageId};

    use super::*;
    use crate::frame::{decode_binary, encode_binary};
    use crate::message::{BlockMeta, PartitionSnapshot, StateFigures};

    fn round_trip(outcome: &TaskOutcome) -> (TaskOutcome, usize) {
        let bytes = encode_binary(&OutcomeOnWire(outcome));
        let decoded = decode_binary::<OutcomeFromWire>(&bytes, "outcome").expect("decodes").0;
        (decoded, bytes.len())
    }

    /// Every field set to something other than its default, each in its own copy too.
    fn every_field_set() -> Vec<TaskStats> {
        let full = TaskStats {
            source_range: Some(SourceRange::Offsets { start: 10, end: 20 }),
            source_waiting: Some("the broker at 127.0.0.1:9092".into()),
            records_in: 1,
            dead_letters: 2,
            rows_out: 3,
            blocks: vec![BlockMeta { reduce_partition: 4, rows: 5, bytes: 6 }],
            late_rows_dropped: 7,
            unmatched_lookup_rows: 8,
            state: StateFigures { state_keys: 9, expired_keys: 1, ..StateFigures::default() },
            state_full: Some("per_key".into()),
            window_latencies_ms: vec![-1, 12],
            sink_rows: 13,
            sink_visible_at_us: Some(1_790_000_000_000_000),
            snapshot: Some(PartitionSnapshot { stage: StageId(2), partition: 3, path: "cp/7".into(), bytes: 99 }),
            retained: true,
            event_wait: Some(EventWait { events: 5, wait_sum_ms: 40 }),
            event_time_ms: Some(-17),
        };
        let default = TaskStats::default();
        let alone = [
            TaskStats { source_range: full.source_range, ..default.clone() },
            TaskStats { source_waiting: full.source_waiting.clone(), ..default.clone() },
            TaskStats { records_in: 1, ..default.clone() },
            TaskStats { dead_letters: 2, ..default.clone() },
            TaskStats { rows_out: 3, ..default.clone() },
            TaskStats { blocks: full.blocks.clone(), ..default.clone() },
            TaskStats { late_rows_dropped: 7, ..default.clone() },
            TaskStats { unmatched_lookup_rows: 8, ..default.clone() },
            TaskStats { state: full.state, ..default.clone() },
            TaskStats { state_full: full.state_full.clone(), ..default.clone() },
            TaskStats { window_latencies_ms: full.window_latencies_ms.clone(), ..default.clone() },
            TaskStats { sink_rows: 13, ..default.clone() },
            TaskStats { sink_visible_at_us: full.sink_visible_at_us, ..default.clone() },
            TaskStats { snapshot: full.snapshot.clone(), ..default.clone() },
            TaskStats { retained: true, ..default.clone() },
            TaskStats { event_wait: full.event_wait, ..default.clone() },
            TaskStats { event_time_ms: full.event_time_ms, ..default.clone() },
        ];
        let mut all = vec![default, full];
        all.extend(alone);
        all
    }

    #[test]
    fn every_field_alone_and_all_together_come_back_as_they_went() {
        for stats in every_field_set() {
            let outcome = TaskOutcome::Succeeded(stats);
            assert_eq!(round_trip(&outcome).0, outcome);
        }
        let failed = TaskOutcome::Failed { reason: "the sink's directory is gone".into() };
        assert_eq!(round_trip(&failed).0, failed);
    }

    #[test]
    fn fields_left_at_their_defaults_take_no_bytes() {
        assert_eq!(round_trip(&TaskOutcome::Succeeded(TaskStats::default())).1, 1, "the mask alone");
        let counts = TaskStats { records_in: 100, rows_out: 100, ..TaskStats::default() };
        assert_eq!(round_trip(&TaskOutcome::Succeeded(counts)).1, 1 + 1 + 1, "the mask and two one-byte counts");
    }

    #[test]
    fn a_mask_naming_unknown_fields_or_promising_more_than_is_there_is_refused() {
        let unknown = encode_binary(&(1u32 << 20));
        assert!(decode_binary::<OutcomeFromWire>(&unknown, "outcome").is_err(), "bit 20 names no field");
        let known = encode_binary(&(1u32 << 14));
        assert!(decode_binary::<OutcomeFromWire>(&known, "outcome").is_ok(), "bit 14 is `retained`, the bit alone");
        let short = encode_binary(&(RECORDS_IN | ROWS_OUT, 5u64));
        assert!(decode_binary::<OutcomeFromWire>(&short, "outcome").is_err(), "one count where two are due");
    }
}
