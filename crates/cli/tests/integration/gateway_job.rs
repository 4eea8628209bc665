//! The home-gateway job on the built-in gateway source, end to end with real processes, for
//! each client encoding: increments per gateway in the map stage, totals per (day, gateway)
//! and the ranking per day in the reduce stage. Each day's final ranking and every gateway's
//! daily total are compared with `sleet_workloads::gateway_check`, which sums the generator's
//! own traffic and never the encoded values the job decodes. One run loses a worker to
//! SIGKILL mid-run and must come out the same. The job file `sleet job gateway` prints runs
//! as it is, in JSON and in Avro.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::recovery::{output_of, signal, sleep_until, submit_file, worker};
use common::{test_dir, Reaper};
use sleet_plan::*;
use sleet_workloads::gateway_check::{self, TOP_K};
use sleet_workloads::gateway_job::{gateway_plan, GatewayJob, DAY_MS};

pub(crate) const MINUTE_MS: i64 = 60_000;
pub(crate) const GATEWAYS: u32 = 40;
/// Simulated time runs this much faster than the wall clock: a day in about 2 s.
pub(crate) const SPEEDUP: u32 = 40_000;
/// The gateways report for a day and a half of simulated time, across at least one midnight.
const SIMULATED_SPAN_MS: i64 = 36 * 60 * MINUTE_MS;

pub(crate) fn gateway_spec(encoding: GatewayEncoding, start_ms: i64) -> GatewaySourceSpec {
    GatewaySourceSpec {
        seed: 7,
        gateways: GATEWAYS,
        partitions: 2,
        encoding,
        format: GatewayFormat::Json,
        start_ms,
        stop_ms: Some(start_ms + SIMULATED_SPAN_MS),
        speedup: SPEEDUP,
        report_interval_ms: MINUTE_MS,
        jitter_ms: 20_000,
        late_fraction: 0.05,
        max_delay_ms: 2 * MINUTE_MS,
    }
}

/// The job a user writes for the study's question, with `k` as large as the gateway count so
/// that the ranking also carries every gateway's daily total.
fn job_file(dir: &Path, spec: &GatewaySourceSpec) -> std::path::PathBuf {
    let job = GatewayJob {
        encoding: spec.encoding.into(),
        format: spec.format,
        allowed_lateness_ms: spec.max_delay_ms,
        ttl_ms: 2 * DAY_MS,
        top: GATEWAYS,
        max_keys: 10_000,
        reduce_partitions: 2,
    };
    let sink = SinkSpec::JsonLines { dir: dir.join("results").display().to_string() };
    let plan = gateway_plan(SourceSpec::Gateway(spec.clone()), &job, sink).expect("a valid plan");
    // Every reading is delivered by the drain; a second more lets the last batches finish.
    let drained_wall_ms = spec.wall_ms(spec.drained_ms().expect("the gateways stop"));
    let duration_ms = (drained_wall_ms - spec.start_ms + 1_000) as u64 / 100 * 100;
    let job = JobFile {
        plan,
        settings: JobSettings {
            batch_interval_ms: 100,
            duration_ms: Some(duration_ms),
            start_ms: Some(spec.start_ms),
            checkpoint_interval_ms: 500,
            ..JobSettings::default()
        },
        query: None,
    };
    let path = dir.join("job.json");
    std::fs::write(&path, job.to_json()).expect("job file");
    path
}

/// Runs the job on a driver and `workers` workers; with `kill_at_ms`, the last worker is
/// SIGKILLed at that instant. Returns the job's summary.
fn run(dir: &Path, spec: &GatewaySourceSpec, workers: u32, kill_at_ms: Option<i64>) -> String {
    run_file(dir, &job_file(dir, spec), workers, kill_at_ms)
}

/// Runs the job file at `job` as `run` does.
pub(crate) fn run_file(dir: &Path, job: &Path, workers: u32, kill_at_ms: Option<i64>) -> String {
    let log = std::fs::File::create(dir.join("driver.log")).expect("driver log");
    let checkpoints = dir.join("checkpoints").display().to_string();
    let expected_workers = workers.to_string();
    let extra = ["--expect-workers", expected_workers.as_str(), "--checkpoint-dir", checkpoints.as_str()];
    let (driver, address) = common::start_driver_logged("127.0.0.1:0", &extra, log);
    let mut processes = Reaper(vec![driver]);
    for index in 1..=workers {
        processes.0.push(worker(dir, &address, index));
    }
    let submit = submit_file(job, &address);
    if let Some(at_ms) = kill_at_ms {
        sleep_until(at_ms);
        signal(processes.0.last().expect("a worker"), libc::SIGKILL);
    }
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(90));
    assert!(succeeded, "the gateway job completes:\n{stdout}\n{stderr}");
    stdout
}

/// The job's final rankings against the truth: the top 10 of every day, and every gateway's
/// total of every day (exact for `counter` and `cumulative`, within 0.1 % for `rate`).
pub(crate) fn assert_matches_the_truth(dir: &Path, spec: &GatewaySourceSpec) {
    let end_ms = spec.drained_ms().expect("the gateways stop") + 1;
    let rankings = gateway_check::read_final_rankings(&dir.join("results")).expect("the sink's rankings");
    assert!(rankings.len() >= 2, "the run spans a midnight: {:?}", rankings.keys());
    let verdict = gateway_check::check_rankings(spec, (spec.start_ms, end_ms), &rankings, TOP_K);
    assert!(verdict.final_days.len() >= 2, "at least two days are final: {:?}", verdict.final_days);
    assert!(
        verdict.mismatches.is_empty(),
        "{:?}: the daily top {TOP_K} differs from the truth: {:#?}",
        spec.encoding,
        verdict.mismatches
    );

    let truth = gateway_check::ground_truth(spec, spec.start_ms, end_ms);
    let tolerance = gateway_check::tolerance(spec.encoding);
    let mut checked = 0;
    for ((day, gateway), totals) in &truth {
        let row = rankings.get(day).and_then(|ranks| ranks.values().find(|row| &row.gateway_id == gateway));
        let Some(row) = row else { panic!("{:?}: day {day} has no total for {gateway}", spec.encoding) };
        let expected = totals.total() as f64;
        assert!(
            (row.total - expected).abs() <= tolerance * expected,
            "{:?}: day {day} {gateway}: {} against the truth's {expected}",
            spec.encoding,
            row.total
        );
        checked += 1;
    }
    assert!(checked >= GATEWAYS as usize * 2, "every gateway on every day: {checked} totals checked");
}

pub(crate) fn start_ms() -> i64 {
    (sleet_wire::clock::now_ms() + 3_000) / 100 * 100
}

#[test]
fn the_gateway_job_matches_the_truth_for_every_encoding() {
    for encoding in [GatewayEncoding::Counter, GatewayEncoding::Cumulative, GatewayEncoding::Rate] {
        let dir = test_dir(&format!("gateway_job_{}", encoding.as_str()));
        let spec = gateway_spec(encoding, start_ms());
        run(&dir, &spec, 2, None);
        assert_matches_the_truth(&dir, &spec);
    }
}

#[test]
fn a_killed_worker_leaves_the_gateway_rankings_and_totals_exact() {
    let dir = test_dir("gateway_job_kill");
    let spec = gateway_spec(GatewayEncoding::Cumulative, start_ms());
    // Past the first checkpoints and well before the drain.
    let summary = run(&dir, &spec, 3, Some(spec.start_ms + 2_000));
    assert!(summary.contains("recovered from losing worker"), "the summary tells of the recovery: {summary}");
    assert_matches_the_truth(&dir, &spec);
}

/// `sleet job gateway`'s file, saved in `dir` (with the schema it names beside it) and
/// submitted as printed: its results equal the generator's truth, for one encoding per format.
#[test]
fn the_printed_gateway_job_file_runs_as_is_in_json_and_avro() {
    for (encoding, format) in [("counter", "json"), ("cumulative", "avro")] {
        let dir = test_dir(&format!("gateway_job_printed_{format}"));
        std::fs::write(dir.join("gateway.avsc"), sleet_avro::GATEWAY_SCHEMA).expect("schema beside the job file");
        let start = start_ms().to_string();
        let results = dir.join("results").display().to_string();
        let gateways = GATEWAYS.to_string();
        let speedup = SPEEDUP.to_string();
        let printed = common::run_with_limit(
            {
                let mut command = common::sleet();
                command.args(["job", "gateway", "--encoding", encoding, "--format", format, "--source", "builtin"]);
                command.args(["--schema", "gateway.avsc", "--gateways", &gateways, "--partitions", "2"]);
                command.args(["--speedup", &speedup, "--late-fraction", "0.05", "--max-delay", "2m"]);
                command.args(["--duration", "5s", "--start-ms", &start, "--batch-interval", "100ms"]);
                command.args(["--checkpoint-interval", "500ms", "--top", &gateways, "--sink-dir", &results]);
                command
            },
            Duration::from_secs(10),
        );
        common::assert_success(&printed, "sleet job gateway");
        let text = String::from_utf8(printed.stdout).expect("UTF-8");
        let path = dir.join("job.json");
        std::fs::write(&path, &text).expect("job file");
        let job = JobFile::from_json_unchecked(&text).expect("the printed file is a job file");
        let Operator::Source { spec: SourceSpec::Gateway(spec) } = &job.plan.nodes[0].operator else {
            panic!("the built-in gateway source: {:?}", job.plan.nodes[0])
        };
        assert_eq!((spec.encoding.as_str(), spec.format.as_str()), (encoding, format));
        run_file(&dir, &path, 2, None);
        assert_matches_the_truth(&dir, spec);
    }
}
