//! Scalar expressions over the columns of one row, and their type rules.

use serde::{Deserialize, Serialize};

use crate::schema::{DataType, Schema};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scalar {
    Utf8(String),
    Int64(i64),
    Float64(f64),
    Boolean(bool),
}

impl Scalar {
    pub fn data_type(&self) -> DataType {
        match self {
            Scalar::Utf8(_) => DataType::Utf8,
            Scalar::Int64(_) => DataType::Int64,
            Scalar::Float64(_) => DataType::Float64,
            Scalar::Boolean(_) => DataType::Boolean,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
}

impl BinaryOp {
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinaryOp::Add | BinaryOp::Subtract | BinaryOp::Multiply | BinaryOp::Divide | BinaryOp::Modulo)
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    Column(String),
    Literal(Scalar),
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Cast {
        expr: Box<Expr>,
        to: DataType,
    },
    /// Start of the tumbling window of `size_ms` holding the timestamp `expr`
    /// (floor division, so negative timestamps land in the window below them).
    WindowStart {
        expr: Box<Expr>,
        size_ms: i64,
    },
}

pub fn col(name: impl Into<String>) -> Expr {
    Expr::Column(name.into())
}

pub fn lit(value: impl Into<Scalar>) -> Expr {
    Expr::Literal(value.into())
}

impl From<&str> for Scalar {
    fn from(value: &str) -> Self {
        Scalar::Utf8(value.to_string())
    }
}
impl From<String> for Scalar {
    fn from(value: String) -> Self {
        Scalar::Utf8(value)
    }
}
impl From<i64> for Scalar {
    fn from(value: i64) -> Self {
        Scalar::Int64(value)
    }
}
impl From<f64> for Scalar {
    fn from(value: f64) -> Self {
        Scalar::Float64(value)
    }
}
impl From<bool> for Scalar {
    fn from(value: bool) -> Self {
        Scalar::Boolean(value)
    }
}

// Builder names mirror the SQL operators; they build expressions, not values, so the std
// operator traits (which would evaluate) are deliberately not implemented.
macro_rules! binary_builder {
    ($($name:ident => $op:ident),* $(,)?) => {
        #[allow(clippy::should_implement_trait, reason = "they build expressions; the operator traits would evaluate")]
        impl Expr {
            $(pub fn $name(self, right: Expr) -> Expr {
                Expr::Binary { op: BinaryOp::$op, left: Box::new(self), right: Box::new(right) }
            })*
        }
    };
}

binary_builder!(
    add => Add, subtract => Subtract, multiply => Multiply, divide => Divide, modulo => Modulo,
    eq => Eq, not_eq => NotEq, lt => Lt, lt_eq => LtEq, gt => Gt, gt_eq => GtEq,
    and => And, or => Or,
);

impl Expr {
    #[allow(clippy::should_implement_trait, reason = "they build expressions; the operator traits would evaluate")]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    pub fn cast(self, to: DataType) -> Expr {
        Expr::Cast { expr: Box::new(self), to }
    }

    pub fn window_start(self, size_ms: i64) -> Expr {
        Expr::WindowStart { expr: Box::new(self), size_ms }
    }

    /// The columns this expression reads, in first-use order.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Column(name) => {
                if !out.contains(&name.as_str()) {
                    out.push(name)
                }
            }
            Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } => {
                left.collect_columns(out);
                right.collect_columns(out);
            }
            Expr::Not(inner) | Expr::Cast { expr: inner, .. } | Expr::WindowStart { expr: inner, .. } => {
                inner.collect_columns(out)
            }
        }
    }

    /// A readable name for a projected expression without an alias.
    pub fn default_name(&self) -> String {
        match self {
            Expr::Column(name) => name.clone(),
            other => format!("{other}"),
        }
    }

    /// The type this expression yields over `schema`, or why it is ill-typed.
    pub fn data_type(&self, schema: &Schema) -> Result<DataType, ExprTypeError> {
        match self {
            Expr::Column(name) => schema
                .field(name)
                .map(|field| field.data_type)
                .ok_or_else(|| ExprTypeError::UnknownColumn(name.clone())),
            Expr::Literal(value) => Ok(value.data_type()),
            Expr::Binary { op, left, right } => {
                let left_type = left.data_type(schema)?;
                let right_type = right.data_type(schema)?;
                let mismatch = || ExprTypeError::Mismatch {
                    expr: self.to_string(),
                    reason: format!("cannot apply {op:?} to {left_type} and {right_type}"),
                };
                if op.is_arithmetic() {
                    if !left_type.is_numeric() || !right_type.is_numeric() {
                        return Err(mismatch());
                    }
                    Ok(if left_type == DataType::Float64 || right_type == DataType::Float64 {
                        DataType::Float64
                    } else {
                        DataType::Int64
                    })
                } else if op.is_comparison() {
                    let comparable = left_type == right_type || (left_type.is_numeric() && right_type.is_numeric());
                    if !comparable || left_type == DataType::Binary {
                        return Err(mismatch());
                    }
                    Ok(DataType::Boolean)
                } else {
                    if left_type != DataType::Boolean || right_type != DataType::Boolean {
                        return Err(mismatch());
                    }
                    Ok(DataType::Boolean)
                }
            }
            Expr::Not(inner) => match inner.data_type(schema)? {
                DataType::Boolean => Ok(DataType::Boolean),
                other => Err(ExprTypeError::Mismatch {
                    expr: self.to_string(),
                    reason: format!("NOT needs boolean, got {other}"),
                }),
            },
            Expr::Cast { expr, to } => {
                let from = expr.data_type(schema)?;
                let allowed = from == *to
                    || matches!(
                        (from, to),
                        (
                            DataType::Utf8 | DataType::Int64 | DataType::Float64 | DataType::Boolean,
                            DataType::Utf8 | DataType::Int64 | DataType::Float64
                        ) | (DataType::Int64, DataType::Boolean)
                    );
                if !allowed {
                    return Err(ExprTypeError::Mismatch {
                        expr: self.to_string(),
                        reason: format!("cannot cast {from} to {to}"),
                    });
                }
                Ok(*to)
            }
            Expr::WindowStart { expr, size_ms } => {
                if *size_ms <= 0 {
                    return Err(ExprTypeError::Mismatch {
                        expr: self.to_string(),
                        reason: format!("window size must be positive, got {size_ms}"),
                    });
                }
                match expr.data_type(schema)? {
                    DataType::Int64 => Ok(DataType::Int64),
                    other => Err(ExprTypeError::Mismatch {
                        expr: self.to_string(),
                        reason: format!("window_start needs an int64 timestamp, got {other}"),
                    }),
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprTypeError {
    UnknownColumn(String),
    Mismatch { expr: String, reason: String },
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Column(name) => write!(f, "{name}"),
            Expr::Literal(Scalar::Utf8(value)) => write!(f, "{value:?}"),
            Expr::Literal(Scalar::Int64(value)) => write!(f, "{value}"),
            Expr::Literal(Scalar::Float64(value)) => write!(f, "{value}"),
            Expr::Literal(Scalar::Boolean(value)) => write!(f, "{value}"),
            Expr::Binary { op, left, right } => {
                let symbol = match op {
                    BinaryOp::Add => "+",
                    BinaryOp::Subtract => "-",
                    BinaryOp::Multiply => "*",
                    BinaryOp::Divide => "/",
                    BinaryOp::Modulo => "%",
                    BinaryOp::Eq => "=",
                    BinaryOp::NotEq => "!=",
                    BinaryOp::Lt => "<",
                    BinaryOp::LtEq => "<=",
                    BinaryOp::Gt => ">",
                    BinaryOp::GtEq => ">=",
                    BinaryOp::And => "AND",
                    BinaryOp::Or => "OR",
                };
                write!(f, "({left} {symbol} {right})")
            }
            Expr::Not(inner) => write!(f, "NOT {inner}"),
            Expr::Cast { expr, to } => write!(f, "CAST({expr} AS {to})"),
            Expr::WindowStart { expr, size_ms } => write!(f, "window_start({expr}, {size_ms})"),
        }
    }
}
