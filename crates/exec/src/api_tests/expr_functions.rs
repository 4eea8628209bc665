//! Each scalar expression form and function on a few hand-picked rows, nulls among them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use sleet_plan::{col, lit, DataType, Expr, Scalar, ScalarFunction};

use crate::expr_eval::evaluate;

fn ints(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<Int64Array>())
}

fn floats(values: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<Float64Array>())
}

fn texts<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<StringArray>())
}

fn bools(values: impl IntoIterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<BooleanArray>())
}

/// Four rows: `i` int64, `f` float64, `s` utf8, `b` boolean, each with a NULL.
fn rows() -> RecordBatch {
    RecordBatch::try_from_iter([
        ("i", ints([Some(7), Some(-2), None, Some(0)])),
        ("f", floats([Some(2.5), None, Some(-1.5), Some(0.25)])),
        ("s", texts([Some("Héllo"), Some("  pad "), None, Some("")])),
        ("b", bools([Some(true), Some(false), None, Some(true)])),
    ])
    .expect("batch")
}

fn check(expr: Expr, input: &RecordBatch, expected: ArrayRef) {
    let found = evaluate(&expr, input).unwrap_or_else(|error| panic!("`{expr}` failed: {error}"));
    assert_eq!(found.as_ref(), expected.as_ref(), "`{expr}`: found {found:?}, expected {expected:?}");
}

fn check_error(expr: Expr, input: &RecordBatch, reason_part: &str) {
    let error = evaluate(&expr, input).expect_err("evaluation fails").to_string();
    assert!(error.contains(&expr.to_string()), "`{error}` names `{expr}`");
    assert!(error.contains(reason_part), "`{error}` lacks `{reason_part}`");
}

fn call(name: ScalarFunction, args: impl IntoIterator<Item = Expr>) -> Expr {
    Expr::call(name, args)
}

#[test]
fn int64_meets_float64_at_float64() {
    check(lit(0.5).multiply(col("i")), &rows(), floats([Some(3.5), Some(-1.0), None, Some(0.0)]));
    check(col("i").gt(col("f")), &rows(), bools([Some(true), None, None, Some(false)]));
    check(col("i").eq(lit(7.0)), &rows(), bools([Some(true), Some(false), None, Some(false)]));
    check(
        col("f").divide(lit(0)),
        &rows(),
        floats([Some(f64::INFINITY), None, Some(f64::NEG_INFINITY), Some(f64::INFINITY)]),
    );
}

#[test]
fn integer_division_or_modulo_by_zero_fails_naming_the_expression() {
    check_error(lit(1).divide(col("i")), &rows(), "Divide by zero");
    check_error(col("i").modulo(lit(0)), &rows(), "Divide by zero");
    let rows_without_zero = rows().slice(0, 3);
    check(lit(7).divide(col("i")), &rows_without_zero, ints([Some(1), Some(-3), None]));
}

#[test]
fn unary_minus_and_its_overflow() {
    check(col("i").negate(), &rows(), ints([Some(-7), Some(2), None, Some(0)]));
    check(col("f").negate(), &rows(), floats([Some(-2.5), None, Some(1.5), Some(-0.25)]));
    check_error(lit(i64::MIN).negate(), &rows(), "Overflow");
}

#[test]
fn null_tests_never_give_null() {
    check(col("i").is_null(), &rows(), bools([Some(false), Some(false), Some(true), Some(false)]));
    check(col("s").is_not_null(), &rows(), bools([Some(true), Some(true), Some(false), Some(true)]));
    check(lit(Scalar::Null(DataType::Int64)).is_null(), &rows(), bools([Some(true); 4]));
}

#[test]
fn boolean_logic_is_three_valued() {
    let unknown = || lit(Scalar::Null(DataType::Boolean));
    check(unknown().and(lit(false)), &rows(), bools([Some(false); 4]));
    check(unknown().and(lit(true)), &rows(), bools([None; 4]));
    check(unknown().or(lit(true)), &rows(), bools([Some(true); 4]));
    check(unknown().or(lit(false)), &rows(), bools([None; 4]));
    check(unknown().not(), &rows(), bools([None; 4]));
    check(col("b").and(col("i").gt(lit(0))), &rows(), bools([Some(true), Some(false), None, Some(false)]));
}

#[test]
fn coalesce_takes_the_first_non_null_in_one_type() {
    check(call(ScalarFunction::Coalesce, [col("i"), lit(-1)]), &rows(), ints([Some(7), Some(-2), Some(-1), Some(0)]));
    check(
        call(ScalarFunction::Coalesce, [col("f"), col("i"), lit(9)]),
        &rows(),
        floats([Some(2.5), Some(-2.0), Some(-1.5), Some(0.25)]),
    );
    check(call(ScalarFunction::Coalesce, [col("s")]), &rows(), texts([Some("Héllo"), Some("  pad "), None, Some("")]));
    check(
        call(ScalarFunction::Coalesce, [col("i"), lit(1).divide(col("i"))]),
        &rows().slice(0, 3),
        ints([Some(7), Some(-2), None]),
    );
}

#[test]
fn case_takes_the_first_true_branch_and_evaluates_no_other() {
    let sign = Expr::case([(col("i").gt(lit(0)), lit("+")), (col("i").lt(lit(0)), lit("-"))], Some(lit("0")));
    check(sign, &rows(), texts([Some("+"), Some("-"), Some("0"), Some("0")]));
    let no_else = Expr::case([(col("b"), col("i"))], None);
    check(no_else, &rows(), ints([Some(7), None, None, Some(0)]));
    let guarded = Expr::case([(col("i").not_eq(lit(0)), lit(14).divide(col("i")))], Some(lit(0.5)));
    check(guarded, &rows(), floats([Some(2.0), Some(-7.0), Some(0.5), Some(0.5)]));
    let simple = Expr::simple_case(col("i"), [(lit(7), lit("seven")), (lit(0), lit("zero"))], None);
    check(simple, &rows(), texts([Some("seven"), None, None, Some("zero")]));
    check(Expr::case([(lit(true), lit(1))], None), &rows(), ints([Some(1); 4]));
}

#[test]
fn in_list_follows_sql_nulls() {
    check(col("i").in_list([lit(0), lit(7.0)]), &rows(), bools([Some(true), Some(false), None, Some(true)]));
    check(col("i").not_in_list([lit(0), lit(7)]), &rows(), bools([Some(false), Some(true), None, Some(false)]));
    let with_null = col("i").in_list([lit(7), lit(Scalar::Null(DataType::Int64))]);
    check(with_null, &rows(), bools([Some(true), None, None, None]));
}

#[test]
fn like_matches_percent_underscore_and_escapes() {
    check(col("s").like(lit("H%o")), &rows(), bools([Some(true), Some(false), None, Some(false)]));
    check(col("s").like(lit("H_llo")), &rows(), bools([Some(true), Some(false), None, Some(false)]));
    check(col("s").not_like(lit("%")), &rows(), bools([Some(false), Some(false), None, Some(false)]));
    check(lit("100%").like(lit("100\\%")), &rows(), bools([Some(true); 4]));
    check(lit("1000").like(lit("100\\%")), &rows(), bools([Some(false); 4]));
    check(lit("a_c").like(col("s")), &rows(), bools([Some(false), Some(false), None, Some(false)]));
}

#[test]
fn text_functions_work_on_characters() {
    check(call(ScalarFunction::Lower, [col("s")]), &rows(), texts([Some("héllo"), Some("  pad "), None, Some("")]));
    check(call(ScalarFunction::Upper, [col("s")]), &rows(), texts([Some("HÉLLO"), Some("  PAD "), None, Some("")]));
    check(call(ScalarFunction::CharLength, [col("s")]), &rows(), ints([Some(5), Some(6), None, Some(0)]));
    check(call(ScalarFunction::Trim, [col("s")]), &rows(), texts([Some("Héllo"), Some("pad"), None, Some("")]));
    check(call(ScalarFunction::Ltrim, [col("s")]), &rows(), texts([Some("Héllo"), Some("pad "), None, Some("")]));
    check(call(ScalarFunction::Rtrim, [col("s")]), &rows(), texts([Some("Héllo"), Some("  pad"), None, Some("")]));
    check(
        call(ScalarFunction::StartsWith, [col("s"), lit("Hé")]),
        &rows(),
        bools([Some(true), Some(false), None, Some(false)]),
    );
}

#[test]
fn substring_counts_from_one_and_clips() {
    let substring = |start: i64, length: Option<i64>| {
        let mut args = vec![col("s"), lit(start)];
        args.extend(length.map(lit));
        call(ScalarFunction::Substring, args)
    };
    check(substring(2, Some(3)), &rows(), texts([Some("éll"), Some(" pa"), None, Some("")]));
    check(substring(2, None), &rows(), texts([Some("éllo"), Some(" pad "), None, Some("")]));
    check(substring(0, Some(2)), &rows(), texts([Some("H"), Some(" "), None, Some("")]));
    check(substring(-5, Some(3)), &rows(), texts([Some(""), Some(""), None, Some("")]));
    check(substring(9, Some(3)), &rows(), texts([Some(""), Some(""), None, Some("")]));
    check(
        call(ScalarFunction::Substring, [col("s"), col("i")]),
        &rows(),
        texts([Some(""), Some("  pad "), None, Some("")]),
    );
    check_error(substring(1, Some(-1)), &rows(), "negative substring length -1");
}

#[test]
fn concat_skips_nulls_and_the_operator_keeps_them() {
    check(
        call(ScalarFunction::Concat, [col("s"), lit("/"), col("i"), lit("/"), col("b")]),
        &rows(),
        texts([Some("Héllo/7/true"), Some("  pad /-2/false"), Some("//"), Some("/0/true")]),
    );
    check(col("s").concat(lit("!")), &rows(), texts([Some("Héllo!"), Some("  pad !"), None, Some("!")]));
    check(lit("a").concat(lit("b")), &rows(), texts([Some("ab"); 4]));
}

#[test]
fn numeric_functions_keep_their_argument_type() {
    check(call(ScalarFunction::Abs, [col("i")]), &rows(), ints([Some(7), Some(2), None, Some(0)]));
    check(call(ScalarFunction::Abs, [col("f")]), &rows(), floats([Some(2.5), None, Some(1.5), Some(0.25)]));
    check_error(call(ScalarFunction::Abs, [lit(i64::MIN)]), &rows(), "does not fit in int64");
    check(call(ScalarFunction::Floor, [col("f")]), &rows(), floats([Some(2.0), None, Some(-2.0), Some(0.0)]));
    check(call(ScalarFunction::Ceil, [col("f")]), &rows(), floats([Some(3.0), None, Some(-1.0), Some(1.0)]));
    check(call(ScalarFunction::Ceil, [col("i")]), &rows(), ints([Some(7), Some(-2), None, Some(0)]));
    check(call(ScalarFunction::Round, [col("f")]), &rows(), floats([Some(3.0), None, Some(-2.0), Some(0.0)]));
    check(call(ScalarFunction::Round, [col("f"), lit(1)]), &rows(), floats([Some(2.5), None, Some(-1.5), Some(0.3)]));
    check(call(ScalarFunction::Round, [lit(1234.5), lit(-2)]), &rows(), floats([Some(1200.0); 4]));
    check(call(ScalarFunction::Round, [lit(-1250), lit(-2)]), &rows(), ints([Some(-1300); 4]));
    check(call(ScalarFunction::Round, [lit(1249), lit(-2)]), &rows(), ints([Some(1200); 4]));
    check(call(ScalarFunction::Round, [lit(i64::MAX), lit(-30)]), &rows(), ints([Some(0); 4]));
    check_error(call(ScalarFunction::Round, [lit(i64::MAX), lit(-1)]), &rows(), "does not fit in int64");
}

#[test]
fn date_trunc_floors_to_utc_units() {
    let day_ms = 86_400_000;
    // 1970-01-09T13:14:15.016Z, a Friday: its week started on Monday the 5th.
    let friday = 8 * day_ms + 13 * 3_600_000 + 14 * 60_000 + 15_016;
    let input = RecordBatch::try_from_iter([("t", ints([Some(friday), Some(-1), None]))]).expect("batch");
    let trunc = |unit: &str| call(ScalarFunction::DateTrunc, [lit(unit), col("t")]);
    check(trunc("second"), &input, ints([Some(friday - 16), Some(-1_000), None]));
    check(trunc("minute"), &input, ints([Some(friday - 15_016), Some(-60_000), None]));
    check(trunc("HOUR"), &input, ints([Some(8 * day_ms + 13 * 3_600_000), Some(-3_600_000), None]));
    check(trunc("day"), &input, ints([Some(8 * day_ms), Some(-day_ms), None]));
    check(trunc("week"), &input, ints([Some(4 * day_ms), Some(-3 * day_ms), None]));
    check_error(call(ScalarFunction::DateTrunc, [lit("day"), lit(i64::MIN)]), &input, "does not fit in int64");
}

#[test]
fn casts_between_the_scalar_types() {
    check(col("f").cast(DataType::Int64), &rows(), ints([Some(2), None, Some(-1), Some(0)]));
    check(col("i").cast(DataType::Boolean), &rows(), bools([Some(true), Some(true), None, Some(false)]));
    check(col("b").cast(DataType::Utf8), &rows(), texts([Some("true"), Some("false"), None, Some("true")]));
    check(lit("12").cast(DataType::Int64).add(lit(1)), &rows(), ints([Some(13); 4]));
}

#[test]
fn an_empty_batch_gives_an_empty_column_of_the_planned_type() {
    let empty = rows().slice(0, 0);
    let mixed = Expr::case([(col("b"), col("i"))], Some(col("f")));
    check(mixed, &empty, floats([]));
    check(call(ScalarFunction::Lower, [col("s")]), &empty, texts([]));
    assert_eq!(evaluate(&lit(1).negate(), &empty).expect("negate").len(), 0);
}
