//! Kafka record batches (format v2) as a fetch response carries them, through `parse_batches`.
//!
//! Input: a flags byte, the offset range and aborted transactions (drawn with `arbitrary`),
//! then the batches. When flag bit 0 is set, every whole batch gets its correct CRC before
//! parsing, so the fuzzer reaches the record parsing and decompression behind the check.
//! Checked: no panic, no unbounded allocation, every record handed over lies in the range
//! asked for, the count returned is the count handed over, and the next offset to fetch
//! stays within the range.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_kafka::records::{parse_batches, AbortedTransactions};

const BATCH_HEADER_BYTES: usize = 61;

/// Sets each whole batch's CRC (over its bytes after the CRC field) to the right value.
fn fix_crcs(data: &mut [u8]) {
    let mut at = 0;
    while data.len() - at >= BATCH_HEADER_BYTES {
        let length = i32::from_be_bytes(data[at + 8..at + 12].try_into().expect("4 bytes"));
        let Ok(length) = usize::try_from(length) else { return };
        let Some(end) = (at + 12).checked_add(length).filter(|end| *end <= data.len()) else { return };
        if end - at < BATCH_HEADER_BYTES {
            return;
        }
        let crc = crc32c::crc32c(&data[at + 21..end]);
        data[at + 17..at + 21].copy_from_slice(&crc.to_be_bytes());
        at = end;
    }
}

/// An offset: mostly small, so ranges meet the batches' offsets, sometimes anything.
fn offset(input: &mut Unstructured<'_>) -> arbitrary::Result<i64> {
    Ok(if bool::arbitrary(input)? { i64::arbitrary(input)? } else { i64::from(input.int_in_range(-2i16..=300)?) })
}

fuzz_target!(|data: &[u8]| {
    let [flags, params_len, rest @ ..] = data else { return };
    let params_len = usize::from(*params_len % 64).min(rest.len());
    let (params, batches) = rest.split_at(params_len);
    let mut input = Unstructured::new(params);
    let (Ok(first), Ok(second)) = (offset(&mut input), offset(&mut input)) else { return };
    let (from, end) = (first.min(second), first.max(second));
    let aborted: Vec<(i64, i64)> = (0..input.int_in_range(0..=3u8).unwrap_or(0))
        .filter_map(|_| Some((i64::from(input.int_in_range(-1i8..=3).ok()?), offset(&mut input).ok()?)))
        .collect();

    let mut batches = batches.to_vec();
    if flags & 1 != 0 {
        fix_crcs(&mut batches);
    }
    let mut scratch = Vec::new();
    let mut visited = 0u64;
    let result =
        parse_batches(&batches, from, end, &mut AbortedTransactions::new(aborted), &mut scratch, &mut |record| {
            assert!(record.offset >= from && record.offset < end, "record {} outside [{from}, {end})", record.offset);
            visited += 1;
        });
    if let Ok(parsed) = result {
        assert_eq!(parsed.records, visited);
        assert!(
            parsed.next_offset >= from && parsed.next_offset <= end,
            "next offset {} outside [{from}, {end}]",
            parsed.next_offset
        );
    }
});
