//! Avro's binary encoding of primitive values: zig-zag varints for `int` and `long`, IEEE
//! little-endian floats, length-prefixed UTF-8 strings. Reading never trusts a length: it is
//! checked against the bytes left before anything is sliced, and nothing is allocated.

/// Why a value could not be read; the datum reader adds the field it was reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("truncated: {needed} bytes needed, {left} left")]
    Truncated { needed: u64, left: usize },
    #[error("invalid varint: longer than {0} bytes or over its type's range")]
    InvalidVarint(usize),
    #[error("negative string length {0}")]
    NegativeLength(i64),
    #[error("string is not valid UTF-8 at byte {0} of it")]
    InvalidUtf8(usize),
    #[error("boolean byte {0:#04x} is neither 0 nor 1")]
    InvalidBoolean(u8),
    #[error("int {0} is outside the 32-bit range")]
    IntOutOfRange(i64),
    #[error("union branch {found} does not exist (the union has 2)")]
    InvalidBranch { found: i64 },
}

/// A cursor over one datum's bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

/// The longest varints: 10 bytes carry 64 bits, 5 carry 32.
const LONG_BYTES_MAX: usize = 10;

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, position: 0 }
    }

    pub fn position(&self) -> usize {
        self.position
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take(&mut self, count: u64) -> Result<&'a [u8], ReadError> {
        let left = self.remaining();
        if count > left as u64 {
            return Err(ReadError::Truncated { needed: count, left });
        }
        let start = self.position;
        self.position += count as usize;
        Ok(&self.bytes[start..self.position])
    }

    /// A zig-zag varint of at most 64 bits. A tenth byte may only carry the top bit: any
    /// other would overflow, which Avro's own readers refuse too.
    pub fn read_long(&mut self) -> Result<i64, ReadError> {
        let mut value: u64 = 0;
        for index in 0..LONG_BYTES_MAX {
            let Some(&byte) = self.bytes.get(self.position) else {
                return Err(ReadError::Truncated { needed: 1, left: 0 });
            };
            self.position += 1;
            if index == LONG_BYTES_MAX - 1 && byte > 1 {
                return Err(ReadError::InvalidVarint(LONG_BYTES_MAX));
            }
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        Err(ReadError::InvalidVarint(LONG_BYTES_MAX))
    }

    pub fn read_int(&mut self) -> Result<i32, ReadError> {
        let value = self.read_long()?;
        i32::try_from(value).map_err(|_| ReadError::IntOutOfRange(value))
    }

    pub fn read_boolean(&mut self) -> Result<bool, ReadError> {
        match self.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(ReadError::InvalidBoolean(other)),
        }
    }

    pub fn read_float(&mut self) -> Result<f32, ReadError> {
        let bytes = self.take(4)?;
        Ok(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    pub fn read_double(&mut self) -> Result<f64, ReadError> {
        let bytes = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(f64::from_le_bytes(array))
    }

    /// The string borrows the datum's bytes; its length is checked against them first.
    pub fn read_string(&mut self) -> Result<&'a str, ReadError> {
        let length = self.read_long()?;
        let length = u64::try_from(length).map_err(|_| ReadError::NegativeLength(length))?;
        let bytes = self.take(length)?;
        std::str::from_utf8(bytes).map_err(|error| ReadError::InvalidUtf8(error.valid_up_to()))
    }

    /// The branch of a two-branch union.
    pub fn read_branch(&mut self) -> Result<u8, ReadError> {
        match self.read_long()? {
            0 => Ok(0),
            1 => Ok(1),
            found => Err(ReadError::InvalidBranch { found }),
        }
    }
}

pub fn write_long(value: i64, out: &mut Vec<u8>) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

pub fn write_string(value: &str, out: &mut Vec<u8>) {
    write_long(value.len() as i64, out);
    out.extend_from_slice(value.as_bytes());
}
