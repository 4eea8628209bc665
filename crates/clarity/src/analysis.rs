//! Every analysis of one run together, in the shape a result file stores and `sleet explain`
//! prints: the model, the latency breakdown (overall, per second, per batch), straggler
//! causes, blocked time and resource use per worker.
//!
//! ```text
//!  RunSamples ──analyze()──▶ Analysis { model, breakdown, stragglers, blocked, utilization }
//!             ──glance()───▶ Glance { model, breakdown parts, utilization }   (a live view)
//! ```

use std::collections::BTreeMap;

use serde::Serialize;

use crate::blocked::{blocked, BlockerSpeedup};
use crate::breakdown::{breakdowns, part_distributions, LatencyBreakdown, PartDistribution};
use crate::model::{model, utilization, JobModel};
use crate::percentile::percentile;
use crate::sample::RunSamples;
use crate::stragglers::{stragglers, Straggler};
use sleet_monotask::Resource;

/// Stragglers listed one by one (the slowest first); the counts cover all of them.
pub const STRAGGLER_EXAMPLES_MAX: usize = 10;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub batches: usize,
    pub tasks: usize,
    pub model: JobModel,
    pub breakdown: BreakdownReport,
    pub stragglers: StragglerSummary,
    /// Per blocker, the median and mean share of the batch time it costs.
    pub blocked: Vec<BlockerSpeedup>,
    pub utilization: Vec<ResourceUse>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakdownReport {
    /// Each part over every batch, in pipeline order, end to end last.
    pub parts: Vec<PartDistribution>,
    /// The same per second of the batches' close, counted from the first batch's close.
    pub per_second: Vec<SecondParts>,
    /// Per batch, each part in µs, as columns: `batch`, every part's `<name>_us`, and
    /// `end_to_end_us`.
    pub batches: BTreeMap<String, Vec<i64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecondParts {
    pub second: i64,
    pub parts: Vec<PartDistribution>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StragglerSummary {
    pub tasks: usize,
    pub stragglers: usize,
    pub counts: BTreeMap<String, usize>,
    pub slowest: Vec<Straggler>,
}

/// One worker's use of one resource over the run's seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceUse {
    pub worker: u32,
    pub resource: Resource,
    pub seconds: usize,
    pub utilization_mean: f64,
    pub utilization_max: f64,
    pub queue_len_mean: f64,
    pub queue_len_max: f64,
    /// Per second, from the run's first monotask.
    pub utilization_per_s: Vec<f64>,
    pub queue_len_per_s: Vec<f64>,
}

const SECOND_US: i64 = 1_000_000;

/// Every analysis of `run`.
pub fn analyze(run: &RunSamples) -> Analysis {
    let latency = breakdowns(&run.batches, &run.tasks, run.shape.batch_interval_ms);
    let straggling = stragglers(&run.tasks);
    let mut slowest = straggling.stragglers.clone();
    slowest.sort_by(|a, b| {
        (b.duration_us as f64 / b.stage_median_us).total_cmp(&(a.duration_us as f64 / a.stage_median_us))
    });
    slowest.truncate(STRAGGLER_EXAMPLES_MAX);
    Analysis {
        batches: run.batches.len(),
        tasks: run.tasks.len(),
        model: model(run),
        breakdown: BreakdownReport {
            parts: part_distributions(&latency),
            per_second: per_second(run, &latency),
            batches: columns(&latency),
        },
        stragglers: StragglerSummary {
            tasks: straggling.tasks,
            stragglers: straggling.stragglers.len(),
            counts: straggling.counts,
            slowest,
        },
        blocked: blocked(&run.batches, &run.tasks).speedups,
        utilization: resource_use(run),
    }
}

/// What a live view shows of the recent batches, about once a second: the model, the parts
/// of a batch's latency and each worker's use of each resource. The per-batch columns,
/// stragglers and blocked time of `Analysis` are left to a finished run's explanation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Glance {
    pub batches: usize,
    pub model: JobModel,
    /// Each part over the batches, in pipeline order, end to end last.
    pub breakdown: Vec<PartDistribution>,
    pub utilization: Vec<ResourceUse>,
}

pub fn glance(run: &RunSamples) -> Glance {
    let latency = breakdowns(&run.batches, &run.tasks, run.shape.batch_interval_ms);
    Glance {
        batches: run.batches.len(),
        model: model(run),
        breakdown: part_distributions(&latency),
        utilization: resource_use(run),
    }
}

fn per_second(run: &RunSamples, latency: &[LatencyBreakdown]) -> Vec<SecondParts> {
    let Some(first_close) = run.batches.iter().map(|batch| batch.closed_at_us).min() else { return Vec::new() };
    let mut seconds: BTreeMap<i64, Vec<LatencyBreakdown>> = BTreeMap::new();
    for (batch, parts) in run.batches.iter().zip(latency) {
        seconds.entry((batch.closed_at_us - first_close) / SECOND_US).or_default().push(parts.clone());
    }
    seconds.into_iter().map(|(second, batches)| SecondParts { second, parts: part_distributions(&batches) }).collect()
}

fn columns(latency: &[LatencyBreakdown]) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for batch in latency {
        out.entry("batch".into()).or_default().push(batch.batch as i64);
        for (name, us) in batch.parts() {
            out.entry(format!("{name}_us")).or_default().push(us);
        }
        out.entry("end_to_end_us".into()).or_default().push(batch.end_to_end_us);
    }
    out
}

fn resource_use(run: &RunSamples) -> Vec<ResourceUse> {
    let mut by_key: BTreeMap<(u32, Resource), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for second in utilization(run) {
        let entry = by_key.entry((second.worker, second.resource)).or_default();
        entry.0.push(second.utilization);
        entry.1.push(second.queue_len_mean);
    }
    let mean = |values: &[f64]| if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 };
    let max = |values: &[f64]| percentile(values, 1.0).unwrap_or(0.0);
    by_key
        .into_iter()
        .map(|((worker, resource), (busy, queue))| ResourceUse {
            worker,
            resource,
            seconds: busy.len(),
            utilization_mean: mean(&busy),
            utilization_max: max(&busy),
            queue_len_mean: mean(&queue),
            queue_len_max: max(&queue),
            utilization_per_s: busy,
            queue_len_per_s: queue,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::two_stage_run;

    #[test]
    fn every_analysis_of_a_two_stage_run() {
        let run = two_stage_run(100e6, 50e6, 90_000);
        let analysis = analyze(&run);
        assert_eq!((analysis.batches, analysis.tasks), (1, 4));
        assert_eq!(analysis.model.modelled_us, 30_000.0);
        // One batch: the columns hold one value each, and its parts sum to its end to end.
        let columns = &analysis.breakdown.batches;
        assert_eq!(columns["batch"], vec![0]);
        let parts: i64 = columns
            .iter()
            .filter(|(name, _)| !matches!(name.as_str(), "batch" | "end_to_end_us"))
            .map(|(_, v)| v[0])
            .sum();
        assert_eq!(parts, columns["end_to_end_us"][0]);
        assert_eq!(analysis.breakdown.per_second.len(), 1);
        // Worker 0 and 1 each used cpu, net and disk in second 0.
        let used: Vec<(u32, Resource, usize)> =
            analysis.utilization.iter().map(|u| (u.worker, u.resource, u.seconds)).collect();
        assert_eq!(used.len(), 6, "{used:?}");
        assert_eq!(analysis.stragglers.stragglers, 0);

        let glance = glance(&run);
        assert_eq!(glance.model, analysis.model);
        assert_eq!(glance.breakdown, analysis.breakdown.parts);
        assert_eq!(glance.utilization, analysis.utilization);
    }
}
