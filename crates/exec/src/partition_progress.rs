//! How far in event time the map partitions feeding a window have got, and from that the
//! event time the window's watermark trails.
//!
//! A watermark that follows the largest event time seen anywhere lets one source partition
//! that runs ahead (a Kafka partition whose prefetcher keeps ahead while a backlog drains)
//! make the rows of another late, and they are dropped. Taking the least, over the map
//! partitions, of the largest event time each has sent makes the slowest partition set the
//! pace, as Flink does. A partition that has sent no rows for `IDLE_AFTER_MS` of batch time
//! is left out until it sends again, so an empty partition does not hold every window open;
//! when every partition is idle the watermark stays where it is, so a pause of the whole
//! source (a broker restarting) cannot jump it past a partition that was behind.
//!
//! Everything here is a function of the batches' rows and close times, both fixed by the
//! batch log, so a batch run again after a recovery sees the watermark its first run saw.

use crate::cell::{write_optional_i64, Reader};
use crate::error::ExecError;

/// How long a map partition may send no rows before the watermark stops waiting for it.
pub const IDLE_AFTER_MS: i64 = 2_000;

/// What a reduce task learns of the map partitions feeding it, for one batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapProgress {
    /// The batch's close in the job's batch clock: the time idleness is judged by.
    pub batch_end_ms: i64,
    /// How many map partitions feed the stage.
    pub map_partitions: u32,
    /// (map partition, largest event time among the rows it wrote for the batch), for each
    /// partition that wrote rows.
    pub event_times: Vec<(u32, i64)>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Partition {
    max_event_time: Option<i64>,
    /// The close of the last batch in which it sent rows.
    last_rows_at_ms: Option<i64>,
}

/// Per map partition, the largest event time it has sent and when it last sent rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PartitionProgress {
    partitions: Vec<Partition>,
    /// The close of the first batch observed: a partition that has never sent rows counts
    /// its silence from here.
    started_at_ms: Option<i64>,
    /// The event time every partition not idle has reached; it never goes back, even when a
    /// partition that was idle comes back behind it.
    reached: Option<i64>,
}

impl PartitionProgress {
    /// Takes in a batch's progress and returns the event time all partitions have reached.
    pub(crate) fn observe(&mut self, progress: &MapProgress) -> Option<i64> {
        let now = progress.batch_end_ms;
        let started_at = *self.started_at_ms.get_or_insert(now);
        if self.partitions.len() < progress.map_partitions as usize {
            self.partitions.resize(progress.map_partitions as usize, Partition::default());
        }
        for &(map_partition, event_time) in &progress.event_times {
            let index = map_partition as usize;
            if index >= self.partitions.len() {
                self.partitions.resize(index + 1, Partition::default());
            }
            let partition = &mut self.partitions[index];
            partition.max_event_time = Some(partition.max_event_time.map_or(event_time, |max| max.max(event_time)));
            partition.last_rows_at_ms = Some(now);
        }
        let mut active = self
            .partitions
            .iter()
            .filter(|partition| now - partition.last_rows_at_ms.unwrap_or(started_at) < IDLE_AFTER_MS)
            .peekable();
        if active.peek().is_some() {
            // A partition that is waited for but has sent nothing yet holds everything back.
            let least = active.try_fold(i64::MAX, |least, partition| Some(least.min(partition.max_event_time?)));
            if let Some(least) = least {
                self.reached = Some(self.reached.map_or(least, |reached| reached.max(least)));
            }
        }
        self.reached
    }

    /// The watermark of a window with this progress and `lateness_ms`: behind the event time
    /// all partitions have reached once any batch brought their progress; before that (a
    /// window fed by no shuffle, or by one whose map side reports none) behind
    /// `own_largest_ms`, the largest event time the window has folded.
    pub(crate) fn watermark_ms(&self, own_largest_ms: Option<i64>, lateness_ms: i64) -> Option<i64> {
        let base = if self.started_at_ms.is_some() { self.reached } else { own_largest_ms };
        base.map(|time| time.saturating_sub(lateness_ms))
    }

    /// At most the bytes `write` takes.
    pub(crate) fn written_len(&self) -> usize {
        2 * 9 + 4 + self.partitions.len() * 2 * 9
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        write_optional_i64(self.started_at_ms, out);
        write_optional_i64(self.reached, out);
        out.extend_from_slice(&(self.partitions.len() as u32).to_le_bytes());
        for partition in &self.partitions {
            write_optional_i64(partition.max_event_time, out);
            write_optional_i64(partition.last_rows_at_ms, out);
        }
    }

    pub(crate) fn read(reader: &mut Reader<'_>) -> Result<Self, ExecError> {
        let started_at_ms = reader.optional_i64("partition progress")?;
        let reached = reader.optional_i64("partition progress")?;
        let count = reader.u32()? as usize;
        // Each partition takes at least two bytes: the count cannot claim more than remain.
        let mut partitions = Vec::with_capacity(count.min(reader.bytes.len() / 2));
        for _ in 0..count {
            partitions.push(Partition {
                max_event_time: reader.optional_i64("partition progress")?,
                last_rows_at_ms: reader.optional_i64("partition progress")?,
            });
        }
        Ok(PartitionProgress { partitions, started_at_ms, reached })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn batch(batch_end_ms: i64, event_times: &[(u32, i64)]) -> MapProgress {
        MapProgress { batch_end_ms, map_partitions: 2, event_times: event_times.to_vec() }
    }

    #[test]
    fn the_slowest_partition_sets_the_pace() {
        let mut progress = PartitionProgress::default();
        assert_eq!(progress.observe(&batch(10, &[(0, 50_000)])), None, "partition 1 has sent nothing yet");
        assert_eq!(progress.observe(&batch(20, &[(0, 90_000), (1, 1_000)])), Some(1_000));
        assert_eq!(progress.observe(&batch(30, &[(0, 120_000)])), Some(1_000), "partition 1 sent nothing new");
        assert_eq!(progress.observe(&batch(40, &[(1, 60_000)])), Some(60_000));
    }

    #[test]
    fn a_silent_partition_is_waited_for_until_it_is_idle_then_left_out_until_it_sends_again() {
        let mut progress = PartitionProgress::default();
        progress.observe(&batch(0, &[(0, 5_000), (1, 4_000)]));
        assert_eq!(progress.observe(&batch(IDLE_AFTER_MS - 10, &[(0, 9_000)])), Some(4_000));
        assert_eq!(progress.observe(&batch(IDLE_AFTER_MS, &[(0, 10_000)])), Some(10_000), "partition 1 is idle");
        assert_eq!(
            progress.observe(&batch(IDLE_AFTER_MS + 10, &[(1, 4_500)])),
            Some(10_000),
            "it is back, behind: the watermark does not go back"
        );
        assert_eq!(progress.observe(&batch(IDLE_AFTER_MS + 20, &[(0, 20_000), (1, 12_000)])), Some(12_000));
    }

    #[test]
    fn a_partition_that_never_sends_is_idle_once_the_time_has_passed_since_the_first_batch() {
        let mut progress = PartitionProgress::default();
        assert_eq!(progress.observe(&batch(1_000, &[(0, 7_000)])), None);
        assert_eq!(progress.observe(&batch(1_000 + IDLE_AFTER_MS, &[(0, 8_000)])), Some(8_000));
    }

    #[test]
    fn when_every_partition_is_idle_the_watermark_stays() {
        let mut progress = PartitionProgress::default();
        progress.observe(&batch(0, &[(0, 50_000), (1, 10_000)]));
        assert_eq!(progress.observe(&batch(5 * IDLE_AFTER_MS, &[])), Some(10_000));
        assert_eq!(progress.observe(&batch(6 * IDLE_AFTER_MS, &[(1, 11_000)])), Some(11_000));
    }

    proptest! {
        #[test]
        fn what_is_written_reads_back_and_goes_on_alike(
            batches in prop::collection::vec(prop::collection::vec((0u32..4, -1_000i64..1_000_000), 0..4), 1..40),
            step_ms in 1i64..1_500,
        ) {
            let mut progress = PartitionProgress::default();
            let mut copy: Option<PartitionProgress> = None;
            for (index, event_times) in batches.iter().enumerate() {
                let map_progress = MapProgress { batch_end_ms: index as i64 * step_ms, map_partitions: 4, event_times: event_times.clone() };
                let reached = progress.observe(&map_progress);
                if let Some(copy) = copy.as_mut() {
                    prop_assert_eq!(copy.observe(&map_progress), reached);
                }
                if index == batches.len() / 2 {
                    let mut bytes = Vec::new();
                    progress.write(&mut bytes);
                    let mut reader = Reader { bytes: &bytes };
                    let restored = PartitionProgress::read(&mut reader).expect("reads back");
                    prop_assert!(reader.bytes.is_empty());
                    prop_assert_eq!(&restored, &progress);
                    copy = Some(restored);
                }
            }
        }

        #[test]
        fn it_never_goes_back(
            batches in prop::collection::vec(prop::collection::vec((0u32..3, -1_000i64..1_000_000), 0..3), 1..60),
            step_ms in 1i64..1_500,
        ) {
            let mut progress = PartitionProgress::default();
            let mut last = None;
            for (index, event_times) in batches.into_iter().enumerate() {
                let reached = progress.observe(&MapProgress { batch_end_ms: index as i64 * step_ms, map_partitions: 3, event_times });
                prop_assert!(reached >= last);
                last = reached;
            }
        }
    }
}
