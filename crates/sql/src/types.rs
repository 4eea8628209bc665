//! SQL column types onto the plan's four: utf8, int64, float64, boolean.

use sleet_plan::DataType;
use sqlparser::ast::DataType as SqlType;

/// The plan type of a declared SQL type, or why it has none.
pub fn plan_type(declared: &SqlType) -> Result<DataType, String> {
    match declared {
        SqlType::Varchar(_)
        | SqlType::Nvarchar(_)
        | SqlType::CharacterVarying(_)
        | SqlType::CharVarying(_)
        | SqlType::Char(_)
        | SqlType::Character(_)
        | SqlType::String(_)
        | SqlType::Text => Ok(DataType::Utf8),
        SqlType::TinyInt(_)
        | SqlType::SmallInt(_)
        | SqlType::Int(_)
        | SqlType::Integer(_)
        | SqlType::BigInt(_)
        | SqlType::Int2(_)
        | SqlType::Int4(_)
        | SqlType::Int8(_)
        | SqlType::Int16
        | SqlType::Int32
        | SqlType::Int64 => Ok(DataType::Int64),
        SqlType::Double(_)
        | SqlType::DoublePrecision
        | SqlType::Float(_)
        | SqlType::Float4
        | SqlType::Float8
        | SqlType::Float32
        | SqlType::Float64
        | SqlType::Real => Ok(DataType::Float64),
        SqlType::Boolean | SqlType::Bool => Ok(DataType::Boolean),
        SqlType::Timestamp(..) | SqlType::Datetime(_) | SqlType::Date | SqlType::Time(..) => Err(format!(
            "type {declared}: sleet's event time is a BIGINT of milliseconds since the epoch; declare the column BIGINT"
        )),
        SqlType::Decimal(_) | SqlType::Numeric(_) | SqlType::Dec(_) => {
            Err(format!("type {declared}: sleet has no decimal type; declare the column DOUBLE or BIGINT"))
        }
        other => Err(format!("type {other} (sleet has VARCHAR, BIGINT, DOUBLE and BOOLEAN)")),
    }
}

/// The SQL name a plan type is shown with.
pub fn sql_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Utf8 => "VARCHAR",
        DataType::Int64 => "BIGINT",
        DataType::Float64 => "DOUBLE",
        DataType::Boolean => "BOOLEAN",
        DataType::Binary => "BYTES",
    }
}
