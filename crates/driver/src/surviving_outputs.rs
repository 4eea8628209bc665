//! Which worker holds which source task's output since the latest checkpoint, as the
//! reports said (`TaskStats::retained`). Pure. The recovery planner reads it to reuse what
//! survivors hold instead of running those tasks again.
//!
//! ```text
//!  report (stage s, partition p, batch b, worker w, retained) ─▶ held[(s, p)][b] = (w, range read)
//!  checkpoint after batch c recorded ─▶ entries up to c dropped (workers drop theirs too)
//!  a new attempt starts ─▶ cleared: its reports say again what is held, reused outputs included
//! ```

use std::collections::BTreeMap;

use sleet_plan::{SourceRange, StageId};
use sleet_wire::WorkerId;

/// Entries kept at most: workers bound what they keep in bytes, this bounds the driver's
/// book of it (about 48 bytes an entry) when checkpoints are far apart.
const ENTRIES_MAX: usize = 1 << 20;

/// One kept output: where it is, and what its batch read (where a reusing source resumes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldOutput {
    pub worker: WorkerId,
    pub range: Option<SourceRange>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct SurvivingOutputs {
    held: BTreeMap<(StageId, u32), BTreeMap<u64, HeldOutput>>,
    entries: usize,
    forgotten_through: Option<u64>,
}

impl SurvivingOutputs {
    pub fn record(&mut self, stage: StageId, partition: u32, batch: u64, held: HeldOutput) {
        if self.entries >= ENTRIES_MAX || self.forgotten_through.is_some_and(|through| batch <= through) {
            return;
        }
        if self.held.entry((stage, partition)).or_default().insert(batch, held).is_none() {
            self.entries += 1;
        }
    }

    pub fn forget_through(&mut self, batch: u64) {
        self.forgotten_through = Some(self.forgotten_through.map_or(batch, |through| through.max(batch)));
        for batches in self.held.values_mut() {
            let kept = batches.split_off(&(batch + 1));
            self.entries -= batches.len();
            *batches = kept;
        }
    }

    /// A new attempt: what the previous one held is either reused (and reported again) or
    /// dropped by its workers.
    pub fn clear(&mut self) {
        self.held.clear();
        self.entries = 0;
    }

    /// The outputs held of `(stage, partition)`, by batch.
    pub fn of(&self, stage: StageId, partition: u32) -> Option<&BTreeMap<u64, HeldOutput>> {
        self.held.get(&(stage, partition))
    }

    pub fn slots(&self) -> impl Iterator<Item = (StageId, u32)> + '_ {
        self.held.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_drops_what_it_covers_and_nothing_older_comes_back() {
        let mut outputs = SurvivingOutputs::default();
        let held = HeldOutput { worker: 1, range: None };
        for batch in 0..5 {
            outputs.record(StageId(0), 0, batch, held);
        }
        outputs.forget_through(2);
        let batches: Vec<u64> = outputs.of(StageId(0), 0).expect("held").keys().copied().collect();
        assert_eq!(batches, vec![3, 4]);
        outputs.record(StageId(0), 0, 1, held);
        assert_eq!(outputs.of(StageId(0), 0).expect("held").len(), 2, "a late report of a covered batch");
        outputs.clear();
        assert!(outputs.of(StageId(0), 0).is_none());
    }
}
