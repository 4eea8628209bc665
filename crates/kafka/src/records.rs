//! Record batches (format v2) as they come in a fetch response, parsed in place: each record
//! is handed to the caller as slices of the response (or of one reused buffer for a
//! compressed batch, see `decompress`), never as an object of its own. Every codec's records
//! are read here: a count or length read off the wire is never reserved up front, only
//! walked while the bytes last.
//!
//! ```text
//! batch:  base_offset i64 | length i32 | leader_epoch i32 | magic i8 = 2 | crc u32 |
//!         attributes i16 | last_offset_delta i32 | base_ts i64 | max_ts i64 |
//!         producer_id i64 | producer_epoch i16 | base_sequence i32 | count i32 | records…
//! record: length varint | attributes i8 | ts_delta varlong | offset_delta varint |
//!         key (varint length, -1 = null) | value (same) | headers (varint count, each key+value)
//! ```

use rustc_hash::FxHashSet as HashSet;

const BATCH_HEADER_BYTES: usize = 61;
/// Bytes of a batch before the length field's count starts.
const LENGTH_PREFIX_BYTES: usize = 12;
const ATTRIBUTE_COMPRESSION: i16 = 0x7;
const ATTRIBUTE_TRANSACTIONAL: i16 = 1 << 4;
const ATTRIBUTE_CONTROL: i16 = 1 << 5;
const CONTROL_TYPE_ABORT: i16 = 0;

/// One record, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Transactions a fetch response says were aborted in its range, as `(producer_id,
/// first_offset)`; records of those transactions are skipped under `read_committed`.
#[derive(Debug, Default)]
pub struct AbortedTransactions {
    /// Sorted by first offset, descending, so the next one to start is popped from the end.
    pending: Vec<(i64, i64)>,
    active: HashSet<i64>,
}

impl AbortedTransactions {
    pub fn new(mut aborted: Vec<(i64, i64)>) -> Self {
        aborted.sort_by_key(|&(_, first_offset)| std::cmp::Reverse(first_offset));
        AbortedTransactions { pending: aborted, active: HashSet::default() }
    }

    fn start_up_to(&mut self, last_offset: i64) {
        while self.pending.last().is_some_and(|&(_, first)| first <= last_offset) {
            let (producer_id, _) = self.pending.pop().expect("checked above");
            self.active.insert(producer_id);
        }
    }
}

/// What a parse consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// The offset to fetch next: past the last whole batch read, or `end` if it was reached.
    pub next_offset: i64,
    pub records: u64,
}

/// Reads the batches in `data`, handing each record at or after `from` and before `end`,
/// that is neither a control record nor part of an aborted transaction, to `visit`. A batch
/// cut off at the end of `data` (a fetch's size limit) is left for the next fetch.
pub fn parse_batches(
    data: &[u8],
    from: i64,
    end: i64,
    aborted: &mut AbortedTransactions,
    scratch: &mut Vec<u8>,
    visit: &mut dyn FnMut(Record<'_>),
) -> Result<Parsed, String> {
    let mut rest = data;
    let mut parsed = Parsed { next_offset: from, records: 0 };
    while rest.len() >= LENGTH_PREFIX_BYTES {
        let base_offset = i64::from_be_bytes(rest[0..8].try_into().expect("8 bytes"));
        let length = i32::from_be_bytes(rest[8..12].try_into().expect("4 bytes"));
        if length < (BATCH_HEADER_BYTES - LENGTH_PREFIX_BYTES) as i32 {
            return Err(format!("a record batch of {length} bytes at offset {base_offset}"));
        }
        let total = LENGTH_PREFIX_BYTES + length as usize;
        if rest.len() < total {
            break;
        }
        let batch = &rest[..total];
        rest = &rest[total..];
        if base_offset >= end {
            parsed.next_offset = end;
            return Ok(parsed);
        }
        let header = BatchHeader::read(batch)?;
        let last_offset = base_offset.checked_add(header.last_offset_delta.into()).ok_or_else(|| {
            format!("a record batch at offset {base_offset} ends past the offsets (delta {})", header.last_offset_delta)
        })?;
        if last_offset < from {
            continue;
        }
        if header.producer_id >= 0 {
            aborted.start_up_to(last_offset);
        }
        let skip = if header.attributes & ATTRIBUTE_CONTROL != 0 {
            if header.producer_id >= 0 && control_type(&batch[BATCH_HEADER_BYTES..]) == Some(CONTROL_TYPE_ABORT) {
                aborted.active.remove(&header.producer_id);
            }
            true
        } else {
            header.attributes & ATTRIBUTE_TRANSACTIONAL != 0 && aborted.active.contains(&header.producer_id)
        };
        if !skip {
            let mut emit = |record: Record<'_>| {
                if record.offset >= from && record.offset < end {
                    parsed.records += 1;
                    visit(record);
                }
            };
            read_records(batch, base_offset, &header, scratch, &mut emit)?;
        }
        // `end` is at most i64::MAX, so saturating leaves every comparison with it right.
        parsed.next_offset = last_offset.saturating_add(1).min(end);
        if last_offset.saturating_add(1) >= end {
            parsed.next_offset = end;
            return Ok(parsed);
        }
    }
    Ok(parsed)
}

struct BatchHeader {
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    producer_id: i64,
    count: i32,
}

impl BatchHeader {
    fn read(batch: &[u8]) -> Result<Self, String> {
        if batch.len() < BATCH_HEADER_BYTES {
            return Err(format!("a record batch of {} bytes", batch.len()));
        }
        let magic = batch[16] as i8;
        if magic != 2 {
            return Err(format!("record batch format v{magic} (only v2, Kafka ≥ 0.11, is read)"));
        }
        let crc = u32::from_be_bytes(batch[17..21].try_into().expect("4 bytes"));
        if crc32c::crc32c(&batch[21..]) != crc {
            return Err("record batch fails its CRC check (corrupt data)".to_string());
        }
        let i16_at = |at: usize| i16::from_be_bytes(batch[at..at + 2].try_into().expect("2 bytes"));
        let i32_at = |at: usize| i32::from_be_bytes(batch[at..at + 4].try_into().expect("4 bytes"));
        let i64_at = |at: usize| i64::from_be_bytes(batch[at..at + 8].try_into().expect("8 bytes"));
        let count = i32_at(57);
        if count < 0 {
            return Err(format!("a record batch claims {count} records"));
        }
        Ok(BatchHeader {
            attributes: i16_at(21),
            last_offset_delta: i32_at(23),
            base_timestamp: i64_at(27),
            producer_id: i64_at(43),
            count,
        })
    }
}

/// The type of a control batch's (single) record: its key is `version i16, type i16`.
fn control_type(records: &[u8]) -> Option<i16> {
    let mut cursor = Cursor { data: records, at: 0 };
    cursor.varint().ok()?;
    cursor.skip(1).ok()?;
    cursor.varlong().ok()?;
    cursor.varint().ok()?;
    let key = cursor.bytes().ok()??;
    (key.len() >= 4).then(|| i16::from_be_bytes([key[2], key[3]]))
}

fn read_records(
    batch: &[u8],
    base_offset: i64,
    header: &BatchHeader,
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(Record<'_>),
) -> Result<(), String> {
    let body = &batch[BATCH_HEADER_BYTES..];
    let records = match header.attributes & ATTRIBUTE_COMPRESSION {
        0 => body,
        codec => {
            decompress::decompress(codec, body, scratch)?;
            scratch.as_slice()
        }
    };
    let mut cursor = Cursor { data: records, at: 0 };
    for _ in 0..header.count {
        let length = cursor.varint()?;
        let start = cursor.at;
        cursor.skip(1)?;
        let timestamp = header.base_timestamp.checked_add(cursor.varlong()?).ok_or("a record's timestamp overflows")?;
        let offset = base_offset.checked_add(cursor.varint()?.into()).ok_or("a record's offset overflows")?;
        let key = cursor.bytes()?;
        let value = cursor.bytes()?;
        // Headers are not used; skip to the record's declared end.
        let end = start + usize::try_from(length).map_err(|_| format!("a record of length {length}"))?;
        if end > cursor.data.len() || end < cursor.at {
            return Err(format!("record at offset {offset} overruns its batch"));
        }
        cursor.at = end;
        emit(Record { offset, timestamp, key, value });
    }
    Ok(())
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip(&mut self, bytes: usize) -> Result<(), String> {
        if self.at + bytes > self.data.len() {
            return Err("record cut short".to_string());
        }
        self.at += bytes;
        Ok(())
    }

    fn varlong(&mut self) -> Result<i64, String> {
        let mut raw: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = *self.data.get(self.at).ok_or("varint cut short")?;
            self.at += 1;
            raw |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err("varint longer than 10 bytes".to_string())
    }

    fn varint(&mut self) -> Result<i32, String> {
        let value = self.varlong()?;
        i32::try_from(value).map_err(|_| format!("varint {value} out of range"))
    }

    fn bytes(&mut self) -> Result<Option<&'a [u8]>, String> {
        let length = self.varint()?;
        if length < 0 {
            return Ok(None);
        }
        let start = self.at;
        self.skip(length as usize)?;
        Ok(Some(&self.data[start..self.at]))
    }
}

mod decompress;
#[cfg(test)]
mod tests;
