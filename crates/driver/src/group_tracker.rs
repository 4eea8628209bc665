//! What the group scheduler knows about the groups in flight: which tasks are still out, when
//! each batch completes, and what coordinating each group cost. Pure: it takes reports and
//! returns what they completed.
//!
//! The coordination overhead of a group is the share of the time spent on the group that went
//! to coordination rather than to executing its tasks (`docs/design/group-scheduling.md`),
//!
//! ```text
//!   overhead = C / (C + E)
//!   C = driver deciding, encoding and sending the group
//!       + workers decoding and registering it
//!       + driver decoding and handling the group's status messages
//!       + source partitions idle with their batch closed, waiting for the group's tasks
//!   E = monotask run time of the group's tasks (the work the coordination serves)
//! ```
//!
//! Workers report a group in one status message each (see `sleet_worker::status`), so every
//! term of C is paid about once per worker per group and a larger group amortizes it, while
//! E grows with the group. Encoding the status on the workers is not measured; decoding the
//! same bytes on the driver is, and costs about as much.
//!
//! A group completes when every task has reported and every worker it was sent to has
//! confirmed registering it. Completion is taken in a separate step (`take_finished_groups`)
//! so that the cost of handling the status message that completes a group is charged to it
//! first.

use std::collections::BTreeMap;

use sleet_plan::StageId;
use sleet_wire::{GroupRegistered, StatusBatch, TaskId, TaskReport, TaskStats, WorkerId};

use crate::batch_ledger::{BatchLedger, CompletedBatch, Taken};
use crate::group_plan::GroupSpec;

/// A group whose every task and registration is in.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCost {
    pub spec: GroupSpec,
    pub sent_at_ms: i64,
    pub completed_at_ms: i64,
    pub schedule_us: i64,
    pub register_us: i64,
    pub status_us: i64,
    pub coordination_wait_us: i64,
    pub execute_us: i64,
}

impl GroupCost {
    pub fn coordination_us(&self) -> i64 {
        self.schedule_us + self.register_us + self.status_us + self.coordination_wait_us
    }

    pub fn overhead(&self) -> f64 {
        let coordination = self.coordination_us().max(0) as f64;
        let total = coordination + self.execute_us.max(0) as f64;
        if total == 0.0 {
            0.0
        } else {
            coordination / total
        }
    }
}

#[derive(Debug)]
struct GroupState {
    spec: GroupSpec,
    sent_at_ms: i64,
    schedule_us: i64,
    registrations_missing: usize,
    register_us: i64,
    status_us: i64,
    coordination_wait_us: i64,
    execute_us: i64,
    batches_open: usize,
}

#[derive(Debug)]
pub struct GroupTracker {
    groups: BTreeMap<u64, GroupState>,
    batches: BatchLedger,
}

impl GroupTracker {
    pub fn new(batches: BatchLedger) -> Self {
        GroupTracker { groups: BTreeMap::new(), batches }
    }

    /// The driver sent `spec` to `workers_messaged` workers; `tasks` are all its tasks.
    pub fn launched(
        &mut self,
        spec: GroupSpec,
        tasks: Vec<(TaskId, WorkerId)>,
        workers_messaged: usize,
        sent_at_ms: i64,
    ) {
        assert!(!self.groups.contains_key(&spec.group), "group {} launched twice", spec.group);
        let mut by_batch: BTreeMap<u64, Vec<(TaskId, WorkerId)>> =
            spec.batches().map(|batch| (batch, Vec::new())).collect();
        for (task, worker) in tasks {
            by_batch.get_mut(&task.batch).expect("a group's tasks belong to its batches").push((task, worker));
        }
        for (batch, tasks) in by_batch {
            self.batches.open(batch, Some(spec.group), tasks);
        }
        self.groups.insert(
            spec.group,
            GroupState {
                spec,
                sent_at_ms,
                schedule_us: 0,
                registrations_missing: workers_messaged,
                register_us: 0,
                status_us: 0,
                coordination_wait_us: 0,
                execute_us: 0,
                batches_open: spec.batch_count as usize,
            },
        );
    }

    pub fn registered(&mut self, registered: &GroupRegistered) {
        if let Some(group) = self.groups.get_mut(&registered.group).filter(|group| group.spec.job == registered.job) {
            assert!(group.registrations_missing > 0, "group {} registered more often than sent", registered.group);
            group.registrations_missing -= 1;
            group.register_us += registered.register_us;
            group.coordination_wait_us += registered.coordination_wait_us;
        }
    }

    /// The driver's time deciding, composing and sending a group.
    pub fn charge_schedule(&mut self, group: u64, schedule_us: i64) {
        if let Some(group) = self.groups.get_mut(&group) {
            group.schedule_us += schedule_us.max(0);
        }
    }

    /// The driver's time on one status message, decoding included, shared by the groups of
    /// its entries in proportion to how many each has.
    pub fn charge_status(&mut self, status: &StatusBatch, status_us: i64) {
        let mut entries_by_group: BTreeMap<u64, i64> = BTreeMap::new();
        let groups = status.registered.iter().map(|registered| Some(registered.group));
        for group in groups.chain(status.reports.iter().map(|report| report.group)).flatten() {
            *entries_by_group.entry(group).or_default() += 1;
        }
        let entries: i64 = entries_by_group.values().sum();
        for (group, count) in entries_by_group {
            if let Some(group) = self.groups.get_mut(&group) {
                group.status_us += status_us.max(0) * count / entries;
            }
        }
    }

    /// Takes a successful task's report; a batch it completes goes to `completed_batches`.
    /// Returns false (and changes nothing) for a task this tracker does not wait for, such as
    /// one that started past a truncation.
    pub fn report(
        &mut self,
        report: &TaskReport,
        stats: &TaskStats,
        completed_batches: &mut Vec<CompletedBatch>,
    ) -> bool {
        let record = match self.batches.report(report, stats) {
            Taken::Ignored => return false,
            Taken::Counted => None,
            Taken::Completed(record) => Some(*record),
        };
        let group = report.group.and_then(|group| self.groups.get_mut(&group));
        let group = group.expect("a task the ledger waits for belongs to an open group");
        group.execute_us += report.monotasks.iter().map(|monotask| monotask.run_us().max(0)).sum::<i64>();
        if let Some(record) = record {
            group.batches_open -= 1;
            completed_batches.push(record);
        }
        true
    }

    /// Every group whose tasks and registrations are all in, oldest first.
    pub fn take_finished_groups(&mut self, now_ms: i64) -> Vec<GroupCost> {
        let finished: Vec<u64> = self
            .groups
            .iter()
            .filter(|(_, group)| group.batches_open == 0 && group.registrations_missing == 0)
            .map(|(id, _)| *id)
            .collect();
        finished
            .into_iter()
            .map(|id| {
                let group = self.groups.remove(&id).expect("present");
                GroupCost {
                    spec: group.spec,
                    sent_at_ms: group.sent_at_ms,
                    completed_at_ms: now_ms,
                    schedule_us: group.schedule_us,
                    register_us: group.register_us,
                    status_us: group.status_us,
                    coordination_wait_us: group.coordination_wait_us,
                    execute_us: group.execute_us,
                }
            })
            .collect()
    }

    /// A stop: batches past `last_batch` will not run, so they are no longer waited for, and
    /// groups wholly past it were sent but will not run (their registrations may still
    /// arrive and are then ignored).
    pub fn truncate(&mut self, last_batch: u64) {
        for group in self.batches.truncate(last_batch).into_iter().flatten() {
            if let Some(group) = self.groups.get_mut(&group) {
                group.batches_open -= 1;
            }
        }
        self.groups.retain(|_, group| group.spec.first_batch <= last_batch);
    }

    pub fn groups_in_flight(&self) -> usize {
        self.groups.len()
    }

    pub fn is_idle(&self) -> bool {
        self.batches.is_empty() && self.groups.is_empty()
    }

    pub fn oldest_open_batch(&self) -> Option<u64> {
        self.batches.oldest_open_batch()
    }

    /// The oldest open batch's outstanding tasks: a stage and the workers running it.
    pub fn waiting_on(&self) -> Option<(u64, StageId, Vec<WorkerId>)> {
        self.batches.waiting_on()
    }
}

#[cfg(test)]
mod tests {
    use sleet_clarity::{MonotaskKind, MonotaskRecord, Resource};
    use sleet_plan::SourceRange;
    use sleet_wire::clock::BatchClock;
    use sleet_wire::TaskOutcome;

    use super::*;
    use crate::group_plan::group_tasks;
    use crate::placement::Placement;

    const JOB: u64 = 1;

    fn spec(group: u64, first_batch: u64, batch_count: u32) -> GroupSpec {
        GroupSpec { job: JOB, group, first_batch, batch_count, checkpoint_after: None }
    }

    /// Two stages of one partition each on worker 1: tasks (stage 0, p0) and (stage 1, p0).
    fn tasks_of(spec: &GroupSpec) -> Vec<(TaskId, WorkerId)> {
        let stages = sleet_plan_stages();
        group_tasks(spec, &stages, &Placement::new(vec![1], 1))
    }

    fn sleet_plan_stages() -> Vec<sleet_plan::StagePlan> {
        use sleet_plan::{SinkSpec, SourceSpec, StageInput, StageOutput, StagePlan, YsbSourceSpec};
        let source = SourceSpec::Ysb(YsbSourceSpec {
            seed: 1,
            rate_per_s: 1,
            partitions: 1,
            bad_fraction: 0.0,
            pre_decoded: false,
        });
        vec![
            StagePlan {
                id: StageId(0),
                partitions: 1,
                input: StageInput::Source(source),
                ops: Vec::new(),
                output: StageOutput::Shuffle { keys: vec!["k".into()], partitions: 1, event_time: None },
            },
            StagePlan {
                id: StageId(1),
                partitions: 1,
                input: StageInput::Shuffle { from_stage: StageId(0), map_partitions: 1 },
                ops: Vec::new(),
                output: StageOutput::Sink(SinkSpec::Discard),
            },
        ]
    }

    fn report(stage: u32, batch: u64, started_us: i64, run_us: i64) -> TaskReport {
        let monotask = MonotaskRecord {
            kind: MonotaskKind::MapCompute,
            resource: Resource::Cpu,
            bytes: 0,
            queued_at_us: started_us,
            started_at_us: started_us,
            finished_at_us: started_us + run_us,
        };
        TaskReport {
            task: TaskId { job: JOB, stage: StageId(stage), partition: 0, batch },
            worker: 1,
            group: Some(0),
            outcome: TaskOutcome::Succeeded(TaskStats::default()),
            monotasks: vec![monotask],
            started_at_us: started_us,
            finished_at_us: started_us + run_us,
        }
    }

    fn source_stats(records: u64) -> TaskStats {
        TaskStats {
            source_range: Some(SourceRange::Time { start_ms: 0, end_ms: 10 }),
            records_in: records,
            ..TaskStats::default()
        }
    }

    fn in_group(group: u64, report: TaskReport) -> TaskReport {
        TaskReport { group: Some(group), ..report }
    }

    fn registered(group: u64, register_us: i64, wait_us: i64) -> GroupRegistered {
        GroupRegistered { job: JOB, group, register_us, coordination_wait_us: wait_us }
    }

    fn tracker() -> GroupTracker {
        GroupTracker::new(BatchLedger::new(BatchClock::new(0, 10), StageId(0), StageId(1)))
    }

    #[test]
    fn a_batch_completes_with_its_last_task_and_a_group_with_its_last_batch() {
        let mut tracker = tracker();
        let group = spec(0, 0, 2);
        tracker.launched(group, tasks_of(&group), 1, 0);
        tracker.charge_schedule(0, 300);
        tracker.registered(&registered(0, 100, 0));
        assert!(tracker.take_finished_groups(1).is_empty());
        let mut batches = Vec::new();
        assert!(tracker.report(&report(0, 0, 10_000, 2_000), &source_stats(50), &mut batches));
        assert!(batches.is_empty(), "batch 0's reduce task is still out");
        assert!(tracker.report(&report(1, 0, 12_500, 500), &TaskStats::default(), &mut batches));
        let record = &batches[0].record;
        assert_eq!((record.batch, record.events_in, record.scheduled_end_ms), (0, 50, 10));
        assert_eq!((record.launched_at_ms, record.finished_at_us), (10, 13_000));
        assert_eq!((record.map_stage_ms, record.reduce_stage_ms), (2.0, 0.5));
        assert!(tracker.take_finished_groups(13).is_empty(), "batch 1 is still out");
        assert_eq!(tracker.waiting_on(), Some((1, StageId(0), vec![1])));

        tracker.report(&report(0, 1, 20_000, 2_000), &source_stats(50), &mut batches);
        tracker.report(&report(1, 1, 22_500, 500), &TaskStats::default(), &mut batches);
        let status = StatusBatch { registered: vec![], reports: vec![in_group(0, report(1, 1, 22_500, 500))] };
        tracker.charge_status(&status, 600);
        let finished = tracker.take_finished_groups(23);
        let cost = &finished[0];
        assert_eq!((cost.schedule_us, cost.register_us, cost.status_us, cost.execute_us), (300, 100, 600, 5_000));
        assert!((cost.overhead() - 1_000.0 / 6_000.0).abs() < 1e-12);
        assert!(tracker.is_idle());
    }

    #[test]
    fn a_group_waits_for_every_registration_and_counts_idle_partitions() {
        let mut tracker = tracker();
        let group = spec(0, 0, 1);
        tracker.launched(group, tasks_of(&group), 2, 0);
        let mut batches = Vec::new();
        tracker.report(&report(0, 0, 0, 1_000), &source_stats(1), &mut batches);
        tracker.report(&report(1, 0, 1_000, 1_000), &TaskStats::default(), &mut batches);
        assert_eq!(batches.len(), 1);
        assert!(tracker.take_finished_groups(2).is_empty(), "two workers were sent the group; none has confirmed");
        tracker.registered(&registered(0, 50, 0));
        assert!(tracker.take_finished_groups(3).is_empty());
        tracker.registered(&registered(0, 50, 1_900));
        let finished = tracker.take_finished_groups(4);
        assert_eq!(finished[0].coordination_us(), 2_000);
        assert!((finished[0].overhead() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_status_message_is_charged_to_its_groups_by_their_share_of_entries() {
        let mut tracker = tracker();
        let (first, second) = (spec(0, 0, 1), spec(1, 1, 1));
        tracker.launched(first, tasks_of(&first), 1, 0);
        tracker.launched(second, tasks_of(&second), 1, 0);
        let status = StatusBatch {
            registered: vec![registered(1, 0, 0)],
            reports: vec![
                in_group(0, report(0, 0, 0, 1)),
                in_group(1, report(0, 1, 0, 1)),
                TaskReport { group: None, ..report(1, 0, 0, 1) },
            ],
        };
        tracker.charge_status(&status, 900);
        let status_us: Vec<i64> = [0, 1].iter().map(|group| tracker.groups[group].status_us).collect();
        assert_eq!(status_us, vec![300, 600]);
    }

    #[test]
    fn reports_for_unknown_or_repeated_tasks_change_nothing() {
        let mut tracker = tracker();
        let group = spec(0, 0, 1);
        tracker.launched(group, tasks_of(&group), 1, 0);
        let mut batches = Vec::new();
        assert!(!tracker.report(&report(0, 7, 0, 1), &source_stats(1), &mut batches));
        assert!(tracker.report(&report(0, 0, 0, 1), &source_stats(1), &mut batches));
        assert!(!tracker.report(&report(0, 0, 0, 1), &source_stats(1), &mut batches));
        assert_eq!(tracker.oldest_open_batch(), Some(0));
    }

    #[test]
    fn truncation_stops_waiting_for_later_batches_and_unrun_groups() {
        let mut tracker = tracker();
        let (first, second) = (spec(0, 0, 3), spec(1, 3, 3));
        tracker.launched(first, tasks_of(&first), 1, 0);
        tracker.launched(second, tasks_of(&second), 1, 0);
        tracker.registered(&registered(0, 1, 0));
        let mut batches = Vec::new();
        tracker.report(&report(0, 0, 0, 1), &source_stats(1), &mut batches);
        tracker.report(&report(1, 0, 0, 1), &TaskStats::default(), &mut batches);
        tracker.truncate(0);
        let finished = tracker.take_finished_groups(5);
        assert_eq!(finished.len(), 1, "group 0 ends with batch 0");
        assert_eq!(finished[0].spec.group, 0);
        assert!(tracker.is_idle(), "group 1 lies wholly past the stop");
    }
}
