//! What the operators that keep keyed state across batches share: the counts of rows they
//! did not use and the size of their state, reported per batch through `StageRunOutput`, and
//! the envelope a stage's snapshot is (one snapshot per stateful operator, in stage order).
//!
//! ```text
//! stage snapshot = "SLSS" version:u8 count:u32 (len:u32 operator-snapshot){count}
//! ```
//!
//! A stage holding only a window aggregate wrote that operator's snapshot bare before the
//! envelope existed; `split_stage_snapshot` still reads one (its magic is `SLWS`), so a
//! checkpoint taken before the change restores after it.

use crate::cell::Reader;
use crate::error::ExecError;

/// Rows a stateful operator saw but did not fold in, and keys it let go, in one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Behind what the state still holds (a key's lateness horizon, a TTL).
    pub late_rows_dropped: u64,
    /// Older than the key's newest but within its lateness, and folded in where it belongs
    /// (increments with `late: fold`): used, and counted apart so a user sees how much of
    /// the input arrived out of order.
    pub late_rows_folded: u64,
    /// A reading whose key and time the state holds already.
    pub duplicate_rows_dropped: u64,
    /// Without an event time or a value to fold.
    pub invalid_rows_dropped: u64,
    /// Of a new key while the state held `max_keys` keys.
    pub refused_rows: u64,
    /// Keys (or groups) forgotten because their TTL passed.
    pub expired_keys: u64,
}

/// How much an operator's state holds: keys, and an estimate of its bytes in memory (the
/// keys' bytes and the values kept, plus a fixed cost per entry for the hash table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateSize {
    pub keys: u64,
    pub bytes: u64,
}

/// A fixed estimate of what one entry of a keyed hash table costs beyond its key and values
/// (the table's slot, the boxed key's pointer and length, a `Vec`'s header).
pub(crate) const ENTRY_OVERHEAD_BYTES: u64 = 64;

const STAGE_MAGIC: &[u8; 4] = b"SLSS";
const STAGE_VERSION: u8 = 1;
const WINDOW_MAGIC: &[u8; 4] = b"SLWS";

pub(crate) fn join_stage_snapshot(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + parts.iter().map(|part| part.len() + 4).sum::<usize>());
    out.extend_from_slice(STAGE_MAGIC);
    out.push(STAGE_VERSION);
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for part in parts {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// The operator snapshots of a stage snapshot, checked to be `expected` of them.
pub(crate) fn split_stage_snapshot(bytes: &[u8], expected: usize) -> Result<Vec<&[u8]>, ExecError> {
    if bytes.starts_with(WINDOW_MAGIC) && expected == 1 {
        return Ok(vec![bytes]);
    }
    let mut reader = Reader { bytes };
    if reader.take(4)? != STAGE_MAGIC {
        return Err(ExecError::CorruptSnapshot("not a stage snapshot (bad magic)".into()));
    }
    let version = reader.u8()?;
    if version != STAGE_VERSION {
        return Err(ExecError::CorruptSnapshot(format!("stage snapshot version {version}, expected {STAGE_VERSION}")));
    }
    let count = reader.u32()? as usize;
    if count != expected {
        return Err(ExecError::CorruptSnapshot(format!(
            "the snapshot holds {count} operators' state, the stage has {expected} stateful operators"
        )));
    }
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let length = reader.u32()? as usize;
        parts.push(reader.take(length)?);
    }
    if !reader.bytes.is_empty() {
        return Err(ExecError::CorruptSnapshot(format!(
            "{} trailing bytes after the stage snapshot",
            reader.bytes.len()
        )));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_snapshot_splits_into_its_parts_and_refuses_a_wrong_count() {
        let bytes = join_stage_snapshot(&[b"abc".to_vec(), Vec::new(), b"z".to_vec()]);
        let parts = split_stage_snapshot(&bytes, 3).expect("three parts");
        assert_eq!(parts, vec![&b"abc"[..], &b""[..], &b"z"[..]]);
        assert!(split_stage_snapshot(&bytes, 2).is_err());
        for cut in 0..bytes.len() {
            assert!(split_stage_snapshot(&bytes[..cut], 3).is_err(), "truncated at {cut}");
        }
    }

    #[test]
    fn a_bare_window_snapshot_from_before_the_envelope_still_reads() {
        let bare = b"SLWS\x02rest".to_vec();
        assert_eq!(split_stage_snapshot(&bare, 1).expect("bare"), vec![&bare[..]]);
    }
}
