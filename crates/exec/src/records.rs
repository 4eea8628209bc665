//! Undecoded records as a source delivers them: one contiguous byte buffer plus offsets.

/// Record `i` is `data[offsets[i]..offsets[i + 1]]`. One allocation per batch, not per record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawRecords {
    pub data: Vec<u8>,
    /// Always starts with 0 and has `len() + 1` entries.
    pub offsets: Vec<u32>,
    /// Where record `i` came from in its source (a Kafka offset, a file's byte position),
    /// for dead letters; empty when the source has no such thing (generators).
    pub positions: Vec<i64>,
}

impl RawRecords {
    pub fn new() -> Self {
        RawRecords { data: Vec::new(), offsets: vec![0], positions: Vec::new() }
    }

    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(records + 1);
        offsets.push(0);
        RawRecords { data: Vec::with_capacity(bytes), offsets, positions: Vec::new() }
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
