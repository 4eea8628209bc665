//! Undecoded records as a source delivers them: one contiguous byte buffer plus offsets, and
//! beside the bytes what the source knows of each record (its position, its timestamp).

use sleet_monotask::EventWait;

/// Record `i` is `data[offsets[i]..offsets[i + 1]]`. One allocation per batch, not per record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecords {
    pub data: Vec<u8>,
    /// Always starts with 0 and has `len() + 1` entries.
    pub offsets: Vec<u32>,
    /// Where record `i` came from in its source (a Kafka offset, a file's byte position),
    /// for dead letters; empty when the source has no such thing (generators).
    pub positions: Vec<i64>,
    /// Record `i`'s timestamp in its source (a Kafka record's create or append time, in ms),
    /// beside the bytes rather than inside them, so a decoder can take it as a column without
    /// the record being rewritten; empty when the source has none.
    pub timestamps: Vec<i64>,
    /// The records' wait for their batch to close, when the source knows their event times
    /// without decoding them (a generator); `None` otherwise. Filled by `Source::read`.
    pub event_wait: Option<EventWait>,
}

/// Not derived: an empty batch still has its first offset, which a derived default lacks
/// (its `len()` would underflow), and `std::mem::take` leaves a default behind.
impl Default for RawRecords {
    fn default() -> Self {
        Self::new()
    }
}

impl RawRecords {
    pub fn new() -> Self {
        Self::with_capacity(0, 0)
    }

    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(records + 1);
        offsets.push(0);
        RawRecords {
            data: Vec::with_capacity(bytes),
            offsets,
            positions: Vec::new(),
            timestamps: Vec::new(),
            event_wait: None,
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, index: usize) -> &[u8] {
        &self.data[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }

    pub fn push(&mut self, record: &[u8]) {
        self.data.extend_from_slice(record);
        self.finish_record();
    }

    /// Appends records `range` of `other` (and their positions and timestamps, if it has
    /// them): one copy of their bytes, offsets shifted, instead of a push per record.
    pub fn extend_from(&mut self, other: &RawRecords, range: std::ops::Range<usize>) {
        if range.is_empty() {
            return;
        }
        let (from, to) = (other.offsets[range.start] as usize, other.offsets[range.end] as usize);
        let base = self.data.len() as i64 - from as i64;
        self.data.extend_from_slice(&other.data[from..to]);
        self.offsets.extend(
            other.offsets[range.start + 1..=range.end]
                .iter()
                .map(|&end| u32::try_from(end as i64 + base).expect("a batch of raw records stays under 4 GiB")),
        );
        if !other.positions.is_empty() {
            self.positions.extend_from_slice(&other.positions[range.clone()]);
        }
        if !other.timestamps.is_empty() {
            self.timestamps.extend_from_slice(&other.timestamps[range]);
        }
    }

    /// Ends the record whose bytes were appended to `data` directly since the last one.
    pub fn finish_record(&mut self) {
        let end = u32::try_from(self.data.len()).expect("a batch of raw records stays under 4 GiB");
        self.offsets.push(end);
    }

    /// Record `index`'s position in its source, if the source gives positions.
    pub fn position(&self, index: usize) -> Option<i64> {
        self.positions.get(index).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |index| self.get(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extending_from_a_range_equals_pushing_its_records() {
        let mut source = RawRecords::new();
        for (index, record) in ["a", "", "ccc", "dd"].iter().enumerate() {
            source.push(record.as_bytes());
            source.positions.push(100 + index as i64);
            source.timestamps.push(1_000 + index as i64);
        }
        let mut pushed = RawRecords::new();
        pushed.push(b"x");
        pushed.positions.push(7);
        pushed.timestamps.push(-7);
        let mut extended = pushed.clone();
        for index in 1..4 {
            pushed.push(source.get(index));
            pushed.positions.push(source.positions[index]);
            pushed.timestamps.push(source.timestamps[index]);
        }
        extended.extend_from(&source, 1..4);
        extended.extend_from(&source, 2..2);
        assert_eq!(extended, pushed);
    }

    #[test]
    fn what_a_take_leaves_behind_is_a_usable_empty_batch() {
        let mut records = RawRecords::new();
        records.push(b"a");
        let taken = std::mem::take(&mut records);
        assert_eq!(taken.len(), 1);
        assert!(records.is_empty());
        records.push(b"bc");
        assert_eq!(records.iter().collect::<Vec<_>>(), vec![&b"bc"[..]]);
    }
}
