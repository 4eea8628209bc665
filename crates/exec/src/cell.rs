//! One value of a key or an aggregate (`Cell`) as the keyed operators hold it: read from an
//! Arrow column, written to and read back from snapshot bytes (`key::KeyColumns`' tags), and
//! appended to an output column.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::DataType;
use rustc_hash::FxHashMap;

use crate::error::ExecError;
use crate::key::{TAG_BOOLEAN, TAG_FLOAT64, TAG_INT64, TAG_NULL, TAG_UTF8};

/// One value of a key or an aggregate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Utf8(String),
    Int64(i64),
    Float64(f64),
    Boolean(bool),
}

pub(crate) fn read_cell(column: &dyn Array, row: usize) -> Cell {
    if column.is_null(row) {
        return Cell::Null;
    }
    match column.data_type() {
        DataType::Utf8 => Cell::Utf8(column.as_string::<i32>().value(row).to_string()),
        DataType::Int64 => Cell::Int64(column.as_primitive::<Int64Type>().value(row)),
        DataType::Float64 => Cell::Float64(column.as_primitive::<Float64Type>().value(row)),
        DataType::Boolean => Cell::Boolean(column.as_boolean().value(row)),
        _ => Cell::Null,
    }
}

/// A total order on cells of one column: null first, then by value (floats by `total_cmp`).
pub(crate) fn compare_cells(left: &Cell, right: &Cell) -> Ordering {
    match (left, right) {
        (Cell::Null, Cell::Null) => Ordering::Equal,
        (Cell::Null, _) => Ordering::Less,
        (_, Cell::Null) => Ordering::Greater,
        (Cell::Int64(a), Cell::Int64(b)) => a.cmp(b),
        (Cell::Float64(a), Cell::Float64(b)) => a.total_cmp(b),
        (Cell::Int64(a), Cell::Float64(b)) => (*a as f64).total_cmp(b),
        (Cell::Float64(a), Cell::Int64(b)) => a.total_cmp(&(*b as f64)),
        (Cell::Utf8(a), Cell::Utf8(b)) => a.cmp(b),
        (Cell::Boolean(a), Cell::Boolean(b)) => a.cmp(b),
        // Never within one column; any fixed order keeps the set consistent.
        (a, b) => kind(a).cmp(&kind(b)),
    }
}

/// Rows (or keys) of the same columns, column by column in `compare_cells`' order.
pub(crate) fn compare_rows(left: &[Cell], right: &[Cell]) -> Ordering {
    left.iter().zip(right).map(|(a, b)| compare_cells(a, b)).find(|order| order.is_ne()).unwrap_or(Ordering::Equal)
}

fn kind(cell: &Cell) -> u8 {
    match cell {
        Cell::Null => 0,
        Cell::Boolean(_) => 1,
        Cell::Int64(_) => 2,
        Cell::Float64(_) => 3,
        Cell::Utf8(_) => 4,
    }
}

/// A bounds-checked reader over snapshot and key bytes: malformed input is an error, never a panic.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, count: usize) -> Result<&'a [u8], ExecError> {
        if self.bytes.len() < count {
            return Err(ExecError::CorruptSnapshot(format!("needed {count} more bytes, {} left", self.bytes.len())));
        }
        let (head, tail) = self.bytes.split_at(count);
        self.bytes = tail;
        Ok(head)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, ExecError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, ExecError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub(crate) fn i64(&mut self) -> Result<i64, ExecError> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A value `write_optional_i64` wrote; `what` names it in the error for a bad flag.
    pub(crate) fn optional_i64(&mut self, what: &str) -> Result<Option<i64>, ExecError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.i64()?)),
            flag => Err(ExecError::CorruptSnapshot(format!("bad {what} flag {flag}"))),
        }
    }
    /// Checks that nothing follows what was read: a snapshot's parts fit it exactly.
    pub(crate) fn finish(&self) -> Result<(), ExecError> {
        if !self.bytes.is_empty() {
            return Err(ExecError::CorruptSnapshot(format!("{} trailing bytes", self.bytes.len())));
        }
        Ok(())
    }
    /// A key `write_key` wrote, checked to hold `key_columns` values.
    pub(crate) fn key(&mut self, key_columns: usize) -> Result<Box<[u8]>, ExecError> {
        let length = self.u32()? as usize;
        let key: Box<[u8]> = self.take(length)?.into();
        decode_key(&key, key_columns)?;
        Ok(key)
    }
    pub(crate) fn cells(&mut self, count: usize) -> Result<Vec<Cell>, ExecError> {
        (0..count).map(|_| self.cell()).collect()
    }
    pub(crate) fn cell(&mut self) -> Result<Cell, ExecError> {
        Ok(match self.u8()? {
            TAG_NULL => Cell::Null,
            TAG_UTF8 => {
                let length = self.u32()? as usize;
                let bytes = self.take(length)?;
                Cell::Utf8(
                    std::str::from_utf8(bytes)
                        .map_err(|_| ExecError::CorruptSnapshot("a string is not UTF-8".into()))?
                        .to_string(),
                )
            }
            TAG_INT64 => Cell::Int64(self.i64()?),
            TAG_FLOAT64 => Cell::Float64(f64::from_bits(self.i64()? as u64)),
            TAG_BOOLEAN => Cell::Boolean(self.u8()? != 0),
            tag => return Err(ExecError::CorruptSnapshot(format!("unknown value tag {tag}"))),
        })
    }
}

/// A keyed table's keys in byte order, so that its snapshot does not depend on hash order.
pub(crate) fn sorted_keys<V>(table: &FxHashMap<Box<[u8]>, V>) -> Vec<&[u8]> {
    let mut keys: Vec<&[u8]> = table.keys().map(AsRef::as_ref).collect();
    keys.sort();
    keys
}

/// A presence byte, then the value when there is one.
pub(crate) fn write_optional_i64(value: Option<i64>, out: &mut Vec<u8>) {
    match value {
        Some(value) => {
            out.push(1);
            out.extend_from_slice(&value.to_le_bytes());
        }
        None => out.push(0),
    }
}

/// Writes an encoded key with its length before it, as keyed snapshots hold their keys.
pub(crate) fn write_key(key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
}

pub(crate) fn write_cells(cells: &[Cell], out: &mut Vec<u8>) {
    for cell in cells {
        write_cell(cell, out);
    }
}

pub(crate) fn write_cell(cell: &Cell, out: &mut Vec<u8>) {
    match cell {
        Cell::Null => out.push(TAG_NULL),
        Cell::Utf8(value) => {
            out.push(TAG_UTF8);
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value.as_bytes());
        }
        Cell::Int64(value) => {
            out.push(TAG_INT64);
            out.extend_from_slice(&value.to_le_bytes());
        }
        Cell::Float64(value) => {
            out.push(TAG_FLOAT64);
            out.extend_from_slice(&value.to_bits().to_le_bytes());
        }
        Cell::Boolean(value) => {
            out.push(TAG_BOOLEAN);
            out.push(*value as u8);
        }
    }
}

pub(crate) fn decode_key(bytes: &[u8], keys: usize) -> Result<Vec<Cell>, ExecError> {
    let mut reader = Reader { bytes };
    (0..keys).map(|_| reader.cell()).collect()
}

pub(crate) fn column(batch: &RecordBatch, name: &str) -> Result<ArrayRef, ExecError> {
    batch.column_by_name(name).cloned().ok_or_else(|| ExecError::MissingColumn(name.to_string()))
}

pub(crate) fn columns(batch: &RecordBatch, names: &[String]) -> Result<Vec<ArrayRef>, ExecError> {
    names.iter().map(|name| column(batch, name)).collect()
}

/// The batch's event-time column, which must be int64.
pub(crate) fn event_times(batch: &RecordBatch, name: &str) -> Result<Int64Array, ExecError> {
    let array = column(batch, name)?;
    let times = array.as_primitive_opt::<Int64Type>().ok_or_else(|| ExecError::MissingColumn(name.to_string()))?;
    Ok(times.clone())
}

pub(crate) enum ColumnBuilder {
    Utf8(StringBuilder),
    Int64(Int64Builder),
    Float64(Float64Builder),
    Boolean(BooleanBuilder),
}

impl ColumnBuilder {
    pub(crate) fn new(data_type: &DataType, capacity: usize) -> Self {
        match data_type {
            DataType::Utf8 => ColumnBuilder::Utf8(StringBuilder::with_capacity(capacity, capacity * 16)),
            DataType::Float64 => ColumnBuilder::Float64(Float64Builder::with_capacity(capacity)),
            DataType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::with_capacity(capacity)),
            _ => ColumnBuilder::Int64(Int64Builder::with_capacity(capacity)),
        }
    }

    pub(crate) fn append(&mut self, cell: &Cell) {
        match (self, cell) {
            (ColumnBuilder::Utf8(builder), Cell::Utf8(value)) => builder.append_value(value),
            (ColumnBuilder::Int64(builder), Cell::Int64(value)) => builder.append_value(*value),
            (ColumnBuilder::Float64(builder), Cell::Float64(value)) => builder.append_value(*value),
            (ColumnBuilder::Boolean(builder), Cell::Boolean(value)) => builder.append_value(*value),
            (ColumnBuilder::Utf8(builder), _) => builder.append_null(),
            (ColumnBuilder::Int64(builder), _) => builder.append_null(),
            (ColumnBuilder::Float64(builder), _) => builder.append_null(),
            (ColumnBuilder::Boolean(builder), _) => builder.append_null(),
        }
    }

    pub(crate) fn finish(self) -> ArrayRef {
        match self {
            ColumnBuilder::Utf8(mut builder) => Arc::new(builder.finish()),
            ColumnBuilder::Int64(mut builder) => Arc::new(builder.finish()),
            ColumnBuilder::Float64(mut builder) => Arc::new(builder.finish()),
            ColumnBuilder::Boolean(mut builder) => Arc::new(builder.finish()),
        }
    }
}
