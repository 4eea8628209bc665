//! The `clarity` section of a benchmark's result object (issue 14): the performance model of
//! the measured batches, the latency breakdown, straggler causes, blocked time and resource
//! use, with the raw samples so that `sleet explain` can answer new questions from the file.
//! Also the what-if assumptions both share.

use serde_json::json;
use sleet_clarity::{analyze, HostCapacity, MonotaskKind, RunSamples, WhatIfParams};
use sleet_wire::JobSummary;

/// Share of a ysb map task's compute that is JSON decoding, the rest being filter, project,
/// lookup, partial aggregation and partitioning: measured by timing the decoder apart from the
/// whole of `StagePipeline::run` on raw input in a `bench ysb` run
/// (`docs/experiments/2026-11-25-whatif-first-sets.md`). Workers now
/// record decoding as its own monotask (`MonotaskKind::Decode`), which the `decoded` what-if
/// reads instead; this constant (or `--decode-share`) serves results recorded before that.
pub const YSB_DECODE_SHARE: f64 = 0.92;

/// Share of ysb events that pass its filter (`event_type = 'view'`, one of three types drawn
/// uniformly): the rows a map task would shuffle without combining, per event in.
pub const YSB_FILTER_SHARE: f64 = 1.0 / 3.0;

/// The what-if parameters for a run: the caller's, or the defaults. The combine ratio is
/// estimated (`estimated_combine_ratio`) unless given: from the rows the reduce side took in
/// when the run combined, from ysb's key count when it did not.
pub fn whatif_params(
    run: &RunSamples,
    combine_in_baseline: bool,
    decode_share: Option<f64>,
    combine_ratio: Option<f64>,
) -> WhatIfParams {
    let estimated = estimated_combine_ratio(run, combine_in_baseline);
    WhatIfParams {
        decode_share: decode_share.unwrap_or(YSB_DECODE_SHARE),
        combine_ratio: combine_ratio.or(estimated).unwrap_or(1.0),
        combine_in_baseline,
    }
}

/// The shuffled rows with map-side combining ÷ without, in (0, 1]; `None` without map (or,
/// for a combining run, reduce) tasks.
pub fn estimated_combine_ratio(run: &RunSamples, combine_in_baseline: bool) -> Option<f64> {
    if combine_in_baseline {
        measured_combine_ratio(run)
    } else {
        keyed_combine_ratio(run)
    }
}

/// Without combining, a ysb map task would combine its views into one row per campaign (a
/// 100 ms batch lies inside one 10 s window): `CAMPAIGNS` ÷ (events in × `YSB_FILTER_SHARE`)
/// per map task, on average. Every campaign appears once a task holds a few hundred views,
/// which is why the count of campaigns, not of the views' distinct keys, is the numerator.
fn keyed_combine_ratio(run: &RunSamples) -> Option<f64> {
    let (map_tasks, map_in) = records_in(run, true);
    let views = map_in as f64 / map_tasks.max(1) as f64 * YSB_FILTER_SHARE;
    (views > 0.0).then(|| (sleet_connectors::ysb::CAMPAIGNS as f64 / views).clamp(1e-6, 1.0))
}

/// With map-side combining: reduce rows in ÷ (map events in × `YSB_FILTER_SHARE`), in (0, 1].
fn measured_combine_ratio(run: &RunSamples) -> Option<f64> {
    let ((_, map_in), (_, reduce_in)) = (records_in(run, true), records_in(run, false));
    (map_in > 0 && reduce_in > 0).then(|| (reduce_in as f64 / (map_in as f64 * YSB_FILTER_SHARE)).clamp(1e-6, 1.0))
}

/// The map (or reduce) tasks' count and records in.
fn records_in(run: &RunSamples, map: bool) -> (usize, u64) {
    run.tasks
        .iter()
        .filter(|task| task.monotasks.iter().any(|m| m.kind == MonotaskKind::MapCompute) == map)
        .fold((0, 0), |(tasks, records), task| (tasks + 1, records + task.records_in))
}

/// The samples of the batches that closed after `warm_ms`: the analyses describe the same
/// batches as the throughput and lag figures. All of them when none closed after it.
pub fn measured_samples(samples: &RunSamples, warm_ms: i64) -> RunSamples {
    let warm: Vec<_> = samples.batches.iter().filter(|batch| batch.closed_at_us > warm_ms * 1000).cloned().collect();
    if warm.is_empty() {
        return samples.clone();
    }
    let kept: std::collections::BTreeSet<u64> = warm.iter().map(|batch| batch.batch).collect();
    RunSamples {
        shape: samples.shape,
        tasks: samples.tasks.iter().filter(|task| kept.contains(&task.batch)).cloned().collect(),
        batches: warm,
        host: samples.host,
    }
}

/// The `clarity` section; `null` with a note when the summary holds no samples. `host` is
/// what the machine offered over the measured part, which the driver cannot see.
pub fn clarity_section(
    summary: &JobSummary,
    warm_ms: i64,
    combine: bool,
    host: Option<HostCapacity>,
) -> serde_json::Value {
    let Some(samples) = &summary.samples else {
        return json!({ "note": "the driver recorded no samples (no batch completed)" });
    };
    let run = RunSamples { host, ..measured_samples(samples, warm_ms) };
    let analysis = analyze(&run);
    json!({
        "definition": "the performance model (docs/design/performance-model.md) of the batches scheduled after the warm-up among the \
                       most recent ones the driver keeps; times are per batch, in µs",
        "bottleneck": analysis.model.bottleneck.to_string(),
        "analysis": analysis,
        "whatif_params": whatif_params(&run, combine, None, None),
        "samples": run,
    })
}
