//! Durations written as text (`10ms`, `1.5s`, `2 min`, `1 d`): one parser for command-line
//! flags and SQL settings, so both accept the same forms.

/// What a bare number (no unit) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUnit {
    Millis,
    Seconds,
}

/// The duration `text` writes, in milliseconds (fractions kept), or why it is none.
pub fn parse_ms(text: &str, bare: BareUnit) -> Result<f64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: expected a number with a unit, such as 10ms, 2s or 1m"))?;
    let ms_per_unit = match (unit.trim().to_ascii_lowercase().as_str(), bare) {
        ("", BareUnit::Millis) | ("ms" | "millisecond" | "milliseconds", _) => 1.0,
        ("", BareUnit::Seconds) | ("s" | "sec" | "second" | "seconds", _) => 1_000.0,
        ("m" | "min" | "minute" | "minutes", _) => 60_000.0,
        ("h" | "hour" | "hours", _) => 3_600_000.0,
        ("d" | "day" | "days", _) => 86_400_000.0,
        (other, _) => return Err(format!("`{other}` in `{text}` is not a unit: use ms, s, m, h or d")),
    };
    let ms = value * ms_per_unit;
    if !ms.is_finite() || ms > u64::MAX as f64 / 2.0 {
        return Err(format!("`{text}` is too long a duration"));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_in_short_and_long_forms() {
        assert_eq!(parse_ms("10", BareUnit::Millis), Ok(10.0));
        assert_eq!(parse_ms("10", BareUnit::Seconds), Ok(10_000.0));
        assert_eq!(parse_ms("1.5 s", BareUnit::Millis), Ok(1_500.0));
        assert_eq!(parse_ms("2 minutes", BareUnit::Millis), Ok(120_000.0));
        assert_eq!(parse_ms("1 D", BareUnit::Millis), Ok(86_400_000.0));
        assert!(parse_ms("5 fortnights", BareUnit::Millis).unwrap_err().contains("not a unit"));
        assert!(parse_ms("soon", BareUnit::Millis).unwrap_err().contains("not a duration"));
    }
}
