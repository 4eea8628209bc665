//! `sleet explain RESULT.json`: where a finished run's time went, what limited it, and what
//! other configurations would do, computed again from the samples in its result file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sleet_clarity::{
    analyze, parse_scenarios, predict, Analysis, Bottleneck, JobModel, Prediction, RunSamples, Scenario, WhatIfParams,
    SOURCE_BOUND_SHARE, STRAGGLER_FACTOR,
};

use crate::clarity_report::{estimated_combine_ratio, whatif_params};

#[derive(Debug, Clone, clap::Args)]
pub struct ExplainArgs {
    /// A result file written by `sleet-bench ysb --json FILE`.
    pub result: PathBuf,
    /// Configurations to predict, comma-separated: cores=K (cores per worker × K), workers=K
    /// (workers × K), net=K / disk=K (network / disk throughput × K), decoded (input arrives
    /// decoded), combine=on|off (map-side combining), interval=MS (another batch interval).
    /// Each is answered alone, then all together when there are several.
    #[arg(long, value_name = "SCENARIOS")]
    pub what_if: Option<String>,
    /// Share of map compute spent decoding input (0–1), for `decoded` on results whose
    /// records hold no decode monotasks (written before decoding was recorded on its own)
    /// [default: 0.92, measured for ysb's map stage].
    #[arg(long, value_name = "F")]
    pub decode_share: Option<f64>,
    /// Shuffle bytes with map-side combining ÷ without (0–1], for `combine=…` [default:
    /// estimated from the run when it combined, otherwise 1, i.e. no change].
    #[arg(long, value_name = "F")]
    pub combine_ratio: Option<f64>,
}

/// A result file's samples and what the run was.
struct Loaded {
    samples: RunSamples,
    combine: bool,
    description: String,
}

pub fn run(args: &ExplainArgs) -> Result<()> {
    if let Some(share) = args.decode_share {
        anyhow::ensure!((0.0..=1.0).contains(&share), "--decode-share must be between 0 and 1, not {share}");
    }
    if let Some(ratio) = args.combine_ratio {
        anyhow::ensure!(ratio > 0.0 && ratio <= 1.0, "--combine-ratio must be in (0, 1], not {ratio}");
    }
    let scenarios = match &args.what_if {
        Some(spec) => parse_scenarios(spec).context("--what-if")?,
        None => Vec::new(),
    };
    let loaded = load(&args.result)?;
    let params = whatif_params(&loaded.samples, loaded.combine, args.decode_share, args.combine_ratio);
    let sources = ParamSources {
        decode_share: match (loaded.samples.records_decoding(), args.decode_share) {
            (true, _) => "not used: the records time decoding as its own monotask",
            (false, Some(_)) => "given by --decode-share",
            (false, None) => "measured for ysb's map stage",
        },
        combine_ratio: match (
            args.combine_ratio,
            estimated_combine_ratio(&loaded.samples, loaded.combine).is_some(),
            loaded.combine,
        ) {
            (Some(_), _, _) => "given by --combine-ratio",
            (None, true, true) => {
                "estimated from this run: reduce rows in ÷ a third of the map events in (ysb's filter)"
            }
            (None, true, false) => {
                "estimated for ysb: 100 campaigns ÷ a map task's views (a third of its events), per batch"
            }
            (None, false, _) => "unknown without map tasks, so 1 (no change): pass --combine-ratio",
        },
    };
    print!("{}", explain(&args.result, &loaded, &params, &sources, &scenarios));
    Ok(())
}

/// Where each what-if parameter came from, for the report.
struct ParamSources {
    decode_share: &'static str,
    combine_ratio: &'static str,
}

fn load(path: &Path) -> Result<Loaded> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not a JSON result file", path.display()))?;
    let Some(samples) = json.pointer("/clarity/samples") else {
        let writer = match (json["engine"].as_str(), json["version"].as_str()) {
            (Some("sleet"), Some(version)) => format!("it was written by sleet {version}, which did not record them"),
            _ => "it is not a result of `sleet-bench ysb --json`".to_string(),
        };
        bail!(
            "{} has no performance samples (field `clarity.samples`): {writer}; run `sleet-bench ysb --json FILE` \
             with sleet {} to get a file `explain` can read",
            path.display(),
            env!("CARGO_PKG_VERSION")
        );
    };
    let samples: RunSamples = serde_json::from_value(samples.clone())
        .with_context(|| format!("{}: field `clarity.samples` is malformed", path.display()))?;
    anyhow::ensure!(!samples.batches.is_empty(), "{}: field `clarity.samples` holds no batches", path.display());
    let config = &json["config"];
    let description = format!(
        "{} {} at {} events/s, {} scheduler, written by sleet {}",
        json["engine"].as_str().unwrap_or("?"),
        json["benchmark"].as_str().unwrap_or("?"),
        config["rate"],
        config["scheduler"].as_str().unwrap_or("?"),
        json["version"].as_str().unwrap_or("?"),
    );
    Ok(Loaded { samples, combine: config["combine"].as_bool().unwrap_or(true), description })
}

/// The whole report, as text.
fn explain(
    path: &Path,
    loaded: &Loaded,
    params: &WhatIfParams,
    sources: &ParamSources,
    scenarios: &[Scenario],
) -> String {
    let run = &loaded.samples;
    let analysis = analyze(run);
    let shape = run.shape;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", path.display(), loaded.description);
    let _ = writeln!(
        out,
        "{} batches, {} tasks; {} workers × {} cores, {} ms batches\n",
        analysis.batches, analysis.tasks, shape.workers, shape.cores_per_worker, shape.batch_interval_ms
    );
    breakdown(&mut out, &analysis);
    model(&mut out, &analysis.model);
    stragglers(&mut out, &analysis);
    blocked(&mut out, &analysis);
    resource_use(&mut out, &analysis);
    if !scenarios.is_empty() {
        what_if(&mut out, run, params, sources, scenarios);
    }
    out
}

fn ms(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

fn breakdown(out: &mut String, analysis: &Analysis) {
    let _ = writeln!(out, "Latency breakdown per batch (ms): an average event's end-to-end latency in parts");
    let _ = writeln!(out, "  {:<16} {:>9} {:>9}", "part", "p50", "p99");
    let show = |value: Option<f64>| value.map_or("-".to_string(), |value| format!("{value:.2}"));
    for part in &analysis.breakdown.parts {
        let _ = writeln!(out, "  {:<16} {:>9} {:>9}", part.part, show(part.ms.p50), show(part.ms.p99));
    }
    if let Some(note) = analysis.breakdown.parts.first().and_then(|part| part.ms.note.as_ref()) {
        let _ = writeln!(out, "  ({note})");
    }
    let _ = writeln!(out);
}

fn model(out: &mut String, model: &JobModel) {
    let _ = writeln!(out, "Model: ideal time per batch on each resource (ms), stages one after the other");
    let _ = writeln!(out, "  {:<6} {:>9} {:>9} {:>9} {:>9}  bottleneck", "stage", "cpu", "net", "disk", "modelled");
    for stage in &model.stages {
        let _ = writeln!(
            out,
            "  {:<6} {:>9} {:>9} {:>9} {:>9}  {}",
            stage.stage,
            ms(stage.cpu_us),
            ms(stage.net_us),
            ms(stage.disk_us),
            ms(stage.modelled_us),
            Bottleneck::from(stage.bottleneck)
        );
    }
    let _ = writeln!(
        out,
        "  execution {} + coordination {} (a term of the max) → modelled {} ms; measured {} ms of a {} ms interval",
        ms(model.execution_us),
        ms(model.coordination_us),
        ms(model.modelled_us),
        ms(model.measured_us),
        ms(model.interval_us)
    );
    let _ = writeln!(out, "  bottleneck: {} ({})\n", model.bottleneck, why(model));
}

/// Why the model names its bottleneck, in the terms of its rule.
fn why(model: &JobModel) -> String {
    let share = |us: f64| if model.interval_us > 0.0 { us / model.interval_us * 100.0 } else { 0.0 };
    match model.bottleneck {
        Bottleneck::Source => format!(
            "modelled {:.0} % and measured {:.0} % of the interval, both under {:.0} %: the job waits for input",
            share(model.modelled_us),
            share(model.measured_us),
            SOURCE_BOUND_SHARE * 100.0
        ),
        Bottleneck::Coordination => {
            format!("coordination per batch ({} ms) exceeds every resource's share", ms(model.coordination_us))
        }
        resource => {
            let us = model
                .contribution_us
                .iter()
                .find(|(r, _)| Bottleneck::from(**r) == resource)
                .map_or(0.0, |(_, us)| *us);
            format!("{} ms of the modelled time is stages it limits, {:.0} % of the interval", ms(us), share(us))
        }
    }
}

fn stragglers(out: &mut String, analysis: &Analysis) {
    let report = &analysis.stragglers;
    let causes: Vec<String> = report.counts.iter().map(|(cause, count)| format!("{cause} {count}")).collect();
    let _ = writeln!(
        out,
        "Stragglers: {} of {} tasks took over {STRAGGLER_FACTOR}× their stage's median{}",
        report.stragglers,
        report.tasks,
        if causes.is_empty() { String::new() } else { format!("; causes: {}", causes.join(", ")) }
    );
    for straggler in report.slowest.iter().take(3) {
        let _ = writeln!(
            out,
            "  batch {} stage {} partition {} on worker {}: {} ms, median {} ms, {}",
            straggler.batch,
            straggler.stage,
            straggler.partition,
            straggler.worker,
            ms(straggler.duration_us as f64),
            ms(straggler.stage_median_us),
            straggler.cause
        );
    }
    let _ = writeln!(out);
}

fn blocked(out: &mut String, analysis: &Analysis) {
    let _ = writeln!(
        out,
        "Blocked time: how much shorter a batch would be if this took no time (median / mean over batches)"
    );
    for speedup in &analysis.blocked {
        let name = format!("{:?}", speedup.blocker).to_lowercase();
        let _ = writeln!(out, "  {:<13} {:>5.1} % / {:>5.1} %", name, speedup.median * 100.0, speedup.mean * 100.0);
    }
    let _ = writeln!(out);
}

fn resource_use(out: &mut String, analysis: &Analysis) {
    let _ = writeln!(
        out,
        "Resource use per worker (mean / max over {} s)",
        analysis.utilization.first().map_or(0, |u| u.seconds)
    );
    for used in &analysis.utilization {
        let _ = writeln!(
            out,
            "  worker {:<3} {:<5} utilization {:>5.1} % / {:>5.1} %   queue {:.2} / {:.2}",
            used.worker,
            format!("{:?}", used.resource).to_lowercase(),
            used.utilization_mean * 100.0,
            used.utilization_max * 100.0,
            used.queue_len_mean,
            used.queue_len_max
        );
    }
    let _ = writeln!(out);
}

fn what_if(out: &mut String, run: &RunSamples, params: &WhatIfParams, sources: &ParamSources, scenarios: &[Scenario]) {
    let _ = writeln!(out, "What if: each change alone{}", if scenarios.len() > 1 { ", then all together" } else { "" });
    let _ = writeln!(out, "  decode share {:.2}: {}", params.decode_share, sources.decode_share);
    let _ = writeln!(
        out,
        "  combine ratio {:.3}: {}; the run {} map-side",
        params.combine_ratio,
        sources.combine_ratio,
        if params.combine_in_baseline { "combined" } else { "did not combine" }
    );
    let mut sets: Vec<Vec<Scenario>> = scenarios.iter().map(|scenario| vec![*scenario]).collect();
    if scenarios.len() > 1 {
        sets.push(scenarios.to_vec());
    }
    let mut shared: Option<usize> = None;
    for set in sets {
        let prediction = predict(run, params, &set);
        let shared_count = *shared.get_or_insert(common_assumptions(&prediction));
        prediction_lines(out, &prediction, shared_count);
    }
    if let Some(count) = shared {
        let baseline = predict(run, params, &[]);
        let _ = writeln!(out, "  every answer assumes:");
        for assumption in baseline.assumptions.iter().take(count) {
            let _ = writeln!(out, "    - {assumption}");
        }
    }
}

/// The assumptions every prediction starts with (the model's own), before its scenarios'.
fn common_assumptions(prediction: &Prediction) -> usize {
    let scenario_notes = prediction
        .assumptions
        .iter()
        .filter(|assumption| prediction.scenarios.iter().any(|s| assumption.starts_with(&format!("{s}:"))))
        .count();
    prediction.assumptions.len() - scenario_notes
}

fn prediction_lines(out: &mut String, prediction: &Prediction, shared: usize) {
    let names: Vec<String> = prediction.scenarios.iter().map(Scenario::to_string).collect();
    let rate = |rate: Option<f64>| rate.map_or("-".to_string(), |rate| format!("{rate:.0}"));
    let _ = writeln!(
        out,
        "  {}: predicted batch time {} ms (measured {} ms; modelled {} → {} ms) in a {} ms interval, bottleneck {}, \
         highest stable rate {} events/s (the run took in {})",
        names.join(" + "),
        ms(prediction.predicted_batch_us),
        ms(prediction.baseline_measured_us),
        ms(prediction.baseline_modelled_us),
        ms(prediction.modelled_us),
        ms(prediction.interval_us),
        prediction.bottleneck,
        rate(prediction.stable_rate_events_per_s),
        rate(prediction.baseline_rate_events_per_s),
    );
    for assumption in prediction.assumptions.iter().skip(shared) {
        let _ = writeln!(out, "    assumes {assumption}");
    }
}
