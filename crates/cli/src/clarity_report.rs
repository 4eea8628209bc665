//! The `clarity` section of a benchmark's result object (issue 14): the performance model of
//! the measured batches, the latency breakdown, straggler causes, blocked time and resource
//! use, with the raw samples so that `sleet explain` can answer new questions from the file.
//! Also the what-if assumptions both share.

use serde_json::json;
use sleet_clarity::{analyze, MonotaskKind, RunSamples, WhatIfParams};
use sleet_wire::JobSummary;

/// Share of a ysb map task's compute that is JSON decoding, the rest being filter, project,
/// lookup, partial aggregation and partitioning: measured on this machine by timing the
/// decoder apart from the whole of `StagePipeline::run` on raw input over a 20 s `bench ysb`
/// at 500 000 events/s, 100 ms batches, 2 workers (0.923 and 0.925 on the two workers; the
/// blocks' encoding after `run`, a few hundred combined rows, was not timed). A map monotask
/// records decode and operators as one piece, so the records cannot tell them apart; this
/// constant is the `decoded` what-if's assumption unless `--decode-share` says otherwise.
pub const YSB_DECODE_SHARE: f64 = 0.92;

/// Share of ysb events that pass its filter (`event_type = 'view'`, one of three types drawn
/// uniformly): the rows a map task would shuffle without combining, per event in.
pub const YSB_FILTER_SHARE: f64 = 1.0 / 3.0;

/// The what-if parameters for a run: the caller's, or the defaults. Without combining, the
/// combine ratio is unknown from the records and stays 1 (no change) unless given; with it,
/// it is estimated as the rows the reduce side took in over the rows the map side would have
/// shuffled (`estimated_combine_ratio`).
pub fn whatif_params(
    run: &RunSamples,
    combine_in_baseline: bool,
    decode_share: Option<f64>,
    combine_ratio: Option<f64>,
) -> WhatIfParams {
    let estimated = combine_in_baseline.then(|| estimated_combine_ratio(run)).flatten();
    WhatIfParams {
        decode_share: decode_share.unwrap_or(YSB_DECODE_SHARE),
        combine_ratio: combine_ratio.or(estimated).unwrap_or(1.0),
        combine_in_baseline,
    }
}

/// With map-side combining: reduce rows in ÷ (map events in × `YSB_FILTER_SHARE`), in (0, 1].
/// `None` without map or reduce tasks.
pub fn estimated_combine_ratio(run: &RunSamples) -> Option<f64> {
    let records = |map: bool| -> u64 {
        run.tasks
            .iter()
            .filter(|task| task.monotasks.iter().any(|m| m.kind == MonotaskKind::MapCompute) == map)
            .map(|task| task.records_in)
            .sum()
    };
    let (map_in, reduce_in) = (records(true), records(false));
    (map_in > 0 && reduce_in > 0).then(|| (reduce_in as f64 / (map_in as f64 * YSB_FILTER_SHARE)).clamp(1e-6, 1.0))
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
    }
}

/// The `clarity` section; `null` with a note when the summary holds no samples.
pub fn clarity_section(summary: &JobSummary, warm_ms: i64, combine: bool) -> serde_json::Value {
    let Some(samples) = &summary.samples else {
        return json!({ "note": "the driver recorded no samples (no batch completed)" });
    };
    let run = measured_samples(samples, warm_ms);
    let analysis = analyze(&run);
    json!({
        "definition": "the performance model (DESIGN §8) of the batches scheduled after the warm-up among the \
                       most recent ones the driver keeps; times are per batch, in µs",
        "bottleneck": analysis.model.bottleneck.to_string(),
        "analysis": analysis,
        "whatif_params": whatif_params(&run, combine, None, None),
        "samples": run,
    })
}
