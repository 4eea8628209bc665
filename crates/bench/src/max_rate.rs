//! `sleet-bench ysb --find-max-rate`: the highest rate that is stable and correct at the given
//! workers and batch interval: short probes chosen by `RateSearch`, then one confirming run of
//! the full `--duration` at the answer. `--searches N` repeats the whole search and reports the
//! median, since one search on a shared machine can land a step high or low.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use sleet_clarity::percentile;

use crate::rate_search::{round_rate, ProbeResult, RateSearch};
use crate::ysb_run::{run_once, BenchYsbArgs, Probe};

#[derive(Debug, Clone, clap::Args)]
pub struct SearchArgs {
    /// Search for the highest stable and correct rate instead of running at --rate.
    #[arg(long)]
    pub find_max_rate: bool,
    /// Independent searches; the result is their median.
    #[arg(long, default_value_t = 1)]
    pub searches: u32,
    /// Length of each probe; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "12s")]
    pub probe_duration: Duration,
    /// Time at the start of a probe left out of its figures; a bare number is in seconds.
    #[arg(long, value_parser = crate::duration_arg::seconds, default_value = "4s")]
    pub probe_warmup: Duration,
    /// The search ends when the highest stable rate and the lowest unstable one are within
    /// this share of each other.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// Search probes per search at most; each search ends with a confirming run of its best
    /// rate, and one more if that fails while probes are left.
    #[arg(long, default_value_t = 14)]
    pub max_probes: u32,
}

/// Runs the searches; returns the result object and whether every search found a rate.
pub async fn run(args: &BenchYsbArgs, search: &SearchArgs, run_dir: &Path) -> Result<(serde_json::Value, bool)> {
    anyhow::ensure!(search.searches >= 1, "--searches must be at least 1");
    anyhow::ensure!(
        search.probe_warmup < search.probe_duration,
        "--probe-warmup must be shorter than --probe-duration"
    );
    anyhow::ensure!((0.001..0.5).contains(&search.tolerance), "--tolerance must be in [0.001, 0.5)");
    let mut searches = Vec::new();
    for index in 1..=search.searches {
        eprintln!("find-max-rate: search {index} of {}", search.searches);
        searches.push(one_search(args, search, &run_dir.join(format!("search-{index}"))).await?);
    }
    let found: Vec<f64> = searches.iter().filter_map(|found| found.sustainable).map(|rate| rate as f64).collect();
    let median = percentile(&found, 0.5);
    let all_found = found.len() == searches.len();
    println!(
        "ysb find-max-rate: {} workers × {} cores, {} ms batches, {}: sustainable {} events/s (median of {} searches: {:?})",
        args.workers,
        args.cores_per_worker,
        args.ysb.batch_interval_ms(),
        args.ysb.scheduling.describe(),
        median.map_or("none found".into(), |rate| format!("{rate:.0}")),
        searches.len(),
        searches.iter().map(|found| found.sustainable).collect::<Vec<_>>()
    );
    let report = json!({
        "benchmark": "ysb-find-max-rate",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "workers": args.workers,
            "cores_per_worker": args.cores_per_worker,
            "batch_interval_ms": args.ysb.batch_interval_ms(),
            "scheduler": args.ysb.scheduling.scheduler.to_string(),
            "group_size": args.ysb.scheduling.group_size_json(),
            "latency_target": args.ysb.scheduling.latency_target(),
            "combine": !args.no_combine,
            "seed": args.ysb.seed,
            "checkpoint_interval_ms": args.ysb.checkpoint_interval_ms(),
        },
        "method": {
            "probe_duration_s": search.probe_duration.as_secs_f64(),
            "probe_warmup_s": search.probe_warmup.as_secs_f64(),
            "confirm_duration_s": args.duration.as_secs_f64(),
            "confirm_warmup_s": args.warmup.as_secs_f64(),
            "tolerance": search.tolerance,
            "first_rate": args.ysb.rate,
            "give_up_lag_ms": Probe::give_up_lag_ms(args.ysb.batch_interval_ms()),
            "kept_up": "stable (see each probe's stability rule) and correct against the ground truth",
        },
        "sustainable_events_per_s": median,
        "searches_sustainable_events_per_s": searches.iter().map(|found| found.sustainable).collect::<Vec<_>>(),
        "samples": found.len(),
        "searches": searches.iter().map(|found| &found.json).collect::<Vec<_>>(),
    });
    Ok((report, all_found))
}

struct Found {
    sustainable: Option<u64>,
    json: serde_json::Value,
}

async fn one_search(args: &BenchYsbArgs, settings: &SearchArgs, dir: &Path) -> Result<Found> {
    let mut search = RateSearch::new(settings.tolerance);
    let mut probes = Vec::new();
    let mut rate = Some(round_rate(args.ysb.rate));
    let mut searched = 0;
    let mut confirmed = None;
    loop {
        while let Some(next) = rate.filter(|_| searched < settings.max_probes) {
            searched += 1;
            let probe = Probe {
                rate: next,
                duration: settings.probe_duration,
                warmup: settings.probe_warmup,
                give_up_lag_ms: Some(Probe::give_up_lag_ms(args.ysb.batch_interval_ms())),
                label: format!("probe {searched}"),
            };
            let result = probe_once(args, &probe, dir).await?;
            search.record(result.probe);
            probes.push(result.json);
            rate = search.next();
        }
        // The bracket is narrow, or the probes are spent: confirm the best rate at full length.
        let Some(candidate) = search.highest_kept() else { break };
        let confirmation = Probe { rate: candidate, label: "confirmation".into(), ..Probe::full(args) };
        let result = probe_once(args, &confirmation, dir).await?;
        let kept_up = result.probe.kept_up;
        search.record(result.probe);
        probes.push(result.json);
        if kept_up {
            confirmed = Some(candidate);
            break;
        }
        rate = search.next();
        if searched >= settings.max_probes {
            break;
        }
    }
    Ok(Found { sustainable: confirmed, json: json!({ "sustainable_events_per_s": confirmed, "probes": probes }) })
}

struct ProbeRun {
    probe: ProbeResult,
    json: serde_json::Value,
}

async fn probe_once(args: &BenchYsbArgs, probe: &Probe, dir: &Path) -> Result<ProbeRun> {
    let outcome = run_once(args, probe, dir).await?;
    let report = &outcome.report;
    let kept_up = report.stable && report.correct == Some(true);
    let processed = report.events_per_s.or(outcome.last_status_events_per_s);
    eprintln!(
        "  {} at {} events/s: {} ({} events/s processed)",
        probe.label,
        probe.rate,
        if kept_up { "kept up" } else { "did not keep up" },
        processed.map_or("-".into(), |rate| format!("{rate:.0}"))
    );
    let json = json!({
        "kind": probe.label,
        "rate": probe.rate,
        "duration_s": probe.duration.as_secs_f64(),
        "kept_up": kept_up,
        "stable": report.stable,
        "correct": report.correct,
        "stopped_early": report.json["stopped_early"],
        "events_per_s": report.events_per_s,
        "lag_ms": report.json["lag_ms"],
        "stability_reasons": report.json["stability"]["reasons"],
        "latency_ms": report.json["latency_ms"],
    });
    Ok(ProbeRun { probe: ProbeResult { rate: probe.rate, kept_up, processed_per_s: processed }, json })
}
