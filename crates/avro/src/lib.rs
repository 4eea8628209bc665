//! Avro for sleet, without Arrow: record schemas (`RecordSchema::parse`), their Parsing
//! Canonical Form and CRC-64-AVRO fingerprint, and the single-object encoding both ways
//! (`encode_single_object` for generators, tests and ingest; `read_single_object` for the
//! decode operator in `sleet-exec`, which turns the values into Arrow columns).
//!
//! ```text
//!  .avsc text ──RecordSchema::parse──▶ RecordSchema { fields, canonical form, fingerprint }
//!                                            │
//!  values ──encode_single_object──▶ C3 01 │ fingerprint (8, LE) │ binary datum
//!                                            │
//!  record bytes ──read_single_object──▶ (field, Value) per field, or a DatumError
//! ```
//!
//! Only flat records of primitive fields (boolean, int, long, float, double, string, each
//! perhaps in a union with null) are accepted: those are the columns a plan can hold. Other
//! types are refused when the schema is parsed, naming the field, so a job never starts with
//! a schema it could not decode. The crate depends on no other sleet crate.

mod binary;
mod canonical;
mod fingerprint;
pub mod framed;
mod schema;
mod single_object;

pub use binary::{write_long, write_string, ReadError, Reader};
pub use fingerprint::crc64_avro;
pub use schema::{AvroType, FieldSchema, RecordSchema, SchemaError};
pub use single_object::{DatumError, EncodeError, Value, HEADER_BYTES, MARKER};

/// The home-gateway telemetry record (`schemas/gateway.avsc` at the repository root).
pub const GATEWAY_SCHEMA: &str = include_str!("../../../schemas/gateway.avsc");
