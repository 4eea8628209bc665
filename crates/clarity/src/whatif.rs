//! What-if answers (`docs/design/performance-model.md`): scale the model's terms for a changed
//! configuration, re-take the maximum, and scale the run's measured batch time by the modelled
//! change rather than answer with the modelled time alone, so that what the model leaves out
//! (ramp-up, imperfect parallelism) stays in the prediction.
//!
//! ```text
//!  "cores=2,net=0.25" ─parse_scenarios─▶ [Scenario] ─┐
//!  RunSamples ─terms()─▶ JobTerms ─scale cells──────┴─▶ modelled' ─▶ measured × modelled'/modelled
//!                                                                   └▶ highest stable rate
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ClarityError;
use crate::host::MapTaskFixedCost;
use crate::model::{model_of, terms, Bottleneck, JobTerms, Throughputs};
use crate::sample::RunSamples;
use sleet_monotask::{MonotaskKind, Resource};

/// One change to the run's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// Cores per worker × k.
    Cores(f64),
    /// Workers × k.
    Workers(f64),
    /// Network throughput per worker × k.
    Net(f64),
    /// Disk throughput per worker × k.
    Disk(f64),
    /// Input arrives decoded: the decode share of map compute is gone.
    Decoded,
    /// Map-side combine on (`true`) or off.
    Combine(bool),
    /// Another batch interval, in ms.
    IntervalMs(u64),
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scenario::Cores(k) => write!(f, "cores={k}"),
            Scenario::Workers(k) => write!(f, "workers={k}"),
            Scenario::Net(k) => write!(f, "net={k}"),
            Scenario::Disk(k) => write!(f, "disk={k}"),
            Scenario::Decoded => write!(f, "decoded"),
            Scenario::Combine(on) => write!(f, "combine={}", if *on { "on" } else { "off" }),
            Scenario::IntervalMs(ms) => write!(f, "interval={ms}"),
        }
    }
}

/// What the caller knows that the records do not say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WhatIfParams {
    /// Share of map compute time spent decoding input (0–1), for records made before decoding
    /// had its own monotask (`MonotaskKind::Decode`), which cannot separate the two.
    pub decode_share: f64,
    /// Shuffle bytes with map-side combine ÷ without (0–1], measured or estimated from the
    /// key cardinality.
    pub combine_ratio: f64,
    /// Whether the measured run combined map-side.
    pub combine_in_baseline: bool,
}

impl Default for WhatIfParams {
    fn default() -> Self {
        WhatIfParams { decode_share: 0.0, combine_ratio: 1.0, combine_in_baseline: false }
    }
}

/// The answer for one set of scenarios applied together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub scenarios: Vec<Scenario>,
    /// The model's time for the run as measured, per batch.
    pub baseline_modelled_us: f64,
    /// Mean measured processing time per batch.
    pub baseline_measured_us: f64,
    /// The model's time for the changed configuration, per batch.
    pub modelled_us: f64,
    /// The baseline's measured time in which none of a batch's tasks ran, which stays, plus
    /// the rest of it × `modelled_us ÷ baseline_modelled_us`.
    pub predicted_batch_us: f64,
    pub interval_us: f64,
    pub bottleneck: Bottleneck,
    /// Events/s the run took in; `None` without batch samples.
    pub baseline_rate_events_per_s: Option<f64>,
    /// Highest events/s at which the predicted processing time fits the interval; `None`
    /// when unknown (no batch samples) or unbounded by the model (no work that grows with
    /// the rate).
    pub stable_rate_events_per_s: Option<f64>,
    pub assumptions: Vec<String>,
}

/// Parses `cores=2,workers=4,net=0.25,disk=4,decoded,combine=on,interval=200`. Every item is
/// one scenario; the caller answers them one by one or together.
pub fn parse_scenarios(spec: &str) -> Result<Vec<Scenario>, ClarityError> {
    spec.split(',').map(|item| parse_item(item.trim())).collect()
}

fn parse_item(item: &str) -> Result<Scenario, ClarityError> {
    let bad = |reason: &str| ClarityError::BadScenario { item: item.to_string(), reason: reason.to_string() };
    let (key, value) = match item.split_once('=') {
        Some((key, value)) => (key.trim(), Some(value.trim())),
        None => (item, None),
    };
    let factor = || -> Result<f64, ClarityError> {
        let value = value.ok_or_else(|| bad("needs a factor, as in `cores=2`"))?;
        match value.parse::<f64>() {
            Ok(k) if k.is_finite() && k > 0.0 => Ok(k),
            _ => Err(bad("the factor must be a positive number")),
        }
    };
    match key {
        "" => Err(bad("empty item")),
        "cores" => factor().map(Scenario::Cores),
        "workers" => factor().map(Scenario::Workers),
        "net" => factor().map(Scenario::Net),
        "disk" => factor().map(Scenario::Disk),
        "decoded" if value.is_none() => Ok(Scenario::Decoded),
        "decoded" => Err(bad("takes no value")),
        "combine" => match value {
            Some("on") => Ok(Scenario::Combine(true)),
            Some("off") => Ok(Scenario::Combine(false)),
            _ => Err(bad("must be `combine=on` or `combine=off`")),
        },
        "interval" => match value.map(str::parse::<u64>) {
            Some(Ok(ms)) if ms > 0 => Ok(Scenario::IntervalMs(ms)),
            _ => Err(bad("must be a whole positive number of ms, as in `interval=200`")),
        },
        _ => Err(bad("unknown; expected cores, workers, net, disk, decoded, combine or interval")),
    }
}

/// What every answer assumes, whatever the scenario.
const MODEL_ASSUMPTIONS: [&str; 3] = [
    "work on each resource spreads perfectly over its cores or workers (the ideal-time model)",
    "of the measured time the model does not explain, the busiest worker's cpu time beyond the workers' mean \
     (uneven work) changes in proportion to the modelled time; the rest (time in which none of a batch's tasks \
     ran, task launch, hand-offs, reports) stays as measured",
    "at another rate, per-batch work scales linearly with the events per batch; coordination per batch does not",
];

/// Predicts the batch time and highest stable rate for `scenarios` applied together to the
/// run. No scenarios: the model's own baseline, exactly.
pub fn predict(run: &RunSamples, params: &WhatIfParams, scenarios: &[Scenario]) -> Prediction {
    let baseline = crate::model::model(run);
    let baseline_terms = terms(run);
    let mut changed = Changed {
        fixed: FixedWork::of(run, &baseline_terms),
        terms: baseline_terms,
        throughputs: baseline.throughputs,
        interval_us: baseline.interval_us,
        cores: run.shape.cores(),
        assumptions: MODEL_ASSUMPTIONS.iter().map(|text| text.to_string()).collect(),
    };
    if changed.fixed.total_us() > 0.0 {
        changed.assumptions.push(format!(
            "of each source task's cpu time, {:.0} µs of source read and {:.0} µs of map compute do not grow with its \
             events (calibrated before the run): they stay per task when the events per task change",
            changed.fixed.cost.source_read_us, changed.fixed.cost.map_compute_us
        ));
    }
    for scenario in scenarios {
        changed.apply(*scenario, run, params);
    }
    let modelled_us = changed.terms.modelled_us();
    let ratio = if baseline.modelled_us > 0.0 { modelled_us / baseline.modelled_us } else { 1.0 };
    // The modelled time and the uneven work beyond it grow or shrink with the work; the rest
    // of the measured time (waiting on the scheduler, launching tasks, handing off between
    // monotasks, reporting) is a per-batch cost that stays. Taking all of the rest as scaling
    // under-predicted a run whose work shrank, and taking all of it as fixed under-predicted one
    // whose work doubled (`docs/experiments/2026-11-26-whatif-model-host-term.md`).
    let measured_us = baseline.measured_us.max(0.0);
    let scaling_us = (baseline.modelled_us + crate::model::cpu_skew_mean_us(run)).clamp(0.0, measured_us);
    // (measured − scaling) + scaling × ratio, written so that ratio 1 gives measured exactly.
    let predicted_batch_us = baseline.measured_us + scaling_us * (ratio - 1.0);
    let model = model_of(&changed.terms, changed.throughputs, predicted_batch_us, changed.interval_us);
    let baseline_rate = baseline_rate_events_per_s(run);
    let scale = if baseline.modelled_us > 0.0 && baseline.measured_us > 0.0 {
        baseline.measured_us / baseline.modelled_us
    } else {
        1.0
    };
    Prediction {
        scenarios: scenarios.to_vec(),
        baseline_modelled_us: baseline.modelled_us,
        baseline_measured_us: baseline.measured_us,
        modelled_us,
        predicted_batch_us,
        interval_us: changed.interval_us,
        bottleneck: model.bottleneck,
        baseline_rate_events_per_s: baseline_rate,
        stable_rate_events_per_s: baseline_rate.and_then(|rate| {
            stable_rate_multiple(&changed.terms, changed.fixed.total_us(), scale, changed.interval_us).map(|m| m * rate)
        }),
        assumptions: changed.assumptions,
    }
}

/// Events per second the run took in: its events over its batches' intervals.
fn baseline_rate_events_per_s(run: &RunSamples) -> Option<f64> {
    let seconds = run.batches.len() as f64 * run.shape.interval_us() / 1e6;
    (seconds > 0.0).then(|| run.batches.iter().map(|batch| batch.events as f64).sum::<f64>() / seconds)
}

/// The largest multiple m of the baseline rate with
/// scale × max(m × growing + fixed, coordination) ≤ interval: execution grows with the events
/// but for the fixed work per task (`fixed_us` of it), coordination does not. `None` when
/// nothing grows with the rate; 0 when coordination or the fixed work alone overruns the
/// interval.
fn stable_rate_multiple(terms: &JobTerms, fixed_us: f64, scale: f64, interval_us: f64) -> Option<f64> {
    let execution_us = terms.execution_us();
    let fixed_us = fixed_us.clamp(0.0, execution_us);
    let growing_us = scale * (execution_us - fixed_us);
    if scale * terms.coordination_us > interval_us || scale * fixed_us > interval_us {
        return Some(0.0);
    }
    (growing_us > 0.0).then(|| (interval_us - scale * fixed_us) / growing_us)
}

/// A fixed share above this of a cell's time is taken as a calibration that measured
/// something else: the rest of the cell still grows with its events.
const FIXED_SHARE_MAX: f64 = 0.8;

/// The cpu work in the model's terms that does not grow with a task's events
/// (`MapTaskFixedCost`): per batch, each source task's fixed cost over the job's cores,
/// in the `SourceRead` and `MapCompute` cells of the stages that read a source. It stays per
/// task, so it does not divide when more tasks share the events (cores, workers) nor grow
/// when a task gets more of them (interval).
struct FixedWork {
    cost: MapTaskFixedCost,
    /// Per stage of `JobTerms::stages`, the fixed part of its source read and map compute
    /// cells, as the scenarios so far left it.
    cells: Vec<[f64; 2]>,
}

impl FixedWork {
    const KINDS: [MonotaskKind; 2] = [MonotaskKind::SourceRead, MonotaskKind::MapCompute];

    fn of(run: &RunSamples, terms: &JobTerms) -> FixedWork {
        let cost = run.host.and_then(|host| host.map_task_fixed).unwrap_or_default();
        let batches = run.batch_count();
        let cores = run.shape.cores();
        let cells = terms
            .stages
            .iter()
            .map(|stage| {
                let source_tasks = run
                    .tasks
                    .iter()
                    .filter(|task| task.stage == stage.stage)
                    .filter(|task| task.monotasks.iter().any(|m| m.kind == MonotaskKind::SourceRead))
                    .count() as f64;
                let per_batch = source_tasks / batches / cores;
                let fixed = |kind: MonotaskKind, cost_us: f64| {
                    (per_batch * cost_us.max(0.0)).min(FIXED_SHARE_MAX * stage.ideal(kind, Resource::Cpu))
                };
                [fixed(Self::KINDS[0], cost.source_read_us), fixed(Self::KINDS[1], cost.map_compute_us)]
            })
            .collect();
        FixedWork { cost, cells }
    }

    fn cell(&mut self, stage: usize, kind: MonotaskKind, resource: Resource) -> Option<&mut f64> {
        let index = Self::KINDS.iter().position(|fixed| *fixed == kind)?;
        (resource == Resource::Cpu).then(|| &mut self.cells[stage][index])
    }

    fn total_us(&self) -> f64 {
        self.cells.iter().flatten().sum()
    }
}

/// The run's terms as a scenario changes them, with what each change assumes.
struct Changed {
    terms: JobTerms,
    fixed: FixedWork,
    throughputs: Throughputs,
    interval_us: f64,
    /// The job's cores, workers × cores per worker, as the scenarios so far left them.
    cores: f64,
    assumptions: Vec<String>,
}

impl Changed {
    fn apply(&mut self, scenario: Scenario, run: &RunSamples, params: &WhatIfParams) {
        let workers = f64::from(run.shape.workers.max(1));
        match scenario {
            Scenario::Cores(k) => {
                let host = self.host_factor(scenario, run, k);
                self.scale_split(
                    |_, resource| if resource == Resource::Cpu { host / k } else { 1.0 },
                    |_, resource| if resource == Resource::Cpu { host } else { 1.0 },
                );
            }
            Scenario::Workers(k) => {
                let fetch = remote_share_factor(workers, workers * k);
                let host = self.host_factor(scenario, run, k);
                self.scale_split(
                    |kind, resource| match (kind, resource) {
                        (MonotaskKind::ShuffleFetch, Resource::Net) => fetch.unwrap_or(1.0) / k,
                        (_, Resource::Cpu) => host / k,
                        _ => 1.0 / k,
                    },
                    |_, resource| if resource == Resource::Cpu { host } else { 1.0 },
                );
                self.note(scenario, "partitions spread evenly over the workers; coordination per batch unchanged");
                match fetch {
                    Some(factor) => self.note(
                        scenario,
                        &format!(
                            "shuffle bytes over the network × {factor:.3}: a block is local with probability 1/workers"
                        ),
                    ),
                    None => self.note(
                        scenario,
                        "one worker fetched nothing over the network, so shuffle network time stays unknown (zero)",
                    ),
                }
            }
            Scenario::Net(k) => {
                self.scale(|_, resource| if resource == Resource::Net { 1.0 / k } else { 1.0 });
                self.throughputs.net_bytes_per_s = self.throughputs.net_bytes_per_s.map(|rate| rate * k);
                self.note(scenario, "transfers are bandwidth-bound, not latency-bound");
            }
            Scenario::Disk(k) => {
                self.scale(|_, resource| if resource == Resource::Disk { 1.0 / k } else { 1.0 });
                self.throughputs.disk_bytes_per_s = self.throughputs.disk_bytes_per_s.map(|rate| rate * k);
                self.note(scenario, "writes and fsyncs are throughput-bound, not latency-bound");
            }
            Scenario::Decoded => {
                if run.records_decoding() {
                    self.scale(|kind, _| if kind == MonotaskKind::Decode { 0.0 } else { 1.0 });
                    self.note(
                        scenario,
                        "the decode monotasks' time goes (the records time decoding apart from the rest of map \
                         compute); producing or reading the input costs the same",
                    );
                } else {
                    let keep = 1.0 - params.decode_share.clamp(0.0, 1.0);
                    self.scale_cpu_of(MonotaskKind::MapCompute, keep);
                    self.note(
                        scenario,
                        &format!(
                            "the records hold no decode monotasks: decoding is taken as {:.0} % of map compute \
                             (supplied by the caller); producing or reading the input costs the same",
                            params.decode_share * 100.0
                        ),
                    );
                }
            }
            Scenario::Combine(on) => {
                let factor = combine_factor(on, params);
                self.move_aggregation(scenario, on, run, params, factor);
                let link = link_bytes_per_s(run, &self.throughputs);
                for stage in &mut self.terms.stages {
                    let cell = &mut stage.ideal_us[MonotaskKind::ShuffleFetch as usize][Resource::Net as usize];
                    let bandwidth_us = link.map_or(*cell, |link| {
                        (shuffle_bytes_per_batch(run, stage.stage) / (link * workers) * 1e6).min(*cell)
                    });
                    *cell += (factor - 1.0) * bandwidth_us;
                }
                self.note(
                    scenario,
                    &format!(
                        "shuffle bytes × {factor:.3} (combine ratio {} supplied by the caller)",
                        params.combine_ratio
                    ),
                );
                self.note(
                    scenario,
                    &match link {
                        Some(link) => format!(
                            "a fetch takes its round trip plus its bytes at {:.1} MB/s per worker (the given \
                             throughput, the host's calibrated link, or else the fastest one transfer ran); only \
                             the bytes' part scales",
                            link / 1e6
                        ),
                        None => "no fetch shows the link's speed: all of the fetch time scales".to_string(),
                    },
                );
            }
            Scenario::IntervalMs(ms) => {
                let new_interval_us = ms as f64 * 1000.0;
                let factor = new_interval_us / self.interval_us;
                self.scale(|_, _| factor);
                self.interval_us = new_interval_us;
                self.note(
                    scenario,
                    "events per batch scale with the interval at the same rate; coordination per batch is fixed",
                );
            }
        }
    }

    /// Moves the aggregation of the shuffled rows to the side that does it with combine
    /// `on` or off. A combine folds a map task's rows into partial aggregates, one hash
    /// update per row: the work the reduce does on the same rows when nothing combined them
    /// first. Without a combine the map task partitions every row into shuffle blocks
    /// instead, about the same work per row (measured on ysb in
    /// `docs/experiments/2026-11-26-whatif-paired.md`), so the map stage's time stays either
    /// way. Turning it off adds each stage's `Combine` time to the stage after it (which
    /// reads its shuffle); turning it on leaves the reduce `ratio` of its compute. Records
    /// without `Combine` monotasks (older results) cannot tell the combine's time, so reduce
    /// compute scales with the shuffle's rows.
    fn move_aggregation(&mut self, scenario: Scenario, on: bool, run: &RunSamples, params: &WhatIfParams, factor: f64) {
        let cpu = Resource::Cpu as usize;
        let (combine, reduce) = (MonotaskKind::Combine as usize, MonotaskKind::ReduceCompute as usize);
        let stages = &mut self.terms.stages;
        if on == params.combine_in_baseline {
            return;
        }
        if !on && run.records_combining() {
            for index in 0..stages.len().saturating_sub(1) {
                let combined_us = stages[index].ideal_us[combine][cpu];
                stages[index + 1].ideal_us[reduce][cpu] += combined_us;
            }
            self.note(
                scenario,
                "the reduce stage gains the map-side combine's time, aggregating the same rows one hash update \
                 each; the map stage keeps it, partitioning every row into shuffle blocks instead; the reduce's \
                 own work besides stays",
            );
        } else if on {
            let kept = factor.clamp(0.0, 1.0);
            for stage in stages.iter_mut().skip(1) {
                stage.ideal_us[reduce][cpu] *= kept;
            }
            self.note(
                scenario,
                &format!(
                    "the reduce keeps {:.1} % of its compute (the rows a combine leaves); the map stage's time \
                     stays, its combine's hash update per row taking the place of partitioning that row into a \
                     shuffle block",
                    kept * 100.0
                ),
            );
        } else {
            self.scale_cpu_of(MonotaskKind::ReduceCompute, factor);
            self.note(
                scenario,
                &format!(
                    "the records hold no combine monotasks: reduce compute × {factor:.3}, with the shuffle's rows; \
                     the map side's combine time is not known, so it stays"
                ),
            );
        }
    }

    /// Multiplies the cpu cells of one kind of monotask by `factor`.
    fn scale_cpu_of(&mut self, scaled: MonotaskKind, factor: f64) {
        self.scale(|kind, resource| if (kind, resource) == (scaled, Resource::Cpu) { factor } else { 1.0 });
    }

    /// Multiplies every ideal-time cell by `factor(kind, resource)`; fixed work per task
    /// stays.
    fn scale(&mut self, factor: impl Fn(MonotaskKind, Resource) -> f64) {
        self.scale_split(factor, |_, _| 1.0);
    }

    /// Multiplies the part of each cell that grows with the events by `growing(kind,
    /// resource)` and its fixed work per task by `fixed(kind, resource)`. Written as
    /// `cell × growing + fixed work × (fixed − growing)`, so that factors of 1 leave a cell
    /// exactly as it was.
    fn scale_split(
        &mut self,
        growing: impl Fn(MonotaskKind, Resource) -> f64,
        fixed: impl Fn(MonotaskKind, Resource) -> f64,
    ) {
        for (index, stage) in self.terms.stages.iter_mut().enumerate() {
            for kind in MonotaskKind::ALL {
                for resource in Resource::ALL {
                    let (grow, stay) = (growing(kind, resource), fixed(kind, resource));
                    let cell = &mut stage.ideal_us[kind as usize][resource as usize];
                    match self.fixed.cell(index, kind, resource) {
                        Some(fixed_us) => {
                            *cell = *cell * grow + *fixed_us * (stay - grow);
                            *fixed_us *= stay;
                        }
                        None => *cell *= grow,
                    }
                }
            }
        }
    }

    /// The change in the time a unit of cpu work takes when the job's cores become `k` times
    /// as many, from the host the baseline ran on (`HostCapacity::cpu_time_factor`): 1 when
    /// `k` is 1, and when the host was not recorded, whose cores are then taken as free.
    fn host_factor(&mut self, scenario: Scenario, run: &RunSamples, k: f64) -> f64 {
        let cores = self.cores;
        self.cores *= k;
        let Some(host) = run.host else {
            self.note(
                scenario,
                "the host's capacity was not recorded: every core is free and runs as fast as one alone",
            );
            return 1.0;
        };
        let other = run.other_cores(&host);
        let factor = host.cpu_time_factor(cores * k, other) / host.cpu_time_factor(cores, other);
        self.note(
            scenario,
            &format!(
                "the host has {} cores, of which load outside the job's cpu monotasks (driver, benchmark, network \
                 threads, other processes) kept {other:.2} busy in the baseline and keeps as many; a core runs at \
                 {:.2} of its lone speed with all busy (calibrated before the run), linearly in between; threads \
                 beyond the cores share them equally; the job's cpu monotasks run on all its cores at once: cpu \
                 work × {factor:.3}",
                host.cores, host.all_busy_core_speed,
            ),
        );
        factor
    }

    fn note(&mut self, scenario: Scenario, assumption: &str) {
        self.assumptions.push(format!("{scenario}: {assumption}"));
    }
}

/// With W workers a shuffle block is remote with probability 1 − 1/W, so network shuffle
/// bytes scale by the ratio of those shares. `None` when the baseline had one worker: no
/// bytes went over the network to scale from.
fn remote_share_factor(workers: f64, new_workers: f64) -> Option<f64> {
    let remote = |w: f64| (1.0 - 1.0 / w).max(0.0);
    (workers > 1.0).then(|| remote(new_workers) / remote(workers))
}

/// The bandwidth of one worker's link for transfers that grow or shrink: the shape's
/// throughput when given (a limit, or a measurement); otherwise the host's calibrated link
/// when recorded; otherwise the fastest any one transfer ran at, or the run's derived
/// throughput if that is higher (concurrent transfers). Small transfers are mostly round
/// trip, so the derived throughput (bytes ÷ busy time) is far below what the link does for a
/// large one: scaling a fetch's whole time with its bytes would make a combined shuffle's ×80
/// bytes ×80 slower, when on loopback they cost about ×4. The fastest transfer is the closest
/// to bandwidth-bound, so a lower bound of the link; the calibration measured it.
fn link_bytes_per_s(run: &RunSamples, throughputs: &Throughputs) -> Option<f64> {
    if let Some(given) = run.shape.net_bytes_per_s {
        return Some(given);
    }
    if let Some(link) = run.host.and_then(|host| host.link_bytes_per_s).filter(|link| *link > 0.0) {
        return Some(link);
    }
    let fastest = run
        .tasks
        .iter()
        .flat_map(|task| task.monotasks_on(Resource::Net))
        .filter(|monotask| monotask.kind == MonotaskKind::ShuffleFetch && monotask.bytes > 0 && monotask.run_us() > 0)
        .map(|monotask| monotask.bytes as f64 / (monotask.run_us() as f64 / 1e6))
        .fold(None, |best: Option<f64>, rate| Some(best.map_or(rate, |best| best.max(rate))));
    match (fastest, throughputs.net_bytes_per_s) {
        (Some(fastest), Some(derived)) => Some(fastest.max(derived)),
        (fastest, derived) => fastest.or(derived),
    }
}

/// Bytes a stage's shuffle fetches received over the network, per batch.
fn shuffle_bytes_per_batch(run: &RunSamples, stage: u32) -> f64 {
    let bytes: u64 = run
        .tasks
        .iter()
        .filter(|task| task.stage == stage)
        .flat_map(|task| task.monotasks_on(Resource::Net))
        .filter(|monotask| monotask.kind == MonotaskKind::ShuffleFetch)
        .map(|monotask| monotask.bytes)
        .sum();
    bytes as f64 / run.batch_count()
}

fn combine_factor(on: bool, params: &WhatIfParams) -> f64 {
    let ratio = if params.combine_ratio > 0.0 { params.combine_ratio.min(1.0) } else { 1.0 };
    match (params.combine_in_baseline, on) {
        (false, true) => ratio,
        (true, false) => 1.0 / ratio,
        _ => 1.0,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::host::HostCapacity;
    use crate::model::tests::two_stage_run;
    use crate::sample::{BatchSample, ClusterShape, TaskSample};
    use proptest::prelude::*;
    use sleet_monotask::MonotaskRecord;

    fn check_parse(spec: &str, expected: Result<Vec<Scenario>, &str>) {
        let got = parse_scenarios(spec).map_err(|error| error.to_string());
        assert_eq!(got, expected.map_err(str::to_string), "parsing `{spec}`");
    }

    #[test]
    fn parses_every_scenario_and_names_the_bad_item() {
        use Scenario::*;
        check_parse(
            "cores=2, workers=4,net=0.25,disk=4,decoded,combine=on,combine=off,interval=200",
            Ok(vec![
                Cores(2.0),
                Workers(4.0),
                Net(0.25),
                Disk(4.0),
                Decoded,
                Combine(true),
                Combine(false),
                IntervalMs(200),
            ]),
        );
        check_parse("cores=2,net=-1", Err("what-if item `net=-1`: the factor must be a positive number"));
        check_parse("cores", Err("what-if item `cores`: needs a factor, as in `cores=2`"));
        check_parse("cores=2,,net=2", Err("what-if item ``: empty item"));
        check_parse(
            "gpus=2",
            Err("what-if item `gpus=2`: unknown; expected cores, workers, net, disk, decoded, combine or interval"),
        );
        check_parse("combine=maybe", Err("what-if item `combine=maybe`: must be `combine=on` or `combine=off`"));
        check_parse(
            "interval=0.5",
            Err("what-if item `interval=0.5`: must be a whole positive number of ms, as in `interval=200`"),
        );
        check_parse("decoded=yes", Err("what-if item `decoded=yes`: takes no value"));
        check_parse("net=inf", Err("what-if item `net=inf`: the factor must be a positive number"));
    }

    /// `two_stage_run(100 MB/s, 50 MB/s)`: map cpu 20 ms; reduce cpu 4, net 10, disk 10 ms;
    /// coordination 1 ms; modelled 30 ms; measured 90 ms (scale 3); 1000 events per 100 ms.
    fn check(scenarios: &[Scenario], params: WhatIfParams, modelled_us: f64, stable_rate: Option<f64>) {
        let prediction = predict(&two_stage_run(100e6, 50e6, 90_000), &params, scenarios);
        assert_eq!(prediction.baseline_modelled_us, 30_000.0);
        assert_eq!(prediction.modelled_us, modelled_us, "modelled for {scenarios:?}");
        // Even work (no skew): the 60 ms the model does not explain stay.
        assert_eq!(prediction.predicted_batch_us, 60_000.0 + modelled_us, "predicted for {scenarios:?}");
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-6 * b.abs().max(1.0),
            (a, b) => a == b,
        };
        assert!(
            close(prediction.stable_rate_events_per_s, stable_rate),
            "rate {prediction:?}, expected {stable_rate:?}"
        );
        for scenario in scenarios {
            let named = prediction.assumptions.iter().any(|text| text.starts_with(&scenario.to_string()));
            assert!(named, "no assumption for {scenario} in {:?}", prediction.assumptions);
        }
    }

    #[test]
    fn uneven_work_scales_while_the_rest_of_the_unexplained_time_stays() {
        // Worker 0's map task ran 60 ms of cpu and worker 1's 20 ms (80 ms as before): per
        // core 30 against a mean of 20, a skew of 10 ms; the reduce tasks are even. Measured
        // 90 ms, modelled 30: 40 ms scale, 50 stay. Cores ×2: modelled 20 (× 2/3);
        // predicted 50 + 40 × 2/3 = 76.67 ms.
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        for task in run.tasks.iter_mut().filter(|task| task.stage == 0) {
            let end = if task.worker == 0 { 60_000 } else { 20_000 };
            task.monotasks[0].finished_at_us = end;
            task.finished_at_us = end;
        }
        assert_eq!(crate::model::cpu_skew_mean_us(&run), 10_000.0);
        let prediction = predict(&run, &WhatIfParams::default(), &[Scenario::Cores(2.0)]);
        assert_eq!((prediction.baseline_modelled_us, prediction.modelled_us), (30_000.0, 20_000.0));
        let expected = 50_000.0 + 40_000.0 * 2.0 / 3.0;
        assert!((prediction.predicted_batch_us - expected).abs() < 1e-6, "{}", prediction.predicted_batch_us);
    }

    #[test]
    fn combine_scales_only_the_bytes_part_of_small_fetches() {
        // One worker, one batch, no shape throughput: two fetches of 1 000 B, one taking
        // 100 µs (10 MB/s, the fastest) and one 400 µs. Busy 500 µs for 2 000 B derives
        // 4 MB/s: net cell 2 000 / 4 MB/s = 500 µs. At the link's 10 MB/s the bytes take
        // 200 µs; the other 300 µs are round trips. Combine off at ratio 0.1 (× 10): the
        // bytes' part × 10 = 2 000 µs, plus 300 = 2 300 µs; not the 5 000 µs of × 10 whole.
        let tasks = vec![TaskSample {
            stage: 1,
            partition: 0,
            batch: 0,
            worker: 0,
            started_at_us: 0,
            finished_at_us: 600,
            records_in: 10,
            monotasks: vec![
                MonotaskRecord {
                    kind: MonotaskKind::ShuffleFetch,
                    resource: Resource::Net,
                    bytes: 1_000,
                    queued_at_us: 0,
                    started_at_us: 0,
                    finished_at_us: 100,
                },
                MonotaskRecord {
                    kind: MonotaskKind::ShuffleFetch,
                    resource: Resource::Net,
                    bytes: 1_000,
                    queued_at_us: 100,
                    started_at_us: 100,
                    finished_at_us: 500,
                },
            ],
        }];
        let run = RunSamples {
            shape: ClusterShape {
                workers: 1,
                cores_per_worker: 1,
                batch_interval_ms: 10,
                net_bytes_per_s: None,
                disk_bytes_per_s: None,
            },
            batches: Vec::new(),
            tasks,
            host: None,
        };
        let params = WhatIfParams { combine_ratio: 0.1, combine_in_baseline: true, ..WhatIfParams::default() };
        assert_eq!(predict(&run, &params, &[]).modelled_us, 500.0);
        let off = predict(&run, &params, &[Scenario::Combine(false)]);
        assert!((off.modelled_us - 2_300.0).abs() < 1e-6, "{}", off.modelled_us);
        // Back the other way from a run that did not combine: the bytes' part × 0.1.
        let on = predict(&run, &WhatIfParams { combine_in_baseline: false, ..params }, &[Scenario::Combine(true)]);
        assert!((on.modelled_us - 320.0).abs() < 1e-6, "{}", on.modelled_us);
    }

    #[test]
    fn hand_computed_answers() {
        let params = WhatIfParams::default();
        // Baseline: 30 ms modelled, ×3 = 90 ms; stable at 100/90 × 10 000 events/s.
        check(&[], params, 30_000.0, Some(10_000.0 * 100.0 / 90.0));
        // cores ×2: map 10, reduce max(2, 10, 10) = 10: 20 ms.
        check(&[Scenario::Cores(2.0)], params, 20_000.0, Some(10_000.0 * 100.0 / 60.0));
        // workers ×2 from 2: everything ÷ 2, shuffle bytes × (3/4)/(1/2) = 1.5: net 7.5, disk
        // 5, cpu 2: map 10 + reduce 7.5.
        check(&[Scenario::Workers(2.0)], params, 17_500.0, Some(10_000.0 * 100.0 / 52.5));
        // net ÷ 4: reduce net 40 ms: 20 + 40.
        check(&[Scenario::Net(0.25)], params, 60_000.0, Some(10_000.0 * 100.0 / 180.0));
        // disk ÷ 4: reduce disk 40 ms.
        check(&[Scenario::Disk(0.25)], params, 60_000.0, Some(10_000.0 * 100.0 / 180.0));
        // Decoding 60 % of map compute: map 8 ms + 10.
        check(
            &[Scenario::Decoded],
            WhatIfParams { decode_share: 0.6, ..params },
            18_000.0,
            Some(10_000.0 * 100.0 / 54.0),
        );
        // Combine on, ratio 0.5: reduce net 5, cpu 2, disk 10; the map's 20 stay (its combine
        // takes the place of partitioning the raw rows): 20 + 10.
        let combine = WhatIfParams { combine_ratio: 0.5, ..params };
        check(&[Scenario::Combine(true)], combine, 30_000.0, Some(10_000.0 * 100.0 / 90.0));
        // Combine off from a combining baseline with ratio 0.25: net 40 ms.
        let combining = WhatIfParams { combine_ratio: 0.25, combine_in_baseline: true, ..params };
        check(&[Scenario::Combine(false)], combining, 60_000.0, Some(10_000.0 * 100.0 / 180.0));
        check(&[Scenario::Combine(true)], combining, 30_000.0, Some(10_000.0 * 100.0 / 90.0));
        // Interval 200 ms: per-batch work doubles (60 ms), coordination (1 ms) does not; the
        // stable rate is the same multiple of the (same) events/s: 200 / 180.
        check(&[Scenario::IntervalMs(200)], params, 60_000.0, Some(10_000.0 * 200.0 / 180.0));
        // Together: cores ×2 and net ÷ 4: map 10 + reduce 40.
        check(&[Scenario::Cores(2.0), Scenario::Net(0.25)], params, 50_000.0, Some(10_000.0 * 100.0 / 150.0));
    }

    /// `two_stage_run` with each map task's 40 ms of cpu recorded as `first` up to `split_at`
    /// and `second` for the rest.
    fn map_tasks_split(first: MonotaskKind, split_at: i64, second: MonotaskKind) -> RunSamples {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        for task in run.tasks.iter_mut().filter(|task| task.stage == 0) {
            task.monotasks = vec![
                crate::model::tests::monotask(first, Resource::Cpu, 0, [0, 0, split_at]),
                crate::model::tests::monotask(second, Resource::Cpu, 0, [split_at, split_at, 40_000]),
            ];
        }
        run
    }

    #[test]
    fn combine_off_adds_the_combines_time_to_the_reduce() {
        // Each map task's last 12 ms of its 40 were its combine: map cpu 20 ms of which
        // combine 6 (÷ 4 cores). Off, at ratio 0.25 (fetched bytes × 4, net 40 ms): the map
        // keeps 20 (partitioning the raw rows in the combine's place); reduce cpu 4 + 6 = 10
        // beside net 40: 20 + 40 = 60 ms.
        let run = map_tasks_split(MonotaskKind::MapCompute, 28_000, MonotaskKind::Combine);
        let params = WhatIfParams { combine_ratio: 0.25, combine_in_baseline: true, ..WhatIfParams::default() };
        assert_eq!(predict(&run, &params, &[]).modelled_us, 30_000.0);
        let off = predict(&run, &params, &[Scenario::Combine(false)]);
        assert!((off.modelled_us - 60_000.0).abs() < 1e-6, "{}", off.modelled_us);
        assumes(&off, "the reduce stage gains the map-side combine's time");
        // With net and disk near free, the reduce's cpu bounds it: map 20 + reduce 4 = 24 ms
        // before, 20 + (4 + 6) = 30 ms without the combine.
        let mut fast = run.clone();
        fast.shape.net_bytes_per_s = Some(1e15);
        fast.shape.disk_bytes_per_s = Some(1e15);
        assert!((predict(&fast, &params, &[]).modelled_us - 24_000.0).abs() < 1.0);
        let off = predict(&fast, &params, &[Scenario::Combine(false)]);
        assert!((off.modelled_us - 30_000.0).abs() < 1.0, "{}", off.modelled_us);
    }

    #[test]
    fn fixed_work_per_source_task_stays_when_the_events_per_task_change() {
        // Each map task reads its source for 10 ms and computes for 30: on 4 cores, source
        // read 5 ms and map compute 15 ms per batch. Calibrated fixed cost per task: 2 ms of
        // source read and 4 of map compute; two tasks over four cores: 1 and 2 ms of the
        // cells. A host of many idle, equal cores, so that only the fixed work differs.
        let mut run = map_tasks_split(MonotaskKind::SourceRead, 10_000, MonotaskKind::MapCompute);
        let fixed = MapTaskFixedCost { source_read_us: 2_000.0, map_compute_us: 4_000.0 };
        run.host = Some(HostCapacity {
            cores: 64,
            busy_cores: 0.0,
            all_busy_core_speed: 1.0,
            link_bytes_per_s: None,
            map_task_fixed: Some(fixed),
        });
        let params = WhatIfParams::default();
        let modelled = |run: &RunSamples, scenarios: &[Scenario]| predict(run, &params, scenarios).modelled_us;
        assert_eq!(modelled(&run, &[]), 30_000.0);
        // Workers × 2: source read 4 ÷ 2 + 1 = 3, map compute 13 ÷ 2 + 2 = 8.5: map 11.5;
        // reduce net 10 × 1.5 ÷ 2 = 7.5: 19 ms (17.5 with nothing fixed).
        assert!((modelled(&run, &[Scenario::Workers(2.0)]) - 19_000.0).abs() < 1e-6);
        // Cores × 2: the map the same 11.5, reduce max(2, 10, 10): 21.5 ms.
        assert!((modelled(&run, &[Scenario::Cores(2.0)]) - 21_500.0).abs() < 1e-6);
        // Interval × 2: source read 4 × 2 + 1 = 9, map compute 13 × 2 + 2 = 28; reduce 20:
        // 57 ms (60 with nothing fixed).
        let longer = predict(&run, &params, &[Scenario::IntervalMs(200)]);
        assert!((longer.modelled_us - 57_000.0).abs() < 1e-6, "{}", longer.modelled_us);
        assert!(longer.assumptions.iter().any(|text| text.contains("2000 µs of source read")), "{longer:?}");
        // A calibration claiming more than the cell holds is cut to 80 % of it: source read
        // fixed 4 of its 5 ms, so workers × 2 gives 0.5 + 4 = 4.5 and the map 13 ms: 20.5.
        run.host.as_mut().expect("host").map_task_fixed = Some(MapTaskFixedCost { source_read_us: 100_000.0, ..fixed });
        let wider = modelled(&run, &[Scenario::Workers(2.0)]);
        assert!((wider - 20_500.0).abs() < 1e-6, "{wider}");
    }

    /// `two_stage_run` on one worker with one core: map cpu 80 ms; reduce cpu 16, net 2 MB ÷
    /// 100 MB/s = 20, disk 1 MB ÷ 50 MB/s = 20 ms: modelled 100 ms. Its cpu monotasks kept
    /// 0.96 cores busy in the 100 ms interval.
    fn one_core_run(host: HostCapacity) -> RunSamples {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        run.shape.workers = 1;
        run.shape.cores_per_worker = 1;
        run.host = Some(host);
        run
    }

    /// One of the prediction's assumptions mentions `text`.
    fn assumes(prediction: &Prediction, text: &str) {
        assert!(
            prediction.assumptions.iter().any(|assumption| assumption.contains(text)),
            "{:?}",
            prediction.assumptions
        );
    }

    fn check_host(run: &RunSamples, scenario: Scenario, modelled_us: f64) {
        let prediction = predict(run, &WhatIfParams::default(), &[scenario]);
        assert!(
            (prediction.modelled_us - modelled_us).abs() < 1e-6,
            "{scenario}: {} ≠ {modelled_us}",
            prediction.modelled_us
        );
        let noted =
            prediction.assumptions.iter().any(|text| text.starts_with(&scenario.to_string()) && text.contains("host"));
        assert!(noted, "no host assumption in {:?}", prediction.assumptions);
    }

    #[test]
    fn a_second_core_of_a_busy_host_is_worth_less_than_a_core() {
        // Two host cores running at 0.8 when both are busy; the host was 1.06 cores busy, so
        // 0.1 of other load. Baseline: demand 1.1 cores, speed 1 − 0.2 × 0.1 = 0.98, factor
        // 1 ÷ 0.98. Two job cores: demand 2.1, sharing 2.1 ÷ 2 = 1.05, speed 0.8, factor
        // 1.3125. Cpu × 1.3125 × 0.98 ÷ 2 = 0.643125: map 51.45 ms; reduce stays 20 ms.
        let run = one_core_run(HostCapacity {
            cores: 2,
            busy_cores: 1.06,
            all_busy_core_speed: 0.8,
            link_bytes_per_s: None,
            map_task_fixed: None,
        });
        check_host(&run, Scenario::Cores(2.0), 80_000.0 * 0.643125 + 20_000.0);
        // A second worker with one core is the same two cores to the host; net and disk halve
        // too (10 ms), so the reduce stage is its cpu, 16 × 0.643125.
        check_host(&run, Scenario::Workers(2.0), 96_000.0 * 0.643125);
        // Without the host's record the ideal model: 40 + 20 ms.
        let mut unrecorded = run.clone();
        unrecorded.host = None;
        let prediction = predict(&unrecorded, &WhatIfParams::default(), &[Scenario::Cores(2.0)]);
        assert_eq!(prediction.modelled_us, 60_000.0);
        assumes(&prediction, "not recorded");
    }

    #[test]
    fn cores_beyond_the_host_share_it() {
        // Perfect cores, four of them, 1.46 busy: 0.5 other load besides the job's 0.96. Two
        // workers × 2 cores (4) → 8: factor (8.5 ÷ 4) ÷ (4.5 ÷ 4) = 17 ÷ 9, halved: map
        // 20 ms × 17 ÷ 18; the reduce stage stays at its net and disk, 10 ms.
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        run.host = Some(HostCapacity {
            cores: 4,
            busy_cores: 1.46,
            all_busy_core_speed: 1.0,
            link_bytes_per_s: None,
            map_task_fixed: None,
        });
        check_host(&run, Scenario::Cores(2.0), 20_000.0 * 17.0 / 18.0 + 10_000.0);
        // Applied together, cores × 2 then workers × 2 compound: 4 → 8 → 16 cores.
        let prediction = predict(&run, &WhatIfParams::default(), &[Scenario::Cores(2.0), Scenario::Workers(2.0)]);
        let map_us = 20_000.0 * (16.5 / 4.0) / (4.5 / 4.0) / 4.0;
        // Reduce: cpu 4 × (16.5 ÷ 4.5) ÷ 4 = 3.67; net 10 × 1.5 ÷ 2 = 7.5; disk 5.
        assert!((prediction.modelled_us - (map_us + 7_500.0)).abs() < 1e-6, "{}", prediction.modelled_us);
    }

    #[test]
    fn decoding_recorded_on_its_own_is_what_goes() {
        // The map task's 40 ms split as 30 ms decode + 10 ms of operators on each worker:
        // decoded input leaves 20 ms ÷ 4 cores = 5 ms of map; reduce 10. The caller's share
        // is not used when the records say.
        let run = map_tasks_split(MonotaskKind::Decode, 30_000, MonotaskKind::MapCompute);
        let params = WhatIfParams { decode_share: 0.6, ..WhatIfParams::default() };
        assert_eq!(predict(&run, &params, &[]).modelled_us, 30_000.0);
        let prediction = predict(&run, &params, &[Scenario::Decoded]);
        assert_eq!(prediction.modelled_us, 15_000.0);
        assumes(&prediction, "decode monotasks");
    }

    #[test]
    fn coordination_that_overruns_the_interval_leaves_no_stable_rate() {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        run.batches[0].coordination_us = 50_000;
        // Scale 90/50; at 10 ms the coordination alone takes 90 ms.
        let prediction = predict(&run, &WhatIfParams::default(), &[Scenario::IntervalMs(10)]);
        assert_eq!(prediction.stable_rate_events_per_s, Some(0.0));
        assert_eq!(prediction.bottleneck, Bottleneck::Coordination);
    }

    #[test]
    fn one_worker_cannot_say_what_the_network_will_carry() {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        run.shape.workers = 1;
        let prediction = predict(&run, &WhatIfParams::default(), &[Scenario::Workers(2.0)]);
        assumes(&prediction, "shuffle network time stays unknown");
    }

    fn arbitrary_monotask() -> impl Strategy<Value = MonotaskRecord> {
        (
            0..MonotaskKind::ALL.len(),
            0..Resource::ALL.len(),
            0u64..5_000_000,
            0i64..1_000_000,
            0i64..50_000,
            0i64..80_000,
        )
            .prop_map(|(kind, resource, bytes, queued, wait, run)| MonotaskRecord {
                kind: MonotaskKind::ALL[kind],
                resource: Resource::ALL[resource],
                bytes,
                queued_at_us: queued,
                started_at_us: queued + wait,
                finished_at_us: queued + wait + run,
            })
    }

    pub(crate) fn arbitrary_run() -> impl Strategy<Value = RunSamples> {
        let task = (0u32..3, 0u64..4, 0u32..4, 0u64..10_000, proptest::collection::vec(arbitrary_monotask(), 0..6))
            .prop_map(|(stage, batch, worker, records_in, monotasks)| TaskSample {
                stage,
                partition: worker,
                batch,
                worker,
                started_at_us: 0,
                finished_at_us: 1_000_000,
                records_in,
                monotasks,
            });
        let batch = (0i64..1_000_000, 0i64..500_000, 0i64..100_000, 0u64..100_000).prop_map(
            |(closed, took, coordination_us, events)| BatchSample {
                batch: 0,
                closed_at_us: closed,
                first_task_started_at_us: closed,
                finished_at_us: closed + took,
                coordination_us,
                events,
                event_wait_us: None,
                committed_at_us: None,
            },
        );
        let throughput = proptest::option::of(1e5f64..1e9);
        // An all-busy core at half its lone speed or better: below that, two cores really are
        // slower than one, and "more cores never predict slower" would not hold.
        let fixed = proptest::option::of((0.0f64..5_000.0, 0.0f64..5_000.0));
        let host = proptest::option::of((1u32..9, 0.0f64..4.0, 0.5f64..=1.0, fixed).prop_map(
            |(cores, busy_cores, all_busy_core_speed, fixed)| HostCapacity {
                cores,
                busy_cores,
                all_busy_core_speed,
                link_bytes_per_s: None,
                map_task_fixed:
                    fixed.map(|(source_read_us, map_compute_us)| MapTaskFixedCost { source_read_us, map_compute_us }),
            },
        ));
        (
            1u32..5,
            1u32..9,
            1u64..2_000,
            throughput.clone(),
            throughput,
            proptest::collection::vec(batch, 0..4),
            proptest::collection::vec(task, 0..12),
            host,
        )
            .prop_map(|(workers, cores_per_worker, batch_interval_ms, net, disk, batches, tasks, host)| {
                RunSamples {
                    shape: ClusterShape {
                        workers,
                        cores_per_worker,
                        batch_interval_ms,
                        net_bytes_per_s: net,
                        disk_bytes_per_s: disk,
                    },
                    batches,
                    tasks,
                    host,
                }
            })
    }

    proptest! {
        /// The unchanged configuration, stated as no scenario or as every scenario at its
        /// identity, predicts exactly the model's own baseline.
        #[test]
        fn the_unchanged_configuration_predicts_the_baseline(run in arbitrary_run(), combine_in_baseline: bool) {
            let baseline = crate::model::model(&run);
            let params = WhatIfParams { decode_share: 0.0, combine_ratio: 0.4, combine_in_baseline };
            let mut identity = vec![
                Scenario::Cores(1.0),
                Scenario::Workers(1.0),
                Scenario::Net(1.0),
                Scenario::Disk(1.0),
                Scenario::Combine(combine_in_baseline),
                Scenario::IntervalMs(run.shape.batch_interval_ms),
            ];
            // With decode share 0, "decoded" changes nothing unless decoding was recorded.
            if !run.records_decoding() {
                identity.push(Scenario::Decoded);
            }
            for scenarios in [&[][..], &identity[..]] {
                let prediction = predict(&run, &params, scenarios);
                prop_assert_eq!(prediction.modelled_us, baseline.modelled_us);
                prop_assert_eq!(prediction.predicted_batch_us, baseline.measured_us);
                prop_assert_eq!(prediction.interval_us, baseline.interval_us);
            }
        }

        /// More of any resource never makes the prediction slower. Cores are the exception
        /// when each task has fixed work: more cores run more tasks, each paying it, and on a
        /// host whose cores slow down as more of them are busy (or that has fewer than the job
        /// asks for) that extra work can outweigh the division of the rest.
        #[test]
        fn more_resources_never_predict_slower(run in arbitrary_run(), k in 1.0f64..8.0) {
            let base = predict(&run, &WhatIfParams::default(), &[]).predicted_batch_us;
            let fixed_work = run.host.is_some_and(|host| host.map_task_fixed.is_some());
            let more_cores = (!fixed_work).then_some(Scenario::Cores(k));
            for scenario in more_cores.into_iter().chain([Scenario::Net(k), Scenario::Disk(k)]) {
                let faster = predict(&run, &WhatIfParams::default(), &[scenario]).predicted_batch_us;
                prop_assert!(faster <= base, "{} predicted {} > {}", scenario, faster, base);
            }
        }
    }
}
