//! The per-row key encoding that grouping runs on: a row's key columns as tagged bytes, so a
//! group table hashes and compares one short byte string per row and keeps no per-key object.
//! The bytes are also the keys of window-state snapshots, so they are part of that format.
//!
//! Kept over the `arrow-row` crate's row format, which was measured against it on the same keys
//! (encode plus the group table's hash, `benches/kernels/keys.rs`; the figures are in
//! `benchmarks/README.md`, "Micro-benchmarks"). `arrow-row` came out ahead by less than the
//! run-to-run spread, a difference lost in a ysb map task's CPU, which JSON decoding dominates,
//! while its bytes would become the snapshot format: `arrow-row` promises them only to the
//! converter that made them, and decoding foreign bytes may panic, where a damaged snapshot
//! must be an error.
//!
//! ```text
//! key   = value{key columns}
//! value = 0 (null) | 1 len:u32 utf8 | 2 i64 | 3 f64 bits | 4 bool:u8     (little-endian)
//! ```

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow_schema::DataType;

pub(crate) const TAG_NULL: u8 = 0;
pub(crate) const TAG_UTF8: u8 = 1;
pub(crate) const TAG_INT64: u8 = 2;
pub(crate) const TAG_FLOAT64: u8 = 3;
pub(crate) const TAG_BOOLEAN: u8 = 4;

/// A batch's key columns, each cast to its type once, so encoding a row does no type dispatch
/// through `dyn Array`, which made encoding measurably slower on the same benchmark (measured,
/// see docs/experiments/2026-11-27-comment-figures.md).
pub struct KeyColumns<'a> {
    columns: Vec<KeyColumn<'a>>,
}

enum KeyColumn<'a> {
    Utf8(&'a StringArray),
    Int64(&'a Int64Array),
    Float64(&'a Float64Array),
    Boolean(&'a BooleanArray),
}

impl<'a> KeyColumns<'a> {
    pub fn new(columns: &'a [ArrayRef]) -> Self {
        let columns = columns
            .iter()
            .map(|column| match column.data_type() {
                DataType::Utf8 => KeyColumn::Utf8(column.as_string::<i32>()),
                DataType::Int64 => KeyColumn::Int64(column.as_primitive::<Int64Type>()),
                DataType::Float64 => KeyColumn::Float64(column.as_primitive::<Float64Type>()),
                DataType::Boolean => KeyColumn::Boolean(column.as_boolean()),
                other => unreachable!("validated: keys have plan types, not {other}"),
            })
            .collect();
        KeyColumns { columns }
    }

    /// Appends row `row`'s key to `out`; the window state decodes it back.
    pub fn encode(&self, row: usize, out: &mut Vec<u8>) {
        for column in &self.columns {
            match column {
                KeyColumn::Utf8(array) if array.is_valid(row) => {
                    let value = array.value(row).as_bytes();
                    out.push(TAG_UTF8);
                    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
                    out.extend_from_slice(value);
                }
                KeyColumn::Int64(array) if array.is_valid(row) => {
                    out.push(TAG_INT64);
                    out.extend_from_slice(&array.value(row).to_le_bytes());
                }
                KeyColumn::Float64(array) if array.is_valid(row) => {
                    out.push(TAG_FLOAT64);
                    out.extend_from_slice(&array.value(row).to_bits().to_le_bytes());
                }
                KeyColumn::Boolean(array) if array.is_valid(row) => {
                    out.push(TAG_BOOLEAN);
                    out.push(array.value(row) as u8);
                }
                _ => out.push(TAG_NULL),
            }
        }
    }
}
