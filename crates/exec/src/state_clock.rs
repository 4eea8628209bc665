//! The event time a keyed operator's state is kept by, the same in every such operator: the
//! largest event time seen, the TTL that follows from it (rows that far behind are late, keys
//! that long silent are forgotten), when the last sweep ran, and how a snapshot starts.
//!
//! ```text
//! snapshot start = magic:[u8; 4] version:u8 max_event_time:time swept_at:time
//! time           = 0 | 1 i64
//! ```

use crate::cell::{write_optional_i64, Reader};
use crate::error::ExecError;

/// An operator's snapshot kind: what its bytes start with, and what an error calls it.
pub(crate) struct SnapshotFormat {
    pub(crate) magic: &'static [u8; 4],
    pub(crate) version: u8,
    pub(crate) what: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateClock {
    ttl_ms: i64,
    max_event_time: Option<i64>,
    /// The largest event time when the TTL was last swept.
    swept_at: Option<i64>,
}

impl StateClock {
    pub(crate) fn new(ttl_ms: i64) -> Self {
        StateClock { ttl_ms, max_event_time: None, swept_at: None }
    }

    pub(crate) fn observe(&mut self, time: i64) {
        self.max_event_time = Some(self.max_event_time.map_or(time, |max| max.max(time)));
    }

    pub(crate) fn largest_event_time(&self) -> Option<i64> {
        self.max_event_time
    }

    /// Rows before this are late: the keys they would update may be forgotten already.
    pub(crate) fn late_before(&self) -> Option<i64> {
        self.max_event_time.map(|max| max.saturating_sub(self.ttl_ms))
    }

    /// When a sweep is due, records it and returns the time before which a key has expired.
    ///
    /// A sweep runs once the largest event time has moved a quarter of the TTL past the last
    /// one. Sweeping every batch would visit every key every batch; this way a key outlives
    /// its TTL by at most a quarter of it, and when is a function of the input alone.
    pub(crate) fn start_sweep(&mut self) -> Option<i64> {
        let max = self.max_event_time?;
        let due = self.swept_at.is_none_or(|swept| max.saturating_sub(swept) >= (self.ttl_ms / 4).max(1));
        if !due {
            return None;
        }
        self.swept_at = Some(max);
        Some(max.saturating_sub(self.ttl_ms))
    }

    /// Starts a snapshot of `format` with this clock.
    pub(crate) fn begin_snapshot(&self, format: &SnapshotFormat) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(format.magic);
        out.push(format.version);
        write_optional_i64(self.max_event_time, &mut out);
        write_optional_i64(self.swept_at, &mut out);
        out
    }

    /// Reads what `begin_snapshot` wrote, checking the magic and version.
    pub(crate) fn read_snapshot_start(
        ttl_ms: i64,
        format: &SnapshotFormat,
        reader: &mut Reader<'_>,
    ) -> Result<Self, ExecError> {
        let what = format.what;
        if reader.take(4)? != format.magic {
            return Err(ExecError::CorruptSnapshot(format!("not a {what} snapshot (bad magic)")));
        }
        let found = reader.u8()?;
        if found != format.version {
            return Err(ExecError::CorruptSnapshot(format!(
                "{what} snapshot version {found}, expected {}",
                format.version
            )));
        }
        let max_event_time = reader.optional_i64("time")?;
        let swept_at = reader.optional_i64("time")?;
        Ok(StateClock { ttl_ms, max_event_time, swept_at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: SnapshotFormat = SnapshotFormat { magic: b"TEST", version: 3, what: "test" };

    #[test]
    fn a_sweep_is_due_first_then_each_quarter_ttl() {
        let mut clock = StateClock::new(100);
        assert_eq!(clock.start_sweep(), None, "nothing seen yet");
        clock.observe(10);
        assert_eq!(clock.start_sweep(), Some(-90));
        clock.observe(34);
        assert_eq!(clock.start_sweep(), None, "24 is under a quarter of 100");
        clock.observe(20);
        assert_eq!(clock.late_before(), Some(-66), "an older time does not move the clock back");
        clock.observe(35);
        assert_eq!(clock.start_sweep(), Some(-65));
    }

    #[test]
    fn the_snapshot_start_reads_back_and_refuses_another_kind() {
        let mut clock = StateClock::new(100);
        clock.observe(7);
        clock.start_sweep();
        clock.observe(9);
        let bytes = clock.begin_snapshot(&FORMAT);
        assert_eq!(bytes, b"TEST\x03\x01\x09\0\0\0\0\0\0\0\x01\x07\0\0\0\0\0\0\0".to_vec());
        let mut reader = Reader { bytes: &bytes };
        assert_eq!(StateClock::read_snapshot_start(100, &FORMAT, &mut reader).expect("reads"), clock);
        assert!(reader.bytes.is_empty());
        let other = SnapshotFormat { magic: b"TEST", version: 4, what: "test" };
        assert!(StateClock::read_snapshot_start(100, &other, &mut Reader { bytes: &bytes }).is_err());
    }
}
