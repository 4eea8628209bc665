//! A batch of single-object records in one buffer: each record preceded by its length, four
//! bytes big-endian. The ingest server takes it as an HTTP body or WebSocket message, and
//! the gateway generator writes it.
//!
//! Why a length in front rather than records back to back: a single-object record does not
//! say how long it is, so back-to-back records can only be split by decoding them, and one
//! that cannot be decoded (a wrong fingerprint: its writer's schema is unknown, so its end
//! is too) hides where every later record starts. With lengths, each record is framed on
//! its own and judged on its own, exactly as the job judges one Kafka value.

/// The `Content-Type` of an HTTP body that is such a batch.
pub const CONTENT_TYPE: &str = "application/vnd.sleet.avro-batch";

/// Bytes of the length in front of each record.
pub const LENGTH_BYTES: usize = 4;

/// Why a buffer is not a sequence of length-prefixed records; both name the record and the
/// byte offset where the framing broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    #[error("record {index}: its length prefix at byte {at} is cut short ({left} of 4 bytes)")]
    ShortLength { index: usize, at: usize, left: usize },
    #[error("record {index}: its length prefix at byte {at} says {length} bytes, but only {left} follow")]
    Truncated { index: usize, at: usize, length: u32, left: usize },
}

/// Appends `record` with its length in front. Panics on a record over 4 GiB, which no caller
/// builds (the server's bodies are bounded far below it).
pub fn push_framed(record: &[u8], out: &mut Vec<u8>) {
    let length = u32::try_from(record.len()).expect("a framed record is under 4 GiB");
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(record);
}

/// The records of `buffer`, in order; an error ends the iteration. Nothing is allocated and
/// no length is trusted before it is checked against the bytes left.
pub fn framed_records(buffer: &[u8]) -> FramedRecords<'_> {
    FramedRecords { buffer, at: 0, index: 0, failed: false }
}

pub struct FramedRecords<'a> {
    buffer: &'a [u8],
    at: usize,
    index: usize,
    failed: bool,
}

impl<'a> Iterator for FramedRecords<'a> {
    type Item = Result<&'a [u8], FramingError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at == self.buffer.len() {
            return None;
        }
        let (index, at) = (self.index, self.at);
        let rest = &self.buffer[at..];
        let Some((prefix, after)) = rest.split_first_chunk::<LENGTH_BYTES>() else {
            self.failed = true;
            return Some(Err(FramingError::ShortLength { index, at, left: rest.len() }));
        };
        let length = u32::from_be_bytes(*prefix);
        if length as usize > after.len() {
            self.failed = true;
            return Some(Err(FramingError::Truncated { index, at, length, left: after.len() }));
        }
        let record = &after[..length as usize];
        self.at += LENGTH_BYTES + record.len();
        self.index += 1;
        Some(Ok(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(buffer: &[u8], expected: Result<Vec<&[u8]>, FramingError>) {
        let found: Result<Vec<&[u8]>, FramingError> = framed_records(buffer).collect();
        assert_eq!(found, expected, "{buffer:?}");
    }

    #[test]
    fn records_come_back_in_order() {
        let mut buffer = Vec::new();
        for record in [&b"abc"[..], b"", b"\xc3\x01xyz"] {
            push_framed(record, &mut buffer);
        }
        check(&buffer, Ok(vec![b"abc", b"", b"\xc3\x01xyz"]));
        check(&[], Ok(vec![]));
    }

    #[test]
    fn broken_framing_names_the_record_and_byte() {
        check(&[0, 0, 0, 1, 7, 0, 0], Err(FramingError::ShortLength { index: 1, at: 5, left: 2 }));
        check(&[0, 0, 0, 1, 7, 0, 0, 0, 9, 1, 2], Err(FramingError::Truncated { index: 1, at: 5, length: 9, left: 2 }));
        check(&[255, 255, 255, 255], Err(FramingError::Truncated { index: 0, at: 0, length: u32::MAX, left: 0 }));
    }

    #[test]
    fn records_before_a_break_are_still_yielded() {
        let records: Vec<_> = framed_records(&[0, 0, 0, 1, 7, 0]).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0], Ok(&[7u8][..]));
        assert!(records[1].is_err());
    }
}
