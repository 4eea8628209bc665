//! The type rules of `Expr`: what each form yields over a schema, or why it is ill-typed.

use crate::expr::{BinaryOp, CaseBranch, Expr, Scalar, ScalarFunction};
use crate::schema::{DataType, Schema};

/// Why an expression has no type. `Mismatch` carries the expression's text and a reason
/// naming the types involved, so a front end can place it in the user's source.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprTypeError {
    UnknownColumn(String),
    Mismatch { expr: String, reason: String },
}

impl std::fmt::Display for ExprTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExprTypeError::UnknownColumn(name) => write!(f, "unknown column `{name}`"),
            ExprTypeError::Mismatch { expr, reason } => write!(f, "in `{expr}`: {reason}"),
        }
    }
}

impl std::error::Error for ExprTypeError {}

/// The one type values of `types` meet at: their own when all agree, float64 when they are
/// a mix of int64 and float64 (int64 promotes, as in arithmetic), none otherwise.
pub fn common_type(types: &[DataType]) -> Option<DataType> {
    let first = *types.first()?;
    if types.iter().all(|data_type| *data_type == first) {
        Some(first)
    } else if types.iter().all(|data_type| data_type.is_numeric()) {
        Some(DataType::Float64)
    } else {
        None
    }
}

/// Whether `=`, `<` and the like apply: the same type, or both numeric; never raw bytes.
fn comparable(left: DataType, right: DataType) -> bool {
    (left == right || (left.is_numeric() && right.is_numeric())) && left != DataType::Binary
}

/// The casts evaluation performs; boolean comes from int64 alone (0 is false).
fn castable(from: DataType, to: DataType) -> bool {
    from == to
        || matches!(
            (from, to),
            (
                DataType::Utf8 | DataType::Int64 | DataType::Float64 | DataType::Boolean,
                DataType::Utf8 | DataType::Int64 | DataType::Float64
            ) | (DataType::Int64, DataType::Boolean)
        )
}

fn type_list(types: &[DataType]) -> String {
    types.iter().map(DataType::to_string).collect::<Vec<_>>().join(", ")
}

/// The time units `date_trunc` floors to, with their length in milliseconds.
pub fn date_trunc_unit_ms(unit: &str) -> Option<i64> {
    match unit.to_ascii_lowercase().as_str() {
        "second" => Some(1_000),
        "minute" => Some(60_000),
        "hour" => Some(3_600_000),
        "day" => Some(86_400_000),
        "week" => Some(7 * 86_400_000),
        _ => None,
    }
}

impl Expr {
    /// The type this expression yields over `schema`, or why it is ill-typed.
    pub fn data_type(&self, schema: &Schema) -> Result<DataType, ExprTypeError> {
        let mismatch = |reason: String| ExprTypeError::Mismatch { expr: self.to_string(), reason };
        match self {
            Expr::Column(name) => schema
                .field(name)
                .map(|field| field.data_type)
                .ok_or_else(|| ExprTypeError::UnknownColumn(name.clone())),
            Expr::Literal(value) => Ok(value.data_type()),
            Expr::Binary { op, left, right } => {
                let left_type = left.data_type(schema)?;
                let right_type = right.data_type(schema)?;
                let cannot = || mismatch(format!("cannot apply {op:?} to {left_type} and {right_type}"));
                if op.is_arithmetic() {
                    if !left_type.is_numeric() || !right_type.is_numeric() {
                        return Err(cannot());
                    }
                    common_type(&[left_type, right_type]).ok_or_else(cannot)
                } else if op.is_comparison() {
                    if !comparable(left_type, right_type) {
                        return Err(cannot());
                    }
                    Ok(DataType::Boolean)
                } else if op.is_logical() {
                    if left_type != DataType::Boolean || right_type != DataType::Boolean {
                        return Err(cannot());
                    }
                    Ok(DataType::Boolean)
                } else {
                    debug_assert_eq!(*op, BinaryOp::Concat);
                    if left_type != DataType::Utf8 || right_type != DataType::Utf8 {
                        return Err(cannot());
                    }
                    Ok(DataType::Utf8)
                }
            }
            Expr::Not(inner) => match inner.data_type(schema)? {
                DataType::Boolean => Ok(DataType::Boolean),
                other => Err(mismatch(format!("NOT needs boolean, got {other}"))),
            },
            Expr::Negate(inner) => match inner.data_type(schema)? {
                numeric if numeric.is_numeric() => Ok(numeric),
                other => Err(mismatch(format!("unary minus needs int64 or float64, got {other}"))),
            },
            Expr::IsNull { expr, .. } => expr.data_type(schema).map(|_| DataType::Boolean),
            Expr::Cast { expr, to } => {
                let from = expr.data_type(schema)?;
                if !castable(from, *to) {
                    return Err(mismatch(format!(
                        "cannot cast {from} to {to} (casts go between utf8, int64 and float64, \
                         from boolean to those, and from int64 to boolean)"
                    )));
                }
                Ok(*to)
            }
            Expr::WindowStart { expr, size_ms } => {
                if *size_ms <= 0 {
                    return Err(mismatch(format!("window size must be positive, got {size_ms}")));
                }
                match expr.data_type(schema)? {
                    DataType::Int64 => Ok(DataType::Int64),
                    other => Err(mismatch(format!("window_start needs an int64 timestamp, got {other}"))),
                }
            }
            Expr::InList { expr, list, .. } => {
                let expr_type = expr.data_type(schema)?;
                if list.is_empty() {
                    return Err(mismatch("IN needs at least one value".into()));
                }
                for item in list {
                    let item_type = item.data_type(schema)?;
                    if !comparable(expr_type, item_type) {
                        return Err(mismatch(format!("cannot compare {expr_type} with {item_type} (`{item}`)")));
                    }
                }
                Ok(DataType::Boolean)
            }
            Expr::Like { expr, pattern, .. } => {
                let types = [expr.data_type(schema)?, pattern.data_type(schema)?];
                if types != [DataType::Utf8, DataType::Utf8] {
                    return Err(mismatch(format!("LIKE needs utf8 on both sides, got {}", type_list(&types))));
                }
                Ok(DataType::Boolean)
            }
            Expr::Case { branches, otherwise } => {
                if branches.is_empty() {
                    return Err(mismatch("CASE needs at least one WHEN".into()));
                }
                let mut result_types = Vec::with_capacity(branches.len() + 1);
                for CaseBranch { when, then } in branches {
                    let when_type = when.data_type(schema)?;
                    if when_type != DataType::Boolean {
                        return Err(mismatch(format!("WHEN needs boolean, got {when_type} (`{when}`)")));
                    }
                    result_types.push(then.data_type(schema)?);
                }
                if let Some(otherwise) = otherwise {
                    result_types.push(otherwise.data_type(schema)?);
                }
                common_type(&result_types)
                    .ok_or_else(|| mismatch(format!("CASE results have no common type: {}", type_list(&result_types))))
            }
            Expr::Function { name, args } => {
                let types = args.iter().map(|arg| arg.data_type(schema)).collect::<Result<Vec<_>, _>>()?;
                function_type(*name, args, &types).map_err(mismatch)
            }
        }
    }
}

/// The result type of `name(args)` whose arguments have `types`, or the reason it has none.
fn function_type(name: ScalarFunction, args: &[Expr], types: &[DataType]) -> Result<DataType, String> {
    use DataType::{Boolean, Int64, Utf8};
    let arity = |allowed: std::ops::RangeInclusive<usize>| {
        if allowed.contains(&types.len()) {
            return Ok(());
        }
        let expected = match (allowed.start(), allowed.end()) {
            (low, &usize::MAX) => format!("at least {low}"),
            (low, high) if low == high => format!("{low}"),
            (low, high) => format!("{low} to {high}"),
        };
        Err(format!("{name} takes {expected} arguments, got {}", types.len()))
    };
    let wrong_types = || format!("{name} cannot take ({})", type_list(types));
    let expect = |signature: &[DataType], result: DataType| {
        if types.len() <= signature.len() && types.iter().zip(signature).all(|(found, wanted)| found == wanted) {
            Ok(result)
        } else {
            Err(wrong_types())
        }
    };
    match name {
        ScalarFunction::Coalesce => {
            arity(1..=usize::MAX)?;
            common_type(types).ok_or_else(|| format!("coalesce arguments have no common type: {}", type_list(types)))
        }
        ScalarFunction::Lower
        | ScalarFunction::Upper
        | ScalarFunction::Trim
        | ScalarFunction::Ltrim
        | ScalarFunction::Rtrim => {
            arity(1..=1)?;
            expect(&[Utf8], Utf8)
        }
        ScalarFunction::CharLength => {
            arity(1..=1)?;
            expect(&[Utf8], Int64)
        }
        ScalarFunction::Substring => {
            arity(2..=3)?;
            expect(&[Utf8, Int64, Int64], Utf8)
        }
        ScalarFunction::Concat => {
            arity(1..=usize::MAX)?;
            if types.contains(&DataType::Binary) {
                return Err(wrong_types());
            }
            Ok(Utf8)
        }
        ScalarFunction::StartsWith => {
            arity(2..=2)?;
            expect(&[Utf8, Utf8], Boolean)
        }
        ScalarFunction::Abs | ScalarFunction::Floor | ScalarFunction::Ceil => {
            arity(1..=1)?;
            if !types[0].is_numeric() {
                return Err(wrong_types());
            }
            Ok(types[0])
        }
        ScalarFunction::Round => {
            arity(1..=2)?;
            if !types[0].is_numeric() {
                return Err(wrong_types());
            }
            if let Some(digits) = args.get(1) {
                if !matches!(digits, Expr::Literal(Scalar::Int64(_))) {
                    return Err(format!("round's digits must be an int64 literal, got `{digits}`"));
                }
            }
            Ok(types[0])
        }
        ScalarFunction::DateTrunc => {
            arity(2..=2)?;
            expect(&[Utf8, Int64], Int64)?;
            match &args[0] {
                Expr::Literal(Scalar::Utf8(unit)) if date_trunc_unit_ms(unit).is_some() => Ok(Int64),
                other => Err(format!(
                    "date_trunc's unit must be a literal 'second', 'minute', 'hour', 'day' or 'week', got `{other}`"
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};
    use crate::schema::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int64),
            Field::new("f", DataType::Float64),
            Field::new("s", DataType::Utf8),
            Field::new("b", DataType::Boolean),
            Field::new("raw", DataType::Binary),
        ])
    }

    fn check(expr: Expr, expected: DataType) {
        assert_eq!(expr.data_type(&schema()), Ok(expected), "type of `{expr}`");
    }

    /// `expr` is ill-typed, and its error names the expression and says `reason_part`.
    fn check_error(expr: Expr, reason_part: &str) {
        match expr.data_type(&schema()) {
            Err(ExprTypeError::Mismatch { expr: text, reason }) => {
                assert_eq!(text, expr.to_string(), "the error names the expression");
                assert!(reason.contains(reason_part), "`{expr}`: reason `{reason}` lacks `{reason_part}`");
            }
            other => panic!("`{expr}`: expected a mismatch saying `{reason_part}`, got {other:?}"),
        }
    }

    fn call(name: ScalarFunction, args: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::call(name, args)
    }

    #[test]
    fn int64_promotes_to_float64_in_arithmetic_comparison_and_branches() {
        check(lit(0.908).multiply(col("i")), DataType::Float64);
        check(col("i").modulo(lit(3)), DataType::Int64);
        check(col("i").lt(col("f")), DataType::Boolean);
        check(col("i").negate(), DataType::Int64);
        check(col("f").negate(), DataType::Float64);
        check(Expr::case([(col("b"), col("i"))], Some(col("f"))), DataType::Float64);
        check(Expr::case([(col("b"), col("s"))], None), DataType::Utf8);
        check(call(ScalarFunction::Coalesce, [col("i"), lit(Scalar::Null(DataType::Float64))]), DataType::Float64);
        check(col("i").in_list([lit(1), lit(2.5)]), DataType::Boolean);
    }

    #[test]
    fn null_tests_like_and_functions_have_their_result_types() {
        check(col("raw").is_null(), DataType::Boolean);
        check(col("s").is_not_null(), DataType::Boolean);
        check(col("s").not_like(lit("a%")), DataType::Boolean);
        check(col("s").concat(lit("!")), DataType::Utf8);
        check(lit(Scalar::Null(DataType::Utf8)), DataType::Utf8);
        for name in [
            ScalarFunction::Lower,
            ScalarFunction::Upper,
            ScalarFunction::Trim,
            ScalarFunction::Ltrim,
            ScalarFunction::Rtrim,
        ] {
            check(call(name, [col("s")]), DataType::Utf8);
        }
        check(call(ScalarFunction::CharLength, [col("s")]), DataType::Int64);
        check(call(ScalarFunction::Substring, [col("s"), lit(2)]), DataType::Utf8);
        check(call(ScalarFunction::Substring, [col("s"), col("i"), lit(2)]), DataType::Utf8);
        check(call(ScalarFunction::Concat, [col("s"), col("i"), col("f"), col("b")]), DataType::Utf8);
        check(call(ScalarFunction::StartsWith, [col("s"), lit("x")]), DataType::Boolean);
        for name in [ScalarFunction::Abs, ScalarFunction::Floor, ScalarFunction::Ceil, ScalarFunction::Round] {
            check(call(name, [col("i")]), DataType::Int64);
            check(call(name, [col("f")]), DataType::Float64);
        }
        check(call(ScalarFunction::Round, [col("f"), lit(-2)]), DataType::Float64);
        check(call(ScalarFunction::DateTrunc, [lit("Hour"), col("i")]), DataType::Int64);
    }

    #[test]
    fn each_mismatch_names_the_expression_and_the_types() {
        check_error(col("s").add(lit(1)), "cannot apply Add to utf8 and int64");
        check_error(col("s").lt(col("i")), "cannot apply Lt to utf8 and int64");
        check_error(col("raw").eq(col("raw")), "cannot apply Eq to binary and binary");
        check_error(col("i").and(col("b")), "cannot apply And to int64 and boolean");
        check_error(col("s").concat(col("i")), "cannot apply Concat to utf8 and int64");
        check_error(col("s").negate(), "unary minus needs int64 or float64, got utf8");
        check_error(col("i").not(), "NOT needs boolean, got int64");
        check_error(col("raw").cast(DataType::Int64), "cannot cast binary to int64");
        check_error(col("f").cast(DataType::Boolean), "cannot cast float64 to boolean");
        check_error(col("i").window_start(0), "window size must be positive");
        check_error(col("s").in_list([lit("a"), lit(1)]), "cannot compare utf8 with int64");
        check_error(col("s").in_list([]), "at least one value");
        check_error(col("i").like(lit("1%")), "LIKE needs utf8 on both sides, got int64, utf8");
        check_error(Expr::case([(col("i"), lit(1))], None), "WHEN needs boolean, got int64");
        check_error(Expr::case([(col("b"), lit(1))], Some(lit("one"))), "no common type: int64, utf8");
        check_error(Expr::case([], Some(lit(1))), "at least one WHEN");
        check_error(call(ScalarFunction::Coalesce, [col("s"), col("i")]), "no common type: utf8, int64");
        check_error(call(ScalarFunction::Coalesce, []), "coalesce takes at least 1 arguments, got 0");
        check_error(call(ScalarFunction::Lower, [col("s"), col("s")]), "lower takes 1 arguments, got 2");
        check_error(call(ScalarFunction::Substring, [col("s")]), "substring takes 2 to 3 arguments, got 1");
        check_error(call(ScalarFunction::Upper, [col("i")]), "upper cannot take (int64)");
        check_error(call(ScalarFunction::CharLength, [col("raw")]), "char_length cannot take (binary)");
        check_error(call(ScalarFunction::Substring, [col("s"), col("f")]), "substring cannot take (utf8, float64)");
        check_error(call(ScalarFunction::Concat, [col("s"), col("raw")]), "concat cannot take (utf8, binary)");
        check_error(call(ScalarFunction::StartsWith, [col("s"), col("i")]), "starts_with cannot take (utf8, int64)");
        check_error(call(ScalarFunction::Abs, [col("s")]), "abs cannot take (utf8)");
        check_error(call(ScalarFunction::Round, [col("f"), col("i")]), "round's digits must be an int64 literal");
        check_error(call(ScalarFunction::DateTrunc, [lit("month"), col("i")]), "date_trunc's unit must be a literal");
        check_error(call(ScalarFunction::DateTrunc, [col("s"), col("i")]), "date_trunc's unit must be a literal");
        check_error(call(ScalarFunction::DateTrunc, [lit("day"), col("f")]), "date_trunc cannot take (utf8, float64)");
    }

    #[test]
    fn an_unknown_column_anywhere_is_reported_as_such() {
        let nested = Expr::case([(col("b"), call(ScalarFunction::Lower, [col("nope")]))], None);
        assert_eq!(nested.data_type(&schema()), Err(ExprTypeError::UnknownColumn("nope".into())));
    }
}
