//! Duration flags: `10ms`, `2s`, `1m`, `1h`, `1d` (`sleet_plan::duration`), or a bare number in the flag's own unit (the unit
//! each flag had before units were accepted, so old command lines keep their meaning).

use std::time::Duration;

use sleet_plan::duration::BareUnit;

/// For flags whose bare numbers are seconds.
pub fn seconds(text: &str) -> Result<Duration, String> {
    parse(text, BareUnit::Seconds)
}

/// For flags whose bare numbers are milliseconds.
pub fn millis(text: &str) -> Result<Duration, String> {
    parse(text, BareUnit::Millis)
}

fn parse(text: &str, bare: BareUnit) -> Result<Duration, String> {
    let ms = sleet_plan::duration::parse_ms(text, bare)?;
    Ok(Duration::from_micros((ms * 1000.0).round() as u64))
}

/// `2s` or `150ms`: how help and messages print a duration.
pub fn show(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_numbers() {
        assert_eq!(millis("10"), Ok(Duration::from_millis(10)), "a bare number keeps the flag's unit");
        assert_eq!(seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(seconds("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(millis("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(seconds("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(seconds("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(seconds("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(show(Duration::from_secs(2)), "2s");
        assert_eq!(show(Duration::from_millis(150)), "150ms");
    }

    #[test]
    fn bad_durations_say_what_is_wrong() {
        let unit = seconds("5x").expect_err("x is no unit");
        assert!(unit.contains("`x`") && unit.contains("ms, s, m, h or d"), "{unit}");
        let number = millis("fast").expect_err("not a number");
        assert!(number.contains("`fast`"), "{number}");
        assert!(seconds("-3s").is_err(), "a duration is not negative");
        assert!(seconds("").is_err());
    }
}
