//! The Nexmark queries' SQL scripts (`benchmarks/nexmark/q*.sql`) through `sleet submit` on a
//! driver and two workers, their blackhole table replaced by a files table: every run's sink
//! equals `nexmark_check`'s rows over the events of the batches it ran, at 10 ms and at 100 ms
//! batches (`nexmark_exact`: q1's float64 prices bit for bit; q3's and q8's window joins with
//! their state carried from batch to batch across an exchange; q5's and q7's last list of each
//! window, q5's after two exchanges).

use crate::common;
use crate::gateway_job::run_file;

use std::path::{Path, PathBuf};

use common::test_dir;
use sleet_plan::NexmarkSourceSpec;
use sleet_workloads::nexmark_exact::{check_sink, Query};

/// Bids are 92 % of the events: some in every 10 ms batch of every partition.
const RATE: u64 = 20_000;
const PARTITIONS: u32 = 2;
const DURATION_MS: i64 = 2_000;

/// The repository's script for `query`, made to run here: the generator at the test's rate
/// and start, the batch interval and length set, the results written as files to `results`.
fn script_for_test(
    query: Query,
    start_ms: i64,
    (batch_interval_ms, duration_ms): (i64, i64),
    results: &Path,
) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../benchmarks/nexmark/{}.sql", query.name()));
    let original = std::fs::read_to_string(&path).expect("the repository's script");
    let mut script = format!(
        "SET 'batch.interval' = '{batch_interval_ms}ms';\nSET 'duration' = '{duration_ms}ms';\n\
         SET 'start.ms' = '{start_ms}';\n{original}"
    );
    for (from, to) in [
        ("connector = 'blackhole'".to_string(), format!("connector = 'files', path = '{}'", results.display())),
        ("kind = 'nexmark',".to_string(), format!("kind = 'nexmark', start_ms = '{start_ms}',")),
        ("rate = '1000000'".to_string(), format!("rate = '{RATE}'")),
        ("partitions = '2'".to_string(), format!("partitions = '{PARTITIONS}'")),
    ] {
        assert_eq!(script.matches(&from).count(), 1, "{}: `{from}` once, for the test to replace", path.display());
        script = script.replace(&from, &to);
    }
    script
}

/// Runs `query` at each batch interval and checks each run's sink against the ground truth.
fn assert_exact_at_10_and_100_ms(query: Query) {
    for batch_interval_ms in [10, 100] {
        let dir = test_dir(&format!("nexmark_sql_{}_{batch_interval_ms}ms", query.name()));
        run_and_check(&dir, query, (batch_interval_ms, DURATION_MS), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Runs `query`'s script in `dir` on a driver and `workers` workers — the last killed at
/// `kill_after_ms` after batch 0 if given — and checks its sink against the ground truth; the
/// job's summary.
fn run_and_check(
    dir: &Path,
    query: Query,
    (batch_interval_ms, duration_ms): (i64, i64),
    kill_after_ms: Option<i64>,
) -> String {
    let results = dir.join("results");
    // On a whole 100 ms, so on a whole batch at either interval.
    let start_ms = crate::gateway_job::start_ms();
    let mut script = script_for_test(query, start_ms, (batch_interval_ms, duration_ms), &results);
    let workers = match kill_after_ms {
        // Checkpoints often enough that the recovery resumes within the run.
        Some(_) => {
            script.insert_str(0, "SET 'checkpoint.interval' = '500ms';\n");
            3
        }
        None => 2,
    };
    let path: PathBuf = dir.join(format!("{}.sql", query.name()));
    std::fs::write(&path, script).expect("script");
    let summary = run_file(dir, &path, workers, kill_after_ms.map(|after_ms| start_ms + after_ms));
    let batches = duration_ms / batch_interval_ms;
    assert!(summary.contains(&format!("finished: {batches} batches")), "{summary}");
    let spec = NexmarkSourceSpec { rate_per_s: RATE, partitions: PARTITIONS, ..NexmarkSourceSpec::new(start_ms) };
    let verdict = check_sink(query, &spec, start_ms, start_ms + duration_ms, &results).expect("the sink's rows");
    assert!(verdict.rows_expected > 0, "{}: the run covers some rows: {verdict:?}", query.name());
    assert!(
        verdict.exact,
        "{} at {batch_interval_ms} ms batches differs from the ground truth: {verdict:#?}",
        query.name()
    );
    summary
}

#[test]
fn q0_passes_every_bid_through_exactly() {
    assert_exact_at_10_and_100_ms(Query::Q0);
}

#[test]
fn q1_converts_every_price_to_the_same_float64_as_the_ground_truth() {
    assert_exact_at_10_and_100_ms(Query::Q1);
}

#[test]
fn q2_selects_exactly_the_bids_on_every_123rd_auction() {
    assert_exact_at_10_and_100_ms(Query::Q2);
}

#[test]
fn q3_pairs_each_local_seller_with_their_category_10_auctions_of_the_window() {
    assert_exact_at_10_and_100_ms(Query::Q3);
}

#[test]
fn q8_names_each_person_who_sells_in_the_window_they_joined_once() {
    assert_exact_at_10_and_100_ms(Query::Q8);
}

#[test]
fn q5_leaves_exactly_each_sliding_windows_busiest_auctions_as_its_last_ranking() {
    assert_exact_at_10_and_100_ms(Query::Q5);
}

/// q5 runs in three stages (the bids' map, the counts per auction and window, each window's
/// ranking after a second exchange), two of them stateful. A worker killed in the middle of
/// the run is recovered from a checkpoint of both, and the last rankings still equal the truth.
#[test]
fn q5s_three_stages_recover_from_a_killed_worker_exactly() {
    let dir = test_dir("nexmark_sql_q5_killed_worker");
    let summary = run_and_check(&dir, Query::Q5, (100, 6_000), Some(3_000));
    assert!(summary.contains("recovered from losing worker"), "the run lost a worker and went on: {summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn q7_leaves_exactly_each_windows_highest_bids_as_its_last_list() {
    assert_exact_at_10_and_100_ms(Query::Q7);
}
