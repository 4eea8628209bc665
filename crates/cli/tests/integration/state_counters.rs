//! The keyed state's counters reach the job's summary through real processes: a file of
//! readings, one per batch, each written for a known fate (used, folded in late, dropped late,
//! duplicate, invalid, refused at `max_keys`), and keys expired by a jump in event time. The
//! expected figures are the fates counted from the table below, not anything the engine
//! computed; the notice that the state is full must appear once, naming the operator.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::recovery::{output_of, submit_file, worker};
use common::{test_dir, Reaper};
use sleet_plan::*;

/// What the increments operator must do with a reading, given those before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Used,
    /// Older than its key's newest, within the allowed lateness.
    Folded,
    /// Older than its key's newest minus the allowed lateness.
    DroppedLate,
    Duplicate,
    Invalid,
    /// A new key while `MAX_KEYS` keys are held.
    Refused,
}

const MAX_KEYS: u64 = 3;
const LATENESS_MS: i64 = 100;
const TTL_MS: i64 = 10_000;

/// `(gateway, date, value, fate)`, in file order: one per batch, so each batch's order is the
/// file's. After the jump to 100 000, b and c (newest 1 200 and 1 000) are more than the TTL
/// behind and expire; a stays.
const READINGS: &[(&str, i64, Option<i64>, Fate)] = &[
    ("a", 1_000, Some(1), Fate::Used),
    ("b", 1_000, Some(1), Fate::Used),
    ("c", 1_000, Some(1), Fate::Used),
    ("d", 1_000, Some(1), Fate::Refused),
    ("a", 1_100, Some(1), Fate::Used),
    ("a", 1_100, Some(9), Fate::Duplicate),
    ("a", 1_050, Some(1), Fate::Folded),
    ("a", 900, Some(1), Fate::DroppedLate),
    ("e", 1_200, Some(1), Fate::Refused),
    ("b", 1_200, Some(1), Fate::Used),
    ("b", 1_150, Some(1), Fate::Folded),
    ("a", 1_050, Some(5), Fate::Duplicate),
    ("c", 1_300, None, Fate::Invalid),
    ("a", 100_000, Some(1), Fate::Used),
    ("a", 101_000, Some(1), Fate::Used),
    ("a", 102_000, Some(1), Fate::Used),
];
const EXPIRED_KEYS: u64 = 2;
const KEYS_AT_THE_END: u64 = 1;

const BATCH_MS: u64 = 100;

fn count(fate: Fate) -> u64 {
    READINGS.iter().filter(|reading| reading.3 == fate).count() as u64
}

fn job_file(dir: &Path) -> std::path::PathBuf {
    let input = dir.join("input");
    std::fs::create_dir_all(&input).expect("input dir");
    let lines: String = READINGS
        .iter()
        .map(|(gateway, date, value, _)| {
            let value = value.map_or("null".to_string(), |value| value.to_string());
            format!("{{\"gateway_id\":\"{gateway}\",\"date\":{date},\"v\":{value}}}\n")
        })
        .collect();
    std::fs::write(input.join("readings.jsonl"), lines).expect("readings");
    let schema = Schema::new(vec![
        Field::new("gateway_id", DataType::Utf8),
        Field::new("date", DataType::Int64),
        Field::new("v", DataType::Int64).nullable(),
    ]);
    let source = SourceSpec::Files(FileSourceSpec {
        path: input.display().to_string(),
        max_records_per_partition_per_batch: 1,
        partitions: 0,
        start_bytes: Vec::new(),
    });
    let plan = PlanBuilder::source("readings", source)
        .decode_json(schema)
        .increments(IncrementsSpec {
            keys: vec!["gateway_id".into()],
            time_column: "date".into(),
            encoding: ReadingEncoding::Counter,
            columns: vec!["v".into()],
            late: LatePolicy::Fold,
            allowed_lateness_ms: LATENESS_MS,
            ttl_ms: TTL_MS,
            wrap_bits: 32,
            max_keys: MAX_KEYS,
        })
        .sink(SinkSpec::JsonLines { dir: dir.join("results").display().to_string() })
        .build()
        .expect("a valid plan");
    // Every reading has its batch, and a second more for the job to finish them.
    let duration_ms = (READINGS.len() as u64 + 10) * BATCH_MS + 1_000;
    let job = JobFile {
        plan,
        settings: JobSettings { batch_interval_ms: BATCH_MS, duration_ms: Some(duration_ms), ..JobSettings::default() },
        query: None,
    };
    let path = dir.join("job.json");
    std::fs::write(&path, job.to_json()).expect("job file");
    path
}

/// The number that follows `label` in `text`, its digits grouped by spaces as the summary
/// writes them (`12 345`).
fn figure_after(text: &str, label: &str) -> u64 {
    let at = text.find(label).unwrap_or_else(|| panic!("`{label}` in {text}")) + label.len();
    let digits: String = text[at..].trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ' ').collect();
    digits.replace(' ', "").parse().unwrap_or_else(|_| panic!("a number after `{label}` in {text}"))
}

#[test]
fn the_summary_counts_each_fate_of_the_readings_and_names_the_full_operator_once() {
    let dir = test_dir("state_counters");
    let job = job_file(&dir);
    let log = std::fs::File::create(dir.join("driver.log")).expect("driver log");
    let (driver, address) = common::start_driver_logged("127.0.0.1:0", &[], log);
    let mut processes = Reaper(vec![driver]);
    processes.0.push(worker(&dir, &address, 1));
    let (succeeded, stdout, stderr) = output_of(submit_file(&job, &address), Duration::from_secs(60));
    assert!(succeeded, "the job completes:\n{stdout}\n{stderr}");

    let line = stdout.lines().find(|line| line.trim_start().starts_with("state:")).expect("a state line");
    let found = [
        ("late rows", figure_after(line, "late rows")),
        ("folded", figure_after(line, "dropped,")),
        ("duplicates", figure_after(line, "folded;")),
        ("invalid", figure_after(line, "duplicates,")),
        ("refused", figure_after(line, "invalid,")),
        ("expired", figure_after(line, "refused rows;")),
        ("keys at the end", figure_after(line, "state:")),
    ];
    let expected = [
        ("late rows", count(Fate::DroppedLate)),
        ("folded", count(Fate::Folded)),
        ("duplicates", count(Fate::Duplicate)),
        ("invalid", count(Fate::Invalid)),
        ("refused", count(Fate::Refused)),
        ("expired", EXPIRED_KEYS),
        ("keys at the end", KEYS_AT_THE_END),
    ];
    assert_eq!(found, expected, "from the summary line: {line}");

    let name = format!("increments by gateway_id (max_keys {MAX_KEYS})");
    let notices = stdout.lines().chain(stderr.lines()).filter(|line| line.contains("state full:")).collect::<Vec<_>>();
    assert_eq!(notices.len(), 1, "said once:\n{stdout}\n{stderr}");
    assert!(notices[0].contains(&name), "names the operator: {}", notices[0]);
    // The rows the job wrote are the readings it used, and the corrections of folded ones
    // (none for a counter).
    let rows = sleet_durable::committed::read_json_lines(&dir.join("results"), "part-", "sink").expect("sink files");
    assert_eq!(rows.len() as u64, count(Fate::Used) + count(Fate::Folded));
}
