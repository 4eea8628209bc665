//! The fixed part of a source task's cpu time (`sleet_clarity::MapTaskFixedCost`), measured
//! before a benchmark's cluster starts by running the job's own source stage (the ysb
//! generator, then the stage's pipeline) on a small and a large input, each after an idle gap
//! like the one a batch interval leaves a worker.
//!
//! The records cannot show this part: every task of a run at a fixed rate has the same
//! events, so its time is one point, and a what-if that changes the events per task (more
//! cores or workers share them, a longer interval gives each more) needs the line through
//! it. The idle gap is what makes most of the intercept: after it, memory the allocator
//! returned while idle is faulted in again and caches are cold, so each pass runs after a
//! sleep as long as the batch interval, up to `IDLE_MAX` (measured in
//! `docs/experiments/2026-11-26-map-task-fixed-cost.md`).

use std::time::{Duration, Instant};

use sleet_clarity::MapTaskFixedCost;
use sleet_connectors::ysb::YsbGenerator;
use sleet_exec::pipeline::{StageInputData, StagePipeline};
use sleet_exec::RawRecords;
use sleet_plan::{plan_stages, JobFile, SourceSpec, StageInput, YsbSourceSpec};

/// Events of the small and the large calibration input: the large one about a task's input
/// in the what-if benchmark's runs, the small one a tenth of it, so that the intercept is
/// read off close to where tasks run.
const SMALL_EVENTS: u64 = 3_000;
const LARGE_EVENTS: u64 = 30_000;
/// Passes of each size, alternating small and large; the medians are used, so a pass that a
/// neighbour's burst slowed does not set the answer.
const PASSES: usize = 7;
/// The longest idle gap before a pass: well past the allocator's delay before it gives memory
/// back (mimalloc's purge delay is 10 ms), short enough that the calibration takes ~1.5 s.
const IDLE_MAX: Duration = Duration::from_millis(100);

/// The fixed cost of the job's source tasks, or `None` when the job does not read the ysb
/// generator (the only source this can run without the outside system) or its stage cannot
/// be built here.
pub fn map_task_fixed_cost(job: &JobFile, batch_interval: Duration) -> Option<MapTaskFixedCost> {
    let stages = plan_stages(&job.plan, job.settings.combine).ok()?.stages;
    let stage = stages.into_iter().next()?;
    let StageInput::Source(SourceSpec::Ysb(spec)) = &stage.input else {
        return None;
    };
    let load_table = |table: &_| sleet_connectors::table::load_table(table).map_err(|error| error.to_string());
    let mut pipeline = StagePipeline::new(&stage, &load_table).ok()?;
    // One partition at 1 000 events per ms of event time. Made once, as a worker keeps its
    // source open across batches: making one allocates, which would warm what a pass must
    // meet cold.
    let generator = YsbGenerator::new(&YsbSourceSpec { rate_per_s: 1_000_000, partitions: 1, ..spec.clone() }, 0);
    let idle = batch_interval.min(IDLE_MAX);
    let mut small = Vec::with_capacity(PASSES);
    let mut large = Vec::with_capacity(PASSES);
    for pass in 0..PASSES {
        for (events, times) in [(SMALL_EVENTS, &mut small), (LARGE_EVENTS, &mut large)] {
            std::thread::sleep(idle);
            times.push(one_pass(&generator, &mut pipeline, events, pass as u64)?);
        }
    }
    let small = PassTimes::median(&small);
    let large = PassTimes::median(&large);
    Some(MapTaskFixedCost {
        source_read_us: intercept_us(small.source_read_us, large.source_read_us),
        map_compute_us: intercept_us(small.compute_us, large.compute_us),
    })
}

#[derive(Debug, Clone, Copy)]
struct PassTimes {
    source_read_us: f64,
    compute_us: f64,
}

impl PassTimes {
    fn median(passes: &[PassTimes]) -> PassTimes {
        let median_of = |part: fn(&PassTimes) -> f64| {
            crate::batch_figures::median(&passes.iter().map(part).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        PassTimes {
            source_read_us: median_of(|pass| pass.source_read_us),
            compute_us: median_of(|pass| pass.compute_us),
        }
    }
}

/// One task's worth of work on `events` generated events, timed as a worker times its
/// monotasks: wall time of the source read, then of decoding and the operators together.
fn one_pass(generator: &YsbGenerator, pipeline: &mut StagePipeline, events: u64, batch: u64) -> Option<PassTimes> {
    let start_ms = 1_700_000_000_000 + batch as i64 * 1_000;
    let end_ms = start_ms + (events / 1_000) as i64;
    let read_started = Instant::now();
    let input = if generator.pre_decoded() {
        StageInputData::Decoded(generator.generate_decoded(start_ms, end_ms))
    } else {
        let mut raw = RawRecords::new();
        generator.generate(start_ms, end_ms, &mut raw);
        StageInputData::Raw(raw)
    };
    let read_done = Instant::now();
    let output = pipeline.run(&input, batch).ok()?;
    let compute_done = Instant::now();
    drop((input, output));
    Some(PassTimes {
        source_read_us: (read_done - read_started).as_secs_f64() * 1e6,
        compute_us: (compute_done - read_done).as_secs_f64() * 1e6,
    })
}

/// Where the line through the small and the large pass meets zero events; never below zero
/// (a large pass that ran faster per event than the small one by more than its share).
fn intercept_us(small_us: f64, large_us: f64) -> f64 {
    let (small, large) = (SMALL_EVENTS as f64, LARGE_EVENTS as f64);
    ((large * small_us - small * large_us) / (large - small)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_intercept_is_where_the_line_meets_zero_events() {
        // 100 µs fixed plus 0.05 µs per event: 250 µs at 3 000, 1 600 µs at 30 000.
        assert!((intercept_us(250.0, 1_600.0) - 100.0).abs() < 1e-9);
        // Perfectly proportional: nothing fixed.
        assert!(intercept_us(300.0, 3_000.0).abs() < 1e-9);
        // Noise that would make it negative gives zero.
        assert_eq!(intercept_us(200.0, 3_000.0), 0.0);
    }

    #[test]
    fn the_ysb_source_stage_calibrates() {
        let args = crate::ysb_case::ysb_args(&crate::ysb_case::split_flags("--workers 1")).expect("flags parse");
        let job = crate::ysb_job::ysb_job(&args.ysb.options(1, None, sleet_plan::SinkSpec::Discard)).expect("ysb job");
        let cost = map_task_fixed_cost(&job, Duration::from_millis(5)).expect("a ysb job calibrates");
        // Only that it ran both parts and gave figures; their size is this host's.
        assert!(cost.source_read_us.is_finite() && cost.source_read_us >= 0.0, "{cost:?}");
        assert!(cost.map_compute_us.is_finite() && cost.map_compute_us >= 0.0, "{cost:?}");
    }
}
