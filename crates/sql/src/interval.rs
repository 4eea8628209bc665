//! `INTERVAL '10' SECOND`, `INTERVAL '1.5 minutes'` and duration texts (`10ms`, `2 h`, read by
//! `sleet_plan::duration`) as milliseconds.

use sqlparser::ast::{DateTimeField, Expr, Interval, Value};

use crate::error::{Position, SqlError};
use crate::spans;

/// The length of an `INTERVAL` expression in milliseconds.
pub fn interval_ms(expr: &Expr, fallback: Position) -> Result<i64, SqlError> {
    let at = spans::at(expr, fallback);
    let Expr::Interval(Interval { value, leading_field, last_field, fractional_seconds_precision, .. }) = expr else {
        return Err(SqlError::invalid(
            at,
            format!("expected an INTERVAL such as INTERVAL '10' SECOND, found `{expr}`"),
        ));
    };
    if last_field.is_some() || fractional_seconds_precision.is_some() {
        return Err(SqlError::unsupported(
            at,
            format!("the interval `{expr}`; write one unit, e.g. INTERVAL '90' SECOND"),
        ));
    }
    let text = match value.as_ref() {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::Number(text, _) => text.clone(),
            other => return Err(SqlError::invalid(at, format!("the interval's length `{other}` is not a number"))),
        },
        other => return Err(SqlError::invalid(at, format!("the interval's length `{other}` is not a literal"))),
    };
    let ms = match leading_field {
        Some(field) => {
            let unit = unit_ms(field).ok_or_else(|| {
                SqlError::unsupported(at, format!("the interval unit {field} (sleet takes MILLISECOND to DAY)"))
            })?;
            let amount: f64 = text
                .trim()
                .parse()
                .map_err(|_| SqlError::invalid(at, format!("the interval's length `{text}` is not a number")))?;
            amount * unit as f64
        }
        None => duration_ms(&text).map_err(|reason| SqlError::invalid(at, reason))? as f64,
    };
    whole_ms(ms).ok_or_else(|| SqlError::invalid(at, format!("`{expr}` is not a whole number of milliseconds ≥ 0")))
}

fn unit_ms(field: &DateTimeField) -> Option<i64> {
    match field {
        DateTimeField::Millisecond | DateTimeField::Milliseconds => Some(1),
        DateTimeField::Second | DateTimeField::Seconds => Some(1_000),
        DateTimeField::Minute | DateTimeField::Minutes => Some(60_000),
        DateTimeField::Hour | DateTimeField::Hours => Some(3_600_000),
        DateTimeField::Day | DateTimeField::Days => Some(86_400_000),
        _ => None,
    }
}

fn whole_ms(ms: f64) -> Option<i64> {
    (ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0 && ms <= i64::MAX as f64).then_some(ms as i64)
}

/// A duration written as text (`10ms`, `1.5 s`, `2 minutes`, `1 day`; a bare number is
/// milliseconds), as the command line's flags take it.
pub fn duration_ms(text: &str) -> Result<i64, String> {
    let ms = sleet_plan::duration::parse_ms(text, sleet_plan::duration::BareUnit::Millis)?;
    whole_ms(ms).ok_or_else(|| format!("`{text}` is not a whole number of milliseconds ≥ 0"))
}

#[cfg(test)]
mod tests {
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    use super::*;

    fn check(sql: &str, expected: Result<i64, &str>) {
        let expr = Parser::new(&GenericDialect {}).try_with_sql(sql).unwrap().parse_expr().unwrap();
        let found = interval_ms(&expr, Position::default()).map_err(|error| error.to_string());
        match expected {
            Ok(ms) => assert_eq!(found.unwrap(), ms, "{sql}"),
            Err(part) => assert!(found.as_ref().unwrap_err().contains(part), "{sql}: {found:?}"),
        }
    }

    #[test]
    fn intervals_in_their_written_forms() {
        check("INTERVAL '10' SECOND", Ok(10_000));
        check("INTERVAL '2' MINUTE", Ok(120_000));
        check("INTERVAL '1.5' SECOND", Ok(1_500));
        check("INTERVAL '250 ms'", Ok(250));
        check("INTERVAL '2 days'", Ok(172_800_000));
        check("INTERVAL '1' YEAR", Err("unit YEAR"));
        check("INTERVAL 'ten' SECOND", Err("not a number"));
        check("INTERVAL '0.0001' SECOND", Err("whole number"));
        check("5", Err("expected an INTERVAL"));
    }

    #[test]
    fn durations_as_text() {
        assert_eq!(duration_ms("10ms"), Ok(10));
        assert_eq!(duration_ms("100"), Ok(100));
        assert_eq!(duration_ms("5 s"), Ok(5_000));
        assert_eq!(duration_ms("2h"), Ok(7_200_000));
        assert!(duration_ms("5 fortnights").unwrap_err().contains("not a unit"));
        assert!(duration_ms("0.5ms").unwrap_err().contains("whole number"));
    }
}
