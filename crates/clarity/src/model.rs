//! The per-resource model (`docs/design/performance-model.md`): per stage, the ideal time on
//! each resource, which the records can tell apart because every monotask uses one resource;
//! the modelled time is their maximum and the argmax is the bottleneck. Also the
//! cases no resource explains (source-bound, coordination-bound), and utilization and queue
//! length per worker, resource and second.
//!
//! ```text
//!  RunSamples ──terms()──▶ JobTerms (ideal µs per batch, per stage × kind × resource)
//!                              │ model_of()
//!                              ▼
//!  JobModel: per stage max(cpu, net, disk); per batch max(Σ stages, coordination)
//! ```
//!
//! Every figure is per batch (the run's totals divided by its batches), so a model of a run
//! compares with its batch interval directly.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sample::{merged, overlap_us, union_us, BatchSample, ClusterShape, RunSamples};
use sleet_monotask::{MonotaskKind, MonotaskRecord, Resource};

const KINDS: usize = MonotaskKind::ALL.len();
const RESOURCES: usize = Resource::ALL.len();

/// A job is source-bound when both its modelled and its measured batch time stay under this
/// share of the interval: no resource is near its limit, so the rate is the input's. Half
/// leaves room for the noise of one machine's measurements without calling a loaded job idle.
pub const SOURCE_BOUND_SHARE: f64 = 0.5;

/// What limits a job: one of its resources, the driver's coordination, or its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    Cpu,
    Net,
    Disk,
    Coordination,
    Source,
}

impl fmt::Display for Bottleneck {
    /// The name the result files use: `cpu`, `net`, `disk`, `coordination`, `source`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Bottleneck::Cpu => "cpu",
            Bottleneck::Net => "net",
            Bottleneck::Disk => "disk",
            Bottleneck::Coordination => "coordination",
            Bottleneck::Source => "source",
        };
        f.write_str(name)
    }
}

impl From<Resource> for Bottleneck {
    fn from(resource: Resource) -> Self {
        match resource {
            Resource::Cpu => Bottleneck::Cpu,
            Resource::Net => Bottleneck::Net,
            Resource::Disk => Bottleneck::Disk,
        }
    }
}

/// Bytes/s one worker's network and disk sustain, as the model uses them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Throughputs {
    /// `None`: no bytes moved on that resource with measurable busy time, so its ideal time
    /// is zero whatever the throughput.
    pub net_bytes_per_s: Option<f64>,
    pub disk_bytes_per_s: Option<f64>,
}

/// The ideal time of one stage per batch, per monotask kind and resource: CPU run time ÷ the
/// cluster's cores, bytes ÷ the cluster's throughput for network and disk. Kinds stay apart
/// because what-if scenarios change some kinds only (decoding, map-side combine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTerms {
    pub stage: u32,
    pub ideal_us: [[f64; RESOURCES]; KINDS],
}

impl StageTerms {
    pub fn ideal(&self, kind: MonotaskKind, resource: Resource) -> f64 {
        self.ideal_us[kind as usize][resource as usize]
    }

    pub fn resource_us(&self, resource: Resource) -> f64 {
        self.ideal_us.iter().map(|by_resource| by_resource[resource as usize]).sum()
    }

    /// The modelled stage time and its bottleneck; ties go to the first of `Resource::ALL`.
    pub fn modelled(&self) -> (f64, Resource) {
        Resource::ALL.iter().fold((self.resource_us(Resource::Cpu), Resource::Cpu), |best, &resource| {
            let time = self.resource_us(resource);
            if time > best.0 {
                (time, resource)
            } else {
                best
            }
        })
    }
}

/// The model's terms for a run, per batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobTerms {
    pub stages: Vec<StageTerms>,
    /// Per batch, the larger of the coordination the driver recorded and the time the batch
    /// waited on its scheduler (`scheduler_wait_us`).
    pub coordination_us: f64,
    /// Mean time from a batch's close to its first task's start: not processing, but not
    /// waiting for input either, so the source-bound test counts it as busy time.
    #[serde(default)]
    pub launch_us: f64,
}

impl JobTerms {
    /// Stages run one after the other within a batch, so their modelled times add up.
    pub fn execution_us(&self) -> f64 {
        self.stages.iter().map(|stage| stage.modelled().0).sum()
    }

    /// Coordination of one batch overlaps the execution of others (groups in flight), so it
    /// is one more term of the maximum rather than an addend.
    pub fn modelled_us(&self) -> f64 {
        self.execution_us().max(self.coordination_us)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageModel {
    pub stage: u32,
    pub cpu_us: f64,
    pub net_us: f64,
    pub disk_us: f64,
    pub modelled_us: f64,
    pub bottleneck: Resource,
}

/// The model of a run, per batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobModel {
    pub stages: Vec<StageModel>,
    pub throughputs: Throughputs,
    pub execution_us: f64,
    pub coordination_us: f64,
    pub modelled_us: f64,
    /// Mean measured processing time of the batches (`BatchSample::processing_us`).
    pub measured_us: f64,
    pub interval_us: f64,
    /// Per resource, the modelled time of the stages it bottlenecks: the argmax of these (and
    /// coordination) is the job's bottleneck, as its terms sum to `execution_us`.
    pub contribution_us: BTreeMap<Resource, f64>,
    pub bottleneck: Bottleneck,
}

/// The throughputs the model divides bytes by: the shape's when given, otherwise what the
/// records show: bytes ÷ the time the resource was busy on each worker (concurrent monotasks
/// counted once). A resource that never ran near its limit shows less than it could do, so
/// its ideal time is an upper bound.
pub fn throughputs(run: &RunSamples) -> Throughputs {
    let derive = |resource| derived_throughput(run, resource);
    Throughputs {
        net_bytes_per_s: run.shape.net_bytes_per_s.or_else(|| derive(Resource::Net)),
        disk_bytes_per_s: run.shape.disk_bytes_per_s.or_else(|| derive(Resource::Disk)),
    }
}

fn derived_throughput(run: &RunSamples, resource: Resource) -> Option<f64> {
    let mut bytes = 0u64;
    let mut busy_by_worker: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    for task in &run.tasks {
        for monotask in task.monotasks_on(resource) {
            bytes += monotask.bytes;
            busy_by_worker.entry(task.worker).or_default().push((monotask.started_at_us, monotask.finished_at_us));
        }
    }
    let busy_us: i64 = busy_by_worker.into_values().map(crate::sample::union_us).sum();
    (bytes > 0 && busy_us > 0).then(|| bytes as f64 / (busy_us as f64 / 1e6))
}

/// The ideal µs per batch of each stage, kind and resource.
pub fn terms(run: &RunSamples) -> JobTerms {
    let throughputs = throughputs(run);
    let batches = run.batch_count();
    let mut raw: BTreeMap<u32, [[f64; RESOURCES]; KINDS]> = BTreeMap::new();
    for task in &run.tasks {
        let cells = raw.entry(task.stage).or_insert([[0.0; RESOURCES]; KINDS]);
        for monotask in &task.monotasks {
            cells[monotask.kind as usize][monotask.resource as usize] += raw_amount(monotask);
        }
    }
    let stages = raw
        .into_iter()
        .map(|(stage, cells)| StageTerms {
            stage,
            ideal_us: cells.map(|by_resource| {
                let mut ideal = [0.0; RESOURCES];
                for resource in Resource::ALL {
                    let amount = by_resource[resource as usize];
                    ideal[resource as usize] = ideal_us(amount, resource, &run.shape, &throughputs) / batches;
                }
                ideal
            }),
        })
        .collect();
    let task_spans = task_spans_by_batch(run);
    let no_spans = Vec::new();
    let coordination_us = mean(run.batches.iter().map(|batch| {
        let spans = task_spans.get(&batch.batch).unwrap_or(&no_spans);
        batch.coordination_us.max(scheduler_wait_us(batch, spans)) as f64
    }));
    let launch_us = mean(run.batches.iter().map(|batch| launch_delay_us(batch) as f64));
    JobTerms { stages, coordination_us, launch_us }
}

fn task_spans_by_batch(run: &RunSamples) -> BTreeMap<u64, Vec<(i64, i64)>> {
    let mut spans: BTreeMap<u64, Vec<(i64, i64)>> = BTreeMap::new();
    for task in &run.tasks {
        spans.entry(task.batch).or_default().push((task.started_at_us, task.finished_at_us));
    }
    spans
}

/// From a batch's close to its first task's start: the launch under bsp (the driver composes
/// and sends the tasks only once the batch has closed); about zero under group scheduling,
/// whose tasks wait on their worker for the close.
fn launch_delay_us(batch: &BatchSample) -> i64 {
    (batch.first_task_started_at_us - batch.closed_at_us).max(0)
}

/// The time a batch waited on its scheduler rather than on a resource: its launch delay, plus
/// the time within its processing in which none of its tasks ran (under bsp, the barrier
/// between stages and the next launch). The driver's own record of a bsp batch holds only its
/// own work on it, while the round trips to the workers, their wake-ups and the one-by-one
/// sending of the tasks are what limits small batches on many workers. Under group
/// scheduling the gaps are small (tasks wait on their workers), unless a worker's core is
/// busy with earlier batches, which the cpu term then shows larger still.
pub fn scheduler_wait_us(batch: &BatchSample, task_spans: &[(i64, i64)]) -> i64 {
    launch_delay_us(batch) + untasked_us(batch, task_spans)
}

/// The part of a batch's processing time in which none of its tasks ran.
pub fn untasked_us(batch: &BatchSample, task_spans: &[(i64, i64)]) -> i64 {
    let start = batch.closed_at_us.max(batch.first_task_started_at_us);
    let end = batch.finished_at_us;
    let covered = union_us(task_spans.iter().map(|&(from, to)| (from.max(start), to.min(end))));
    ((end - start) - covered).max(0)
}

/// Mean over the run's batches of the cpu time the busiest worker spent on each stage beyond
/// the workers' mean, per core, summed over the stages: the part of a batch's time that
/// uneven work adds to the ideal, which the ideal-time model assumes away. It grows and
/// shrinks with the work (a worker with a larger share keeps that share); the rest of what
/// the model does not explain (task launch, hand-offs between monotasks, reports) does not.
pub fn cpu_skew_mean_us(run: &RunSamples) -> f64 {
    let workers = run.shape.workers.max(1) as usize;
    let cores_per_worker = f64::from(run.shape.cores_per_worker.max(1));
    let mut by_batch_stage: BTreeMap<(u64, u32), BTreeMap<u32, f64>> = BTreeMap::new();
    for task in &run.tasks {
        let cpu_us: i64 = task.monotasks_on(Resource::Cpu).map(|monotask| monotask.run_us().max(0)).sum();
        *by_batch_stage.entry((task.batch, task.stage)).or_default().entry(task.worker).or_default() +=
            cpu_us as f64 / cores_per_worker;
    }
    let mut by_batch: BTreeMap<u64, f64> = BTreeMap::new();
    for ((batch, _), per_worker) in by_batch_stage {
        let busiest = per_worker.values().copied().fold(0.0, f64::max);
        // Workers without a task of the stage count as idle ones.
        let mean = per_worker.values().sum::<f64>() / workers.max(per_worker.len()) as f64;
        *by_batch.entry(batch).or_default() += busiest - mean;
    }
    mean(run.batches.iter().map(|batch| by_batch.get(&batch.batch).copied().unwrap_or(0.0)))
}

/// What a monotask adds to its cell before scaling: run time for the CPU, bytes otherwise.
fn raw_amount(monotask: &MonotaskRecord) -> f64 {
    match monotask.resource {
        Resource::Cpu => monotask.run_us().max(0) as f64,
        Resource::Net | Resource::Disk => monotask.bytes as f64,
    }
}

fn ideal_us(amount: f64, resource: Resource, shape: &ClusterShape, throughputs: &Throughputs) -> f64 {
    let per_worker = match resource {
        Resource::Cpu => return amount / shape.cores(),
        Resource::Net => throughputs.net_bytes_per_s,
        Resource::Disk => throughputs.disk_bytes_per_s,
    };
    match per_worker {
        Some(bytes_per_s) if bytes_per_s > 0.0 => amount / (bytes_per_s * f64::from(shape.workers.max(1))) * 1e6,
        _ => 0.0,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), value| (sum + value, count + 1));
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

/// The model of a run: per stage and per batch, with its bottleneck.
pub fn model(run: &RunSamples) -> JobModel {
    let terms = terms(run);
    model_of(&terms, throughputs(run), run.mean_processing_us(), run.shape.interval_us())
}

/// The model of given terms (a run's, or a what-if scenario's).
pub fn model_of(terms: &JobTerms, throughputs: Throughputs, measured_us: f64, interval_us: f64) -> JobModel {
    let mut contribution_us: BTreeMap<Resource, f64> = Resource::ALL.iter().map(|&resource| (resource, 0.0)).collect();
    let stages: Vec<StageModel> = terms
        .stages
        .iter()
        .map(|stage| {
            let (modelled_us, bottleneck) = stage.modelled();
            *contribution_us.entry(bottleneck).or_default() += modelled_us;
            StageModel {
                stage: stage.stage,
                cpu_us: stage.resource_us(Resource::Cpu),
                net_us: stage.resource_us(Resource::Net),
                disk_us: stage.resource_us(Resource::Disk),
                modelled_us,
                bottleneck,
            }
        })
        .collect();
    let modelled_us = terms.modelled_us();
    let busy_us = measured_us + terms.launch_us;
    let bottleneck = classify(&contribution_us, terms.coordination_us, modelled_us, busy_us, interval_us);
    JobModel {
        stages,
        throughputs,
        execution_us: terms.execution_us(),
        coordination_us: terms.coordination_us,
        modelled_us,
        measured_us,
        interval_us,
        contribution_us,
        bottleneck,
    }
}

/// Source-bound first: a job far from every limit waits for input whichever term is largest.
/// Then coordination when it is the largest term, else the resource contributing most.
/// `busy_us` is the measured batch time from the close: processing and the launch before it.
fn classify(
    contribution_us: &BTreeMap<Resource, f64>,
    coordination_us: f64,
    modelled_us: f64,
    busy_us: f64,
    interval_us: f64,
) -> Bottleneck {
    let idle = SOURCE_BOUND_SHARE * interval_us;
    if interval_us > 0.0 && modelled_us <= idle && busy_us <= idle {
        return Bottleneck::Source;
    }
    let (resource_us, resource) = Resource::ALL
        .iter()
        .map(|&resource| (contribution_us.get(&resource).copied().unwrap_or(0.0), resource))
        .fold((f64::NEG_INFINITY, Resource::Cpu), |best, next| if next.0 > best.0 { next } else { best });
    if coordination_us > resource_us {
        Bottleneck::Coordination
    } else {
        resource.into()
    }
}

/// One worker's use of one resource over one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceSecond {
    pub worker: u32,
    pub resource: Resource,
    /// Seconds since the epoch (worker clock) at the start of the bucket.
    pub second: i64,
    /// CPU: run time ÷ (cores × 1 s). Network and disk: the share of the second in which at
    /// least one monotask ran, because their schedulers run several transfers at once and a
    /// sum would exceed 1 without the resource being any busier.
    pub utilization: f64,
    /// Time-average of monotasks queued and not yet started.
    pub queue_len_mean: f64,
}

const SECOND_US: i64 = 1_000_000;

/// Utilization and queue length per worker, resource and second, for every second from the
/// run's first monotask to its last and every (worker, resource) that ran a monotask; idle
/// seconds appear as zeros so a plot shows them.
pub fn utilization(run: &RunSamples) -> Vec<ResourceSecond> {
    let mut running: BTreeMap<(u32, Resource), Vec<(i64, i64)>> = BTreeMap::new();
    let mut queued: BTreeMap<(u32, Resource), Vec<(i64, i64)>> = BTreeMap::new();
    for task in &run.tasks {
        for monotask in &task.monotasks {
            let key = (task.worker, monotask.resource);
            running.entry(key).or_default().push((monotask.started_at_us, monotask.finished_at_us));
            queued.entry(key).or_default().push((monotask.queued_at_us, monotask.started_at_us));
        }
    }
    let all = running.values().chain(queued.values()).flatten().filter(|(start, end)| end > start);
    let Some((first, last)) = all.fold(None, |range: Option<(i64, i64)>, &(start, end)| {
        Some(range.map_or((start, end), |(low, high)| (low.min(start), high.max(end))))
    }) else {
        return Vec::new();
    };
    let seconds = first.div_euclid(SECOND_US)..=(last - 1).div_euclid(SECOND_US);
    let cores = f64::from(run.shape.cores_per_worker.max(1));
    let mut out = Vec::new();
    for (&(worker, resource), intervals) in &running {
        let (busy, capacity) = match resource {
            Resource::Cpu => (intervals.clone(), cores),
            Resource::Net | Resource::Disk => (merged(intervals.iter().copied()), 1.0),
        };
        let busy = per_second(&busy);
        let waiting = per_second(queued.get(&(worker, resource)).map_or(&[][..], Vec::as_slice));
        for second in seconds.clone() {
            let of =
                |buckets: &BTreeMap<i64, i64>| buckets.get(&second).copied().unwrap_or(0) as f64 / SECOND_US as f64;
            out.push(ResourceSecond {
                worker,
                resource,
                second,
                utilization: of(&busy) / capacity,
                queue_len_mean: of(&waiting),
            });
        }
    }
    out
}

/// Time of the intervals falling in each second, summed.
fn per_second(intervals: &[(i64, i64)]) -> BTreeMap<i64, i64> {
    let mut buckets = BTreeMap::new();
    for &(start, end) in intervals.iter().filter(|(start, end)| end > start) {
        for second in start.div_euclid(SECOND_US)..=(end - 1).div_euclid(SECOND_US) {
            let bucket = (second * SECOND_US, (second + 1) * SECOND_US);
            *buckets.entry(second).or_insert(0) += overlap_us((start, end), bucket);
        }
    }
    buckets
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sample::{BatchSample, TaskSample};

    pub(crate) fn monotask(kind: MonotaskKind, resource: Resource, bytes: u64, at: [i64; 3]) -> MonotaskRecord {
        MonotaskRecord { kind, resource, bytes, queued_at_us: at[0], started_at_us: at[1], finished_at_us: at[2] }
    }

    pub(crate) fn task(stage: u32, batch: u64, worker: u32, monotasks: Vec<MonotaskRecord>) -> TaskSample {
        let started_at_us = monotasks.iter().map(|m| m.queued_at_us).min().unwrap_or(0);
        let finished_at_us = monotasks.iter().map(|m| m.finished_at_us).max().unwrap_or(0);
        TaskSample {
            stage,
            partition: worker,
            batch,
            worker,
            started_at_us,
            finished_at_us,
            records_in: 100,
            monotasks,
        }
    }

    pub(crate) fn batch(batch: u64, closed: i64, finished: i64, coordination_us: i64) -> BatchSample {
        BatchSample {
            batch,
            closed_at_us: closed,
            first_task_started_at_us: closed,
            finished_at_us: finished,
            coordination_us,
            events: 1000,
            event_wait_us: None,
            committed_at_us: None,
        }
    }

    pub(crate) fn shape(workers: u32, cores_per_worker: u32, interval_ms: u64) -> ClusterShape {
        ClusterShape {
            workers,
            cores_per_worker,
            batch_interval_ms: interval_ms,
            net_bytes_per_s: None,
            disk_bytes_per_s: None,
        }
    }

    use MonotaskKind::*;
    use Resource::*;

    /// Two workers × 2 cores, 100 ms interval, one batch: map 2 × 40 ms cpu, a fetch of 1 MB
    /// per reduce task, reduce 2 × 8 ms cpu, a 0.5 MB disk sink write per reduce task that
    /// ends at `finished`.
    pub(crate) fn two_stage_run(net_bytes_per_s: f64, disk_bytes_per_s: f64, finished: i64) -> RunSamples {
        let mut tasks = Vec::new();
        for worker in 0..2 {
            tasks.push(task(0, 0, worker, vec![monotask(MapCompute, Cpu, 0, [0, 0, 40_000])]));
            tasks.push(task(
                1,
                0,
                worker,
                vec![
                    monotask(ShuffleFetch, Net, 1_000_000, [40_000, 40_000, 50_000]),
                    monotask(ReduceCompute, Cpu, 0, [50_000, 50_000, 58_000]),
                    // Its write ends the batch: a batch ends with its last task.
                    monotask(SinkWrite, Disk, 500_000, [58_000, 58_000, finished.max(60_000)]),
                ],
            ));
        }
        RunSamples {
            shape: ClusterShape {
                net_bytes_per_s: Some(net_bytes_per_s),
                disk_bytes_per_s: Some(disk_bytes_per_s),
                ..shape(2, 2, 100)
            },
            batches: vec![batch(0, 0, finished, 1_000)],
            tasks,
            host: None,
        }
    }

    fn check(run: &RunSamples, stages: &[(f64, f64, f64, Resource)], modelled_us: f64, bottleneck: Bottleneck) {
        let model = model(run);
        let got: Vec<(f64, f64, f64, Resource)> =
            model.stages.iter().map(|s| (s.cpu_us, s.net_us, s.disk_us, s.bottleneck)).collect();
        assert_eq!(got, stages, "stages");
        assert_eq!(model.modelled_us, modelled_us, "modelled");
        assert_eq!(model.bottleneck, bottleneck, "bottleneck");
    }

    #[test]
    fn cpu_bound_two_stage_job() {
        // Map: 80 ms cpu / 4 cores = 20 ms. Reduce: cpu 16/4 = 4 ms, net 2 MB / (100 MB/s × 2)
        // = 10 ms, disk 1 MB / (50 MB/s × 2) = 10 ms: tie goes to net (before disk).
        check(
            &two_stage_run(100e6, 50e6, 90_000),
            &[(20_000.0, 0.0, 0.0, Cpu), (4_000.0, 10_000.0, 10_000.0, Net)],
            30_000.0,
            Bottleneck::Cpu,
        );
    }

    #[test]
    fn net_bound_when_the_network_is_slow() {
        // Net 2 MB / (10 MB/s × 2) = 100 ms in the reduce stage: 20 + 100 = 120 ms.
        check(
            &two_stage_run(10e6, 50e6, 150_000),
            &[(20_000.0, 0.0, 0.0, Cpu), (4_000.0, 100_000.0, 10_000.0, Net)],
            120_000.0,
            Bottleneck::Net,
        );
    }

    #[test]
    fn disk_bound_when_the_disk_is_slow() {
        check(
            &two_stage_run(100e6, 2e6, 300_000),
            &[(20_000.0, 0.0, 0.0, Cpu), (4_000.0, 10_000.0, 250_000.0, Disk)],
            270_000.0,
            Bottleneck::Disk,
        );
    }

    #[test]
    fn source_bound_when_far_from_every_limit() {
        // Modelled 30 ms and measured 40 ms, both under half of a 100 ms interval.
        let run = two_stage_run(100e6, 50e6, 40_000);
        assert_eq!(model(&run).bottleneck, Bottleneck::Source);
        // The same work measured at 90 ms is not waiting for input.
        assert_eq!(model(&two_stage_run(100e6, 50e6, 90_000)).bottleneck, Bottleneck::Cpu);
    }

    #[test]
    fn coordination_bound_when_coordination_is_the_largest_term() {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        run.batches[0].coordination_us = 45_000;
        let model = model(&run);
        assert_eq!((model.modelled_us, model.bottleneck), (45_000.0, Bottleneck::Coordination));
        assert_eq!(model.execution_us, 30_000.0);
    }

    #[test]
    fn waiting_on_the_scheduler_counts_as_coordination() {
        // A bsp batch closed at 0: its map task runs 2–3 ms, its reduce task 5–6 ms, the
        // batch ends at 6 ms. Launch 2 ms + the 2 ms barrier between the stages = 4 ms, more
        // than the 0.1 ms the driver recorded or the 1 + 1 ms of cpu.
        let mut run = RunSamples {
            shape: shape(1, 1, 10),
            batches: vec![BatchSample { first_task_started_at_us: 2_000, ..batch(0, 0, 6_000, 100) }],
            tasks: vec![
                task(0, 0, 0, vec![monotask(MapCompute, Cpu, 0, [2_000, 2_000, 3_000])]),
                task(1, 0, 0, vec![monotask(ReduceCompute, Cpu, 0, [5_000, 5_000, 6_000])]),
            ],
            host: None,
        };
        let spans = [(2_000, 3_000), (5_000, 6_000)];
        assert_eq!(scheduler_wait_us(&run.batches[0], &spans), 4_000);
        let model = model(&run);
        assert_eq!((model.coordination_us, model.execution_us), (4_000.0, 2_000.0));
        // Processing 4 ms is under half the 10 ms interval, but with the 2 ms launch the
        // batch is busy 6 ms of it: not waiting for input.
        assert_eq!(model.bottleneck, Bottleneck::Coordination);
        // The same batch in a 20 ms interval is waiting for input.
        run.shape.batch_interval_ms = 20;
        assert_eq!(super::model(&run).bottleneck, Bottleneck::Source);
    }

    #[test]
    fn throughput_is_derived_from_busy_time_when_not_given() {
        // Two concurrent 1 MB fetches over the same 10 ms on one worker: 2 MB in 10 ms busy
        // = 200 MB/s, not the 100 MB/s a sum of run times would say.
        let tasks = vec![task(
            1,
            0,
            0,
            vec![
                monotask(ShuffleFetch, Net, 1_000_000, [0, 0, 10_000]),
                monotask(ShuffleFetch, Net, 1_000_000, [0, 0, 10_000]),
            ],
        )];
        let run = RunSamples { shape: shape(1, 1, 100), batches: vec![], tasks, host: None };
        assert_eq!(throughputs(&run).net_bytes_per_s, Some(200e6));
        assert_eq!(throughputs(&run).disk_bytes_per_s, None);
        assert_eq!(model(&run).stages[0].net_us, 10_000.0);
    }

    #[test]
    fn figures_are_per_batch() {
        let mut run = two_stage_run(100e6, 50e6, 90_000);
        let again: Vec<TaskSample> = run.tasks.iter().cloned().map(|task| TaskSample { batch: 1, ..task }).collect();
        run.tasks.extend(again);
        assert_eq!(model(&run).modelled_us, 30_000.0);
    }

    fn check_seconds(run: &RunSamples, expected: &[(u32, Resource, i64, f64, f64)]) {
        let got: Vec<(u32, Resource, i64, f64, f64)> = utilization(run)
            .iter()
            .map(|s| (s.worker, s.resource, s.second, s.utilization, s.queue_len_mean))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn utilization_and_queue_length_per_second() {
        let second = 1_000_000;
        let tasks = vec![
            // Worker 0, 2 cores: 1.5 s of cpu run in second 0 and 0.5 s in second 1;
            // one monotask queued for 0.5 s in second 0.
            task(0, 0, 0, vec![monotask(MapCompute, Cpu, 0, [0, 0, second])]),
            task(0, 0, 0, vec![monotask(MapCompute, Cpu, 0, [0, second / 2, 3 * second / 2])]),
            // Worker 1: two overlapping fetches count once: busy 0.25 s in second 1.
            task(
                1,
                0,
                1,
                vec![
                    monotask(ShuffleFetch, Net, 1, [second, second, second + 250_000]),
                    monotask(ShuffleFetch, Net, 1, [second, second + 100_000, second + 200_000]),
                ],
            ),
        ];
        let run = RunSamples { shape: shape(2, 2, 100), batches: vec![], tasks, host: None };
        check_seconds(
            &run,
            &[(0, Cpu, 0, 0.75, 0.5), (0, Cpu, 1, 0.25, 0.0), (1, Net, 0, 0.0, 0.0), (1, Net, 1, 0.25, 0.1)],
        );
    }
}
