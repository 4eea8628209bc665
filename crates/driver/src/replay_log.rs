//! What each batch read on each Kafka partition since the latest checkpoint, so that a
//! recovery re-runs a lost batch on exactly the offsets it read the first time. Pure.
//!
//! ```text
//!  source task report (batch b, partition p, offsets [s, e)) ─▶ log[p][b] = e
//!  checkpoint after batch c recorded ─▶ entries up to c dropped
//!  recovery resuming at c + 1 ─▶ per partition, the ends of c + 1, c + 2, … while known
//! ```
//!
//! Why it matters: a resumed Kafka partition otherwise reads each past batch from wherever
//! the previous one ended up to whatever it has buffered, so the counts come out right but
//! the batch boundaries, and with them the rows each batch writes, differ from the first run.
//! A batch whose first run committed its rows to an exactly-once sink is then skipped while
//! its state update is redone on other records. Replaying the same offsets keeps every
//! re-run batch's rows identical to the first run's.

use std::collections::BTreeMap;

use sleet_plan::SourceRange;

/// Entries kept at most (about 32 bytes each): without checkpoints a recovery re-runs from
/// batch 0 and the log would grow with the job; past this, later batches replay what is there.
const ENTRIES_MAX: usize = 1 << 20;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReplayLog {
    /// Partition → batch → the offset its read ended at.
    ends: BTreeMap<u32, BTreeMap<u64, i64>>,
    entries: usize,
    /// Batches at or before this are covered by a checkpoint and never re-run.
    forgotten_through: Option<u64>,
}

impl ReplayLog {
    /// A source task's report. Only offset ranges are kept: a generator batch is a function
    /// of the batch, and files do not grow under a job. Returns the end logged before when
    /// this re-run of the batch ended elsewhere: the replay did not hold (a bug).
    pub fn record(&mut self, partition: u32, batch: u64, range: SourceRange) -> Option<i64> {
        let SourceRange::Offsets { end, .. } = range else { return None };
        if self.forgotten_through.is_some_and(|through| batch <= through) {
            return None;
        }
        let ends = self.ends.entry(partition).or_default();
        match ends.get(&batch) {
            Some(logged) => (*logged != end).then_some(*logged),
            None if self.entries < ENTRIES_MAX => {
                ends.insert(batch, end);
                self.entries += 1;
                None
            }
            None => None,
        }
    }

    /// A checkpoint after `batch` is durable: nothing up to it will be re-run.
    pub fn forget_through(&mut self, batch: u64) {
        self.forgotten_through = Some(self.forgotten_through.map_or(batch, |through| through.max(batch)));
        for ends in self.ends.values_mut() {
            let kept = ends.split_off(&(batch + 1));
            self.entries -= ends.len();
            *ends = kept;
        }
    }

    /// What a restarted driver needs to replay (`job_state::SavedFigures`): per partition the
    /// earliest `entries_max / partitions` ends, `(batch, end offset)`. A replay runs from the
    /// checkpoint's batch on while each batch is known, so the earliest entries are the ones
    /// that count; past the cut, batches re-run on what is there, as past `ENTRIES_MAX`.
    pub fn saved(&self, entries_max: usize) -> Vec<(u32, Vec<(u64, i64)>)> {
        let per_partition = entries_max / self.ends.len().max(1);
        self.ends
            .iter()
            .map(|(partition, ends)| (*partition, ends.iter().take(per_partition).map(|(b, e)| (*b, *e)).collect()))
            .filter(|(_, ends): &(u32, Vec<(u64, i64)>)| !ends.is_empty())
            .collect()
    }

    /// The log a driver before this one saved, with what the checkpoint after
    /// `checkpoint_batch` covers dropped.
    pub fn restored(saved: &[(u32, Vec<(u64, i64)>)], checkpoint_batch: Option<u64>) -> Self {
        let mut log = ReplayLog::default();
        for (partition, ends) in saved {
            for (batch, end) in ends {
                log.record(*partition, *batch, SourceRange::Offsets { start: *end, end: *end });
            }
        }
        if let Some(batch) = checkpoint_batch {
            log.forget_through(batch);
        }
        log
    }

    /// For each partition, the ends of batches `from`, `from + 1`, … as long as each is known,
    /// as `(batch, end offset)`; a partition with none known is left out. A gap ends the run:
    /// a batch after an unknown one cannot start where the log says, so what the log holds
    /// past a gap is dropped (those batches re-run on what is there and are logged anew).
    pub fn replay_from(&mut self, from: u64) -> Vec<(u32, Vec<(u64, i64)>)> {
        let mut replay = Vec::new();
        for (partition, ends) in &mut self.ends {
            let run: Vec<(u64, i64)> = ends
                .range(from..)
                .zip(from..)
                .take_while(|((batch, _), expected)| *batch == expected)
                .map(|((batch, end), _)| (*batch, *end))
                .collect();
            let past_run = from + run.len() as u64;
            let dropped = ends.split_off(&past_run);
            self.entries -= dropped.len();
            if !run.is_empty() {
                replay.push((*partition, run));
            }
        }
        replay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(start: i64, end: i64) -> SourceRange {
        SourceRange::Offsets { start, end }
    }

    #[test]
    fn a_replay_runs_from_the_resume_batch_while_every_batch_is_known() {
        let mut log = ReplayLog::default();
        for (batch, end) in [(3, 30), (4, 41), (5, 52), (7, 70)] {
            log.record(0, batch, offsets(end - 10, end));
        }
        log.record(1, 4, offsets(0, 9));
        log.record(2, 3, SourceRange::Time { start_ms: 0, end_ms: 10 });
        // Partition 0 stops at the gap before 7; partition 1 has nothing for batch 3.
        assert_eq!(log.clone().replay_from(3), vec![(0, vec![(3, 30), (4, 41), (5, 52)])]);
        assert_eq!(log.clone().replay_from(4), vec![(0, vec![(4, 41), (5, 52)]), (1, vec![(4, 9)])]);
        assert_eq!(log.clone().replay_from(8), vec![]);
        // Past the gap the log is dropped: batch 7 re-runs on what is there, and its new
        // range is not a mismatch.
        log.replay_from(3);
        assert_eq!(log.record(0, 7, offsets(60, 75)), None);
        assert_eq!(log.record(0, 4, offsets(30, 41)), None, "a replay that held");
        assert_eq!(log.record(0, 5, offsets(41, 50)), Some(52), "a replay that did not hold");
    }

    #[test]
    fn a_saved_log_restores_the_same_replay_past_the_checkpoint_and_is_bounded() {
        let mut log = ReplayLog::default();
        for batch in 0..6 {
            log.record(0, batch, offsets(10 * batch as i64, 10 * batch as i64 + 7));
            log.record(3, batch, offsets(100 + batch as i64, 101 + batch as i64));
        }
        let saved = log.saved(usize::MAX);
        let mut restored = ReplayLog::restored(&saved, Some(2));
        assert_eq!(restored.replay_from(3), log.clone().replay_from(3));
        assert_eq!(restored.record(0, 1, offsets(0, 99)), None, "the checkpoint covers batch 1");
        assert_eq!(restored.record(0, 4, offsets(40, 48)), Some(47), "a re-run cut elsewhere is caught");
        // Four entries for two partitions: each keeps its two earliest batches.
        assert_eq!(log.saved(4), vec![(0, vec![(0, 7), (1, 17)]), (3, vec![(0, 101), (1, 102)])]);
        assert_eq!(ReplayLog::default().saved(4), vec![]);
    }

    #[test]
    fn a_checkpoint_drops_what_it_covers_and_later_reports_of_those_batches() {
        let mut log = ReplayLog::default();
        for batch in 0..10 {
            log.record(0, batch, offsets(batch as i64, batch as i64 + 1));
        }
        log.forget_through(5);
        assert_eq!(log.entries, 4);
        log.record(0, 2, offsets(2, 3));
        assert_eq!(log.entries, 4, "a batch the checkpoint covers is not logged again");
        assert_eq!(log.replay_from(6), vec![(0, vec![(6, 7), (7, 8), (8, 9), (9, 10)])]);
        log.forget_through(3);
        assert_eq!(log.replay_from(6).len(), 1, "an older checkpoint changes nothing");
    }
}
