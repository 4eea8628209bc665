//! `sleet-bench ysb`: runs the Yahoo Streaming Benchmark on a local cluster, checks every
//! (campaign, window) count against the ground truth and writes the result object that
//! `benchmarks/README.md` describes; with `--find-max-rate`, searches for the highest rate the
//! cluster sustains (`max_rate`).

use std::path::Path;

use anyhow::Result;
use sleet_cli::interrupt::Interrupted;
use sleet_workloads::duration_arg::show;
use sleet_workloads::ysb_input::InputKind;

use crate::max_rate::SearchArgs;
use crate::output::{write_output, BenchOutputArgs};
use crate::ysb_report::RunReport;
use crate::ysb_run::{run_once, BenchYsbArgs, Probe};

/// `sleet-bench ysb`: one run's arguments, plus where the result goes and the rate search.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchYsbCommand {
    #[command(flatten)]
    pub run: BenchYsbArgs,
    #[command(flatten)]
    pub output: BenchOutputArgs,
    #[command(flatten)]
    pub search: SearchArgs,
}

/// Runs the benchmark; `Ok(false)` means the results did not match the ground truth.
pub async fn run(command: BenchYsbCommand) -> Result<bool> {
    let args = &command.run;
    anyhow::ensure!((0.0..1.0).contains(&args.bad_fraction), "--bad-fraction must be in [0, 1)");
    anyhow::ensure!(args.workers > 0 && args.cores_per_worker > 0, "--workers and --cores-per-worker must be positive");
    anyhow::ensure!(args.ysb.rate > 0, "--rate must be positive");
    anyhow::ensure!(
        args.warmup < args.duration,
        "--warmup ({}) must be shorter than --duration ({}): nothing would be measured",
        show(args.warmup),
        show(args.duration)
    );
    args.ysb.scheduling.check()?;
    anyhow::ensure!(args.preload.is_none() || args.input.source == InputKind::Kafka, "--preload needs --source kafka");
    anyhow::ensure!(
        !args.pre_decoded || args.input.source == InputKind::Generator,
        "--pre-decoded runs on the built-in generator only"
    );
    anyhow::ensure!(
        !(args.pre_decoded && args.bad_fraction > 0.0),
        "--pre-decoded has no bad records to make: a malformed record has no decoded form; drop --bad-fraction"
    );
    anyhow::ensure!(
        !(command.search.find_max_rate && args.input.source != InputKind::Generator),
        "--find-max-rate runs on the built-in generator only"
    );
    anyhow::ensure!(
        args.input.campaigns.is_none(),
        "bench ysb writes and reads its own campaigns table; --campaigns is for `job ysb`"
    );
    let run_dir = command.output.prepare("bench-ysb")?;
    let outcome = run_and_report(&command, &run_dir.path).await;
    let interrupted = outcome.as_ref().is_err_and(|error| error.is::<Interrupted>());
    run_dir.finish(interrupted || matches!(outcome, Ok(Verdict::Passed)));
    match outcome? {
        Verdict::NoRateFound => {
            anyhow::bail!("no probed rate was both stable and correct; the probes are in the result object")
        }
        verdict => Ok(verdict == Verdict::Passed),
    }
}

async fn run_and_report(command: &BenchYsbCommand, run_dir: &Path) -> Result<Verdict> {
    let args = &command.run;
    let (report, verdict) = if command.search.find_max_rate {
        let (report, all_found) = crate::max_rate::run(args, &command.search, run_dir).await?;
        (report, if all_found { Verdict::Passed } else { Verdict::NoRateFound })
    } else {
        let outcome = run_once(args, &Probe::full(args), run_dir).await?;
        print_run(args, &outcome.report);
        let verdict = if outcome.report.correct == Some(true) { Verdict::Passed } else { Verdict::Mismatch };
        (outcome.report.json, verdict)
    };
    if let Some(path) = &command.output.json {
        write_output(path, &(serde_json::to_string_pretty(&report)? + "\n"))?;
    }
    Ok(verdict)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Passed,
    /// The results differ from the ground truth: the one failure with its own exit code.
    Mismatch,
    NoRateFound,
}

fn print_run(args: &BenchYsbArgs, report: &RunReport) {
    let json = &report.json;
    let distribution = |figure: &serde_json::Value| {
        serde_json::from_value::<FigureView>(figure.clone()).map_or("-".into(), |view| view.describe())
    };
    println!(
        "ysb: {} events/s sustained (offered {}), {} ms batches, stable {}, correct {} ({} mismatches)",
        report.events_per_s.map_or("-".into(), |rate| format!("{rate:.0}")),
        args.ysb.rate,
        args.ysb.batch_interval_ms(),
        report.stable,
        report.correct.map_or("not checked".into(), |correct| correct.to_string()),
        json["mismatches"]
    );
    for reason in json["fewer_workers"].as_array().into_iter().flatten().filter_map(|reason| reason.as_str()) {
        println!("  the run measured fewer workers than asked: {reason}");
    }
    println!(
        "  lag {} (slope {} ms/s); window latency {}",
        distribution(&json["lag_ms"]),
        json["lag_ms"]["slope_ms_per_s"].as_f64().map_or("-".into(), |slope| format!("{slope:.1}")),
        distribution(&json["latency_ms"])
    );
    if let Some(reasons) = json["stability"]["reasons"].as_array().filter(|reasons| !reasons.is_empty()) {
        let reasons: Vec<&str> = reasons.iter().filter_map(|reason| reason.as_str()).collect();
        println!("  not stable: {}", reasons.join("; "));
    }
    let check = &json["end_to_end_check"];
    if let Some(median) = check["relative_difference"]["p50"].as_f64() {
        println!(
            "  breakdown vs measured end to end ({} batches): median {:+.1}%, |p99| {:.1}%, of means {:+.1}%; \
             measured {}, committed {}",
            check["batches_compared"],
            median * 100.0,
            check["relative_difference_abs"]["p99"].as_f64().map_or(f64::NAN, |p99| p99 * 100.0),
            check["relative_difference_of_means"].as_f64().map_or(f64::NAN, |mean| mean * 100.0),
            distribution(&check["measured_ms"]),
            distribution(&check["committed_ms"]),
        );
    }
    if let Some(median) = check["relative_difference_committed"]["p50"].as_f64() {
        println!(
            "  breakdown with its commit part vs measured to the commit: median {:+.1}%, |p99| {:.1}%",
            median * 100.0,
            check["relative_difference_committed_abs"]["p99"].as_f64().map_or(f64::NAN, |p99| p99 * 100.0),
        );
    }
    if let Some(cpu) = json["cpu_breakdown"].as_object() {
        let parts: Vec<String> =
            cpu.iter().map(|(kind, share)| format!("{kind} {:.0}%", share.as_f64().unwrap_or(0.0) * 100.0)).collect();
        println!("  cpu time: {}", parts.join(", "));
    }
}

/// The printed form of a `Distribution` read back from a result object.
#[derive(serde::Deserialize)]
struct FigureView {
    samples: usize,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

impl FigureView {
    fn describe(&self) -> String {
        sleet_clarity::Distribution {
            samples: self.samples,
            p50: self.p50,
            p95: None,
            p99: self.p99,
            max: self.max,
            note: None,
        }
        .describe("ms")
    }
}
