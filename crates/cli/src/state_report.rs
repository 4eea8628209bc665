//! How a running or finished job's state figures read to a user: the size on the status line,
//! a notice the first time a keyed operator refuses new keys at its `max_keys`, and the
//! counts in the summary. Only a job with stateful operators says anything.

use sleet_wire::{JobProgress, JobSummary, StateFigures};

/// `" | state 12 345 keys 1.2 MB"` for a stateful job's status line; empty for a stateless one.
pub fn state_status(state: Option<&StateFigures>) -> String {
    state.map_or(String::new(), |state| {
        format!(" | state {} keys {}", grouped(state.state_keys), human_bytes(state.state_bytes))
    })
}

/// Remembers which operators this follower already said were full, so that a job at its
/// bound says so once, not with every progress report.
#[derive(Debug, Default)]
pub struct StateFullNotices {
    shown: Vec<String>,
}

impl StateFullNotices {
    /// A line per operator that `progress` names as full for the first time.
    pub fn new_notices(&mut self, progress: &JobProgress) -> Vec<String> {
        self.take(&progress.state_full)
    }

    /// The same for the summary's list, which may name one no progress report did (the job
    /// ended within a second of it).
    pub fn new_notices_in_summary(&mut self, summary: &JobSummary) -> Vec<String> {
        self.take(&summary.state_full)
    }

    fn take(&mut self, names: &[String]) -> Vec<String> {
        let mut notices = Vec::new();
        for name in names {
            if !self.shown.contains(name) {
                self.shown.push(name.clone());
                notices.push(format!(
                    "state full: {name} is at that bound; rows beyond it are refused (counted as refused rows)"
                ));
            }
        }
        notices
    }
}

/// The summary's line on state, for a stateful job: what its operators dropped or folded and
/// what they held at the end.
pub fn summary_line(summary: &JobSummary) -> Option<String> {
    let state = summary.state.as_ref()?;
    Some(format!(
        "state: {} keys {} at the end; late rows {} dropped, {} folded; {} duplicates, {} invalid, {} refused rows; {} keys expired",
        grouped(state.state_keys),
        human_bytes(state.state_bytes),
        summary.late_rows_dropped,
        state.late_rows_folded,
        state.duplicate_rows_dropped,
        state.invalid_rows_dropped,
        state.refused_rows,
        state.expired_keys,
    ))
}

/// `12345678` as `12 345 678`: state sizes run to millions, read at a glance.
fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(digit);
    }
    out
}

/// Bytes in decimal units with one decimal: `1.2 MB`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_at_a_glance() {
        let check = |value, expected: &str| assert_eq!(grouped(value), expected);
        check(0, "0");
        check(999, "999");
        check(1_000, "1 000");
        check(12_345, "12 345");
        check(12_345_678, "12 345 678");
        let check = |bytes, expected: &str| assert_eq!(human_bytes(bytes), expected);
        check(0, "0 B");
        check(999, "999 B");
        check(1_000, "1.0 kB");
        check(1_234_567, "1.2 MB");
        check(5_000_000_000, "5.0 GB");
    }

    #[test]
    fn a_stateless_job_says_nothing_and_a_full_operator_is_told_once() {
        assert_eq!(state_status(None), "");
        let state = StateFigures { state_keys: 12_345, state_bytes: 1_234_567, ..StateFigures::default() };
        assert_eq!(state_status(Some(&state)), " | state 12 345 keys 1.2 MB");

        let mut notices = StateFullNotices::default();
        let mut progress = JobProgress { state: Some(state), ..JobProgress::default() };
        assert!(notices.new_notices(&progress).is_empty());
        progress.state_full = vec!["increments by gateway_id (max_keys 10)".into()];
        let first = notices.new_notices(&progress);
        assert_eq!(first.len(), 1);
        assert!(first[0].contains("increments by gateway_id (max_keys 10)"), "{first:?}");
        assert!(notices.new_notices(&progress).is_empty(), "said once");
        progress.state_full.push("top_k by day, gateway_id (max_keys 10)".into());
        assert_eq!(notices.new_notices(&progress).len(), 1, "a second operator is told too");
        let summary = JobSummary { state_full: progress.state_full.clone(), ..JobSummary::default() };
        assert!(notices.new_notices_in_summary(&summary).is_empty());
    }
}
