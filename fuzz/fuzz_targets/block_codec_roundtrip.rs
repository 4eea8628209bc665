//! The block codec of shuffle blocks.
//!
//! Input: a mode byte, then either
//! - (even) raw bytes as a peer could send them: decoding never panics, and a block that
//!   decodes re-encodes to exactly those bytes (the format is canonical);
//! - (odd) a block built with `arbitrary`: every column type, nullable or not, with or without
//!   nulls, possibly sliced; encoding then decoding gives the same block back, and its
//!   encoding decodes and re-encodes to the same bytes.

#![no_main]

use std::sync::Arc;

use arbitrary::{Arbitrary, Result, Unstructured};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_schema::{Field, Schema};
use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_block::{decode_block, encode_block, encode_block_into};

const ROWS_MAX: usize = 200;
const COLUMNS_MAX: usize = 8;

fn cells<'a, T: Arbitrary<'a>>(input: &mut Unstructured<'a>, rows: usize, nullable: bool) -> Result<Vec<Option<T>>> {
    let null_share = if nullable { input.int_in_range(0u8..=4)? } else { 0 };
    (0..rows)
        .map(|_| {
            let null = null_share > 0 && input.int_in_range(1u8..=4)? <= null_share;
            Ok(if null { None } else { Some(T::arbitrary(input)?) })
        })
        .collect()
}

fn arbitrary_column(input: &mut Unstructured<'_>, rows: usize) -> Result<(Field, ArrayRef)> {
    let name = String::arbitrary(input)?;
    let nullable = bool::arbitrary(input)?;
    // Build a longer array and slice it, so offsets, bit offsets and buffers past the
    // slice are exercised.
    let before = input.int_in_range(0..=9usize)?;
    let after = input.int_in_range(0..=3usize)?;
    let total = before + rows + after;
    let array: ArrayRef = match input.int_in_range(0u8..=4)? {
        0 => Arc::new(StringArray::from(cells::<String>(input, total, nullable)?)),
        1 => Arc::new(Int64Array::from(cells::<i64>(input, total, nullable)?)),
        2 => Arc::new(Float64Array::from(
            cells::<u64>(input, total, nullable)?.into_iter().map(|bits| bits.map(f64::from_bits)).collect::<Vec<_>>(),
        )),
        3 => Arc::new(BooleanArray::from(cells::<bool>(input, total, nullable)?)),
        _ => {
            let values = cells::<Vec<u8>>(input, total, nullable)?;
            Arc::new(BinaryArray::from(values.iter().map(|value| value.as_deref()).collect::<Vec<_>>()))
        }
    };
    let array = array.slice(before, rows);
    Ok((Field::new(name, array.data_type().clone(), nullable), array))
}

fn arbitrary_block(input: &mut Unstructured<'_>) -> Result<RecordBatch> {
    let rows = input.int_in_range(0..=ROWS_MAX)?;
    let column_count = input.int_in_range(0..=COLUMNS_MAX)?;
    let (fields, columns): (Vec<Field>, Vec<ArrayRef>) =
        (0..column_count).map(|_| arbitrary_column(input, rows)).collect::<Result<Vec<_>>>()?.into_iter().unzip();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)
        .expect("columns of the right length, nulls only where nullable"))
}

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else { return };
    if mode % 2 == 0 {
        if let Ok(block) = decode_block(rest) {
            assert_eq!(
                encode_block(&block).expect("a decoded block encodes"),
                rest,
                "a decoded block re-encodes to its bytes"
            );
        }
        return;
    }
    let Ok(block) = arbitrary_block(&mut Unstructured::new(rest)) else { return };
    let encoded = encode_block(&block).expect("the five column types encode");
    let decoded = decode_block(&encoded).expect("an encoded block decodes");
    assert_eq!(decoded, block, "round trip");
    assert_eq!(encode_block(&decoded).expect("re-encode"), encoded, "the encoding is canonical");
    for column in decoded.columns() {
        assert!(column.nulls().is_none_or(|nulls| nulls.null_count() > 0), "a bitmap only where a null occurs");
    }
    // Appending after existing bytes writes the same encoding.
    let mut appended = vec![0xAA; 3];
    encode_block_into(&block, &mut appended).expect("encodes");
    assert_eq!(&appended[3..], &encoded[..]);
});
