//! Logical types and schemas of the rows flowing between plan nodes.

use serde::{Deserialize, Serialize};

/// The value types a plan can name. Timestamps are `Int64` milliseconds since the epoch:
/// one representation everywhere keeps window arithmetic and the wire format simple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataType {
    Utf8,
    Int64,
    Float64,
    Boolean,
    /// Undecoded record bytes, as produced by a source.
    Binary,
}

impl DataType {
    pub fn is_numeric(self) -> bool {
        matches!(self, DataType::Int64 | DataType::Float64)
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            DataType::Utf8 => "utf8",
            DataType::Int64 => "int64",
            DataType::Float64 => "float64",
            DataType::Boolean => "boolean",
            DataType::Binary => "binary",
        };
        f.write_str(name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub data_type: DataType,
    /// A non-nullable field must be present in every decoded record.
    #[serde(default)]
    pub nullable: bool,
}

impl Field {
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        Field { name: name.into(), data_type, nullable: false }
    }

    pub fn nullable(mut self) -> Self {
        self.nullable = true;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Schema {
    pub fields: Vec<Field>,
}

impl Schema {
    pub fn new(fields: Vec<Field>) -> Self {
        Schema { fields }
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|field| field.name == name)
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.fields.iter().map(|field| field.name.as_str()).collect()
    }
}
