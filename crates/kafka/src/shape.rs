//! A response's shape, walked before kafka-protocol decodes it.
//!
//! kafka-protocol (0.18, the newest release) reserves an array's length as read off the wire,
//! before reading one element: ten bytes claiming 2³² − 2 entries ask for ~300 GB, and a failed
//! allocation aborts the process instead of returning an error. So every response body is
//! first walked against its shape at the version this client speaks: each length prefix must
//! fit in the bytes left, and every element is walked in turn. A body the walk accepts has, for
//! each length kafka-protocol will read, that many elements actually present, so what it
//! reserves is paid for by the response's own bytes.
//!
//! The walk follows the wire format of the flexible versions (KIP-482), the only ones this
//! client speaks:
//!
//! ```text
//! compact string / bytes / array:  unsigned varint N, then N − 1 bytes or entries (0 = null)
//! every struct ends in tagged fields:  count, then (tag, size, value of size bytes)…
//! ```
//!
//! It is stricter than kafka-protocol where that keeps the two in step: a varint must end
//! within 32 bits, and a tagged field this version knows must hold exactly its value (the
//! library decodes such a value from the stream and ignores the size).

use std::fmt;

mod responses;
#[cfg(test)]
mod tests;

pub(crate) use responses::shape_of;

/// One field of a struct, named as in Kafka's message definitions (for errors).
pub(crate) enum Field {
    /// int8 … int64, boolean, uuid: this many bytes.
    Fixed(&'static str, usize),
    /// A compact (nullable) string or byte string.
    Bytes(&'static str),
    /// A compact (nullable) array of int32.
    Int32s(&'static str),
    /// A compact (nullable) array of structs.
    Array(&'static str, &'static Shape),
    /// One struct, in place (the value of a tagged field).
    Struct(&'static str, &'static Shape),
}

impl Field {
    fn name(&self) -> &'static str {
        match *self {
            Field::Fixed(name, _)
            | Field::Bytes(name)
            | Field::Int32s(name)
            | Field::Array(name, _)
            | Field::Struct(name, _) => name,
        }
    }
}

/// A struct at one version: its fields in wire order, then the tagged fields that version
/// knows. Tags it does not know are skipped by their size, as kafka-protocol skips them.
pub(crate) struct Shape {
    pub(crate) fields: &'static [Field],
    pub(crate) tags: &'static [(u32, Field)],
}

/// Walks `body` as `shape`; returns the bytes the walk took (a body may carry more after them,
/// which kafka-protocol ignores too).
pub(crate) fn walk(shape: &Shape, body: &[u8]) -> Result<usize, String> {
    let mut walker = Walker { data: body, at: 0 };
    walker.shape(shape).map_err(|error| error.to_string())?;
    Ok(walker.at)
}

/// Where the walk stopped (`topics[3].partitions`) and why.
struct WalkError {
    path: String,
    reason: String,
}

impl WalkError {
    fn new(reason: String) -> Self {
        WalkError { path: String::new(), reason }
    }

    /// The same error, seen from the struct holding `name`.
    fn inside(mut self, name: &str, index: Option<usize>) -> Self {
        let index = index.map(|index| format!("[{index}]")).unwrap_or_default();
        let separator = if self.path.is_empty() { "" } else { "." };
        self.path = format!("{name}{index}{separator}{}", self.path);
        self
    }
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "`{}`: {}", self.path, self.reason)
        }
    }
}

struct Walker<'a> {
    data: &'a [u8],
    at: usize,
}

impl Walker<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    fn shape(&mut self, shape: &Shape) -> Result<(), WalkError> {
        for field in shape.fields {
            self.field(field)?;
        }
        self.tags(shape.tags)
    }

    fn field(&mut self, field: &Field) -> Result<(), WalkError> {
        let name = field.name();
        let at_field = |error: WalkError| error.inside(name, None);
        match *field {
            Field::Fixed(_, width) => self.skip(width).map_err(at_field),
            Field::Bytes(_) => match self.compact_length().map_err(at_field)? {
                Some(length) => self.skip(length).map_err(at_field),
                None => Ok(()),
            },
            Field::Int32s(_) => match self.count(4).map_err(at_field)? {
                Some(count) => self.skip(count * 4).map_err(at_field),
                None => Ok(()),
            },
            Field::Array(_, element) => {
                for index in 0..self.count(1).map_err(at_field)?.unwrap_or(0) {
                    self.shape(element).map_err(|error| error.inside(name, Some(index)))?;
                }
                Ok(())
            }
            Field::Struct(_, shape) => self.shape(shape).map_err(at_field),
        }
    }

    /// A compact array's length, refused when its entries of at least `entry_bytes` each
    /// cannot fit in the bytes left.
    fn count(&mut self, entry_bytes: usize) -> Result<Option<usize>, WalkError> {
        let Some(count) = self.compact_length()? else { return Ok(None) };
        if count.saturating_mul(entry_bytes) > self.left() {
            return Err(WalkError::new(format!("{count} entries claimed with {} bytes left", self.left())));
        }
        Ok(Some(count))
    }

    fn tags(&mut self, known: &[(u32, Field)]) -> Result<(), WalkError> {
        let count = self.uvarint().map_err(|error| error.inside("tagged fields", None))?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            if size > self.left() {
                return Err(WalkError::new(format!(
                    "tagged field {tag} claims {size} bytes with {} left",
                    self.left()
                )));
            }
            let end = self.at + size;
            if let Some((_, field)) = known.iter().find(|(known, _)| *known == tag) {
                let mut value = Walker { data: &self.data[..end], at: self.at };
                value.field(field)?;
                if value.at != end {
                    let reason = format!("tagged field {tag} is {size} bytes but its value {}", value.at - self.at);
                    return Err(WalkError::new(reason).inside(field.name(), None));
                }
            }
            self.at = end;
        }
        Ok(())
    }

    /// A compact length: `None` for null, else the length (the wire carries it plus one).
    fn compact_length(&mut self) -> Result<Option<usize>, WalkError> {
        Ok(self.uvarint()?.checked_sub(1).map(|length| length as usize))
    }

    fn uvarint(&mut self) -> Result<u32, WalkError> {
        let mut value = 0u32;
        for index in 0..5 {
            let byte = *self.data.get(self.at).ok_or_else(|| WalkError::new("varint cut short".to_string()))?;
            self.at += 1;
            // The fifth byte holds bits 28–31 and must end the varint.
            if index == 4 && byte > 0x0f {
                return Err(WalkError::new("an unsigned varint longer than 32 bits".to_string()));
            }
            value |= u32::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                break;
            }
        }
        Ok(value)
    }

    fn skip(&mut self, bytes: usize) -> Result<(), WalkError> {
        if bytes > self.left() {
            return Err(WalkError::new(format!("{bytes} bytes needed, {} left", self.left())));
        }
        self.at += bytes;
        Ok(())
    }
}
