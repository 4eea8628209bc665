//! Data blocks on the wire: a compact, self-describing columnar codec for the column types a plan can name.
//!
//! Shuffle blocks are small (often 1–16 rows), so what a block costs is mostly fixed cost.
//! Arrow IPC builds, verifies and converts a schema flatbuffer for every block, about 12% of
//! all CPU in the shuffle benchmark; this format spends a few header bytes per column instead
//! and copies each buffer once.
//!
//! ```text
//! block   = format:u8 (0xB1)  rows:u32  columns:u16  column{columns}
//! column  = name_len:u16  name:[u8; name_len] (UTF-8)  type:u8  flags:u8  [validity:bits]  values
//! bits    = ceil(rows / 8) bytes, bit i of the column in bit i % 8 of byte i / 8; the padding bits are 0
//! values  = Int64, Float64:  rows × 8 bytes
//!           Boolean:         bits
//!           Utf8, Binary:    ends:rows × u32, then ends[rows - 1] value bytes (none when rows = 0);
//!                            row i spans ends[i - 1]..ends[i], with ends[-1] = 0
//! ```
//!
//! Integers and floats are little-endian. Type tags: 1 Utf8, 2 Int64, 3 Float64, 4 Boolean,
//! 5 Binary (i32 offsets for both byte types, as `DataType` in `sleet-plan` maps them). Flags:
//! bit 0 says the field is nullable, bit 1 that a validity bitmap follows (1 = valid), which the
//! encoder writes only when the column holds at least one null. Sliced arrays are encoded
//! relative to their slice: offsets are rebased to 0 and only the slice's bits and bytes are
//! copied.
//!
//! The encoding is canonical: the decoder accepts only bytes the encoder could have produced
//! (no unknown flag bits, no set padding bits, no bitmap without a null, no trailing bytes), so
//! `encode(decode(bytes)) == bytes` whenever decoding succeeds. That strictness turns most
//! damage into an error; a flipped bit inside a value's bytes is still undetectable, as there
//! is no checksum (TCP's is the guard against that).
//!
//! A crate of its own, apart from `sleet-wire`, because it is the only part of the wire that
//! needs Arrow: the driver speaks the wire but never sees a block's contents, so it links
//! neither. It must never carry anything but a block's rows (headers and metadata travel in
//! `sleet_wire` messages).
//!
//! Not carried: schema and field metadata (the engine sets none). A block of zero columns is
//! carried, since the row count is in the header rather than derived from a column. The format
//! byte changes whenever the layout does; an Arrow IPC stream (which starts with 0xFF) or a
//! block of another layout is refused rather than misread.

use std::fmt::Display;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};

use sleet_wire::WireError;

/// The first byte of every block; a new layout takes a new value.
const BLOCK_FORMAT: u8 = 0xB1;
/// Format byte, row count, column count.
const BLOCK_HEADER_LEN: usize = 1 + 4 + 2;
/// Name length, type tag and flags of a column with an empty name; bounds what a column count can claim.
const COLUMN_HEADER_LEN_MIN: usize = 2 + 1 + 1;

/// The column types a block carries, with their type tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ColumnType {
    Utf8 = 1,
    Int64 = 2,
    Float64 = 3,
    Boolean = 4,
    Binary = 5,
}

impl ColumnType {
    fn from_tag(tag: u8) -> Option<Self> {
        [Self::Utf8, Self::Int64, Self::Float64, Self::Boolean, Self::Binary]
            .into_iter()
            .find(|known| *known as u8 == tag)
    }

    fn data_type(self) -> DataType {
        match self {
            Self::Utf8 => DataType::Utf8,
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            Self::Boolean => DataType::Boolean,
            Self::Binary => DataType::Binary,
        }
    }
}

const FLAG_NULLABLE: u8 = 1;
const FLAG_HAS_NULLS: u8 = 2;

/// Encodes a block into a new buffer; a column of a type other than the five is an error.
pub fn encode_block(block: &RecordBatch) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    encode_block_into(block, &mut out)?;
    Ok(out)
}

/// Appends the encoding of `block` to `out`, so a caller can put a header and the block in
/// one buffer. On error `out` is left as it was.
pub fn encode_block_into(block: &RecordBatch, out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    let result = append_block(block, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn append_block(block: &RecordBatch, out: &mut Vec<u8>) -> Result<(), WireError> {
    let rows = limit_u32("row count", block.num_rows())?;
    let column_count = limit_u16("column count", block.num_columns())?;
    let schema = block.schema_ref();

    // Sizing every column first refuses an unsupported block before a byte is written and
    // makes the one reservation exact, so encoding never reallocates.
    let mut len = BLOCK_HEADER_LEN;
    for (field, array) in schema.fields().iter().zip(block.columns()) {
        len += Column::of(field, array.as_ref())?.encoded_len();
    }
    let start = out.len();
    out.reserve(len);

    out.push(BLOCK_FORMAT);
    out.extend_from_slice(&rows.to_le_bytes());
    out.extend_from_slice(&column_count.to_le_bytes());
    for (field, array) in schema.fields().iter().zip(block.columns()) {
        Column::of(field, array.as_ref())?.append(out);
    }
    debug_assert_eq!(out.len() - start, len, "the size computed up front must match the bytes written");
    Ok(())
}

fn limit_u32(what: &'static str, length: usize) -> Result<u32, WireError> {
    u32::try_from(length).map_err(|_| WireError::BlockTooLarge { what, length: length as u64, limit: u32::MAX.into() })
}

fn limit_u16(what: &'static str, length: usize) -> Result<u16, WireError> {
    u16::try_from(length).map_err(|_| WireError::BlockTooLarge { what, length: length as u64, limit: u16::MAX.into() })
}

/// One column of a block being encoded, downcast to its concrete array.
struct Column<'a> {
    name: &'a str,
    nullable: bool,
    rows: usize,
    /// Present only when the column holds a null, so a column without nulls costs no bitmap.
    nulls: Option<&'a NullBuffer>,
    values: Values<'a>,
}

enum Values<'a> {
    Utf8(&'a StringArray),
    Int64(&'a Int64Array),
    Float64(&'a Float64Array),
    Boolean(&'a BooleanArray),
    Binary(&'a BinaryArray),
}

impl<'a> Column<'a> {
    fn of(field: &'a Field, array: &'a dyn Array) -> Result<Self, WireError> {
        limit_u16("column name length", field.name().len())?;
        let values = match array.data_type() {
            DataType::Utf8 => Values::Utf8(array.as_string::<i32>()),
            DataType::Int64 => Values::Int64(array.as_primitive::<Int64Type>()),
            DataType::Float64 => Values::Float64(array.as_primitive::<Float64Type>()),
            DataType::Boolean => Values::Boolean(array.as_boolean()),
            DataType::Binary => Values::Binary(array.as_binary::<i32>()),
            other => {
                return Err(WireError::UnsupportedColumnType {
                    column: field.name().clone(),
                    data_type: other.to_string(),
                })
            }
        };
        let nulls = array.nulls().filter(|nulls| nulls.null_count() > 0);
        Ok(Column { name: field.name(), nullable: field.is_nullable(), rows: array.len(), nulls, values })
    }

    fn encoded_len(&self) -> usize {
        let rows = self.rows;
        let bitmap_len = rows.div_ceil(8);
        let validity_len = if self.nulls.is_some() { bitmap_len } else { 0 };
        let values_len = match self.values {
            Values::Int64(_) | Values::Float64(_) => rows * 8,
            Values::Boolean(_) => bitmap_len,
            Values::Utf8(array) => rows * 4 + sliced_values_len(array.offsets()),
            Values::Binary(array) => rows * 4 + sliced_values_len(array.offsets()),
        };
        COLUMN_HEADER_LEN_MIN + self.name.len() + validity_len + values_len
    }

    fn append(&self, out: &mut Vec<u8>) {
        // `of` checked the name length against u16.
        out.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        let column_type = match self.values {
            Values::Utf8(_) => ColumnType::Utf8,
            Values::Int64(_) => ColumnType::Int64,
            Values::Float64(_) => ColumnType::Float64,
            Values::Boolean(_) => ColumnType::Boolean,
            Values::Binary(_) => ColumnType::Binary,
        };
        out.push(column_type as u8);
        let mut flags = 0;
        if self.nullable {
            flags |= FLAG_NULLABLE;
        }
        if self.nulls.is_some() {
            flags |= FLAG_HAS_NULLS;
        }
        out.push(flags);
        if let Some(nulls) = self.nulls {
            append_bits(out, nulls.inner());
        }
        match self.values {
            Values::Utf8(array) => append_byte_values(out, array.offsets(), array.values()),
            Values::Int64(array) => append_words_le(out, array.values().inner()),
            Values::Float64(array) => append_words_le(out, array.values().inner()),
            Values::Boolean(array) => append_bits(out, array.values()),
            Values::Binary(array) => append_byte_values(out, array.offsets(), array.values()),
        }
    }
}

/// Bytes of value data a possibly sliced byte array spans.
fn sliced_values_len(offsets: &OffsetBuffer<i32>) -> usize {
    // Arrow keeps offsets non-negative and monotonic, so the difference is non-negative.
    (offsets.last() - offsets.first()) as usize
}

/// Writes bits starting at bit 0 whatever the buffer's bit offset, with zeroed padding.
fn append_bits(out: &mut Vec<u8>, bits: &BooleanBuffer) {
    let chunks = bits.bit_chunks();
    for chunk in chunks.iter() {
        out.extend_from_slice(&chunk.to_le_bytes());
    }
    let remainder_len = chunks.remainder_len().div_ceil(8);
    out.extend_from_slice(&chunks.remainder_bits().to_le_bytes()[..remainder_len]);
}

/// Writes 8-byte native values (an `Int64` or `Float64` buffer, already sliced) little-endian.
fn append_words_le(out: &mut Vec<u8>, native: &Buffer) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(native.as_slice());
    } else {
        for word in native.as_slice().chunks_exact(8) {
            out.extend(word.iter().rev());
        }
    }
}

/// Writes the end offsets rebased to the slice's first offset, then only the bytes the slice spans.
fn append_byte_values(out: &mut Vec<u8>, offsets: &OffsetBuffer<i32>, values: &Buffer) {
    let first = offsets.first();
    let ends_start = out.len();
    out.resize(ends_start + (offsets.len() - 1) * 4, 0);
    for (slot, end) in out[ends_start..].chunks_exact_mut(4).zip(&offsets[1..]) {
        // Monotonic offsets keep every rebased end non-negative.
        slot.copy_from_slice(&((end - first) as u32).to_le_bytes());
    }
    out.extend_from_slice(&values.as_slice()[first as usize..offsets.last() as usize]);
}

/// Decodes a block; bytes that are not exactly one well-formed block are an error.
pub fn decode_block(bytes: &[u8]) -> Result<RecordBatch, WireError> {
    let mut input = Input { bytes };
    let header = input.take(BLOCK_HEADER_LEN).ok_or_else(|| {
        bad_block(format!("{} bytes cannot hold the {BLOCK_HEADER_LEN}-byte block header", bytes.len()))
    })?;
    if header[0] != BLOCK_FORMAT {
        return Err(bad_block(format!("unknown format byte {:#04x}, expected {BLOCK_FORMAT:#04x}", header[0])));
    }
    let rows = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    let column_count = usize::from(u16::from_le_bytes([header[5], header[6]]));

    // The column count is read from the input, so it may only reserve what the remaining
    // bytes could describe.
    let capacity = column_count.min(input.bytes.len() / COLUMN_HEADER_LEN_MIN);
    let mut fields = Vec::with_capacity(capacity);
    let mut columns = Vec::with_capacity(capacity);
    for index in 0..column_count {
        let (field, column) = decode_column(&mut input, index, rows)?;
        fields.push(field);
        columns.push(column);
    }
    if !input.bytes.is_empty() {
        return Err(bad_block(format!("{} trailing bytes after the last column", input.bytes.len())));
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)
        .map_err(|error| bad_block(format!("the columns do not form a batch: {error}")))
}

fn bad_block(problem: impl Display) -> WireError {
    WireError::BadBlock(problem.to_string())
}

/// The unread rest of a block.
struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if len > self.bytes.len() {
            return None;
        }
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Some(taken)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|bytes| u16::from_le_bytes([bytes[0], bytes[1]]))
    }
}

/// Names the column a decoding error is about.
struct ColumnAt<'a> {
    index: usize,
    name: &'a str,
}

impl ColumnAt<'_> {
    fn error(&self, problem: impl Display) -> WireError {
        bad_block(format!("column {} ({:?}): {problem}", self.index, self.name))
    }

    /// Takes `len` bytes of `what`, or says how short the input fell.
    fn take<'a>(&self, input: &mut Input<'a>, len: Option<usize>, what: &str) -> Result<&'a [u8], WireError> {
        let remaining = input.bytes.len();
        let len = len.ok_or_else(|| self.error(format!("the length of its {what} overflows")))?;
        input.take(len).ok_or_else(|| {
            self.error(format!("the block ends inside its {what}: {len} bytes needed, {remaining} remain"))
        })
    }
}

fn decode_column(input: &mut Input<'_>, index: usize, rows: usize) -> Result<(Field, ArrayRef), WireError> {
    let truncated = |what: &str| bad_block(format!("column {index}: the block ends inside its {what}"));
    let name_len = input.u16().ok_or_else(|| truncated("name length"))?;
    let name = input.take(usize::from(name_len)).ok_or_else(|| truncated("name"))?;
    let name = std::str::from_utf8(name)
        .map_err(|error| bad_block(format!("column {index}: its name is not UTF-8: {error}")))?;
    let at = ColumnAt { index, name };

    let tag = input.u8().ok_or_else(|| at.error("the block ends before its type tag"))?;
    let column_type = ColumnType::from_tag(tag).ok_or_else(|| at.error(format!("unknown type tag {tag}")))?;
    let flags = input.u8().ok_or_else(|| at.error("the block ends before its flags"))?;
    if flags & !(FLAG_NULLABLE | FLAG_HAS_NULLS) != 0 {
        return Err(at.error(format!("unknown flag bits in {flags:#04x}")));
    }
    let nullable = flags & FLAG_NULLABLE != 0;
    let nulls = if flags & FLAG_HAS_NULLS != 0 {
        if !nullable {
            return Err(at.error("a validity bitmap on a non-nullable field"));
        }
        let nulls = NullBuffer::new(take_bits(input, rows, &at, "validity bitmap")?);
        if nulls.null_count() == 0 {
            return Err(at.error("a validity bitmap that marks no row null"));
        }
        Some(nulls)
    } else {
        None
    };

    let array: ArrayRef = match column_type {
        ColumnType::Utf8 => {
            let (offsets, values) = take_byte_values(input, rows, &at)?;
            Arc::new(
                StringArray::try_new(offsets, values, nulls)
                    .map_err(|error| at.error(format!("invalid values: {error}")))?,
            )
        }
        ColumnType::Binary => {
            let (offsets, values) = take_byte_values(input, rows, &at)?;
            Arc::new(
                BinaryArray::try_new(offsets, values, nulls)
                    .map_err(|error| at.error(format!("invalid values: {error}")))?,
            )
        }
        ColumnType::Int64 => {
            let values = take_words(input, rows, &at)?.map(i64::from_le_bytes).collect::<Vec<_>>();
            Arc::new(Int64Array::try_new(ScalarBuffer::from(values), nulls).map_err(|error| at.error(error))?)
        }
        ColumnType::Float64 => {
            let values = take_words(input, rows, &at)?.map(f64::from_le_bytes).collect::<Vec<_>>();
            Arc::new(Float64Array::try_new(ScalarBuffer::from(values), nulls).map_err(|error| at.error(error))?)
        }
        ColumnType::Boolean => {
            // Both bitmaps hold `rows` bits, so `BooleanArray::new` finds their lengths equal.
            Arc::new(BooleanArray::new(take_bits(input, rows, &at, "values")?, nulls))
        }
    };
    Ok((Field::new(name, column_type.data_type(), nullable), array))
}

/// Takes a bitmap of `rows` bits whose padding bits are zero, as the encoder writes them.
fn take_bits(input: &mut Input<'_>, rows: usize, at: &ColumnAt<'_>, what: &str) -> Result<BooleanBuffer, WireError> {
    let bytes = at.take(input, Some(rows.div_ceil(8)), what)?;
    let used_bits = rows % 8;
    if let (Some(last), true) = (bytes.last(), used_bits != 0) {
        if last >> used_bits != 0 {
            return Err(at.error(format!("padding bits set past row {rows} in its {what}")));
        }
    }
    Ok(BooleanBuffer::new(Buffer::from_slice_ref(bytes), 0, rows))
}

/// Takes `rows` little-endian 8-byte words.
fn take_words<'a>(
    input: &mut Input<'a>,
    rows: usize,
    at: &ColumnAt<'_>,
) -> Result<impl Iterator<Item = [u8; 8]> + 'a, WireError> {
    let bytes = at.take(input, rows.checked_mul(8), "values")?;
    Ok(bytes.chunks_exact(8).map(|word| {
        let mut array = [0; 8];
        array.copy_from_slice(word);
        array
    }))
}

/// Takes the end offsets and value bytes of a Utf8 or Binary column, checking the offsets
/// before Arrow sees them: `OffsetBuffer::new` panics on offsets that are not monotonic.
fn take_byte_values(
    input: &mut Input<'_>,
    rows: usize,
    at: &ColumnAt<'_>,
) -> Result<(OffsetBuffer<i32>, Buffer), WireError> {
    let ends = at.take(input, rows.checked_mul(4), "offsets")?;
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0_i32);
    let mut previous = 0_i32;
    for (row, end) in ends.chunks_exact(4).enumerate() {
        let end = u32::from_le_bytes([end[0], end[1], end[2], end[3]]);
        let end = i32::try_from(end).map_err(|_| at.error(format!("offset {end} of row {row} exceeds i32")))?;
        if end < previous {
            return Err(at.error(format!("offsets decrease at row {row}: {end} after {previous}")));
        }
        offsets.push(end);
        previous = end;
    }
    // `previous` is the last end, non-negative by the checks above.
    let values = at.take(input, Some(previous as usize), "value bytes")?;
    Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from_slice_ref(values)))
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
    use arrow_array::Int32Array;
    use proptest::prelude::*;

    use super::*;

    fn sample() -> RecordBatch {
        RecordBatch::try_from_iter([
            ("campaign_id", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
            ("count", Arc::new(Int64Array::from(vec![3, 4])) as ArrayRef),
        ])
        .expect("batch")
    }

    /// One column of every type, nullable and not, over `rows` rows; the nullable ones hold
    /// a null in every third row.
    fn all_types(rows: usize, with_nulls: bool) -> RecordBatch {
        let null_at = |row: usize| with_nulls && row % 3 == 1;
        let mut utf8 = StringBuilder::new();
        let mut int64 = Int64Builder::new();
        let mut float64 = Float64Builder::new();
        let mut boolean = BooleanBuilder::new();
        let mut binary = BinaryBuilder::new();
        for row in 0..rows {
            if null_at(row) {
                utf8.append_null();
                int64.append_null();
                float64.append_null();
                boolean.append_null();
                binary.append_null();
            } else {
                utf8.append_value("é".repeat(row % 4));
                int64.append_value(i64::MIN + row as i64);
                float64.append_value(row as f64 / 3.0);
                boolean.append_value(row % 2 == 0);
                binary.append_value(vec![row as u8; row % 5]);
            }
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("utf8", Arc::new(utf8.finish())),
            ("int64", Arc::new(int64.finish())),
            ("float64", Arc::new(float64.finish())),
            ("boolean", Arc::new(boolean.finish())),
            ("binary", Arc::new(binary.finish())),
            ("plain", Arc::new(Int64Array::from_iter_values(0..rows as i64))),
        ];
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), *name != "plain"))
            .collect();
        let arrays = columns.into_iter().map(|(_, array)| array).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
    }

    fn round_trip(block: &RecordBatch) -> RecordBatch {
        decode_block(&encode_block(block).expect("encode")).expect("decode")
    }

    fn check_round_trip(block: &RecordBatch) {
        assert_eq!(&round_trip(block), block);
    }

    /// Asserts that decoding `bytes` fails with a message containing `expected`.
    fn check_refused(bytes: &[u8], expected: &str) {
        match decode_block(bytes) {
            Ok(block) => panic!("decoded {block:?}, expected an error about {expected:?}"),
            Err(error) => {
                assert!(error.to_string().contains(expected), "error {error:?} does not mention {expected:?}")
            }
        }
    }

    /// A block header followed by hand-written column bytes.
    fn block_bytes(rows: u32, columns: u16, body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![BLOCK_FORMAT];
        bytes.extend_from_slice(&rows.to_le_bytes());
        bytes.extend_from_slice(&columns.to_le_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    /// Column bytes up to and including the flags.
    fn column_header(name: &str, tag: u8, flags: u8) -> Vec<u8> {
        let mut bytes = (name.len() as u16).to_le_bytes().to_vec();
        bytes.extend_from_slice(name.as_bytes());
        bytes.extend_from_slice(&[tag, flags]);
        bytes
    }

    #[test]
    fn block_round_trips() {
        check_round_trip(&sample());
    }

    #[test]
    fn every_type_round_trips_with_and_without_nulls() {
        for rows in [0, 1, 7, 8, 9, 16, 65, 130] {
            check_round_trip(&all_types(rows, false));
            check_round_trip(&all_types(rows, true));
        }
    }

    #[test]
    fn sliced_columns_round_trip_as_the_slice() {
        let block = all_types(40, true);
        for (offset, len) in [(3, 5), (0, 40), (1, 0), (8, 16), (13, 27), (39, 1), (40, 0)] {
            let slice = block.slice(offset, len);
            assert_eq!(round_trip(&slice), slice, "slice({offset}, {len})");
        }
    }

    #[test]
    fn a_slice_carries_only_its_own_rows() {
        let block = all_types(1000, true);
        let whole = encode_block(&block).expect("encode").len();
        let slice = encode_block(&block.slice(500, 2)).expect("encode").len();
        assert!(slice < 200, "a two-row slice took {slice} bytes (the whole block {whole})");
    }

    #[test]
    fn zero_columns_keep_their_row_count() {
        let options = RecordBatchOptions::new().with_row_count(Some(5));
        let block = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options).expect("batch");
        assert_eq!(round_trip(&block).num_rows(), 5);
        check_round_trip(&block);
    }

    #[test]
    fn encode_into_appends_after_existing_bytes() {
        let mut out = b"header".to_vec();
        encode_block_into(&sample(), &mut out).expect("encode");
        assert_eq!(&out[..6], b"header");
        assert_eq!(out[6..], encode_block(&sample()).expect("encode"));
    }

    #[test]
    fn unsupported_type_is_refused_naming_the_column() {
        let block = RecordBatch::try_from_iter([
            ("count", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
            ("small", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        ])
        .expect("batch");
        let mut out = b"kept".to_vec();
        let error = encode_block_into(&block, &mut out).expect_err("Int32 is not a block type");
        assert!(
            matches!(&error, WireError::UnsupportedColumnType { column, data_type } if column == "small" && data_type == "Int32"),
            "got {error:?}"
        );
        assert!(error.to_string().contains("\"small\""), "{error}");
        assert_eq!(out, b"kept", "a refused block leaves the buffer as it was");
    }

    #[test]
    fn damaged_block_is_an_error_not_a_panic() {
        let bytes = encode_block(&sample()).expect("encode");
        for cut in [0, 3, bytes.len() / 2, bytes.len() - 9] {
            assert!(decode_block(&bytes[..cut]).is_err(), "cut at {cut} must fail");
        }
        assert!(decode_block(b"not arrow at all").is_err());
    }

    #[test]
    fn every_truncation_is_an_error() {
        for block in [sample(), all_types(19, true), all_types(3, false).slice(1, 2)] {
            let bytes = encode_block(&block).expect("encode");
            for cut in 0..bytes.len() {
                assert!(decode_block(&bytes[..cut]).is_err(), "cut at {cut} of {} must fail", bytes.len());
            }
        }
    }

    #[test]
    fn malformed_blocks_are_refused_saying_why() {
        let mut trailing = encode_block(&sample()).expect("encode");
        trailing.push(0);
        check_refused(&trailing, "1 trailing bytes");

        check_refused(&[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0], "unknown format byte 0xff");
        check_refused(
            &block_bytes(u32::MAX, 1, &column_header("n", ColumnType::Int64 as u8, 0)),
            "the block ends inside its values: 34359738360 bytes needed, 0 remain",
        );
        check_refused(&block_bytes(0, u16::MAX, &[]), "column 0: the block ends inside its name length");
        check_refused(&block_bytes(0, 1, &column_header("n", 9, 0)), "column 0 (\"n\"): unknown type tag 9");
        check_refused(&block_bytes(0, 1, &column_header("n", ColumnType::Int64 as u8, 4)), "unknown flag bits");
        check_refused(&block_bytes(1, 1, &[1, 0, 0xC3, ColumnType::Int64 as u8, 0]), "its name is not UTF-8");

        let mut not_utf8 = column_header("s", ColumnType::Utf8 as u8, 0);
        not_utf8.extend_from_slice(&1_u32.to_le_bytes());
        not_utf8.extend_from_slice(&2_u32.to_le_bytes());
        not_utf8.extend_from_slice(b"a\xFF");
        check_refused(
            &block_bytes(2, 1, &not_utf8),
            "column 0 (\"s\"): invalid values: Invalid argument error: Encountered non UTF-8 data",
        );

        let mut decreasing = column_header("b", ColumnType::Binary as u8, 0);
        decreasing.extend_from_slice(&2_u32.to_le_bytes());
        decreasing.extend_from_slice(&1_u32.to_le_bytes());
        decreasing.extend_from_slice(b"ab");
        check_refused(&block_bytes(2, 1, &decreasing), "column 0 (\"b\"): offsets decrease at row 1: 1 after 2");

        let mut past_i32 = column_header("b", ColumnType::Binary as u8, 0);
        past_i32.extend_from_slice(&u32::MAX.to_le_bytes());
        check_refused(&block_bytes(1, 1, &past_i32), "offset 4294967295 of row 0 exceeds i32");

        let mut nulls_not_nullable = column_header("n", ColumnType::Int64 as u8, FLAG_HAS_NULLS);
        nulls_not_nullable.push(0);
        nulls_not_nullable.extend_from_slice(&7_i64.to_le_bytes());
        check_refused(&block_bytes(1, 1, &nulls_not_nullable), "a validity bitmap on a non-nullable field");

        let mut no_null = column_header("n", ColumnType::Int64 as u8, FLAG_NULLABLE | FLAG_HAS_NULLS);
        no_null.push(1);
        no_null.extend_from_slice(&7_i64.to_le_bytes());
        check_refused(&block_bytes(1, 1, &no_null), "marks no row null");

        let mut padding = column_header("flag", ColumnType::Boolean as u8, 0);
        padding.push(0b10);
        check_refused(&block_bytes(1, 1, &padding), "padding bits set past row 1 in its values");
    }

    /// The cells of one generated column; `None` is a null.
    #[derive(Debug, Clone)]
    enum Cells {
        Utf8(Vec<Option<String>>),
        Int64(Vec<Option<i64>>),
        Float64(Vec<Option<f64>>),
        Boolean(Vec<Option<bool>>),
        Binary(Vec<Option<Vec<u8>>>),
    }

    fn cells<T: std::fmt::Debug + Clone + 'static>(
        value: impl Strategy<Value = T> + 'static,
        rows: usize,
        nullable: bool,
    ) -> BoxedStrategy<Vec<Option<T>>> {
        let cell = if nullable { proptest::option::of(value).boxed() } else { value.prop_map(Some).boxed() };
        proptest::collection::vec(cell, rows).boxed()
    }

    fn column_strategy(rows: usize) -> impl Strategy<Value = (String, bool, Cells)> {
        ("[a-zé_]{0,6}", any::<bool>()).prop_flat_map(move |(name, nullable)| {
            let cells = prop_oneof![
                cells(".{0,5}", rows, nullable).prop_map(Cells::Utf8),
                cells(any::<i64>(), rows, nullable).prop_map(Cells::Int64),
                cells(any::<f64>(), rows, nullable).prop_map(Cells::Float64),
                cells(any::<bool>(), rows, nullable).prop_map(Cells::Boolean),
                cells(proptest::collection::vec(any::<u8>(), 0..5), rows, nullable).prop_map(Cells::Binary),
            ];
            (Just(name), Just(nullable), cells)
        })
    }

    /// Random blocks of the five types with random nulls, then a random slice of each.
    fn block_strategy() -> impl Strategy<Value = RecordBatch> {
        (0..70_usize)
            .prop_flat_map(|rows| {
                (
                    Just(rows),
                    proptest::collection::vec(column_strategy(rows), 0..5),
                    any::<proptest::sample::Index>(),
                    any::<proptest::sample::Index>(),
                )
            })
            .prop_map(|(rows, columns, start, len)| {
                let mut fields = Vec::new();
                let mut arrays: Vec<ArrayRef> = Vec::new();
                for (name, nullable, cells) in columns {
                    let array: ArrayRef = match cells {
                        Cells::Utf8(cells) => Arc::new(StringArray::from(cells)),
                        Cells::Int64(cells) => Arc::new(Int64Array::from(cells)),
                        Cells::Float64(cells) => Arc::new(Float64Array::from(cells)),
                        Cells::Boolean(cells) => Arc::new(BooleanArray::from(cells)),
                        Cells::Binary(cells) => Arc::new(BinaryArray::from_iter(cells)),
                    };
                    fields.push(Field::new(name, array.data_type().clone(), nullable));
                    arrays.push(array);
                }
                let options = RecordBatchOptions::new().with_row_count(Some(rows));
                let block = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
                    .expect("generated batch");
                let start = start.index(rows + 1);
                block.slice(start, len.index(rows - start + 1))
            })
    }

    proptest! {
        #[test]
        fn random_blocks_round_trip(block in block_strategy()) {
            let decoded = round_trip(&block);
            prop_assert_eq!(decoded.schema(), block.schema(), "names, types and nullability");
            prop_assert_eq!(decoded.num_rows(), block.num_rows());
            for (index, (decoded, original)) in decoded.columns().iter().zip(block.columns()).enumerate() {
                prop_assert_eq!(decoded, original, "values of column {}", index);
            }
        }

        #[test]
        fn random_truncations_are_errors(block in block_strategy(), cut in any::<proptest::sample::Index>()) {
            let bytes = encode_block(&block).expect("encode");
            let cut = cut.index(bytes.len());
            prop_assert!(decode_block(&bytes[..cut]).is_err(), "cut at {} of {}", cut, bytes.len());
        }

        /// A flipped bit inside a value cannot be detected, so a damaged block may decode; the
        /// canonical encoding means it then decodes to what re-encodes to the same bytes.
        #[test]
        fn flipped_bytes_never_panic(
            block in block_strategy(),
            flips in proptest::collection::vec((any::<proptest::sample::Index>(), 1..=u8::MAX), 1..4),
        ) {
            let mut bytes = encode_block(&block).expect("encode");
            for (at, mask) in flips {
                let at = at.index(bytes.len());
                bytes[at] ^= mask;
            }
            if let Ok(decoded) = decode_block(&bytes) {
                prop_assert_eq!(encode_block(&decoded).expect("re-encode"), bytes);
            }
        }
    }
}
