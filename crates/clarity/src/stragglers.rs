//! Straggler causes (`docs/design/performance-model.md`): tasks much slower than their stage's
//! median, each with the cause its monotasks show, counted per cause.
//!
//! The median is over the stage's tasks across the whole run, not within one batch: a batch
//! holds one task per partition, often two to four, and with so few a straggler drags its own
//! batch's median up. The price: a run whose rate changes a lot compares tasks of different
//! loads, which shows up as `more_input`, the cause that is then true.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sample::{median, union_us, TaskSample};
use sleet_monotask::Resource;

/// A task is a straggler when it takes longer than this many times its stage's median.
pub const STRAGGLER_FACTOR: f64 = 1.5;
/// A task shorter than this is never a straggler, however many medians it takes: a cross-core
/// wake-up costs about 100 µs on the small VMs this is developed on, so a task of a few dozen
/// microseconds takes several times its peers' time through one wake-up, which says nothing
/// about its resources. A millisecond is ten wake-ups.
pub const STRAGGLER_DURATION_MIN_US: i64 = 1_000;
/// More input: records in, or bytes, at least this many times the stage's median.
pub const MORE_INPUT_FACTOR: f64 = 1.5;
/// A slow resource: run time per byte (or per record, for monotasks without bytes) at least
/// this many times the stage's median for that resource. Higher than the straggler factor
/// because per-unit costs of small monotasks are noisy.
pub const SLOW_RESOURCE_FACTOR: f64 = 2.0;
/// Descheduled: more than this share of the task's wall time has no monotask queued or
/// running.
pub const UNACCOUNTED_SHARE: f64 = 0.5;

/// Why a straggler was slow, checked in this order: time no monotask accounts for explains
/// the rest; more input explains slow monotasks; queueing explains a late start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StragglerCause {
    /// The task's wall time is mostly outside its monotasks: the process was descheduled
    /// (or, indistinguishably from the records, the task waited for something that is not a
    /// monotask, such as an upstream block).
    Descheduled,
    MoreInput,
    /// Its monotasks waited in a resource's queue longer than they ran.
    Queueing(Resource),
    /// A resource did its work more slowly per byte than for the stage's other tasks.
    SlowResource(Resource),
    Unknown,
}

impl fmt::Display for StragglerCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |resource: &Resource| format!("{resource:?}").to_lowercase();
        match self {
            StragglerCause::Descheduled => write!(f, "descheduled"),
            StragglerCause::MoreInput => write!(f, "more_input"),
            StragglerCause::Queueing(resource) => write!(f, "queueing_{}", name(resource)),
            StragglerCause::SlowResource(resource) => write!(f, "slow_{}", name(resource)),
            StragglerCause::Unknown => write!(f, "unknown"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    pub batch: u64,
    pub stage: u32,
    pub partition: u32,
    pub worker: u32,
    pub duration_us: i64,
    pub stage_median_us: f64,
    pub cause: StragglerCause,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StragglerReport {
    /// Tasks examined.
    pub tasks: usize,
    pub stragglers: Vec<Straggler>,
    /// Stragglers per cause, by the cause's name (`slow_net`, `queueing_cpu`, …).
    pub counts: BTreeMap<String, usize>,
}

/// The medians a task is compared with: those of its stage.
#[derive(Default)]
struct Peers {
    duration_us: f64,
    records_in: f64,
    bytes: f64,
    /// Per resource and basis (per byte or per record), the median run time per unit.
    unit_cost: BTreeMap<(Resource, bool), f64>,
}

/// Finds the stragglers among `tasks` and names their causes.
pub fn stragglers(tasks: &[TaskSample]) -> StragglerReport {
    let mut by_stage: BTreeMap<u32, Vec<&TaskSample>> = BTreeMap::new();
    for task in tasks {
        by_stage.entry(task.stage).or_default().push(task);
    }
    let mut found = Vec::new();
    for stage_tasks in by_stage.values() {
        let peers = peers(stage_tasks);
        for task in stage_tasks {
            let slow = task.duration_us() as f64 > STRAGGLER_FACTOR * peers.duration_us;
            if slow && task.duration_us() >= STRAGGLER_DURATION_MIN_US {
                found.push(Straggler {
                    batch: task.batch,
                    stage: task.stage,
                    partition: task.partition,
                    worker: task.worker,
                    duration_us: task.duration_us(),
                    stage_median_us: peers.duration_us,
                    cause: cause(task, &peers),
                });
            }
        }
    }
    let mut counts = BTreeMap::new();
    for straggler in &found {
        *counts.entry(straggler.cause.to_string()).or_insert(0) += 1;
    }
    StragglerReport { tasks: tasks.len(), stragglers: found, counts }
}

fn peers(tasks: &[&TaskSample]) -> Peers {
    let of = |value: &dyn Fn(&TaskSample) -> f64| {
        median(&tasks.iter().map(|task| value(task)).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    let mut costs: BTreeMap<(Resource, bool), Vec<f64>> = BTreeMap::new();
    for task in tasks {
        for resource in Resource::ALL {
            if let Some((per_byte, cost)) = unit_cost(task, resource) {
                costs.entry((resource, per_byte)).or_default().push(cost);
            }
        }
    }
    Peers {
        duration_us: of(&|task| task.duration_us() as f64),
        records_in: of(&|task| task.records_in as f64),
        bytes: of(&|task| task.bytes() as f64),
        unit_cost: costs.into_iter().filter_map(|(key, values)| median(&values).map(|m| (key, m))).collect(),
    }
}

/// Run time per byte on `resource`, or per record in when its monotasks carry no bytes
/// (compute on a generator's rows); `None` when the task did not use the resource.
fn unit_cost(task: &TaskSample, resource: Resource) -> Option<(bool, f64)> {
    let (run_us, bytes, any) = task
        .monotasks_on(resource)
        .fold((0i64, 0u64, false), |(run, bytes, _), m| (run + m.run_us().max(0), bytes + m.bytes, true));
    match (any, bytes, task.records_in) {
        (false, _, _) => None,
        (true, bytes, _) if bytes > 0 => Some((true, run_us as f64 / bytes as f64)),
        (true, _, records) if records > 0 => Some((false, run_us as f64 / records as f64)),
        _ => None,
    }
}

fn cause(task: &TaskSample, peers: &Peers) -> StragglerCause {
    let wall_us = task.duration_us();
    let accounted_us = union_us(
        task.monotasks
            .iter()
            .map(|m| (m.queued_at_us.max(task.started_at_us), m.finished_at_us.min(task.finished_at_us))),
    );
    if (wall_us - accounted_us) as f64 > UNACCOUNTED_SHARE * wall_us as f64 {
        return StragglerCause::Descheduled;
    }
    let more = |value: f64, median: f64| median > 0.0 && value >= MORE_INPUT_FACTOR * median;
    if more(task.records_in as f64, peers.records_in) || more(task.bytes() as f64, peers.bytes) {
        return StragglerCause::MoreInput;
    }
    let queue_us = |resource| task.monotasks_on(resource).map(|m| m.queue_us().max(0)).sum::<i64>();
    let run_us: i64 = task.monotasks.iter().map(|m| m.run_us().max(0)).sum();
    if Resource::ALL.iter().map(|&r| queue_us(r)).sum::<i64>() > run_us {
        let most_queued = Resource::ALL.iter().copied().max_by_key(|&r| queue_us(r)).unwrap_or(Resource::Cpu);
        return StragglerCause::Queueing(most_queued);
    }
    slowest_resource(task, peers).map_or(StragglerCause::Unknown, StragglerCause::SlowResource)
}

/// The resource whose per-unit cost exceeds the stage median by the largest factor, if that
/// factor reaches `SLOW_RESOURCE_FACTOR`.
fn slowest_resource(task: &TaskSample, peers: &Peers) -> Option<Resource> {
    Resource::ALL
        .iter()
        .filter_map(|&resource| {
            let (per_byte, cost) = unit_cost(task, resource)?;
            let median = *peers.unit_cost.get(&(resource, per_byte))?;
            (median > 0.0).then_some((cost / median, resource))
        })
        .filter(|(factor, _)| *factor >= SLOW_RESOURCE_FACTOR)
        .fold(None, |best: Option<(f64, Resource)>, next| match best {
            Some(best) if best.0 >= next.0 => Some(best),
            _ => Some(next),
        })
        .map(|(_, resource)| resource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::monotask;
    use sleet_monotask::MonotaskKind::*;
    use sleet_monotask::Resource::*;

    /// A stage-1 task on `partition`: a 1 MB fetch then 10 ms of reduce cpu, 100 records.
    fn normal(partition: u32) -> TaskSample {
        TaskSample {
            stage: 1,
            partition,
            batch: 0,
            worker: partition,
            started_at_us: 0,
            finished_at_us: 20_000,
            records_in: 100,
            monotasks: vec![
                monotask(ShuffleFetch, Net, 1_000_000, [0, 0, 10_000]),
                monotask(ReduceCompute, Cpu, 0, [10_000, 10_000, 20_000]),
            ],
        }
    }

    fn check(odd: TaskSample, expected: Option<StragglerCause>) {
        let tasks = vec![normal(0), normal(1), normal(2), odd];
        let report = stragglers(&tasks);
        let causes: Vec<StragglerCause> = report.stragglers.iter().map(|s| s.cause).collect();
        assert_eq!(causes, expected.into_iter().collect::<Vec<_>>(), "stragglers {:?}", report.stragglers);
        let counted: usize = report.counts.values().sum();
        assert_eq!(counted, causes.len());
        if let Some(cause) = expected {
            assert_eq!(report.counts.get(&cause.to_string()), Some(&1));
            assert_eq!(report.stragglers[0].stage_median_us, 20_000.0);
        }
    }

    #[test]
    fn a_task_within_one_and_a_half_medians_is_no_straggler() {
        let mut task = normal(3);
        task.finished_at_us = 30_000;
        task.monotasks[1].finished_at_us = 30_000;
        check(task, None);
    }

    #[test]
    fn a_tiny_task_is_no_straggler_however_slow() {
        // Peers of 200 µs and one of 900 µs: 4.5 medians, but under a millisecond.
        let tiny = |partition: u32, finished: i64| TaskSample {
            finished_at_us: finished,
            monotasks: vec![monotask(ReduceCompute, Cpu, 0, [0, 0, finished])],
            ..normal(partition)
        };
        let tasks = vec![tiny(0, 200), tiny(1, 200), tiny(2, 200), tiny(3, 900)];
        assert!(stragglers(&tasks).stragglers.is_empty());
        // The same ratio at 1.2 ms is one.
        let tasks = vec![tiny(0, 200), tiny(1, 200), tiny(2, 200), tiny(3, 1_200)];
        assert_eq!(stragglers(&tasks).stragglers.len(), 1);
    }

    #[test]
    fn slow_network() {
        // Same bytes, 40 ms instead of 10: 4× the stage's time per byte.
        let mut task = normal(3);
        task.monotasks[0].finished_at_us = 40_000;
        task.monotasks[1] = monotask(ReduceCompute, Cpu, 0, [40_000, 40_000, 50_000]);
        task.finished_at_us = 50_000;
        check(task, Some(StragglerCause::SlowResource(Net)));
    }

    #[test]
    fn queueing_for_the_cpu() {
        let mut task = normal(3);
        // 25 ms queued for 20 ms of run time.
        task.monotasks[1] = monotask(ReduceCompute, Cpu, 0, [10_000, 35_000, 45_000]);
        task.finished_at_us = 45_000;
        check(task, Some(StragglerCause::Queueing(Cpu)));
    }

    #[test]
    fn more_input_than_its_peers() {
        // Twice the records and bytes at the same speed per byte.
        let mut task = normal(3);
        task.records_in = 200;
        task.monotasks[0] = monotask(ShuffleFetch, Net, 2_000_000, [0, 0, 20_000]);
        task.monotasks[1] = monotask(ReduceCompute, Cpu, 0, [20_000, 20_000, 40_000]);
        task.finished_at_us = 40_000;
        check(task, Some(StragglerCause::MoreInput));
    }

    #[test]
    fn descheduled_when_the_monotasks_explain_little_of_the_wall_time() {
        let mut task = normal(3);
        task.finished_at_us = 60_000;
        check(task, Some(StragglerCause::Descheduled));
    }

    #[test]
    fn no_visible_cause_is_unknown() {
        // 20 % slower on every monotask: a straggler by wall time (gap filled by queueing
        // under its run time), but no single cause reaches its threshold.
        let mut task = normal(3);
        task.monotasks[0] = monotask(ShuffleFetch, Net, 1_000_000, [0, 5_000, 17_000]);
        task.monotasks[1] = monotask(ReduceCompute, Cpu, 0, [17_000, 20_000, 32_000]);
        task.finished_at_us = 32_000;
        check(task, Some(StragglerCause::Unknown));
    }
}
