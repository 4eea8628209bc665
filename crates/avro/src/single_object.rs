//! Avro's single-object encoding of a record: the marker `C3 01`, the schema's fingerprint
//! (8 bytes, little-endian), then the binary datum. The fingerprint makes each record say
//! which schema wrote it, so a reader holding another schema refuses it instead of decoding
//! garbage.

use crate::binary::{write_long, write_string, ReadError, Reader};
use crate::schema::{AvroType, FieldSchema, RecordSchema};

pub const MARKER: [u8; 2] = [0xc3, 0x01];
/// Marker and fingerprint.
pub const HEADER_BYTES: usize = 10;

/// One field's value, as the encoder takes it and the reader hands it over. Strings borrow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(&'a str),
}

impl Value<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Boolean(_) => "boolean",
            Value::Int(_) => "int",
            Value::Long(_) => "long",
            Value::Float(_) => "float",
            Value::Double(_) => "double",
            Value::String(_) => "string",
        }
    }
}

/// Why a record is not a datum of the schema; each names what it found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatumError {
    #[error("not single-object encoded: the record does not start with the marker C3 01")]
    NoMarker,
    #[error("truncated header: {0} bytes, where the marker and fingerprint take 10")]
    ShortHeader(usize),
    #[error("written with another schema: fingerprint {found:#018x}, expected {expected:#018x} (the job's schema)")]
    WrongSchema { found: u64, expected: u64 },
    #[error("field `{field}`: {problem}")]
    Field { field: String, problem: ReadError },
    #[error("{0} bytes left after the last field")]
    Trailing(usize),
}

/// Why values could not be encoded as a record of the schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{given} values given for the {expected} fields of the schema")]
    FieldCount { given: usize, expected: usize },
    #[error("field `{field}` is {expected}, given a {given}")]
    Type { field: String, expected: String, given: &'static str },
}

impl RecordSchema {
    /// The 10 bytes every record of this schema starts with.
    pub fn single_object_header(&self) -> [u8; HEADER_BYTES] {
        let mut header = [0u8; HEADER_BYTES];
        header[..2].copy_from_slice(&MARKER);
        header[2..].copy_from_slice(&self.fingerprint().to_le_bytes());
        header
    }

    /// Appends `values`, one per field in schema order, single-object encoded. An `int` field
    /// takes a `Long` that fits and a `long` field an `Int`, a `float` field a `Double` (which
    /// it rounds) and a `double` field a `Float`, so callers holding wider values need not
    /// convert; anything else that does not match is refused, naming the field. On error
    /// nothing is appended.
    pub fn encode_single_object(&self, values: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if values.len() != self.fields.len() {
            return Err(EncodeError::FieldCount { given: values.len(), expected: self.fields.len() });
        }
        let start = out.len();
        out.extend_from_slice(&self.single_object_header());
        for (field, value) in self.fields.iter().zip(values) {
            if let Err(error) = encode_field(field, *value, out) {
                out.truncate(start);
                return Err(error);
            }
        }
        Ok(())
    }

    /// Reads one single-object encoded record, handing each field's value to `visit` in
    /// schema order. The whole record must be the datum: a trailing byte is an error, as is
    /// anything `visit` saw before it, so a caller keeps the values only on `Ok`.
    pub fn read_single_object<'a>(
        &self,
        record: &'a [u8],
        mut visit: impl FnMut(usize, Value<'a>),
    ) -> Result<(), DatumError> {
        if record.len() < MARKER.len() || record[..2] != MARKER {
            return Err(if MARKER.starts_with(record) {
                DatumError::ShortHeader(record.len())
            } else {
                DatumError::NoMarker
            });
        }
        let Some(fingerprint) = record.get(2..HEADER_BYTES) else {
            return Err(DatumError::ShortHeader(record.len()));
        };
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(fingerprint);
        let found = u64::from_le_bytes(bytes);
        if found != self.fingerprint() {
            return Err(DatumError::WrongSchema { found, expected: self.fingerprint() });
        }
        let mut reader = Reader::new(&record[HEADER_BYTES..]);
        for (index, field) in self.fields.iter().enumerate() {
            let value = read_field(field, &mut reader)
                .map_err(|problem| DatumError::Field { field: field.name.clone(), problem })?;
            visit(index, value);
        }
        match reader.remaining() {
            0 => Ok(()),
            left => Err(DatumError::Trailing(left)),
        }
    }
}

fn read_field<'a>(field: &FieldSchema, reader: &mut Reader<'a>) -> Result<Value<'a>, ReadError> {
    if let Some(null_branch) = field.null_branch {
        if reader.read_branch()? == null_branch {
            return Ok(Value::Null);
        }
    }
    Ok(match field.avro_type {
        AvroType::Boolean => Value::Boolean(reader.read_boolean()?),
        AvroType::Int => Value::Int(reader.read_int()?),
        AvroType::Long => Value::Long(reader.read_long()?),
        AvroType::Float => Value::Float(reader.read_float()?),
        AvroType::Double => Value::Double(reader.read_double()?),
        AvroType::String => Value::String(reader.read_string()?),
    })
}

fn encode_field(field: &FieldSchema, value: Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let mismatch = || EncodeError::Type {
        field: field.name.clone(),
        expected: match field.null_branch {
            Some(_) => format!("a nullable {}", field.avro_type.name()),
            None => field.avro_type.name().to_string(),
        },
        given: value.type_name(),
    };
    if let Some(null_branch) = field.null_branch {
        let is_null = value == Value::Null;
        let branch = if is_null { null_branch } else { 1 - null_branch };
        write_long(i64::from(branch), out);
        if is_null {
            return Ok(());
        }
    }
    match (field.avro_type, value) {
        (AvroType::Boolean, Value::Boolean(value)) => out.push(u8::from(value)),
        (AvroType::Int, Value::Int(value)) => write_long(i64::from(value), out),
        (AvroType::Int, Value::Long(value)) => {
            write_long(i64::from(i32::try_from(value).map_err(|_| mismatch())?), out)
        }
        (AvroType::Long, Value::Int(value)) => write_long(i64::from(value), out),
        (AvroType::Long, Value::Long(value)) => write_long(value, out),
        (AvroType::Float, Value::Float(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (AvroType::Float, Value::Double(value)) => out.extend_from_slice(&(value as f32).to_le_bytes()),
        (AvroType::Double, Value::Float(value)) => out.extend_from_slice(&f64::from(value).to_le_bytes()),
        (AvroType::Double, Value::Double(value)) => out.extend_from_slice(&value.to_le_bytes()),
        (AvroType::String, Value::String(value)) => write_string(value, out),
        _ => return Err(mismatch()),
    }
    Ok(())
}
