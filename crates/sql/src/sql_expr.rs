//! SQL scalar expressions onto the plan's `Expr`, type-checked against the scope they are
//! written in. After an aggregate, an expression that is a grouping expression or an
//! aggregate call stands for the aggregate's output column (`Replacements`).

use sleet_plan::expr::ScalarFunction;
use sleet_plan::{col, lit, BinaryOp, DataType, Expr as PlanExpr, Scalar};
use sqlparser::ast::{
    BinaryOperator, CastKind, CeilFloorKind, DateTimeField, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArguments, InTarget, TrimWhereField, UnaryOperator, Value,
};

use crate::error::{Position, SqlError, SqlErrorKind};
use crate::scope::{Binding, Scope};
use crate::{spans, types};

/// Expressions already computed by an aggregate, by their SQL text, and the column holding each.
#[derive(Debug, Clone, Default)]
pub struct Replacements {
    entries: Vec<(String, String)>,
}

impl Replacements {
    pub fn add(&mut self, expr: &Expr, column: &str) {
        self.entries.push((expr.to_string(), column.to_string()));
    }

    pub fn column_of(&self, expr: &Expr) -> Option<&str> {
        let text = expr.to_string();
        self.entries.iter().find(|(written, _)| *written == text).map(|(_, column)| column.as_str())
    }
}

/// The aggregate functions sleet computes.
pub const AGGREGATES: &[&str] = &["count", "sum", "min", "max", "avg"];

/// Whether `expr` is a call of an aggregate function (not a window function: no `OVER`).
pub fn is_aggregate_call(expr: &Expr) -> bool {
    matches!(expr, Expr::Function(function) if function.over.is_none() && AGGREGATES.contains(&function_name(function).as_str()))
}

pub fn function_name(function: &Function) -> String {
    function.name.to_string().to_ascii_lowercase()
}

/// Every aggregate call inside `expr`, outermost first, in the order written.
pub fn aggregate_calls<'a>(expr: &'a Expr, found: &mut Vec<&'a Expr>) {
    if is_aggregate_call(expr) {
        found.push(expr);
        return;
    }
    for child in children(expr) {
        aggregate_calls(child, found);
    }
}

/// Every column reference inside `expr` (`name` or `table.name`), in the order written.
pub fn column_references(expr: &Expr, out: &mut Vec<Vec<sqlparser::ast::Ident>>) {
    match expr {
        Expr::Identifier(ident) => out.push(vec![ident.clone()]),
        Expr::CompoundIdentifier(parts) => out.push(parts.clone()),
        other => {
            for child in children(other) {
                column_references(child, out);
            }
        }
    }
}

/// The bare names of the columns `expr` references.
pub fn column_names(expr: &Expr, out: &mut Vec<String>) {
    let mut references = Vec::new();
    column_references(expr, &mut references);
    out.extend(references.into_iter().filter_map(|parts| parts.last().map(|part| part.value.clone())));
}

/// The direct sub-expressions of the forms sleet translates.
fn children(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryOp { left, right, .. } => vec![left, right],
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::Cast { expr, .. } => vec![expr],
        Expr::IsNull(expr) | Expr::IsNotNull(expr) | Expr::IsTrue(expr) | Expr::IsFalse(expr) => vec![expr],
        Expr::Between { expr, low, high, .. } => vec![expr, low, high],
        Expr::In { expr, target: InTarget::List(list), .. } => {
            std::iter::once(expr.as_ref()).chain(list.iter()).collect()
        }
        Expr::Like { expr, pattern, .. } | Expr::ILike { expr, pattern, .. } => vec![expr, pattern],
        Expr::Case { operand, conditions, else_result, .. } => operand
            .iter()
            .map(|operand| operand.as_ref())
            .chain(conditions.iter().flat_map(|when| [&when.condition, &when.result]))
            .chain(else_result.iter().map(|result| result.as_ref()))
            .collect(),
        Expr::Function(function) => function_arguments(function).into_iter().filter_map(argument_expr).collect(),
        _ => Vec::new(),
    }
}

pub fn function_arguments(function: &Function) -> Vec<&FunctionArg> {
    match &function.args {
        FunctionArguments::List(list) => list.args.iter().collect(),
        _ => Vec::new(),
    }
}

pub fn argument_expr(argument: &FunctionArg) -> Option<&Expr> {
    match argument {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))
        | FunctionArg::Named { arg: FunctionArgExpr::Expr(expr), .. }
        | FunctionArg::ExprNamed { arg: FunctionArgExpr::Expr(expr), .. } => Some(expr),
        _ => None,
    }
}

/// Translates expressions written against one scope.
pub struct Translator<'a> {
    pub scope: &'a Scope,
    pub replacements: Option<&'a Replacements>,
    /// Where the statement starts: the place of an error in a node without a span.
    pub fallback: Position,
}

impl<'a> Translator<'a> {
    pub fn new(scope: &'a Scope, fallback: Position) -> Self {
        Translator { scope, replacements: None, fallback }
    }

    /// The plan expression and its type.
    pub fn typed(&self, expr: &Expr) -> Result<(PlanExpr, DataType), SqlError> {
        let planned = self.translate(expr)?;
        let data_type = planned.data_type(&self.scope.schema()).map_err(|error| self.type_error(expr, error))?;
        Ok((planned, data_type))
    }

    /// A condition: a boolean expression.
    pub fn predicate(&self, expr: &Expr) -> Result<PlanExpr, SqlError> {
        let (planned, data_type) = self.typed(expr)?;
        if data_type != DataType::Boolean {
            return Err(SqlError::new(
                self.at(expr),
                SqlErrorKind::TypeMismatch {
                    what: format!("the condition `{expr}`"),
                    expected: "BOOLEAN".into(),
                    found: data_type,
                },
            ));
        }
        Ok(planned)
    }

    fn at(&self, expr: &Expr) -> Position {
        spans::at(expr, self.fallback)
    }

    fn type_error(&self, expr: &Expr, error: sleet_plan::expr::ExprTypeError) -> SqlError {
        match error {
            sleet_plan::expr::ExprTypeError::UnknownColumn(name) => SqlError::invalid(
                self.at(expr),
                format!("`{expr}` uses the column `{name}`, which is not computed at this point of the query"),
            ),
            sleet_plan::expr::ExprTypeError::Mismatch { reason, .. } => {
                SqlError::invalid(self.at(expr), format!("`{expr}`: {reason}"))
            }
        }
    }

    pub fn translate(&self, expr: &Expr) -> Result<PlanExpr, SqlError> {
        let at = self.at(expr);
        if let Some(column) = self.replacements.and_then(|replacements| replacements.column_of(expr)) {
            return Ok(col(column));
        }
        match expr {
            Expr::Identifier(ident) => self.column(std::slice::from_ref(ident), at),
            Expr::CompoundIdentifier(parts) => self.column(parts, at),
            Expr::Value(value) => literal(&value.value, at),
            Expr::Nested(inner) => self.translate(inner),
            Expr::BinaryOp { left, op, right } => {
                let op = binary_op(op).ok_or_else(|| SqlError::unsupported(at, format!("the operator {op}")))?;
                Ok(PlanExpr::Binary {
                    op,
                    left: Box::new(self.translate(left)?),
                    right: Box::new(self.translate(right)?),
                })
            }
            Expr::UnaryOp { op: UnaryOperator::Not, expr } => Ok(self.translate(expr)?.not()),
            Expr::UnaryOp { op: UnaryOperator::Plus, expr } => self.translate(expr),
            Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match self.translate(expr)? {
                PlanExpr::Literal(Scalar::Int64(value)) => Ok(lit(-value)),
                PlanExpr::Literal(Scalar::Float64(value)) => Ok(lit(-value)),
                other => Ok(other.negate()),
            },
            Expr::Cast { kind: CastKind::Cast | CastKind::DoubleColon, expr: inner, data_type, format: None } => {
                let to = types::plan_type(data_type).map_err(|reason| SqlError::unsupported(at, reason))?;
                // A NULL has the type it is cast to; elsewhere it would have none.
                if matches!(inner.as_ref(), Expr::Value(value) if value.value == Value::Null) {
                    return Ok(PlanExpr::Literal(Scalar::Null(to)));
                }
                Ok(self.translate(inner)?.cast(to))
            }
            Expr::Between { expr: inner, negated, low, high } => {
                let value = self.translate(inner)?;
                let within = value.clone().gt_eq(self.translate(low)?).and(value.lt_eq(self.translate(high)?));
                Ok(if *negated { within.not() } else { within })
            }
            Expr::In { expr: inner, target: InTarget::List(list), negated, .. } => {
                if list.is_empty() {
                    return Err(SqlError::invalid(at, "IN () needs at least one value"));
                }
                let value = self.translate(inner)?;
                let list = list.iter().map(|item| self.translate(item)).collect::<Result<Vec<_>, _>>()?;
                Ok(if *negated { value.not_in_list(list) } else { value.in_list(list) })
            }
            Expr::IsNull(inner) => Ok(self.translate(inner)?.is_null()),
            Expr::IsNotNull(inner) => Ok(self.translate(inner)?.is_not_null()),
            Expr::Like { negated, any: false, expr: inner, pattern, escape_char: None } => {
                let (value, pattern) = (self.translate(inner)?, self.translate(pattern)?);
                Ok(if *negated { value.not_like(pattern) } else { value.like(pattern) })
            }
            Expr::Case { operand, conditions, else_result, .. } => {
                let branches = conditions
                    .iter()
                    .map(|when| Ok((self.translate(&when.condition)?, self.translate(&when.result)?)))
                    .collect::<Result<Vec<_>, SqlError>>()?;
                let otherwise = else_result.as_ref().map(|result| self.translate(result)).transpose()?;
                Ok(match operand {
                    Some(operand) => PlanExpr::simple_case(self.translate(operand)?, branches, otherwise),
                    None => PlanExpr::case(branches, otherwise),
                })
            }
            Expr::Substring { expr: inner, substring_from, substring_for, .. } => {
                let mut args = vec![self.translate(inner)?];
                args.push(match substring_from {
                    Some(from) => self.translate(from)?,
                    None => lit(1i64),
                });
                if let Some(length) = substring_for {
                    args.push(self.translate(length)?);
                }
                Ok(PlanExpr::call(ScalarFunction::Substring, args))
            }
            Expr::Trim { trim_where, trim_what: None, expr: inner, trim_characters: None } => {
                let function = match trim_where {
                    None | Some(TrimWhereField::Both) => ScalarFunction::Trim,
                    Some(TrimWhereField::Leading) => ScalarFunction::Ltrim,
                    Some(TrimWhereField::Trailing) => ScalarFunction::Rtrim,
                };
                Ok(PlanExpr::call(function, [self.translate(inner)?]))
            }
            Expr::Ceil { expr: inner, field: CeilFloorKind::DateTimeField(DateTimeField::NoDateTime) } => {
                Ok(PlanExpr::call(ScalarFunction::Ceil, [self.translate(inner)?]))
            }
            Expr::Floor { expr: inner, field: CeilFloorKind::DateTimeField(DateTimeField::NoDateTime) } => {
                Ok(PlanExpr::call(ScalarFunction::Floor, [self.translate(inner)?]))
            }
            Expr::Function(function) if is_aggregate_call(expr) => Err(SqlError::invalid(
                at,
                format!(
                    "the aggregate `{function}` is only allowed in the SELECT list or HAVING of a query with GROUP BY \
                     or over a window"
                ),
            )),
            Expr::Function(function) if function.over.is_some() => Err(SqlError::unsupported(
                at,
                format!(
                    "the window function `{function}` here; sleet plans ROW_NUMBER() or RANK() OVER (PARTITION BY … \
                     ORDER BY … DESC) filtered by `<= N` in an outer query, as a top-N"
                ),
            )),
            Expr::Function(function) => self.scalar_call(function, at),
            other => Err(SqlError::unsupported(at, format!("the expression `{other}`"))),
        }
    }

    fn scalar_call(&self, function: &Function, at: Position) -> Result<PlanExpr, SqlError> {
        let name = function_name(function);
        let Some(scalar) = ScalarFunction::from_name(&name) else {
            let mut known: Vec<&str> = ScalarFunction::ALL.iter().map(|function| function.name()).collect();
            known.extend(AGGREGATES);
            return Err(SqlError::new(
                at,
                SqlErrorKind::UnknownFunction { name: function.name.to_string(), known: known.join(", ") },
            ));
        };
        if function.filter.is_some() || !function.within_group.is_empty() || function.null_treatment.is_some() {
            return Err(SqlError::unsupported(at, format!("the clauses of `{function}`")));
        }
        let mut args = Vec::new();
        for argument in function_arguments(function) {
            let expr = match argument {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => expr,
                other => {
                    return Err(SqlError::unsupported(at, format!("the argument `{other}` of {}", name.to_uppercase())))
                }
            };
            args.push(self.translate(expr)?);
        }
        Ok(PlanExpr::call(scalar, args))
    }

    fn column(&self, parts: &[sqlparser::ast::Ident], at: Position) -> Result<PlanExpr, SqlError> {
        let column = self.scope.resolve(parts, at)?;
        match &column.binding {
            Binding::Column(name) => Ok(col(name.as_str())),
            Binding::WindowBound(bound) => Err(SqlError::invalid(
                at,
                format!("`{}` is only known to an aggregate over the window: GROUP BY it", bound.name()),
            )),
        }
    }
}

fn literal(value: &Value, at: Position) -> Result<PlanExpr, SqlError> {
    match value {
        Value::Number(text, _) => match text.parse::<i64>() {
            Ok(whole) => Ok(lit(whole)),
            Err(_) => text
                .parse::<f64>()
                .map(lit)
                .map_err(|_| SqlError::invalid(at, format!("`{text}` is not a number sleet can hold"))),
        },
        Value::SingleQuotedString(text) => Ok(lit(text.as_str())),
        Value::Boolean(flag) => Ok(lit(*flag)),
        Value::Null => Err(SqlError::unsupported(at, "an untyped NULL; write CAST(NULL AS type)")),
        other => Err(SqlError::unsupported(at, format!("the literal {other}"))),
    }
}

fn binary_op(op: &BinaryOperator) -> Option<BinaryOp> {
    Some(match op {
        BinaryOperator::Plus => BinaryOp::Add,
        BinaryOperator::Minus => BinaryOp::Subtract,
        BinaryOperator::Multiply => BinaryOp::Multiply,
        BinaryOperator::Divide => BinaryOp::Divide,
        BinaryOperator::Modulo => BinaryOp::Modulo,
        BinaryOperator::Eq => BinaryOp::Eq,
        BinaryOperator::NotEq => BinaryOp::NotEq,
        BinaryOperator::Lt => BinaryOp::Lt,
        BinaryOperator::LtEq => BinaryOp::LtEq,
        BinaryOperator::Gt => BinaryOp::Gt,
        BinaryOperator::GtEq => BinaryOp::GtEq,
        BinaryOperator::And => BinaryOp::And,
        BinaryOperator::Or => BinaryOp::Or,
        BinaryOperator::StringConcat => BinaryOp::Concat,
        _ => return None,
    })
}

/// The name an output column gets when the query gives it none: a column's own name, or the
/// expression's text made into an identifier.
pub fn default_name(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(ident) => ident.value.clone(),
        Expr::CompoundIdentifier(parts) => parts.last().map(|part| part.value.clone()).unwrap_or_default(),
        Expr::Nested(inner) => default_name(inner),
        other => {
            let text: String = other
                .to_string()
                .to_ascii_lowercase()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            text.split('_').filter(|part| !part.is_empty()).collect::<Vec<_>>().join("_")
        }
    }
}
