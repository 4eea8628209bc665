//! Evaluates the named scalar functions (`ScalarFunction`) on already evaluated arguments:
//! text, rounding and time flooring. `coalesce` is not here: it must not evaluate an argument
//! on rows an earlier one decided, so `expr_eval.rs` runs it with `CASE`.

use std::borrow::Cow;
use std::fmt::Write;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array, StringArray};
use arrow_schema::{ArrowError, DataType as ArrowType};
use sleet_plan::expr_type::date_trunc_unit_ms;
use sleet_plan::{Expr, Scalar as PlanScalar, ScalarFunction};

use crate::expr_eval::{with_datums, Aligned, Value};

/// `name(args)` where `values` are the evaluated `args` (kept for the literal ones: the
/// digits of `round`, the unit of `date_trunc`). The planner has checked arity and types.
pub(crate) fn call(name: ScalarFunction, args: &[Expr], values: Vec<Value>, rows: usize) -> Result<Value, ArrowError> {
    let first = || values[0].clone();
    match name {
        ScalarFunction::Lower => first().map(|text| Ok(map_text(text, |text| text.to_lowercase().into()))),
        ScalarFunction::Upper => first().map(|text| Ok(map_text(text, |text| text.to_uppercase().into()))),
        ScalarFunction::Trim => first().map(|text| Ok(map_text(text, |text| text.trim_matches(' ').into()))),
        ScalarFunction::Ltrim => first().map(|text| Ok(map_text(text, |text| text.trim_start_matches(' ').into()))),
        ScalarFunction::Rtrim => first().map(|text| Ok(map_text(text, |text| text.trim_end_matches(' ').into()))),
        ScalarFunction::CharLength => first().map(|text| {
            let lengths: Int64Array =
                text.as_string::<i32>().iter().map(|text| text.map(|text| text.chars().count() as i64)).collect();
            Ok(Arc::new(lengths) as ArrayRef)
        }),
        ScalarFunction::Substring => substring(Aligned::new(values, rows)?),
        ScalarFunction::Concat => concat(values, rows),
        ScalarFunction::StartsWith => with_datums(&values[0], &values[1], |text, prefix| {
            Ok(Arc::new(arrow_string::like::starts_with(text, prefix)?) as ArrayRef)
        }),
        ScalarFunction::Abs => first().map(|number| match number.data_type() {
            ArrowType::Int64 => {
                try_map_integer(number, |value| value.checked_abs().ok_or_else(|| overflow(format!("abs({value})"))))
            }
            _ => Ok(map_float(number, f64::abs)),
        }),
        ScalarFunction::Floor => first().map(|number| Ok(map_float_only(number, f64::floor))),
        ScalarFunction::Ceil => first().map(|number| Ok(map_float_only(number, f64::ceil))),
        ScalarFunction::Round => {
            let digits = match args.get(1) {
                Some(Expr::Literal(PlanScalar::Int64(digits))) => *digits,
                None => 0,
                Some(other) => {
                    return Err(ArrowError::InvalidArgumentError(format!(
                        "round's digits must be a literal, got {other}"
                    )))
                }
            };
            first().map(|number| match number.data_type() {
                ArrowType::Int64 => try_map_integer(number, |value| round_integer(value, digits)),
                _ => Ok(map_float(number, |value| round_float(value, digits))),
            })
        }
        ScalarFunction::DateTrunc => {
            let unit_ms = match args.first() {
                Some(Expr::Literal(PlanScalar::Utf8(unit))) => date_trunc_unit_ms(unit),
                _ => None,
            }
            .ok_or_else(|| ArrowError::InvalidArgumentError(format!("date_trunc's unit `{}` is unknown", args[0])))?;
            values[1].clone().map(|times| try_map_integer(times, |time| floor_time(time, unit_ms)))
        }
        ScalarFunction::Coalesce => {
            unreachable!("coalesce is evaluated lazily by expr_eval, never with all its arguments")
        }
    }
}

fn overflow(what: String) -> ArrowError {
    ArrowError::ArithmeticOverflow(format!("{what} does not fit in int64"))
}

fn map_text(text: &ArrayRef, f: impl for<'a> Fn(&'a str) -> Cow<'a, str>) -> ArrayRef {
    let mapped: StringArray = text.as_string::<i32>().iter().map(|text| text.map(&f)).collect();
    Arc::new(mapped)
}

fn try_map_integer(number: &ArrayRef, f: impl Fn(i64) -> Result<i64, ArrowError>) -> Result<ArrayRef, ArrowError> {
    Ok(Arc::new(number.as_primitive::<Int64Type>().try_unary::<_, Int64Type, _>(f)?))
}

fn map_float(number: &ArrayRef, f: impl Fn(f64) -> f64) -> ArrayRef {
    Arc::new(number.as_primitive::<Float64Type>().unary::<_, Float64Type>(f))
}

/// `floor` and `ceil` leave an int64 as it is.
fn map_float_only(number: &ArrayRef, f: impl Fn(f64) -> f64) -> ArrayRef {
    match number.data_type() {
        ArrowType::Int64 => Arc::clone(number),
        _ => map_float(number, f),
    }
}

/// Rounds half away from zero to `digits` decimals. Digits beyond ±308 change nothing more
/// than ±308 do, and clamping keeps the power of ten finite.
fn round_float(value: f64, digits: i64) -> f64 {
    let digits = digits.clamp(-308, 308) as i32;
    if digits >= 0 {
        let scale = 10f64.powi(digits);
        let scaled = value * scale;
        // Past 2^53 a float has no fractional digits left to round.
        if !scaled.is_finite() || scaled.abs() >= 9_007_199_254_740_992.0 {
            value
        } else {
            scaled.round() / scale
        }
    } else {
        let unit = 10f64.powi(-digits);
        (value / unit).round() * unit
    }
}

/// Rounds an integer half away from zero to a multiple of `10^-digits` (no change for
/// `digits >= 0`); every multiple is 0 past nineteen digits.
fn round_integer(value: i64, digits: i64) -> Result<i64, ArrowError> {
    if digits >= 0 {
        return Ok(value);
    }
    let Some(unit) = u32::try_from(-digits).ok().and_then(|power| 10i64.checked_pow(power)) else {
        return Ok(0);
    };
    let remainder = value % unit;
    let toward_zero = value - remainder;
    if remainder.abs() < unit - remainder.abs() {
        Ok(toward_zero)
    } else {
        toward_zero.checked_add(remainder.signum() * unit).ok_or_else(|| overflow(format!("round({value}, {digits})")))
    }
}

/// The Monday 1970-01-05 is 4 days after the epoch; weeks are counted from it.
const WEEK_ORIGIN_MS: i64 = 4 * 86_400_000;

fn floor_time(time_ms: i64, unit_ms: i64) -> Result<i64, ArrowError> {
    let origin = if unit_ms == 7 * 86_400_000 { WEEK_ORIGIN_MS } else { 0 };
    // In i128 so that the floor of a time near i64::MIN is an error, not a wrap.
    let shifted = i128::from(time_ms) - i128::from(origin);
    let floored = shifted - shifted.rem_euclid(i128::from(unit_ms)) + i128::from(origin);
    i64::try_from(floored).map_err(|_| overflow(format!("the start of the unit holding {time_ms}")))
}

/// SQL's `substring(text, start [, length])`: characters at 1-based positions from `start`
/// to `start + length - 1`, those outside the text dropped; a negative length is an error.
fn substring(arguments: Aligned) -> Result<Value, ArrowError> {
    let texts = arguments.arrays[0].as_string::<i32>();
    let starts = arguments.arrays[1].as_primitive::<Int64Type>();
    let lengths = arguments.arrays.get(2).map(|lengths| lengths.as_primitive::<Int64Type>());
    let mut out = StringBuilder::with_capacity(texts.len(), texts.value_data().len());
    for row in 0..texts.len() {
        let length = match lengths {
            Some(lengths) if lengths.is_null(row) => None,
            Some(lengths) => Some(Some(lengths.value(row))),
            None => Some(None),
        };
        match (texts.is_null(row), starts.is_null(row), length) {
            (false, false, Some(length)) => {
                out.append_value(substring_of(texts.value(row), starts.value(row), length)?)
            }
            _ => out.append_null(),
        }
    }
    Ok(arguments.wrap(Arc::new(out.finish())))
}

pub(crate) fn substring_of(text: &str, start: i64, length: Option<i64>) -> Result<&str, ArrowError> {
    if let Some(length) = length.filter(|length| *length < 0) {
        return Err(ArrowError::InvalidArgumentError(format!("negative substring length {length}")));
    }
    let first = start.max(1);
    let end = length.map_or(i64::MAX, |length| start.saturating_add(length));
    if end <= first {
        return Ok("");
    }
    let byte_at = |text: &str, chars: i64| {
        let chars = usize::try_from(chars).unwrap_or(usize::MAX);
        text.char_indices().nth(chars).map_or(text.len(), |(byte, _)| byte)
    };
    let begin = byte_at(text, first - 1);
    let rest = &text[begin..];
    Ok(&rest[..byte_at(rest, end - first)])
}

/// `concat(a, …)`: each argument as text, NULLs skipped, so the result is never NULL.
fn concat(values: Vec<Value>, rows: usize) -> Result<Value, ArrowError> {
    let texts = values.into_iter().map(|value| value.map(|array| arrow_cast::cast(array, &ArrowType::Utf8)));
    let arguments = Aligned::new(texts.collect::<Result<_, _>>()?, rows)?;
    let texts: Vec<&StringArray> = arguments.arrays.iter().map(|array| array.as_string::<i32>()).collect();
    let length = texts.first().map_or(0, |text| text.len());
    let mut out = StringBuilder::with_capacity(length, texts.iter().map(|text| text.value_data().len()).sum());
    for row in 0..length {
        for text in texts.iter().filter(|text| text.is_valid(row)).map(|text| text.value(row)) {
            out.write_str(text).map_err(|error| ArrowError::ComputeError(error.to_string()))?;
        }
        out.append_value("");
    }
    Ok(arguments.wrap(Arc::new(out.finish())))
}
