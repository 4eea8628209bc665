//! Avro record schemas as sleet reads them: a flat record of primitive fields, each perhaps
//! nullable. Anything else is refused here, naming the field and its type, so a job that
//! could not decode is turned away before it runs.

use serde_json::{Map, Value};

use crate::canonical::parsing_canonical_form;
use crate::fingerprint::crc64_avro;

/// The Avro primitive types a field may have. `bytes` is left out: a plan has no column type
/// for it that a later operator could use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AvroType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    String,
}

impl AvroType {
    pub fn name(self) -> &'static str {
        match self {
            AvroType::Boolean => "boolean",
            AvroType::Int => "int",
            AvroType::Long => "long",
            AvroType::Float => "float",
            AvroType::Double => "double",
            AvroType::String => "string",
        }
    }

    fn from_name(name: &str) -> Option<AvroType> {
        Some(match name {
            "boolean" => AvroType::Boolean,
            "int" => AvroType::Int,
            "long" => AvroType::Long,
            "float" => AvroType::Float,
            "double" => AvroType::Double,
            "string" => AvroType::String,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSchema {
    pub name: String,
    pub avro_type: AvroType,
    /// For a union of `null` and one type: the branch index (0 or 1) that means null. The
    /// writer's order matters on the wire, so `["null", T]` and `[T, "null"]` differ here.
    pub null_branch: Option<u8>,
}

impl FieldSchema {
    pub fn is_nullable(&self) -> bool {
        self.null_branch.is_some()
    }
}

/// A parsed record schema with its identity: the Parsing Canonical Form and its
/// CRC-64-AVRO fingerprint, which the single-object encoding puts before every datum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSchema {
    /// The record's full name (`namespace.name`).
    pub full_name: String,
    pub fields: Vec<FieldSchema>,
    canonical_form: String,
    fingerprint: u64,
}

/// What is wrong with a schema; every variant names the field (or `record`) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("the schema is not JSON: {0}")]
    NotJson(String),
    #[error("the schema must be a record, found {0}")]
    NotRecord(String),
    #[error("{at}: {reason}")]
    Invalid { at: String, reason: String },
    #[error("field `{field}` has type {found}, which sleet does not decode (supported: boolean, int, long, float, double, string, or a union of null and one of them)")]
    Unsupported { field: String, found: String },
}

impl RecordSchema {
    /// Parses an `.avsc` text.
    pub fn parse(text: &str) -> Result<RecordSchema, SchemaError> {
        let value: Value = serde_json::from_str(text).map_err(|error| SchemaError::NotJson(error.to_string()))?;
        RecordSchema::from_json(&value)
    }

    /// Reads an `.avsc` already parsed as JSON (as a job file holds it inline).
    pub fn from_json(value: &Value) -> Result<RecordSchema, SchemaError> {
        let Value::Object(record) = value else { return Err(SchemaError::NotRecord(describe(value))) };
        match record.get("type") {
            Some(Value::String(kind)) if kind == "record" => {}
            Some(other) => return Err(SchemaError::NotRecord(describe(other))),
            None => return Err(SchemaError::NotRecord("an object without `type`".into())),
        }
        let full_name = full_name(record)?;
        let Some(Value::Array(fields_json)) = record.get("fields") else {
            return Err(invalid("record", "`fields` must be an array"));
        };
        if fields_json.is_empty() {
            return Err(invalid("record", "needs at least one field"));
        }
        let mut fields: Vec<FieldSchema> = Vec::with_capacity(fields_json.len());
        for (position, field_json) in fields_json.iter().enumerate() {
            let field = parse_field(field_json, position)?;
            if fields.iter().any(|other| other.name == field.name) {
                return Err(invalid(&format!("field `{}`", field.name), "appears twice"));
            }
            fields.push(field);
        }
        let canonical_form = parsing_canonical_form(&full_name, &fields);
        let fingerprint = crc64_avro(canonical_form.as_bytes());
        Ok(RecordSchema { full_name, fields, canonical_form, fingerprint })
    }

    /// The Parsing Canonical Form: the schema stripped to what a reader needs, in one fixed
    /// spelling, so that two texts of the same schema fingerprint alike.
    pub fn canonical_form(&self) -> &str {
        &self.canonical_form
    }

    /// The CRC-64-AVRO (Rabin) fingerprint of the canonical form.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}

fn parse_field(value: &Value, position: usize) -> Result<FieldSchema, SchemaError> {
    let Value::Object(field) = value else {
        return Err(invalid(&format!("field {position}"), "must be an object with `name` and `type`"));
    };
    let Some(Value::String(name)) = field.get("name") else {
        return Err(invalid(&format!("field {position}"), "needs a `name` string"));
    };
    check_name(name).map_err(|reason| invalid(&format!("field {position}"), &reason))?;
    let Some(type_json) = field.get("type") else {
        return Err(invalid(&format!("field `{name}`"), "needs a `type`"));
    };
    let unsupported = || SchemaError::Unsupported { field: name.clone(), found: describe_type(type_json) };
    let (avro_type, null_branch) = match type_json {
        Value::Array(branches) => match branches.as_slice() {
            [first, second] if is_null(first) => (primitive(second).ok_or_else(unsupported)?, Some(0)),
            [first, second] if is_null(second) => (primitive(first).ok_or_else(unsupported)?, Some(1)),
            _ => return Err(unsupported()),
        },
        other => (primitive(other).ok_or_else(unsupported)?, None),
    };
    Ok(FieldSchema { name: name.clone(), avro_type, null_branch })
}

/// A primitive type, written as its name or as `{"type": name, ...}` (a logical type such as
/// `timestamp-millis` on a `long` reads as the `long` it annotates, as Avro readers do).
/// A logical type over `bytes` or `fixed` (decimal, duration) is not one, so it is refused.
fn primitive(value: &Value) -> Option<AvroType> {
    match value {
        Value::String(name) => AvroType::from_name(name),
        Value::Object(object) => match object.get("type") {
            Some(Value::String(name)) => AvroType::from_name(name),
            _ => None,
        },
        _ => None,
    }
}

fn is_null(value: &Value) -> bool {
    match value {
        Value::String(name) => name == "null",
        Value::Object(object) => matches!(object.get("type"), Some(Value::String(name)) if name == "null"),
        _ => false,
    }
}

/// The record's full name: a dotted `name` is one already; otherwise `namespace.name`.
fn full_name(record: &Map<String, Value>) -> Result<String, SchemaError> {
    let Some(Value::String(name)) = record.get("name") else {
        return Err(invalid("record", "needs a `name` string"));
    };
    let full = match record.get("namespace") {
        _ if name.contains('.') => name.clone(),
        Some(Value::String(namespace)) if !namespace.is_empty() => format!("{namespace}.{name}"),
        Some(Value::String(_)) | Some(Value::Null) | None => name.clone(),
        Some(_) => return Err(invalid("record", "`namespace` must be a string")),
    };
    for part in full.split('.') {
        check_name(part).map_err(|reason| invalid("record", &format!("name `{full}`: {reason}")))?;
    }
    Ok(full)
}

/// Avro names are `[A-Za-z_][A-Za-z0-9_]*`; holding to it also means a name never needs
/// escaping in the canonical form.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    if starts_well && chars.all(|rest| rest.is_ascii_alphanumeric() || rest == '_') {
        Ok(())
    } else {
        Err(format!("`{name}` is not an Avro name (a letter or `_`, then letters, digits or `_`)"))
    }
}

fn invalid(at: &str, reason: &str) -> SchemaError {
    SchemaError::Invalid { at: at.to_string(), reason: reason.to_string() }
}

/// A type as an error shows it: its name, or its JSON for a complex one.
fn describe_type(value: &Value) -> String {
    match value {
        Value::String(name) => name.clone(),
        Value::Object(object) => match (object.get("type"), object.get("logicalType")) {
            (Some(Value::String(name)), Some(Value::String(logical))) => format!("{name} ({logical})"),
            (Some(Value::String(name)), None) => name.clone(),
            _ => value.to_string(),
        },
        _ => value.to_string(),
    }
}

fn describe(value: &Value) -> String {
    let text = describe_type(value);
    const SHOWN_MAX: usize = 60;
    match text.char_indices().nth(SHOWN_MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}
