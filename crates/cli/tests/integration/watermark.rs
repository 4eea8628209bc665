//! The watermark across source partitions read at their own pace: a tumbling or session
//! window takes it from the slowest partition, so one running ahead in event time makes no
//! row of another late.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::test_dir;
use crate::gateway_job::{run_file, start_ms};

/// Lines per partition; each batch reads at most `LINES_PER_BATCH` of each.
const LINES: i64 = 300;
const LINES_PER_BATCH: i64 = 10;
/// The fast partition's lines are this far apart in event time, the slow one's 100× closer:
/// read at the same number of lines per batch, the fast one runs ahead by seconds per batch,
/// far past the one second of lateness.
const FAST_STEP_MS: i64 = 1_000;
const SLOW_STEP_MS: i64 = 10;
const KEYS: i64 = 3;

/// Sessions end after this gap without a row of their key.
const SESSION_GAP_MS: i64 = 1_000;

#[derive(Clone, Copy)]
enum Windows {
    /// One second long.
    Tumbling,
    Sessions,
}

/// The key of one last line in each partition, far ahead of the rest: it moves both
/// partitions' progress past every other session's end, so all of those close.
const CLOSER_KEY: &str = "closer";
const CLOSER_AFTER_MS: i64 = 1_000_000;

/// Writes the two partitions; every line's (key, event time).
fn write_partitions(input: &Path, base_ms: i64) -> Vec<(String, i64)> {
    std::fs::create_dir_all(input).expect("input directory");
    let mut rows = Vec::new();
    for (name, step_ms) in [("a-fast.jsonl", FAST_STEP_MS), ("b-slow.jsonl", SLOW_STEP_MS)] {
        let mut lines = String::new();
        for line in 0..LINES {
            let (key, time) = (format!("k{}", line % KEYS), base_ms + line * step_ms);
            lines.push_str(&format!("{{\"k\": \"{key}\", \"t\": {time}}}\n"));
            rows.push((key, time));
        }
        lines.push_str(&format!("{{\"k\": \"{CLOSER_KEY}\", \"t\": {}}}\n", base_ms + CLOSER_AFTER_MS));
        rows.push((CLOSER_KEY.to_string(), base_ms + CLOSER_AFTER_MS));
        std::fs::write(input.join(name), lines).expect("partition file");
    }
    rows
}

/// What every (key, window start) must count when no row is late, by brute force.
fn expected_counts(rows: &[(String, i64)], windows: Windows) -> BTreeMap<(String, i64), i64> {
    let mut counts = BTreeMap::new();
    match windows {
        Windows::Tumbling => {
            for (key, time) in rows {
                *counts.entry((key.clone(), time - time.rem_euclid(1_000))).or_insert(0) += 1;
            }
        }
        Windows::Sessions => {
            let mut by_key: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
            // The closers' session is still open when the input ends, so never emitted.
            for (key, time) in rows.iter().filter(|(key, _)| key != CLOSER_KEY) {
                by_key.entry(key).or_default().push(*time);
            }
            for (key, mut times) in by_key {
                times.sort_unstable();
                let mut session: Option<(i64, i64, i64)> = None;
                for time in times {
                    session = match session {
                        Some((start, last, count)) if time - last < SESSION_GAP_MS => Some((start, time, count + 1)),
                        done => {
                            if let Some((start, _, count)) = done {
                                counts.insert((key.to_string(), start), count);
                            }
                            Some((time, time, 1))
                        }
                    };
                }
                if let Some((start, _, count)) = session {
                    counts.insert((key.to_string(), start), count);
                }
            }
        }
    }
    counts
}

fn script(input: &Path, results: &Path, scheduler: &str, combine: &str, windows: Windows) -> String {
    let window = match windows {
        Windows::Tumbling => "TUMBLE(TABLE readings, DESCRIPTOR(t), INTERVAL '1' SECOND)",
        Windows::Sessions => "SESSION(TABLE readings, DESCRIPTOR(t), INTERVAL '1' SECOND)",
    };
    format!(
        "SET 'batch.interval' = '50ms';
         SET 'duration' = '2500ms';
         SET 'start.ms' = '{start_ms}';
         SET 'scheduler' = '{scheduler}';
         SET 'combine' = '{combine}';
         CREATE TABLE readings (k VARCHAR NOT NULL, t BIGINT NOT NULL,
             WATERMARK FOR t AS t - INTERVAL '1' SECOND)
         WITH (connector = 'files', path = '{input}', max_records_per_batch = '{LINES_PER_BATCH}');
         CREATE TABLE results (window_start BIGINT, campaign_id VARCHAR, count BIGINT)
         WITH (connector = 'files', path = '{results}');
         INSERT INTO results
         SELECT window_start, k, COUNT(*)
         FROM TABLE({window})
         GROUP BY window_start, window_end, k;",
        start_ms = start_ms(),
        input = input.display(),
        results = results.display(),
    )
}

#[test]
fn a_partition_running_ahead_in_event_time_makes_no_row_of_the_other_late() {
    let cases = [
        ("group", "true", Windows::Tumbling),
        ("bsp", "false", Windows::Tumbling),
        ("group", "true", Windows::Sessions),
    ];
    for (case, (scheduler, combine, windows)) in cases.into_iter().enumerate() {
        let dir = test_dir(&format!("watermark_drift_{case}"));
        // On a whole second, so windows hold whole runs of lines.
        let base_ms = 1_700_000_000_000;
        let expected = expected_counts(&write_partitions(&dir.join("input"), base_ms), windows);
        let results = dir.join("results");
        let path = dir.join("drift.sql");
        std::fs::write(&path, script(&dir.join("input"), &results, scheduler, combine, windows)).expect("script");
        let summary = run_file(&dir, &path, 2, None);
        assert!(summary.contains("late rows 0 dropped"), "case {case}: {summary}");
        let rows = sleet_connectors::sink::read_ysb_sink(&results).expect("reading the sink");
        let found: BTreeMap<(String, i64), i64> =
            sleet_connectors::sink::final_counts(&rows).into_iter().map(|(at, (count, _batch))| (at, count)).collect();
        assert_eq!(found.len(), expected.len(), "case {case}: every (key, window), and no other");
        let short: Vec<_> = expected
            .iter()
            .filter(|(at, count)| found.get(*at) != Some(count))
            .map(|(at, count)| (at.clone(), *count, found.get(at).copied()))
            .collect();
        assert!(short.is_empty(), "case {case}: (key, window), expected, found: {short:?}\n{summary}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
