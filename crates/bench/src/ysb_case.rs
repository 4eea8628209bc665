//! A ysb run described by its `sleet-bench ysb` flags, for the benchmarks that run many of them
//! (`bench bottleneck`, `bench whatif`): the flags are parsed as `bench ysb` parses them, so a
//! case in a result file can be re-run by pasting its flags.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use sleet_clarity::RunSamples;

use crate::duration_arg::show;
use crate::ysb_run::{run_once, BenchYsbArgs, Probe};

#[derive(Parser)]
#[command(no_binary_name = true)]
struct YsbCommandLine {
    #[command(flatten)]
    args: BenchYsbArgs,
}

/// `flags` as `sleet-bench ysb` would read them; an error names the flags.
pub fn ysb_args(flags: &[String]) -> Result<BenchYsbArgs> {
    YsbCommandLine::try_parse_from(flags)
        .map(|line| line.args)
        .map_err(|error| anyhow::anyhow!("bad ysb flags `{}`: {error}", flags.join(" ")))
}

/// `"--rate 100000 --workers 2"` as flags.
pub fn split_flags(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// How many times and how long each configuration runs.
#[derive(Debug, Clone, clap::Args)]
pub struct RepeatArgs {
    /// Runs of each configuration, one fresh cluster each; the figures are over them.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Length of each run, in batches' time; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "14s")]
    pub duration: Duration,
    /// Time at the start of each run left out of its figures; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "5s")]
    pub warmup: Duration,
}

impl RepeatArgs {
    pub fn check(&self) -> Result<()> {
        anyhow::ensure!(self.repeats > 0, "--repeats must be at least 1");
        anyhow::ensure!(
            self.warmup < self.duration,
            "--warmup ({}) must be shorter than --duration ({})",
            show(self.warmup),
            show(self.duration)
        );
        Ok(())
    }

    /// `flags` with the run's `--duration` and `--warmup` appended.
    pub fn with_length(&self, flags: &str) -> Vec<String> {
        let mut flags = split_flags(flags);
        flags.extend([
            "--duration".to_string(),
            format!("{}ms", self.duration.as_millis()),
            "--warmup".to_string(),
            format!("{}ms", self.warmup.as_millis()),
        ]);
        flags
    }

    /// For a result's config.
    pub fn config_json(&self) -> serde_json::Value {
        serde_json::json!({
            "repeats": self.repeats,
            "duration_s": self.duration.as_secs_f64(),
            "warmup_s": self.warmup.as_secs_f64(),
        })
    }
}

/// The items of `all` named in `wanted` (all of them when it is empty), in `all`'s order; an
/// unknown name is an error naming `flag` and the names it takes.
pub fn pick<'a, T>(all: &'a [T], name: impl Fn(&T) -> String, wanted: &[String], flag: &str) -> Result<Vec<&'a T>> {
    let known: Vec<String> = all.iter().map(&name).collect();
    if let Some(unknown) = wanted.iter().find(|wanted| !known.contains(wanted)) {
        anyhow::bail!("{flag}: `{unknown}` is not one; expected some of {}", known.join(", "));
    }
    Ok(all.iter().filter(|item| wanted.is_empty() || wanted.contains(&name(item))).collect())
}

/// Runs ysb once with `flags` (on a fresh local cluster, in `run_dir`) and returns its result
/// object, as `bench ysb --json` would write it.
pub async fn run_ysb(flags: &[String], run_dir: &Path) -> Result<serde_json::Value> {
    let args = ysb_args(flags)?;
    let outcome =
        run_once(&args, &Probe::full(&args), run_dir).await.with_context(|| format!("ysb {}", flags.join(" ")))?;
    let json = outcome.report.json;
    // A case compares configurations; a run on fewer workers measured another one.
    if let Some(reasons) = json["fewer_workers"].as_array().filter(|reasons| !reasons.is_empty()) {
        anyhow::bail!(
            "ysb {}: the run measured fewer workers than its flags name ({}); run it again (the workers' logs \
             are under {})",
            flags.join(" "),
            reasons.iter().filter_map(|reason| reason.as_str()).collect::<Vec<_>>().join("; "),
            run_dir.join("logs").display()
        );
    }
    Ok(json)
}

/// The run's samples of the measured batches, as the result object carries them.
pub fn samples(result: &serde_json::Value) -> Result<RunSamples> {
    serde_json::from_value(result["clarity"]["samples"].clone()).context("the run's result holds no clarity samples")
}

/// The model's figures of a run, for a benchmark's result: per batch, in µs.
pub fn model_terms(result: &serde_json::Value) -> serde_json::Value {
    let model = &result["clarity"]["analysis"]["model"];
    serde_json::json!({
        "execution_us": model["execution_us"],
        "coordination_us": model["coordination_us"],
        "modelled_us": model["modelled_us"],
        "measured_us": model["measured_us"],
        "interval_us": model["interval_us"],
        "contribution_us": model["contribution_us"],
        "throughputs": model["throughputs"],
        "stages": model["stages"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch_figures::median;

    #[test]
    fn flags_parse_as_bench_ysb_reads_them() {
        let args = ysb_args(&split_flags("--rate 1234 --workers 3 --no-combine --net-bandwidth 2M")).expect("flags");
        assert_eq!((args.ysb.rate, args.workers, args.no_combine), (1234, 3, true));
        assert_eq!(args.limits.net_bandwidth, Some(2_000_000));
        let error = ysb_args(&split_flags("--rate fast")).expect_err("refused").to_string();
        assert!(error.contains("--rate fast"), "{error}");
    }

    #[test]
    fn picks_by_name_and_refuses_unknown_names() {
        let all = ["cpu", "net", "disk"];
        let name = |item: &&str| item.to_string();
        assert_eq!(pick(&all, name, &[], "--cases").expect("all"), [&"cpu", &"net", &"disk"]);
        assert_eq!(pick(&all, name, &["disk".into(), "cpu".into()], "--cases").expect("two"), [&"cpu", &"disk"]);
        let error = pick(&all, name, &["gpu".into()], "--cases").expect_err("unknown").to_string();
        assert!(error.contains("--cases") && error.contains("gpu") && error.contains("cpu, net, disk"), "{error}");
    }

    #[test]
    fn median_of_runs() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
    }
}
