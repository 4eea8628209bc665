//! `sleet-bench bottleneck`: engineers ysb runs each limited by one thing (the cpu, the
//! network, the disk, the input, the scheduler's coordination) and checks that the
//! performance model names that one, in every repeat.
//!
//! The limits are engineered, not hoped for: a rate near the cluster's capacity for the cpu,
//! the workers' `--net-bandwidth` under an uncombined shuffle for the network,
//! `--disk-bandwidth` with synced sink writes for the disk, a rate far below capacity for the
//! input, and bsp at 5 ms batches on 8 workers for coordination.

use anyhow::Result;
use serde_json::json;
use sleet_clarity::Bottleneck;

use crate::output::write_output;
use crate::ysb_case::{model_terms, pick, run_ysb, RepeatArgs};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchBottleneckArgs {
    #[command(flatten)]
    pub runs: RepeatArgs,
    /// The cases to run, comma-separated: cpu, net, disk, source, coordination [default: all].
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    #[command(flatten)]
    pub output: crate::output::BenchOutputArgs,
}

/// One engineered run: what should limit it, and the `bench ysb` flags that make it so.
struct Case {
    expected: Bottleneck,
    flags: &'static str,
    why: &'static str,
}

const CASES: [Case; 5] = [
    Case {
        expected: Bottleneck::Cpu,
        flags: "--workers 2 --batch-interval 100ms --rate 4000000",
        why: "about two thirds of the capacity of two pinned 1-core workers: map compute fills most of each batch",
    },
    Case {
        expected: Bottleneck::Net,
        flags: "--workers 2 --batch-interval 100ms --rate 100000 --no-combine --net-bandwidth 1M",
        why: "every view event is shuffled (no combine) and each worker receives at most 1 MB/s",
    },
    Case {
        expected: Bottleneck::Disk,
        flags: "--workers 2 --batch-interval 100ms --rate 100000 --disk-bandwidth 80K --sync-writes",
        why: "each worker writes at most 80 KB/s to its disk, every sink write synced",
    },
    Case {
        expected: Bottleneck::Source,
        flags: "--workers 2 --batch-interval 100ms --rate 20000",
        why: "a rate far below capacity: every batch is done long before the next closes",
    },
    Case {
        expected: Bottleneck::Coordination,
        flags: "--workers 8 --scheduler bsp --batch-interval 5ms --rate 20000",
        why: "bsp launches every task of every stage from the driver; at 5 ms on 8 workers the launches and \
              barriers take longer than the work",
    },
];

pub async fn run(args: BenchBottleneckArgs) -> Result<bool> {
    args.runs.check()?;
    let chosen = pick(&CASES, |case| case.expected.to_string(), &args.cases, "--cases")?;
    let run_dir = args.output.prepare("bench-bottleneck")?;
    let outcome = run_cases(&args, &chosen, &run_dir.path).await;
    run_dir.finish(outcome.as_ref().is_ok_and(|all| *all));
    outcome
}

async fn run_cases(args: &BenchBottleneckArgs, cases: &[&Case], run_dir: &std::path::Path) -> Result<bool> {
    let mut runs = Vec::new();
    let mut tally = Vec::new();
    for case in cases {
        let mut named_right = 0;
        for repeat in 1..=args.runs.repeats {
            let flags = args.runs.with_length(case.flags);
            eprintln!(
                "bench bottleneck: {} case, run {repeat} of {}: ysb {}",
                case.expected,
                args.runs.repeats,
                flags.join(" ")
            );
            let result = run_ysb(&flags, run_dir).await?;
            crate::interrupt::check()?;
            let named = result["clarity"]["bottleneck"].as_str().unwrap_or("none").to_string();
            let right = named == case.expected.to_string();
            named_right += u32::from(right);
            eprintln!("  named {named} (expected {}){}", case.expected, if right { "" } else { ": WRONG" });
            runs.push(json!({
                "case": case.expected.to_string(),
                "repeat": repeat,
                "flags": flags.join(" "),
                "expected": case.expected.to_string(),
                "named": named,
                "right": right,
                "stable": result["stable"],
                "correct": result["correct"],
                "events_per_s": result["events_per_s"],
                "model": model_terms(&result),
            }));
        }
        tally.push((case, named_right));
    }
    let all_right = tally.iter().all(|(_, right)| *right == args.runs.repeats);
    println!(
        "bottleneck: named right in {} of {} cases, every repeat",
        tally.iter().filter(|(_, right)| *right == args.runs.repeats).count(),
        tally.len()
    );
    println!("| engineered | ysb flags | named right |");
    println!("|---|---|---|");
    for (case, right) in &tally {
        println!("| {} | `{}` | {right} of {} |", case.expected, case.flags, args.runs.repeats);
    }
    if let Some(path) = &args.output.json {
        let result = json!({
            "benchmark": "bottleneck",
            "engine": "sleet",
            "version": env!("CARGO_PKG_VERSION"),
            "config": args.runs.config_json(),
            "cases": tally.iter().map(|(case, right)| json!({
                "expected": case.expected.to_string(),
                "flags": case.flags,
                "why": case.why,
                "named_right": right,
                "repeats": args.runs.repeats,
            })).collect::<Vec<_>>(),
            "all_named_right": all_right,
            "runs": runs,
        });
        write_output(path, &(serde_json::to_string_pretty(&result)? + "\n"))?;
    }
    Ok(all_right)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_case_parses_as_bench_ysb_flags() {
        let runs = RepeatArgs { repeats: 1, duration: Duration::from_secs(14), warmup: Duration::from_secs(5) };
        for case in &CASES {
            let parsed = crate::ysb_case::ysb_args(&runs.with_length(case.flags)).expect("flags parse");
            assert_eq!((parsed.duration, parsed.warmup), (runs.duration, runs.warmup), "{}", case.flags);
        }
    }
}
