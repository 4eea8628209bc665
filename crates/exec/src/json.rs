//! A schema-driven JSON record decoder: one JSON object per record, any key order, any
//! whitespace, unknown keys skipped. Bad records become dead letters with a reason; they never
//! leave half a row behind.
//!
//! It is a hand-written byte scanner rather than a generic JSON parser: each record is parsed
//! into a small per-field scratch (ranges into the record, or into an unescape buffer), and
//! only a record that parsed completely is appended to the column builders.
//!
//! One field may come from beside the text instead: `with_record_timestamps` names a field
//! that each record takes from `RawRecords::timestamps`. Its slot is filled before the record
//! is parsed, so the record is read exactly as if that field had been written first in it: a
//! record that also writes the field holds it twice and is refused as any duplicate is.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{Field as ArrowField, Schema as ArrowSchema, SchemaRef};
use sleet_plan::{DataType, Schema};

use crate::error::ExecError;
use crate::records::RawRecords;
use crate::types::to_arrow_type;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub record_index: usize,
    pub reason: String,
}

pub struct DecodeOutput {
    pub batch: RecordBatch,
    pub dead_letters: Vec<DeadLetter>,
}

struct FieldSpec {
    name: Vec<u8>,
    data_type: DataType,
    nullable: bool,
    /// Position among the output columns, for projected fields.
    output: Option<usize>,
}

pub struct JsonDecoder {
    fields: Vec<FieldSpec>,
    output_schema: SchemaRef,
    max_record_bytes: u32,
    /// Whether any output column holds text, whose `i32` offsets bound the text of one call.
    outputs_text: bool,
    /// The field each record takes from `RawRecords::timestamps`, by index into `fields`.
    record_timestamp: Option<usize>,
}

/// Nesting allowed inside skipped values; deeper input is refused rather than recursed into.
const NESTING_DEPTH_MAX: usize = 64;
const EXCERPT_BYTES_MAX: usize = 40;
/// Fields whose parse slots live on the stack; wider schemas use one heap vector per call.
const SLOTS_INLINE_MAX: usize = 16;
/// Initial text capacity per value of a Utf8 column; the vector grows if values are longer.
pub(crate) const TEXT_BYTES_PER_VALUE_GUESS: usize = 24;
/// The most text one call can put in a Utf8 column: Arrow's `i32` offsets address no more.
const TEXT_BYTES_MAX: usize = i32::MAX as usize;

/// One field's value in the record being parsed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Missing,
    Null,
    /// A string: bytes `start..end` of the record, or of the unescape buffer.
    Text {
        start: usize,
        end: usize,
        unescaped: bool,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl JsonDecoder {
    pub fn new(schema: &Schema, projection: &[String], max_record_bytes: u32) -> Result<JsonDecoder, ExecError> {
        if let Some(missing) = projection.iter().find(|name| schema.field(name).is_none()) {
            return Err(ExecError::MissingColumn(missing.clone()));
        }
        let mut output_fields = Vec::new();
        let fields: Vec<FieldSpec> = schema
            .fields
            .iter()
            .map(|field| {
                let output = projection.contains(&field.name).then(|| {
                    output_fields.push(ArrowField::new(&field.name, to_arrow_type(field.data_type), field.nullable));
                    output_fields.len() - 1
                });
                FieldSpec {
                    name: field.name.as_bytes().to_vec(),
                    data_type: field.data_type,
                    nullable: field.nullable,
                    output,
                }
            })
            .collect();
        let outputs_text = fields
            .iter()
            .any(|field| field.output.is_some() && matches!(field.data_type, DataType::Utf8 | DataType::Binary));
        Ok(JsonDecoder {
            fields,
            output_schema: Arc::new(ArrowSchema::new(output_fields)),
            max_record_bytes,
            outputs_text,
            record_timestamp: None,
        })
    }

    /// Fills field `column` of each record from the records' timestamps rather than from its
    /// text. A column the schema does not declare is left alone (there is nothing to fill), as
    /// an unknown key in the text would be skipped.
    pub fn with_record_timestamps(mut self, column: &str) -> JsonDecoder {
        self.record_timestamp = self.fields.iter().position(|field| field.name == column.as_bytes());
        self
    }

    pub fn output_schema(&self) -> SchemaRef {
        Arc::clone(&self.output_schema)
    }

    pub fn decode(&self, records: &RawRecords) -> DecodeOutput {
        let rows = records.len();
        // A timestamp given to the wrong record would put a row in the wrong window unnoticed.
        let record_timestamps = self.record_timestamp.map(|field| {
            assert_eq!(
                records.timestamps.len(),
                rows,
                "field `{}` takes one timestamp per record",
                String::from_utf8_lossy(&self.fields[field].name)
            );
            (field, records.timestamps.as_slice())
        });
        let text_bytes_hint = records.data.len().min(rows * TEXT_BYTES_PER_VALUE_GUESS);
        let mut columns: Vec<ColumnBuilder> = self
            .fields
            .iter()
            .filter(|field| field.output.is_some())
            .map(|field| ColumnBuilder::new(field.data_type, rows, text_bytes_hint))
            .collect();
        let mut dead_letters = Vec::new();
        // Typical schemas fit on the stack, which saves an allocation per call on tiny batches.
        let mut inline_slots = [Slot::Missing; SLOTS_INLINE_MAX];
        let mut heap_slots = Vec::new();
        let slots: &mut [Slot] = match inline_slots.get_mut(..self.fields.len()) {
            Some(slots) => slots,
            None => {
                heap_slots.resize(self.fields.len(), Slot::Missing);
                &mut heap_slots
            }
        };
        let mut unescaped = Vec::new();
        let mut key_order = KeyOrder::default();
        let mut good_rows = 0usize;
        let mut good_bytes = 0usize;
        for (record_index, record) in records.iter().enumerate() {
            if let Some(reason) = refusal_before_parsing(record, self.max_record_bytes, self.outputs_text, good_bytes) {
                dead_letters.push(DeadLetter { record_index, reason });
                continue;
            }
            slots.fill(Slot::Missing);
            if let Some((field, timestamps)) = record_timestamps {
                let spec = &self.fields[field];
                match timestamp_slot(&String::from_utf8_lossy(&spec.name), spec.data_type, timestamps[record_index]) {
                    Ok(slot) => slots[field] = slot,
                    Err(reason) => {
                        dead_letters.push(DeadLetter { record_index, reason });
                        continue;
                    }
                }
            }
            unescaped.clear();
            let parsed = RecordParser {
                decoder: self,
                bytes: record,
                position: 0,
                slots,
                unescaped: &mut unescaped,
                key_order: &mut key_order,
            }
            .parse();
            match parsed {
                Ok(()) => {
                    self.append(record, slots, &unescaped, &mut columns, good_rows);
                    good_rows += 1;
                    good_bytes += record.len();
                }
                Err(reason) => dead_letters.push(DeadLetter { record_index, reason }),
            }
        }
        DecodeOutput { batch: finish_batch(self.output_schema(), columns, good_rows), dead_letters }
    }

    /// Appends one parsed record as row `row` of every output column.
    fn append(&self, record: &[u8], slots: &[Slot], unescaped: &[u8], columns: &mut [ColumnBuilder], row: usize) {
        for (field, slot) in self.fields.iter().zip(slots) {
            let Some(output) = field.output else { continue };
            columns[output].push(*slot, record, unescaped, row);
        }
    }
}

/// Why `record` is refused before it is parsed, if it is: too long, or too long to fit the
/// text columns after `good_bytes` of good records. Shared by every record decoder.
pub(crate) fn refusal_before_parsing(
    record: &[u8],
    max_record_bytes: u32,
    outputs_text: bool,
    good_bytes: usize,
) -> Option<String> {
    if record.len() > max_record_bytes as usize {
        return Some(format!("record is {} bytes, over the limit of {max_record_bytes}", record.len()));
    }
    // A string value is never longer than the record it came from (unescaping only shrinks
    // text, a binary datum's string is a slice of it), so keeping the good records' total
    // under `i32::MAX` keeps every Utf8 offset in range without a check per value.
    if outputs_text && good_bytes + record.len() > TEXT_BYTES_MAX {
        return Some(format!(
            "the good records before this one leave no room under the {TEXT_BYTES_MAX} bytes a text column can \
             hold; decode smaller batches"
        ));
    }
    None
}

/// The slot of field `name`, of type `data_type`, for a record whose timestamp is
/// `timestamp`: what parsing the number written as that field would give. Only numeric
/// fields can hold it; any other refuses every record, as parsing a number into it would.
pub(crate) fn timestamp_slot(name: &str, data_type: DataType, timestamp: i64) -> ParseResult<Slot> {
    match data_type {
        DataType::Int64 => Ok(Slot::Int(timestamp)),
        // Rounds to the nearest f64 as parsing the decimal text of `timestamp` does.
        DataType::Float64 => Ok(Slot::Float(timestamp as f64)),
        other => Err(format!("field `{name}` takes the record timestamp, an int64, but is declared {other}")),
    }
}

/// The decoded batch: one value per good record in every column.
pub(crate) fn finish_batch(schema: SchemaRef, columns: Vec<ColumnBuilder>, good_rows: usize) -> RecordBatch {
    let columns: Vec<ArrayRef> = columns.into_iter().map(|column| column.finish(good_rows)).collect();
    let options = RecordBatchOptions::new().with_row_count(Some(good_rows));
    RecordBatch::try_new_with_options(schema, columns, &options)
        .expect("columns are built from the output schema, one value per good record")
}

/// One output column under construction, in plain vectors that Arrow adopts without copying
/// when the call ends. Arrow's builders do the same job but cost several allocations and an
/// `ArrayData` round trip each, which dominated decoding of the one-record batches that short
/// intervals produce.
pub(crate) struct ColumnBuilder {
    values: ColumnValues,
    /// Created at the column's first null, so a column without nulls has no bitmap at all.
    validity: Option<BooleanBufferBuilder>,
    rows_max: usize,
}

/// A null row holds a placeholder value (empty text, zero, false) under a cleared validity bit.
enum ColumnValues {
    /// Utf8 or Binary: row `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    Text {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
        binary: bool,
    },
    Int64(Vec<i64>),
    Float64(Vec<f64>),
    Boolean(BooleanBufferBuilder),
}

impl ColumnBuilder {
    pub(crate) fn new(data_type: DataType, rows_max: usize, text_bytes_hint: usize) -> ColumnBuilder {
        let values = match data_type {
            DataType::Utf8 | DataType::Binary => {
                let mut offsets = Vec::with_capacity(rows_max + 1);
                offsets.push(0);
                ColumnValues::Text {
                    offsets,
                    bytes: Vec::with_capacity(text_bytes_hint),
                    binary: data_type == DataType::Binary,
                }
            }
            DataType::Int64 => ColumnValues::Int64(Vec::with_capacity(rows_max)),
            DataType::Float64 => ColumnValues::Float64(Vec::with_capacity(rows_max)),
            DataType::Boolean => ColumnValues::Boolean(BooleanBufferBuilder::new(rows_max)),
        };
        ColumnBuilder { values, validity: None, rows_max }
    }

    /// Appends `slot` as row `row`. After a successful parse a slot is either null or of the
    /// column's type, so any other kind is stored as null.
    pub(crate) fn push(&mut self, slot: Slot, record: &[u8], unescaped: &[u8], row: usize) {
        let valid = match (&mut self.values, slot) {
            (ColumnValues::Text { offsets, bytes, .. }, Slot::Text { start, end, unescaped: from_buffer }) => {
                bytes.extend_from_slice(if from_buffer { &unescaped[start..end] } else { &record[start..end] });
                offsets.push(text_offset(bytes.len()));
                true
            }
            (ColumnValues::Int64(values), Slot::Int(value)) => {
                values.push(value);
                true
            }
            (ColumnValues::Float64(values), Slot::Float(value)) => {
                values.push(value);
                true
            }
            (ColumnValues::Boolean(values), Slot::Bool(value)) => {
                values.append(value);
                true
            }
            (ColumnValues::Text { offsets, bytes, .. }, _) => {
                offsets.push(text_offset(bytes.len()));
                false
            }
            (ColumnValues::Int64(values), _) => {
                values.push(0);
                false
            }
            (ColumnValues::Float64(values), _) => {
                values.push(0.0);
                false
            }
            (ColumnValues::Boolean(values), _) => {
                values.append(false);
                false
            }
        };
        match &mut self.validity {
            Some(validity) => validity.append(valid),
            None if valid => {}
            None => {
                let mut validity = BooleanBufferBuilder::new(self.rows_max);
                validity.append_n(row, true);
                validity.append(false);
                self.validity = Some(validity);
            }
        }
    }

    fn finish(self, rows: usize) -> ArrayRef {
        let nulls = self.validity.map(|mut validity| NullBuffer::new(validity.finish()));
        debug_assert!(nulls.as_ref().is_none_or(|nulls| nulls.len() == rows));
        let array: ArrayRef = match self.values {
            ColumnValues::Text { offsets, bytes, binary } => {
                debug_assert_eq!(offsets.len(), rows + 1);
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                let bytes = Buffer::from_vec(bytes);
                // Arrow validates the text once more here. Parsing already did (whole record
                // UTF-8, values split at ASCII quotes, escapes encoded by `char`), so a failure
                // is a bug in this file. The check costs about 1% of a decode; skipping it would
                // take `unsafe`, which that is not worth.
                if binary {
                    Arc::new(BinaryArray::try_new(offsets, bytes, nulls).expect("offsets built in order"))
                } else {
                    Arc::new(StringArray::try_new(offsets, bytes, nulls).expect("text validated while parsing"))
                }
            }
            ColumnValues::Int64(values) => Arc::new(Int64Array::new(ScalarBuffer::from(values), nulls)),
            ColumnValues::Float64(values) => Arc::new(Float64Array::new(ScalarBuffer::from(values), nulls)),
            ColumnValues::Boolean(mut values) => Arc::new(BooleanArray::new(values.finish(), nulls)),
        };
        assert_eq!(array.len(), rows, "one value per good record");
        array
    }
}

/// `decode` keeps every column's text under `TEXT_BYTES_MAX`, so this cannot fail.
fn text_offset(length: usize) -> i32 {
    i32::try_from(length).expect("text bytes bounded by TEXT_BYTES_MAX")
}

struct RecordParser<'a> {
    decoder: &'a JsonDecoder,
    bytes: &'a [u8],
    position: usize,
    slots: &'a mut [Slot],
    unescaped: &'a mut Vec<u8>,
    key_order: &'a mut KeyOrder,
}

/// The field each key of the previous record named, by the key's place in it. A producer
/// writes its keys in one order, so the key in place `k` is tried against that field before
/// the schema is searched: one comparison per key instead of a scan of a wide schema (the
/// Nexmark union has 21 fields, and its scan was a visible share of decoding a bid).
struct KeyOrder {
    fields: [u16; KEY_ORDER_PLACES],
}

/// Keys beyond these places are always searched for.
const KEY_ORDER_PLACES: usize = 32;
const NO_FIELD: u16 = u16::MAX;

impl Default for KeyOrder {
    fn default() -> Self {
        KeyOrder { fields: [NO_FIELD; KEY_ORDER_PLACES] }
    }
}

/// How many bytes from the start of `text` can stand in a JSON string as they are: the
/// index of the first quote, backslash or control character, or the length. Eight bytes at
/// a time: strings are most of a record's bytes (a Nexmark bid's URL and padding), and a
/// byte-at-a-time scan of them was a visible share of decoding.
fn plain_text_len(text: &[u8]) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH_BITS: u64 = ONES << 7;
    // A byte of `x` below `n` (n ≤ 128) sets its high bit in `x - n × ONES` and has it clear
    // in `x`; a borrow only spreads upwards from such a byte, so the lowest flagged byte is
    // the first one below `n`, and bytes of multibyte characters (high bit set) never are.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x;
    let mut done = 0;
    let mut words = text.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of eight"));
        let flagged = (below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1)
            | below(word, 0x20))
            & HIGH_BITS;
        if flagged != 0 {
            return done + (flagged.trailing_zeros() / 8) as usize;
        }
        done += 8;
    }
    done + words.remainder().iter().take_while(|&&byte| byte >= 0x20 && byte != b'"' && byte != b'\\').count()
}

pub(crate) type ParseResult<T> = Result<T, String>;

impl RecordParser<'_> {
    fn parse(mut self) -> ParseResult<()> {
        if let Err(error) = std::str::from_utf8(self.bytes) {
            return Err(format!("record is not valid UTF-8 at byte {}", error.valid_up_to()));
        }
        self.skip_whitespace();
        if self.peek() != Some(b'{') {
            return Err(self.malformed("expected '{' at the start of the record"));
        }
        self.position += 1;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.position += 1;
        } else {
            for place in 0.. {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    return Err(self.malformed("expected a key in quotes"));
                }
                let key = self.parse_string()?;
                let field = self.find_field(key, place);
                self.skip_whitespace();
                if self.peek() != Some(b':') {
                    return Err(self.malformed("expected ':' after a key"));
                }
                self.position += 1;
                self.skip_whitespace();
                match field {
                    Some(index) => {
                        if !matches!(self.slots[index], Slot::Missing) {
                            return Err(format!("field `{}` appears twice", self.field_name(index)));
                        }
                        self.slots[index] = self.parse_field(index)?;
                    }
                    None => self.skip_value(0)?,
                }
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.position += 1,
                    Some(b'}') => {
                        self.position += 1;
                        break;
                    }
                    _ => return Err(self.malformed("expected ',' or '}' after a value")),
                }
            }
        }
        self.skip_whitespace();
        if self.position != self.bytes.len() {
            return Err(format!("trailing characters after the object at byte {}", self.position));
        }
        for (index, field) in self.decoder.fields.iter().enumerate() {
            match self.slots[index] {
                Slot::Missing | Slot::Null if !field.nullable => {
                    let what = if matches!(self.slots[index], Slot::Missing) { "missing" } else { "null" };
                    return Err(format!("field `{}` is {what} but not nullable", self.field_name(index)));
                }
                Slot::Missing => self.slots[index] = Slot::Null,
                _ => {}
            }
        }
        Ok(())
    }

    fn field_name(&self, index: usize) -> String {
        String::from_utf8_lossy(&self.decoder.fields[index].name).into_owned()
    }

    /// The field named by `key`, the key in place `place` of its record.
    fn find_field(&mut self, key: Slot, place: usize) -> Option<usize> {
        let Slot::Text { start, end, unescaped } = key else { return None };
        let key = if unescaped { &self.unescaped[start..end] } else { &self.bytes[start..end] };
        let fields = &self.decoder.fields;
        let remembered = self.key_order.fields.get_mut(place);
        if let Some(&field) = remembered.as_deref() {
            if fields.get(usize::from(field)).is_some_and(|spec| spec.name == key) {
                return Some(usize::from(field));
            }
        }
        let found = fields.iter().position(|field| field.name == key);
        if let Some(remembered) = remembered {
            *remembered = found.and_then(|field| u16::try_from(field).ok()).unwrap_or(NO_FIELD);
        }
        found
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.position += 1;
        }
    }

    fn malformed(&self, what: &str) -> String {
        match self.peek() {
            None => format!("malformed JSON: the record ends at byte {} where {what}", self.position),
            Some(_) => format!("malformed JSON at byte {}: {what}", self.position),
        }
    }

    /// Up to 40 bytes of the value starting here, for error messages.
    fn excerpt(&self) -> String {
        let rest = &self.bytes[self.position..];
        let mut end = rest.len().min(EXCERPT_BYTES_MAX);
        if let Some(stop) = rest[..end].iter().skip(1).position(|b| matches!(b, b',' | b'}' | b']')) {
            end = stop + 1;
        }
        while !rest.is_char_boundary_at(end) {
            end -= 1;
        }
        String::from_utf8_lossy(&rest[..end]).into_owned()
    }

    fn parse_field(&mut self, index: usize) -> ParseResult<Slot> {
        let data_type = self.decoder.fields[index].data_type;
        let type_error = |parser: &Self, expected: &str| {
            format!("field `{}`: expected {expected}, found {}", parser.field_name(index), parser.excerpt())
        };
        if self.bytes[self.position..].starts_with(b"null") {
            self.position += 4;
            return Ok(Slot::Null);
        }
        match (data_type, self.peek()) {
            (DataType::Utf8 | DataType::Binary, Some(b'"')) => self.parse_string(),
            (DataType::Int64, Some(b'"' | b'-' | b'0'..=b'9')) => {
                self.parse_number(index, "int64", parse_integer).map(Slot::Int)
            }
            (DataType::Float64, Some(b'"' | b'-' | b'0'..=b'9')) => {
                self.parse_number(index, "float64", parse_float).map(Slot::Float)
            }
            (DataType::Boolean, _) if self.bytes[self.position..].starts_with(b"true") => {
                self.position += 4;
                Ok(Slot::Bool(true))
            }
            (DataType::Boolean, _) if self.bytes[self.position..].starts_with(b"false") => {
                self.position += 5;
                Ok(Slot::Bool(false))
            }
            (_, None) => Err(self.malformed("expected a value")),
            (DataType::Utf8 | DataType::Binary, _) => Err(type_error(self, "a string")),
            (DataType::Int64, _) => Err(type_error(self, "int64")),
            (DataType::Float64, _) => Err(type_error(self, "float64")),
            (DataType::Boolean, _) => Err(type_error(self, "true or false")),
        }
    }

    /// A number written bare or quoted (the protobuf-JSON convention for 64-bit values). On
    /// failure the cursor goes back to the value so the error quotes it.
    fn parse_number<T>(&mut self, index: usize, expected: &str, parse: fn(&[u8]) -> Option<T>) -> ParseResult<T> {
        let start = self.position;
        let parsed = if self.peek() == Some(b'"') {
            let text = self.parse_string()?;
            self.slot_text(text).and_then(parse)
        } else {
            parse(self.number_token())
        };
        parsed.ok_or_else(|| {
            self.position = start;
            format!("field `{}`: expected {expected}, found {}", self.field_name(index), self.excerpt())
        })
    }

    fn slot_text(&self, slot: Slot) -> Option<&[u8]> {
        match slot {
            Slot::Text { start, end, unescaped: false } => Some(&self.bytes[start..end]),
            Slot::Text { start, end, unescaped: true } => Some(&self.unescaped[start..end]),
            _ => None,
        }
    }

    /// The bytes of a JSON number at the cursor (not validated beyond its character set).
    fn number_token(&mut self) -> &[u8] {
        let start = self.position;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.peek() {
            self.position += 1;
        }
        &self.bytes[start..self.position]
    }

    /// Parses the string at the cursor (which is on its opening quote). Strings without
    /// escapes are returned as a range of the record; others are unescaped into the buffer.
    fn parse_string(&mut self) -> ParseResult<Slot> {
        self.position += 1;
        let start = self.position;
        self.position += plain_text_len(&self.bytes[start..]);
        match self.peek() {
            None => return Err(self.malformed("a string is not closed")),
            Some(b'"') => {
                self.position += 1;
                return Ok(Slot::Text { start, end: self.position - 1, unescaped: false });
            }
            Some(b'\\') => {}
            Some(_) => return Err(self.malformed("a control character inside a string")),
        }
        let buffer_start = self.unescaped.len();
        self.unescaped.extend_from_slice(&self.bytes[start..self.position]);
        loop {
            match self.peek() {
                None => return Err(self.malformed("a string is not closed")),
                Some(b'"') => {
                    self.position += 1;
                    return Ok(Slot::Text { start: buffer_start, end: self.unescaped.len(), unescaped: true });
                }
                Some(b'\\') => {
                    self.position += 1;
                    self.parse_escape()?;
                }
                Some(byte) if byte < 0x20 => return Err(self.malformed("a control character inside a string")),
                Some(byte) => {
                    self.unescaped.push(byte);
                    self.position += 1;
                }
            }
        }
    }

    fn parse_escape(&mut self) -> ParseResult<()> {
        let Some(kind) = self.peek() else { return Err(self.malformed("an escape is cut off")) };
        self.position += 1;
        let simple = match kind {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let first = self.hex4()?;
                let code = match first {
                    0xd800..=0xdbff => {
                        if !self.bytes[self.position..].starts_with(b"\\u") {
                            return Err(self.malformed("a high surrogate without its low half"));
                        }
                        self.position += 2;
                        let second = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&second) {
                            return Err(self.malformed("a high surrogate followed by a non-surrogate"));
                        }
                        0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
                    }
                    0xdc00..=0xdfff => return Err(self.malformed("a lone low surrogate")),
                    code => code,
                };
                let character = char::from_u32(code).ok_or_else(|| self.malformed("an invalid code point"))?;
                let mut utf8 = [0u8; 4];
                self.unescaped.extend_from_slice(character.encode_utf8(&mut utf8).as_bytes());
                return Ok(());
            }
            _ => {
                self.position -= 1;
                return Err(self.malformed("an unknown escape"));
            }
        };
        self.unescaped.push(simple);
        Ok(())
    }

    fn hex4(&mut self) -> ParseResult<u32> {
        let digits =
            self.bytes.get(self.position..self.position + 4).ok_or_else(|| self.malformed("\\u needs 4 hex digits"))?;
        // `from_str_radix` alone would also take a sign: `\u+041` is not JSON.
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(self.malformed("\\u needs 4 hex digits"));
        }
        let text = std::str::from_utf8(digits).expect("ASCII hex digits");
        let value = u32::from_str_radix(text, 16).expect("4 hex digits fit a u32");
        self.position += 4;
        Ok(value)
    }

    /// Skips any JSON value, checking it is well formed.
    fn skip_value(&mut self, depth: usize) -> ParseResult<()> {
        if depth > NESTING_DEPTH_MAX {
            return Err(format!("values nested deeper than {NESTING_DEPTH_MAX} levels"));
        }
        match self.peek() {
            Some(b'"') => self.parse_string().map(|_| ()),
            Some(b'{') => self.skip_container(b'}', depth, true),
            Some(b'[') => self.skip_container(b']', depth, false),
            Some(b'-' | b'0'..=b'9') => {
                let token = self.number_token();
                if std::str::from_utf8(token).ok().and_then(|text| text.parse::<f64>().ok()).is_none() {
                    return Err(self.malformed("an invalid number"));
                }
                Ok(())
            }
            _ => {
                for literal in [&b"true"[..], b"false", b"null"] {
                    if self.bytes[self.position..].starts_with(literal) {
                        self.position += literal.len();
                        return Ok(());
                    }
                }
                Err(self.malformed("expected a value"))
            }
        }
    }

    fn skip_container(&mut self, close: u8, depth: usize, object: bool) -> ParseResult<()> {
        self.position += 1;
        self.skip_whitespace();
        if self.peek() == Some(close) {
            self.position += 1;
            return Ok(());
        }
        loop {
            self.skip_whitespace();
            if object {
                if self.peek() != Some(b'"') {
                    return Err(self.malformed("expected a key in quotes"));
                }
                self.parse_string()?;
                self.skip_whitespace();
                if self.peek() != Some(b':') {
                    return Err(self.malformed("expected ':' after a key"));
                }
                self.position += 1;
                self.skip_whitespace();
            }
            self.skip_value(depth + 1)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(byte) if byte == close => {
                    self.position += 1;
                    return Ok(());
                }
                _ => return Err(self.malformed("expected ',' or the end of a container")),
            }
        }
    }
}

trait CharBoundary {
    fn is_char_boundary_at(&self, index: usize) -> bool;
}

impl CharBoundary for [u8] {
    fn is_char_boundary_at(&self, index: usize) -> bool {
        index == 0 || index >= self.len() || (self[index] as i8) >= -0x40
    }
}

/// An integer written in decimal: optional '-', digits, no fraction or exponent, no overflow.
fn parse_integer(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut value: i64 = 0;
    for digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        let digit = (digit - b'0') as i64;
        value = value.checked_mul(10)?;
        value = if negative { value.checked_sub(digit)? } else { value.checked_add(digit)? };
    }
    Some(value)
}

fn parse_float(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    // Rust also accepts "inf" and "nan"; JSON numbers do not have them.
    if !text.bytes().all(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    use proptest::prelude::*;
    use sleet_plan::Field;

    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("name", DataType::Utf8),
            Field::new("time", DataType::Int64),
            Field::new("score", DataType::Float64).nullable(),
            Field::new("ok", DataType::Boolean).nullable(),
        ])
    }

    fn decode(records: &[&str]) -> DecodeOutput {
        let names: Vec<String> = ["name", "time", "score", "ok"].iter().map(|s| s.to_string()).collect();
        let decoder = JsonDecoder::new(&schema(), &names, 200).expect("decoder");
        let mut raw = RawRecords::new();
        for record in records {
            raw.push(record.as_bytes());
        }
        decoder.decode(&raw)
    }

    fn names(output: &DecodeOutput) -> Vec<String> {
        output.batch.column(0).as_string::<i32>().iter().map(|v| v.unwrap_or("<null>").to_string()).collect()
    }

    fn times(output: &DecodeOutput) -> Vec<i64> {
        output.batch.column(1).as_primitive::<Int64Type>().values().to_vec()
    }

    /// Decodes one bad record between two good ones and checks the reason and the good rows.
    fn check_bad(record: &str, reason_contains: &str) {
        let output = decode(&[r#"{"name": "a", "time": 1}"#, record, r#"{"name": "c", "time": 3}"#]);
        assert_eq!(output.dead_letters.len(), 1, "{record} should be one dead letter");
        assert_eq!(output.dead_letters[0].record_index, 1);
        assert!(
            output.dead_letters[0].reason.contains(reason_contains),
            "reason `{}` should mention `{reason_contains}`",
            output.dead_letters[0].reason
        );
        assert_eq!(names(&output), vec!["a", "c"], "good rows intact, no half row");
        assert_eq!(times(&output), vec![1, 3]);
    }

    /// Decodes `records`, each with its timestamp beside it, filling `column` from them.
    fn decode_timestamped(schema: &Schema, projection: &[&str], column: &str, records: &[(&str, i64)]) -> DecodeOutput {
        let projection: Vec<String> = projection.iter().map(|name| name.to_string()).collect();
        let decoder = JsonDecoder::new(schema, &projection, 200).expect("decoder").with_record_timestamps(column);
        let mut raw = RawRecords::new();
        for (record, timestamp) in records {
            raw.push(record.as_bytes());
            raw.timestamps.push(*timestamp);
        }
        decoder.decode(&raw)
    }

    fn dead_indices(output: &DecodeOutput) -> Vec<usize> {
        output.dead_letters.iter().map(|letter| letter.record_index).collect()
    }

    #[test]
    fn record_timestamps_fill_their_column_and_stay_with_their_record_when_others_are_dropped() {
        let too_long = format!(r#"{{"name": "{}"}}"#, "x".repeat(200));
        let output = decode_timestamped(
            &schema(),
            &["name", "time"],
            "time",
            &[
                (r#"{"name": "a"}"#, 100),
                (r#"{"name": "b", "#, 200),
                ("[1,2]", 300),
                ("", 400),
                (r#" {"score": 1.5, "name": "e"}"#, 500),
                (&too_long, 600),
                (r#"{"name": 7}"#, 700),
                (r#"{"name": "h"}"#, -8),
            ],
        );
        assert_eq!(dead_indices(&output), vec![1, 2, 3, 5, 6], "{:?}", output.dead_letters);
        assert_eq!(names(&output), vec!["a", "e", "h"]);
        assert_eq!(times(&output), vec![100, 500, -8]);
    }

    /// Splicing the timestamp into the text made it the record's first field, and a record
    /// holding a field twice is refused: so a record that writes the column itself is a dead
    /// letter, whether or not the column is projected.
    #[test]
    fn a_record_that_writes_the_timestamp_column_itself_is_refused_as_a_duplicate() {
        let records = [(r#"{"name": "a", "time": 5}"#, 100), (r#"{"name": "b"}"#, 200)];
        for projection in [&["name", "time"][..], &["name"]] {
            let output = decode_timestamped(&schema(), projection, "time", &records);
            assert_eq!(dead_indices(&output), vec![0], "projecting {projection:?}");
            assert_eq!(output.dead_letters[0].reason, "field `time` appears twice");
            assert_eq!(names(&output), vec!["b"]);
        }
        let output = decode_timestamped(&schema(), &["name", "time"], "time", &records[1..]);
        assert_eq!(times(&output), vec![200]);
    }

    #[test]
    fn a_float_column_takes_the_timestamp_and_one_of_another_type_refuses_every_record() {
        let records = [(r#"{"name": "a", "time": 1}"#, 1_700_000_000_123), (r#"{"name": "b", "time": 2}"#, i64::MIN)];
        let output = decode_timestamped(&schema(), &["name", "score"], "score", &records);
        let scores: Vec<Option<f64>> = output.batch.column(1).as_primitive::<Float64Type>().iter().collect();
        assert_eq!(scores, vec![Some(1_700_000_000_123.0), Some(-9.223_372_036_854_776e18)]);
        let output = decode_timestamped(&schema(), &["name", "ok"], "ok", &records);
        assert_eq!(dead_indices(&output), vec![0, 1]);
        assert_eq!(
            output.dead_letters[0].reason,
            "field `ok` takes the record timestamp, an int64, but is declared boolean"
        );
    }

    #[test]
    fn timestamps_for_a_column_the_schema_lacks_are_ignored() {
        let output = decode_timestamped(&schema(), &["name", "time"], "arrival", &[(r#"{"name": "a", "time": 3}"#, 9)]);
        assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
        assert_eq!(times(&output), vec![3]);
    }

    #[test]
    fn plain_text_ends_at_the_first_quote_backslash_or_control_character_wherever_it_falls() {
        for length in 0..24 {
            for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                for at in 0..=length {
                    let mut text: Vec<u8> = (0..length).map(|i| b"a~ \x7f\xc3\xa9z!"[i % 8]).collect();
                    if at < length {
                        text[at] = stop;
                        // Bytes past the first stop may be anything, another stop included.
                        text.extend_from_slice(b"\"\\\x01");
                    }
                    assert_eq!(plain_text_len(&text), at.min(length), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn a_key_in_the_place_another_held_before_is_still_found_and_duplicates_still_refused() {
        let output = decode(&[
            r#"{"name": "a", "time": 1}"#,
            r#"{"name": "b", "name": "c", "time": 2}"#,
            r#"{"time": 3, "extra": 0, "name": "d"}"#,
            r#"{"extra": 0, "name": "e", "time": 4}"#,
            r#"{"name": "f", "time": 5}"#,
        ]);
        assert_eq!(dead_indices(&output), vec![1]);
        assert_eq!(output.dead_letters[0].reason, "field `name` appears twice");
        assert_eq!(names(&output), vec!["a", "d", "e", "f"]);
        assert_eq!(times(&output), vec![1, 3, 4, 5]);
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let output = decode(&[
            r#"{"name": "a", "time": "10", "score": 1.5, "ok": true}"#,
            "{\n\t\"ok\" :false ,\"score\":-2e1,\r\n \"time\":20,\"name\":\"b\"}  ",
            r#"{"time":30,"name":"c"}"#,
        ]);
        assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
        assert_eq!(names(&output), vec!["a", "b", "c"]);
        assert_eq!(times(&output), vec![10, 20, 30]);
        let scores: Vec<Option<f64>> = output.batch.column(2).as_primitive::<Float64Type>().iter().collect();
        assert_eq!(scores, vec![Some(1.5), Some(-20.0), None]);
        let oks: Vec<Option<bool>> = output.batch.column(3).as_boolean().iter().collect();
        assert_eq!(oks, vec![Some(true), Some(false), None]);
    }

    #[test]
    fn escapes_decode_to_the_right_text() {
        let output = decode(&[
            r#"{"name": "caf\u00e9 \"q\" \\ \/ \n", "time": 1}"#,
            r#"{"name": "\ud83d\ude00 snow\u2744", "time": 2}"#,
            r#"{"name": "plain ünïcode", "time": 3}"#,
        ]);
        assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
        assert_eq!(names(&output), vec!["café \"q\" \\ / \n", "😀 snow❄", "plain ünïcode"]);
    }

    #[test]
    fn unknown_keys_are_skipped_whatever_their_value() {
        let output = decode(&[
            r#"{"extra": {"deep": [1, {"x": null}], "s": "}"}, "name": "a", "n": -1.5e3, "time": 7, "t": true}"#,
        ]);
        assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
        assert_eq!(times(&output), vec![7]);
    }

    #[test]
    fn projection_materializes_only_requested_fields_but_checks_all() {
        let decoder = JsonDecoder::new(&schema(), &["time".to_string()], 200).expect("decoder");
        let mut raw = RawRecords::new();
        raw.push(br#"{"name": "a", "time": 5}"#);
        raw.push(br#"{"name": 12, "time": 6}"#);
        let output = decoder.decode(&raw);
        assert_eq!(output.batch.num_columns(), 1);
        assert_eq!(output.batch.num_rows(), 1);
        assert_eq!(output.dead_letters.len(), 1, "a wrong type in an unread field is still caught");
        assert!(JsonDecoder::new(&schema(), &["nope".to_string()], 10).is_err());
    }

    #[test]
    fn every_kind_of_bad_record_is_a_dead_letter() {
        check_bad(r#"{"name": "b", "time": 2"#, "malformed JSON");
        check_bad(r#"{"name" "b", "time": 2}"#, "expected ':'");
        check_bad(r#"{"name": "b" "time": 2}"#, "expected ',' or '}'");
        check_bad(r#"{"name": "b", "time": 2} x"#, "trailing characters");
        check_bad(r#"["name", "b"]"#, "expected '{'");
        check_bad(r#"{"name": "b", "time": "soon"}"#, "field `time`: expected int64, found \"soon\"");
        check_bad(r#"{"name": "b", "time": 2.5}"#, "field `time`: expected int64");
        check_bad(r#"{"name": "b", "time": 99999999999999999999}"#, "field `time`");
        check_bad(r#"{"name": "b", "time": 2, "time": 3}"#, "`time` appears twice");
        check_bad(r#"{"name": "b"}"#, "field `time` is missing");
        check_bad(r#"{"name": null, "time": 2}"#, "field `name` is null");
        check_bad(r#"{"name": "\ud800", "time": 2}"#, "surrogate");
        check_bad(r#"{"name": "\udc00", "time": 2}"#, "lone low surrogate");
        check_bad(r#"{"name": "\q", "time": 2}"#, "unknown escape");
        // Caught by the `json_decode` fuzz target's oracle: a sign where a hex digit belongs
        // was taken (`from_str_radix` accepts "+041"), decoding this record's name as "A".
        check_bad(r#"{"name": "\u+041", "time": 2}"#, "4 hex digits");
        check_bad(r#"{"name": "\u-041", "time": 2}"#, "4 hex digits");
        check_bad("{\"name\": \"a\nb\", \"time\": 2}", "control character");
        check_bad(r#"{"name": true, "time": 2}"#, "field `name`: expected a string");
        check_bad(&format!(r#"{{"name": "{}", "time": 2}}"#, "x".repeat(300)), "over the limit of 200");
        check_bad("", "malformed JSON");
    }

    #[test]
    fn binary_fields_decode_to_the_bytes_of_the_string() {
        let schema = Schema::new(vec![Field::new("payload", DataType::Binary).nullable()]);
        let decoder = JsonDecoder::new(&schema, &["payload".to_string()], 200).expect("decoder");
        let mut raw = RawRecords::new();
        raw.push(br#"{"payload": "caf\u00e9"}"#);
        raw.push(br#"{"payload": null}"#);
        let output = decoder.decode(&raw);
        assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
        let payloads: Vec<Option<&[u8]>> = output.batch.column(0).as_binary::<i32>().iter().collect();
        assert_eq!(payloads, vec![Some("café".as_bytes()), None]);
    }

    #[test]
    fn invalid_utf8_is_a_dead_letter() {
        let decoder = JsonDecoder::new(&schema(), &[], 200).expect("decoder");
        let mut raw = RawRecords::new();
        raw.push(b"{\"name\": \"\xff\", \"time\": 1}");
        let output = decoder.decode(&raw);
        assert_eq!(output.batch.num_rows(), 0);
        assert!(output.dead_letters[0].reason.contains("UTF-8"));
    }

    proptest! {
        #[test]
        fn decodes_whatever_serde_json_writes(
            rows in proptest::collection::vec(("\\PC{0,12}", any::<i64>(), proptest::option::of(-1e9f64..1e9), proptest::option::of(any::<bool>()), any::<bool>()), 0..20),
            order_seed in any::<u64>(),
        ) {
            let mut raw = RawRecords::new();
            for (index, (name, time, score, ok, quote_time)) in rows.iter().enumerate() {
                let mut pairs = vec![
                    ("name", serde_json::json!(name)),
                    ("time", if *quote_time { serde_json::json!(time.to_string()) } else { serde_json::json!(time) }),
                    ("ignored", serde_json::json!({"a": [1, 2, name]})),
                ];
                if let Some(score) = score { pairs.push(("score", serde_json::json!(score))); }
                if let Some(ok) = ok { pairs.push(("ok", serde_json::json!(ok))); }
                let rotate = (order_seed as usize).wrapping_add(index) % pairs.len();
                pairs.rotate_left(rotate);
                let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{}:{}", serde_json::json!(k), v)).collect();
                raw.push(format!("{{{}}}", body.join(",")).as_bytes());
            }
            let names_all: Vec<String> = ["name", "time", "score", "ok"].iter().map(|s| s.to_string()).collect();
            let output = JsonDecoder::new(&schema(), &names_all, 100_000).expect("decoder").decode(&raw);
            prop_assert!(output.dead_letters.is_empty(), "{:?}", output.dead_letters);
            prop_assert_eq!(output.batch.num_rows(), rows.len());
            let decoded_scores = output.batch.column(2).as_primitive::<Float64Type>();
            for (row, (name, time, score, ok, _)) in rows.iter().enumerate() {
                prop_assert_eq!(output.batch.column(0).as_string::<i32>().value(row), name.as_str());
                prop_assert_eq!(output.batch.column(1).as_primitive::<Int64Type>().value(row), *time);
                prop_assert_eq!((!decoded_scores.is_null(row)).then(|| decoded_scores.value(row)), *score);
                let oks = output.batch.column(3).as_boolean();
                prop_assert_eq!((!oks.is_null(row)).then(|| oks.value(row)), *ok);
            }
        }
    }

    /// What a generated record says for one field, before it is written as JSON.
    #[derive(Debug, Clone)]
    enum Written {
        Missing,
        Null,
        /// A value of a type the field does not accept.
        WrongType,
        Text(String),
        Int(i64),
        Float(f64),
        Bool(bool),
    }

    #[derive(Debug, Clone, Copy)]
    enum Damage {
        None,
        /// The record is cut short before its closing brace.
        Truncated,
        /// A field of the schema is written twice.
        DuplicateKey,
    }

    #[derive(Debug, Clone)]
    struct GeneratedRecord {
        values: Vec<Written>,
        /// Seeds every choice of how to write the record: key order, spacing, escapes, quoting.
        style: u64,
        damage: Damage,
    }

    /// Every type, nullable and not, so each column kind meets values, nulls and bad input.
    fn reference_schema() -> Schema {
        Schema::new(vec![
            Field::new("name", DataType::Utf8),
            Field::new("note", DataType::Utf8).nullable(),
            Field::new("time", DataType::Int64),
            Field::new("count", DataType::Int64).nullable(),
            Field::new("score", DataType::Float64).nullable(),
            Field::new("ok", DataType::Boolean).nullable(),
            Field::new("flag", DataType::Boolean),
        ])
    }

    fn arbitrary_text() -> impl Strategy<Value = String> {
        let special = proptest::sample::select(vec![
            '"', '\\', '/', '\n', '\t', '\r', '\u{8}', '\u{c}', '\u{1}', '\u{7f}', 'é', '😀',
        ]);
        proptest::collection::vec(prop_oneof![3 => any::<char>(), 2 => special], 0..10)
            .prop_map(|chars| chars.into_iter().collect())
    }

    fn arbitrary_written(data_type: DataType) -> BoxedStrategy<Written> {
        let value = match data_type {
            DataType::Utf8 | DataType::Binary => arbitrary_text().prop_map(Written::Text).boxed(),
            DataType::Int64 => any::<i64>().prop_map(Written::Int).boxed(),
            DataType::Float64 => any::<f64>()
                .prop_filter("JSON numbers are finite", |value| value.is_finite())
                .prop_map(Written::Float)
                .boxed(),
            DataType::Boolean => any::<bool>().prop_map(Written::Bool).boxed(),
        };
        prop_oneof![
            24 => value,
            1 => Just(Written::Missing),
            1 => Just(Written::Null),
            1 => Just(Written::WrongType),
        ]
        .boxed()
    }

    fn arbitrary_record() -> impl Strategy<Value = GeneratedRecord> {
        let values: Vec<_> = reference_schema().fields.iter().map(|field| arbitrary_written(field.data_type)).collect();
        let damage =
            prop_oneof![12 => Just(Damage::None), 1 => Just(Damage::Truncated), 1 => Just(Damage::DuplicateKey)];
        (values, any::<u64>(), damage).prop_map(|(values, style, damage)| GeneratedRecord { values, style, damage })
    }

    /// A splitmix64 stream: the writing choices for one record, reproducible from its seed.
    struct Choices(u64);

    impl Choices {
        fn below(&mut self, bound: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut mixed = self.0;
            mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (mixed ^ (mixed >> 31)) % bound
        }

        fn space(&mut self) -> &'static str {
            ["", " ", "\n\t ", "\r\n"][self.below(4) as usize]
        }
    }

    /// Writes `text` as a JSON string, escaping by choice as well as by necessity.
    fn write_string(text: &str, choices: &mut Choices) -> String {
        let mut out = String::from("\"");
        for character in text.chars() {
            let short = match character {
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                '\r' => Some("\\r"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                '/' => Some("\\/"),
                _ => None,
            };
            match (character, short) {
                ('"', _) => out.push_str("\\\""),
                ('\\', _) => out.push_str("\\\\"),
                (_, Some(short)) if choices.below(2) == 0 => out.push_str(short),
                (character, _) if (character as u32) < 0x20 || choices.below(4) == 0 => {
                    let upper = choices.below(2) == 0;
                    for unit in character.encode_utf16(&mut [0u16; 2]) {
                        out.push_str(&if upper { format!("\\u{unit:04X}") } else { format!("\\u{unit:04x}") });
                    }
                }
                (character, _) => out.push(character),
            }
        }
        out.push('"');
        out
    }

    fn write_number(number: String, choices: &mut Choices) -> String {
        if choices.below(2) == 0 {
            format!("\"{number}\"")
        } else {
            number
        }
    }

    /// The record's bytes, and whether its damage actually applied (a duplicate needs a field).
    fn write_record(record: &GeneratedRecord) -> (Vec<u8>, bool) {
        let schema = reference_schema();
        let mut choices = Choices(record.style);
        let mut pairs = Vec::new();
        for (field, value) in schema.fields.iter().zip(&record.values) {
            let value = match value {
                Written::Missing => continue,
                Written::Null => "null".to_string(),
                Written::WrongType => match field.data_type {
                    DataType::Utf8 | DataType::Binary => ["12", "true", "[\"a\"]"][choices.below(3) as usize].into(),
                    DataType::Int64 => ["\"soon\"", "2.5", "1e3", "true"][choices.below(4) as usize].into(),
                    DataType::Float64 => ["\"x\"", "true", "{}"][choices.below(3) as usize].into(),
                    DataType::Boolean => ["\"true\"", "1", "nul"][choices.below(3) as usize].into(),
                },
                Written::Text(text) => write_string(text, &mut choices),
                Written::Int(number) => write_number(number.to_string(), &mut choices),
                Written::Float(number) => write_number(serde_json::json!(number).to_string(), &mut choices),
                Written::Bool(value) => value.to_string(),
            };
            let key = if choices.below(4) == 0 {
                let (first, rest) = field.name.split_at(1);
                format!("\"\\u{:04x}{rest}\"", u32::from(first.as_bytes()[0]))
            } else {
                format!("\"{}\"", field.name)
            };
            pairs.push((key, value));
        }
        let duplicated = matches!(record.damage, Damage::DuplicateKey) && !pairs.is_empty();
        if duplicated {
            pairs.push(pairs[0].clone());
        }
        if choices.below(3) == 0 {
            pairs.push(("\"extra\"".into(), r#"{"a": [1, "}", null, {"b": -2.5e-3}], "name": 7}"#.into()));
        }
        for index in (1..pairs.len()).rev() {
            pairs.swap(index, choices.below(index as u64 + 1) as usize);
        }
        let mut out = format!("{}{{", choices.space());
        for (index, (key, value)) in pairs.iter().enumerate() {
            let comma = if index == 0 { "" } else { "," };
            out.push_str(&format!(
                "{comma}{}{key}{}:{}{value}{}",
                choices.space(),
                choices.space(),
                choices.space(),
                choices.space()
            ));
        }
        out.push('}');
        out.push_str(choices.space());
        let mut bytes = out.into_bytes();
        let truncated = matches!(record.damage, Damage::Truncated);
        if truncated {
            // Any cut before the closing brace leaves something that is not an object (a cut
            // inside a character leaves invalid UTF-8, which is refused too).
            let close = bytes.iter().rposition(|&byte| byte == b'}').expect("written above");
            bytes.truncate(choices.below(close as u64 + 1) as usize);
        }
        (bytes, duplicated || truncated)
    }

    /// The schema's fields whose bit is set in `mask`, in schema order as the planner asks.
    fn projection_of(schema: &Schema, mask: u8) -> Vec<String> {
        schema
            .fields
            .iter()
            .enumerate()
            .filter(|(position, _)| mask & (1 << position) != 0)
            .map(|(_, field)| field.name.clone())
            .collect()
    }

    /// The naive reference: a record is good when it was written whole, within the size limit,
    /// with every field of the right type and every non-nullable field present and not null.
    fn reference_decode(
        records: &[GeneratedRecord],
        written: &[(Vec<u8>, bool)],
        projection: &[String],
        max_record_bytes: u32,
    ) -> (RecordBatch, Vec<usize>) {
        let schema = reference_schema();
        let mut good = Vec::new();
        let mut dead = Vec::new();
        for (index, (record, (bytes, damaged))) in records.iter().zip(written).enumerate() {
            let fields_ok = schema.fields.iter().zip(&record.values).all(|(field, value)| match value {
                Written::WrongType => false,
                Written::Missing | Written::Null => field.nullable,
                _ => true,
            });
            if !damaged && bytes.len() <= max_record_bytes as usize && fields_ok {
                good.push(record);
            } else {
                dead.push(index);
            }
        }
        let columns: Vec<ArrayRef> = schema
            .fields
            .iter()
            .enumerate()
            .filter(|(_, field)| projection.contains(&field.name))
            .map(|(position, field)| -> ArrayRef {
                let values = good.iter().map(|record| &record.values[position]);
                match field.data_type {
                    DataType::Utf8 | DataType::Binary => {
                        Arc::new(StringArray::from_iter(values.map(|value| match value {
                            Written::Text(text) => Some(text.clone()),
                            _ => None,
                        })))
                    }
                    DataType::Int64 => Arc::new(Int64Array::from_iter(values.map(|value| match value {
                        Written::Int(number) => Some(*number),
                        _ => None,
                    }))),
                    DataType::Float64 => Arc::new(Float64Array::from_iter(values.map(|value| match value {
                        Written::Float(number) => Some(*number),
                        _ => None,
                    }))),
                    DataType::Boolean => Arc::new(BooleanArray::from_iter(values.map(|value| match value {
                        Written::Bool(value) => Some(*value),
                        _ => None,
                    }))),
                }
            })
            .collect();
        let arrow_schema = crate::types::to_arrow_schema(&Schema::new(
            schema.fields.iter().filter(|field| projection.contains(&field.name)).cloned().collect(),
        ));
        let options = RecordBatchOptions::new().with_row_count(Some(good.len()));
        let batch = RecordBatch::try_new_with_options(arrow_schema, columns, &options).expect("reference batch");
        (batch, dead)
    }

    proptest! {
        #[test]
        fn agrees_with_the_naive_reference(
            records in proptest::collection::vec(arbitrary_record(), 0..12),
            projection_mask in any::<u8>(),
            max_record_bytes in prop_oneof![3 => Just(4096u32), 1 => 40u32..400],
        ) {
            let schema = reference_schema();
            let projection = projection_of(&schema, projection_mask);
            let written: Vec<(Vec<u8>, bool)> = records.iter().map(write_record).collect();
            let mut raw = RawRecords::new();
            for (bytes, _) in &written {
                raw.push(bytes);
            }
            let decoder = JsonDecoder::new(&schema, &projection, max_record_bytes).expect("decoder");
            let output = decoder.decode(&raw);
            let (expected, expected_dead) = reference_decode(&records, &written, &projection, max_record_bytes);
            let dead: Vec<usize> = output.dead_letters.iter().map(|letter| letter.record_index).collect();
            prop_assert_eq!(dead, expected_dead, "dead letters: {:?}", output.dead_letters);
            prop_assert_eq!(&output.batch, &expected);
            for column in output.batch.columns() {
                prop_assert!(
                    column.nulls().is_none_or(|nulls| nulls.null_count() > 0),
                    "a validity bitmap only where a null occurs"
                );
            }
        }
    }

    /// How record timestamps reached the decoder before they travelled beside the records: a
    /// JSON object got the timestamp as its first field, anything else was left as it was.
    fn splice_timestamp(value: &[u8], column: &str, timestamp: i64) -> Vec<u8> {
        let Some(at) = value.iter().position(|byte| !byte.is_ascii_whitespace()) else { return value.to_vec() };
        if value[at] != b'{' {
            return value.to_vec();
        }
        let rest = &value[at + 1..];
        let empty = rest.iter().all(|byte| byte.is_ascii_whitespace() || *byte == b'}');
        let mut out = format!("{{\"{column}\":{timestamp}{}", if empty { "" } else { "," }).into_bytes();
        out.extend_from_slice(rest);
        out
    }

    proptest! {
        /// Same rows, same values, same records refused as when the timestamps were spliced
        /// into the text, for a column of each kind and one the schema lacks. (Reasons may
        /// differ: their byte positions no longer count the spliced field.)
        #[test]
        fn record_timestamps_agree_with_splicing_them_into_the_text(
            records in proptest::collection::vec((arbitrary_record(), any::<i64>()), 0..12),
            column in proptest::sample::select(vec!["time", "count", "score", "name", "ok", "absent"]),
            projection_mask in any::<u8>(),
        ) {
            let schema = reference_schema();
            let projection = projection_of(&schema, projection_mask);
            let (mut beside, mut spliced) = (RawRecords::new(), RawRecords::new());
            for (record, timestamp) in &records {
                let (bytes, _) = write_record(record);
                beside.push(&bytes);
                beside.timestamps.push(*timestamp);
                spliced.push(&splice_timestamp(&bytes, column, *timestamp));
            }
            let decoder = JsonDecoder::new(&schema, &projection, 4096).expect("decoder");
            let expected = decoder.decode(&spliced);
            let output = decoder.with_record_timestamps(column).decode(&beside);
            prop_assert_eq!(dead_indices(&output), dead_indices(&expected), "{:?}", output.dead_letters);
            prop_assert_eq!(&output.batch, &expected.batch);
        }
    }
}
