//! One task as a DAG of monotasks, each on the scheduler of the one resource it uses:
//!
//! ```text
//!  source task:  SourceRead on the source's resource (a generator: cpu)
//!                → cpu Decode (raw records into rows; none for decoded input)
//!                → cpu MapCompute (operators, partition into blocks)
//!                → disk SinkWrite (dead letters, when there are any)
//!  reduce task:  net ShuffleFetch per remote worker ∥ local blocks (zero copy)
//!                → cpu ReduceCompute (merge, window state, encode for the sink)
//!                → SinkWrite on the sink's resource (a file: disk)
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use sleet_connectors::sink::Sink;
use sleet_connectors::source::Source;
use sleet_durable::checkpoint_store::{snapshot_name, CheckpointStore};
use sleet_exec::partition_progress::MapProgress;
use sleet_exec::pipeline::{StageInputData, StageRunOutput};
use sleet_exec::window::ClosedWindow;
use sleet_exec::RawRecords;
use sleet_monotask::{EventWait, MonotaskKind, MonotaskRecord, Resource};
use sleet_plan::{SourceRange, StageInput, StageOutput};
use sleet_wire::clock::now_us;
use sleet_wire::{
    BlockId, BlockLocation, BlockMeta, PartitionSnapshot, StateFigures, TaskDescriptor, TaskInput, TaskOutcome,
    TaskReport, TaskStats, WorkerId,
};
use tokio::sync::Semaphore;

use crate::announce::Announcer;
use crate::bandwidth::BandwidthLimit;
use crate::block_store::BlockStore;
use crate::error::WorkerError;
use crate::job::JobRuntime;
use crate::pool::{Measured, ResourcePool};
use crate::retained::RetainedOutputs;
use crate::shuffle::ShuffleClient;
use crate::turn::StateTurn;

/// Shared by every task on a worker: the resource schedulers and the shuffle endpoints.
pub struct WorkerContext {
    pub worker: WorkerId,
    pub shuffle_address: String,
    pub cpu: ResourcePool,
    pub disk: ResourcePool,
    /// The network scheduler: bounds the fetches in flight at this receiver.
    pub net: Arc<Semaphore>,
    /// The network scheduler of blocking monotasks: sources and sinks that talk to an
    /// outside system (Kafka) with blocking calls.
    pub net_blocking: ResourcePool,
    /// The experiment's limit on the network's bytes per second, which shuffle fetches wait
    /// for inside their monotask (`bandwidth`); the blocking network pool shares it.
    pub net_limit: Option<Arc<BandwidthLimit>>,
    /// Sync each sink write on the disk before it counts as done (`--sync-writes`): a disk
    /// write then costs the device's time, not the page cache's.
    pub sync_writes: bool,
    /// Whether reports carry their monotask records (`--no-monotask-records` turns them off,
    /// to measure what recording and modelling cost: the driver then has nothing to model).
    pub report_monotasks: bool,
    pub store: Arc<BlockStore>,
    /// Source tasks' outputs kept for a recovery to reuse.
    pub retained: RetainedOutputs,
    pub shuffle: Arc<ShuffleClient>,
    /// Pushes map output metadata to the owners of reduce partitions (group scheduling).
    pub announcer: Announcer,
}

impl WorkerContext {
    /// The scheduler that runs blocking monotasks on `resource`. Shuffle fetches, which are
    /// async, have their own bound (`net`).
    fn pool(&self, resource: Resource) -> Result<&ResourcePool, WorkerError> {
        match resource {
            Resource::Cpu => Ok(&self.cpu),
            Resource::Disk => Ok(&self.disk),
            Resource::Net => Ok(&self.net_blocking),
        }
    }
}

/// Runs one task to its end; the report's `finished_at_us` marks when its last monotask ended.
///
/// `turn` is the partition's state turn when the stage is stateful: the task takes it after
/// reading its input and before computing, and passes it on once its output is written.
pub async fn run_task(
    ctx: Arc<WorkerContext>,
    job: Arc<JobRuntime>,
    descriptor: TaskDescriptor,
    group: Option<u64>,
    turn: Option<Arc<StateTurn>>,
) -> TaskReport {
    let started_at_us = now_us();
    let mut monotasks = Vec::new();
    let outcome = match execute(&ctx, &job, &descriptor, turn.as_deref(), &mut monotasks).await {
        Ok(stats) => TaskOutcome::Succeeded(stats),
        Err(error) => TaskOutcome::Failed { reason: sleet_wire::error_chain(&error) },
    };
    // A task ends with its last monotask; what follows it (stats, storing blocks) is
    // bookkeeping of well under a microsecond, not worth a clock read per task.
    let finished_at_us = match (&outcome, monotasks.last()) {
        (TaskOutcome::Succeeded(_), Some(last)) => last.finished_at_us,
        _ => now_us(),
    };
    if !ctx.report_monotasks {
        monotasks = Vec::new();
    }
    TaskReport { task: descriptor.task, worker: ctx.worker, group, outcome, monotasks, started_at_us, finished_at_us }
}

/// A re-run source task whose first run's output this worker still holds: the blocks are
/// handed on under the new attempt's ids and the first run's report stands, so nothing is
/// read or computed again. The partition's turn is still taken, so the batches after it
/// read in order.
pub async fn reuse_task(
    ctx: Arc<WorkerContext>,
    from_job: sleet_wire::JobId,
    descriptor: TaskDescriptor,
    group: Option<u64>,
    turn: Option<Arc<StateTurn>>,
) -> TaskReport {
    let task = descriptor.task;
    let started_at_us = now_us();
    let held = match turn.as_deref() {
        Some(turn) => Some(turn.take(task.batch).await),
        None => None,
    };
    let outcome = match ctx.retained.hand_over(from_job, task) {
        Some(kept) => {
            for (reduce_partition, block) in kept.blocks {
                ctx.store.put(BlockId::of(task, reduce_partition), block);
            }
            TaskOutcome::Succeeded(TaskStats { retained: true, ..kept.stats })
        }
        None => TaskOutcome::Failed {
            reason: format!("{task}: the output of job {from_job} to reuse is no longer held here"),
        },
    };
    drop(held);
    TaskReport {
        task,
        worker: ctx.worker,
        group,
        outcome,
        monotasks: Vec::new(),
        started_at_us,
        finished_at_us: now_us(),
    }
}

/// Rows encoded for the sink and bad records with their reasons, ready to be written.
struct Writes {
    /// Rows the sink received; the rows themselves are encoded (or discarded) and freed on
    /// the cpu thread that built them, where freeing is cheapest.
    sink_rows: u64,
    sink_bytes: Vec<u8>,
    dead_letters: Vec<BadRecord>,
}

struct BadRecord {
    reason: String,
    record: Vec<u8>,
    /// Its position in the source, when the source has positions.
    position: Option<i64>,
}

/// What a source task's read found out, for its stats.
#[derive(Default)]
struct SourceRead {
    range: Option<SourceRange>,
    event_wait: Option<EventWait>,
    /// What the source was waiting for when the batch closed, if anything.
    waiting: Option<String>,
}

async fn execute(
    ctx: &Arc<WorkerContext>,
    job: &Arc<JobRuntime>,
    descriptor: &TaskDescriptor,
    turn: Option<&StateTurn>,
    monotasks: &mut Vec<MonotaskRecord>,
) -> Result<TaskStats, WorkerError> {
    let task = descriptor.task;
    let mut turn_held = None;
    let stage = job.stage(task.stage)?;
    let pipeline = job.pipeline(task.stage, task.partition)?;
    let sink = match &stage.output {
        StageOutput::Sink(spec) => job.sink(task.stage, task.partition, spec)?,
        StageOutput::Shuffle { .. } => None,
    };
    let encoder = sink.clone();
    let compute_input = move |input: StageInputData| {
        let bytes = input_bytes(&input);
        let result = compute(&pipeline, &input, task.batch, encoder.as_deref());
        Measured { value: result, bytes }
    };
    // A source task's source, for its dead letters' positions.
    let mut source_of_task: Option<Arc<dyn Source>> = None;
    // What a source told about its read; the stats are put together only after the compute,
    // so that they are not part of the task's state across its awaits (see `run_or_spawn`).
    let (result, source_read) = match (&stage.input, &descriptor.input) {
        (StageInput::Source(spec), TaskInput::Source) => {
            let source = source_of_task.insert(job.source(spec, task.partition));
            let read_pool = ctx.pool(source.resource())?;
            let (start_ms, end_ms) = job.clock().range_ms(task.batch);
            let reader = Arc::clone(source);
            let bound_of = Arc::clone(job);
            // The wait travels with the range: the records themselves are consumed by compute.
            let read = move || {
                let (input, range) = match reader.read_decoded(start_ms, end_ms) {
                    Some(Ok((rows, range))) => (StageInputData::Decoded(rows), Ok((range, None))),
                    Some(Err(error)) => (StageInputData::Raw(RawRecords::new()), Err(error)),
                    None => {
                        let mut raw = RawRecords::new();
                        let range = reader
                            .read_bounded(start_ms, end_ms, bound_of.read_bound(), &mut raw)
                            .map(|range| (range, raw.event_wait));
                        (StageInputData::Raw(raw), range)
                    }
                };
                let bytes = input_bytes(&input);
                Measured { value: (input, range), bytes }
            };
            // A source partition is read front to back: batch b + 1 reads after b.
            if let Some(turn) = turn {
                turn_held = Some(turn.take(task.batch).await);
            }
            let (result, range) = if read_pool.resource() == Resource::Cpu {
                // Both on the cpu: one dispatch, two records.
                let (result, [read_record, compute_record]) = ctx
                    .cpu
                    .run_chain(MonotaskKind::SourceRead, read, MonotaskKind::MapCompute, move |(input, range)| {
                        match range {
                            Ok(range) => {
                                let computed = compute_input(input);
                                Measured { value: (computed.value, Some(range)), bytes: computed.bytes }
                            }
                            Err(error) => Measured { value: (Err(WorkerError::from(error)), None), bytes: 0 },
                        }
                    })
                    .await;
                monotasks.push(read_record);
                push_map_compute(monotasks, compute_record, &result.0);
                result
            } else {
                // Boxed: only sources read off the cpu (Kafka, files) take this path, whose
                // two awaits would otherwise size the future of every task.
                Box::pin(async {
                    let ((input, range), record) = read_pool.run(MonotaskKind::SourceRead, read).await;
                    monotasks.push(record);
                    match range {
                        Ok(range) => {
                            let (result, record) =
                                ctx.cpu.run(MonotaskKind::MapCompute, move || compute_input(input)).await;
                            push_map_compute(monotasks, record, &result);
                            (result, Some(range))
                        }
                        Err(error) => (Err(WorkerError::from(error)), None),
                    }
                })
                .await
            };
            let read = SourceRead {
                range: range.map(|(range, _)| range),
                event_wait: range.and_then(|(_, wait)| wait),
                waiting: source.waiting(),
            };
            (result, read)
        }
        (StageInput::Shuffle { map_partitions, .. }, TaskInput::Shuffle { blocks, event_times }) => {
            // Boxed: a fetch's state is large and only reduce tasks need it, while every
            // task's future is allocated and copied whole when it is launched.
            let batches = Box::pin(fetch_blocks(ctx, blocks, monotasks)).await?;
            if let Some(turn) = turn {
                turn_held = Some(turn.take(task.batch).await);
            }
            let progress = MapProgress {
                batch_end_ms: job.clock().end_ms(task.batch),
                map_partitions: *map_partitions,
                event_times: event_times.iter().map(|time| (time.map_partition, time.max_ms)).collect(),
            };
            let input = StageInputData::Blocks { blocks: batches, progress: Some(progress) };
            let (result, record) = ctx.cpu.run(MonotaskKind::ReduceCompute, move || compute_input(input)).await;
            monotasks.push(record);
            (result, SourceRead::default())
        }
        (expected, found) => {
            return Err(WorkerError::Internal(format!(
                "{task}: stage reads {expected:?} but the task carries {found:?}"
            )))
        }
    };
    let Computed { output, writes, .. } = *result?;
    let mut stats = TaskStats {
        source_range: source_read.range,
        event_wait: source_read.event_wait,
        source_waiting: source_read.waiting,
        ..task_stats(&output, writes.sink_rows)
    };
    // A batch's dead letters belong to the attempt that commits it, so a task with bad
    // records must run again rather than be reused.
    if stats.dead_letters == 0 && job.keeps_map_outputs(task.stage) {
        stats.retained = ctx.retained.keep(task, output.blocks.clone(), stats.clone());
    }
    for (reduce_partition, block) in output.blocks {
        ctx.store.put(BlockId::of(task, reduce_partition), block);
    }
    if descriptor.checkpoint && job.is_stateful(task.stage) {
        // Still inside the partition's turn: the snapshot is the state right after this batch.
        stats.snapshot = Some(Box::pin(write_snapshot(ctx, job, task, monotasks)).await?);
    }

    // A batch whose output an earlier attempt committed is re-run for its state alone.
    let writes = if job.output_committed(task.batch) {
        Writes { sink_bytes: Vec::new(), dead_letters: Vec::new(), ..writes }
    } else {
        writes
    };
    if !writes.dead_letters.is_empty() {
        if let Some(writer) = job.dead_letter_writer(task.stage, task.partition)? {
            let source = source_of_task.clone();
            let dead_letters = writes.dead_letters;
            let (result, record) = Box::pin(ctx.disk.run(MonotaskKind::SinkWrite, move || {
                let bytes = dead_letters.iter().map(|letter| letter.record.len() as u64).sum::<u64>();
                let mut writer = writer.lock().expect("dead letter lock");
                let result = dead_letters
                    .iter()
                    .try_for_each(|letter| {
                        let origin = letter.position.zip(source.as_ref()).and_then(|(at, source)| source.locate(at));
                        writer.write(task.batch, task.partition, &letter.reason, &letter.record, origin)
                    })
                    .and_then(|()| writer.flush());
                Measured { value: result, bytes }
            }))
            .await;
            monotasks.push(record);
            result?;
        }
    }
    if let Some(sink) = sink.filter(|_| !writes.sink_bytes.is_empty()) {
        let sink_bytes = writes.sink_bytes;
        let sync = ctx.sync_writes && sink.resource() == Resource::Disk;
        // Boxed for the same reason as the fetch: only tasks that write need this state.
        let (result, record) = Box::pin(ctx.pool(sink.resource())?.run(MonotaskKind::SinkWrite, move || {
            let bytes = sink_bytes.len() as u64;
            let written = sink.write(task.batch, &sink_bytes).and_then(|()| if sync { sink.flush() } else { Ok(()) });
            Measured { value: written, bytes }
        }))
        .await;
        monotasks.push(record);
        result?;
        sleet_failpoint::hit("worker-after-sink-write");
        stats.sink_visible_at_us = Some(record.finished_at_us);
    }
    if !output.closed_windows.is_empty() || stats.sink_visible_at_us.is_some() {
        let visible = stats.sink_visible_at_us.map(|at_us| (task.batch, at_us / 1000));
        let last_updates = output.closed_windows.iter().map(|closed| closed.last_update_batch);
        let times = job.visible_times(task.stage, task.partition, visible, last_updates);
        stats.window_latencies_ms = window_latencies_ms(&output.closed_windows, &times);
    }
    drop(turn_held);
    Ok(stats)
}

/// Snapshots the partition's state (cpu) and writes it to the checkpoint store (disk,
/// synced), each as its own monotask so that a checkpoint's cost shows where it is paid.
async fn write_snapshot(
    ctx: &Arc<WorkerContext>,
    job: &Arc<JobRuntime>,
    task: sleet_wire::TaskId,
    monotasks: &mut Vec<MonotaskRecord>,
) -> Result<PartitionSnapshot, WorkerError> {
    let store = job.checkpoint_store().ok_or_else(|| {
        WorkerError::Internal(format!("{task}: a checkpoint was asked for, but the job has no store"))
    })?;
    let pipeline = job.pipeline(task.stage, task.partition)?;
    let (state, record) = ctx
        .cpu
        .run(MonotaskKind::StateSnapshot, move || {
            let state = pipeline.lock().expect("pipeline lock").snapshot_state().unwrap_or_default();
            let bytes = state.len() as u64;
            Measured { value: state, bytes }
        })
        .await;
    monotasks.push(record);
    let name = snapshot_name(task.job, task.batch, task.stage.0, task.partition);
    let (written, record) = ctx
        .disk
        .run(MonotaskKind::CheckpointWrite, move || {
            let bytes = state.len() as u64;
            Measured { value: store.put(&name, &state).map(|path| (path, bytes)), bytes }
        })
        .await;
    monotasks.push(record);
    let (path, bytes) = written?;
    Ok(PartitionSnapshot { stage: task.stage, partition: task.partition, path, bytes })
}

/// The counters of a task's report, from what its stage produced: a fixed set and one entry
/// per block, never one per row or key, so the driver's traffic does not grow with the data.
fn task_stats(output: &StageRunOutput, sink_rows: u64) -> TaskStats {
    TaskStats {
        records_in: output.records_in,
        rows_out: output.rows_out,
        dead_letters: output.dead_letters.len() as u64,
        unmatched_lookup_rows: output.unmatched_lookup_rows,
        late_rows_dropped: output.late_rows_dropped,
        state: StateFigures {
            late_rows_folded: output.late_rows_folded,
            duplicate_rows_dropped: output.duplicate_rows_dropped,
            invalid_rows_dropped: output.invalid_rows_dropped,
            refused_rows: output.refused_rows,
            expired_keys: output.expired_keys,
            state_keys: output.state_keys,
            state_bytes: output.state_bytes,
        },
        state_full: output.state_full.clone(),
        sink_rows,
        blocks: output
            .blocks
            .iter()
            .map(|(reduce_partition, block)| BlockMeta {
                reduce_partition: *reduce_partition,
                rows: block.num_rows() as u64,
                bytes: block.get_array_memory_size() as u64,
            })
            .collect(),
        event_time_ms: output.event_time_ms,
        ..TaskStats::default()
    }
}

/// One latency per closed window (not per key): when the output of the last batch that
/// updated it became visible, minus its end; `visible_at_ms` holds those times in order.
fn window_latencies_ms(closed: &[ClosedWindow], visible_at_ms: &[Option<i64>]) -> Vec<i64> {
    assert_eq!(closed.len(), visible_at_ms.len(), "a visible time, or none, per closed window");
    closed.iter().zip(visible_at_ms).filter_map(|(window, visible)| Some((*visible)? - window.window_end_ms)).collect()
}

/// Pushes a map task's compute record split where its decoding ended, as MonoSpark splits
/// deserialization off its compute monotask: a `Decode` record for the decoder's time, with
/// the input's bytes, then the `MapCompute` record for the rest, and a `Combine` record for
/// the map-side combine's time at its end (only the partitioning of the combined rows, a few
/// per key, follows the combine, so the end is where it ran to within that). The records
/// cover the time the one did; one record when there was nothing to split (decoded input
/// without a combine, or a failed run). The clock read that ends the decoding and the one
/// that starts the monotask are the same clock's.
fn push_map_compute(
    monotasks: &mut Vec<MonotaskRecord>,
    record: MonotaskRecord,
    result: &Result<Box<Computed>, WorkerError>,
) {
    let Ok(computed) = result else {
        monotasks.push(record);
        return;
    };
    let mut rest = record;
    if let Some(decoded_at_us) = computed.decoded_at_us {
        let [decode, after] = split_record(record, decoded_at_us, MonotaskKind::Decode, MonotaskKind::MapCompute);
        monotasks.push(decode);
        rest = after;
    }
    let combine_us = (computed.output.combine_us as i64).min(rest.run_us());
    if combine_us > 0 {
        let [before, combine] =
            split_record(rest, rest.finished_at_us - combine_us, MonotaskKind::MapCompute, MonotaskKind::Combine);
        monotasks.push(before);
        rest = combine;
    }
    monotasks.push(rest);
}

/// One record's time cut at `at_us` into two, as `head` then `tail`: the head keeps the
/// bytes (the input it read), the tail starts where the head ended.
fn split_record(record: MonotaskRecord, at_us: i64, head: MonotaskKind, tail: MonotaskKind) -> [MonotaskRecord; 2] {
    let at_us = at_us.clamp(record.started_at_us, record.finished_at_us);
    [
        MonotaskRecord { kind: head, finished_at_us: at_us, ..record },
        MonotaskRecord { kind: tail, queued_at_us: at_us, started_at_us: at_us, bytes: 0, ..record },
    ]
}

fn input_bytes(input: &StageInputData) -> u64 {
    match input {
        StageInputData::Raw(raw) => raw.data.len() as u64,
        StageInputData::Decoded(rows) => rows.get_array_memory_size() as u64,
        StageInputData::Blocks { blocks, .. } => blocks.iter().map(|block| block.get_array_memory_size() as u64).sum(),
    }
}

/// What a task's compute monotask produced, and how long its decoding took of it. Boxed
/// where it is returned: it passes through several futures and closures on its way out, and
/// at a few hundred bytes the copies cost more than the allocation.
struct Computed {
    output: StageRunOutput,
    writes: Writes,
    /// When raw input had become rows; `None` for any other input.
    decoded_at_us: Option<i64>,
}

fn compute(
    pipeline: &std::sync::Mutex<sleet_exec::pipeline::StagePipeline>,
    input: &StageInputData,
    batch: u64,
    sink: Option<&dyn Sink>,
) -> Result<Box<Computed>, WorkerError> {
    let mut pipeline = pipeline.lock().expect("pipeline lock");
    let rows = pipeline.decode(input)?;
    // One clock read more per source task, none for others: the monotask's start is the
    // decoding's, so its end is all it takes to split the two.
    let decoded_at_us = matches!(input, StageInputData::Raw(_)).then(now_us);
    let mut output = pipeline.run_rows(rows, batch)?;
    drop(pipeline);
    let mut sink_bytes = Vec::new();
    let sink_rows = output.sink_rows.take();
    if let (Some(sink), Some(rows)) = (sink, &sink_rows) {
        sink.encode(batch, rows, &mut sink_bytes);
    }
    let sink_rows = sink_rows.map_or(0, |rows| rows.num_rows() as u64);
    let dead_letters = match input {
        StageInputData::Raw(raw) => output
            .dead_letters
            .iter()
            .map(|letter| BadRecord {
                reason: letter.reason.clone(),
                record: raw.get(letter.record_index).to_vec(),
                position: raw.position(letter.record_index),
            })
            .collect(),
        StageInputData::Decoded(_) | StageInputData::Blocks { .. } => Vec::new(),
    };
    Ok(Box::new(Computed { output, writes: Writes { sink_rows, sink_bytes, dead_letters }, decoded_at_us }))
}

/// Local blocks come straight from the store; remote ones are pulled, one net monotask per
/// holder, all holders in parallel under the network scheduler's bound.
async fn fetch_blocks(
    ctx: &Arc<WorkerContext>,
    blocks: &[BlockLocation],
    monotasks: &mut Vec<MonotaskRecord>,
) -> Result<Vec<RecordBatch>, WorkerError> {
    let mut batches = Vec::with_capacity(blocks.len());
    let mut remote: BTreeMap<&str, Vec<BlockId>> = BTreeMap::new();
    for location in blocks {
        if location.address == ctx.shuffle_address {
            batches.push(ctx.store.take(&location.block).ok_or(WorkerError::MissingBlock(location.block))?);
        } else {
            remote.entry(location.address.as_str()).or_default().push(location.block);
        }
    }
    let mut fetches = tokio::task::JoinSet::new();
    for (address, ids) in remote {
        let ctx = Arc::clone(ctx);
        let address = address.to_string();
        fetches.spawn(async move {
            let queued_at_us = now_us();
            let _permit = ctx.net.acquire().await.expect("net scheduler is never closed");
            let started_at_us = now_us();
            let result = ctx.shuffle.fetch(&address, ids).await;
            let bytes = result.as_ref().map_or(0, |(_, bytes)| *bytes);
            if let Some(limit) = &ctx.net_limit {
                // Under the permit: a limited link is still a fetch in flight.
                limit.wait(started_at_us, bytes).await;
            }
            let record = MonotaskRecord {
                kind: MonotaskKind::ShuffleFetch,
                resource: Resource::Net,
                bytes,
                queued_at_us,
                started_at_us,
                finished_at_us: now_us(),
            };
            (result, record)
        });
    }
    while let Some(joined) = fetches.join_next().await {
        let (result, record) = joined.map_err(|error| WorkerError::Internal(format!("fetch task failed: {error}")))?;
        monotasks.push(record);
        batches.extend(result?.0);
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use sleet_exec::pipeline::StagePipeline;
    use sleet_plan::{
        plan_stages, Aggregate, NumbersSourceSpec, PlanBuilder, SinkSpec, SourceSpec, StageId, StagePlan, WindowSpec,
    };
    use sleet_wire::{encode_binary, TaskId};

    use super::*;

    fn reduce_stage() -> StagePlan {
        let spec = NumbersSourceSpec { seed: 1, partitions: 1, numbers_per_batch: 1, keys: 1 };
        let window = WindowSpec::tumbling("time", 1_000, 0);
        let plan = PlanBuilder::source("keys", SourceSpec::Numbers(spec))
            .decode_json(sleet_connectors::numbers::record_schema())
            .exchange(["key"], 1)
            .window_aggregate(window, ["key"], [Aggregate::count("count")])
            .sink(SinkSpec::Discard)
            .build()
            .expect("plan");
        plan_stages(&plan, false).expect("stages").stages.pop().expect("a reduce stage")
    }

    fn rows(keys: usize, time: i64) -> RecordBatch {
        let names: Vec<String> = (0..keys).map(|key| format!("key-{key}")).collect();
        RecordBatch::try_from_iter([
            ("key", Arc::new(StringArray::from(names)) as ArrayRef),
            ("sum", Arc::new(Int64Array::from(vec![1; keys])) as ArrayRef),
            ("time", Arc::new(Int64Array::from(vec![time; keys])) as ArrayRef),
        ])
        .expect("rows")
    }

    /// The encoded reports of two batches of one reduce partition: the first updates `keys`
    /// keys of one window, the second closes that window.
    fn report_bytes(keys: usize) -> [usize; 2] {
        let mut pipeline = StagePipeline::new(&reduce_stage(), &|_| unreachable!("no lookup")).expect("pipeline");
        let inputs = [rows(keys, 10), rows(1, 2_500)];
        let mut sizes = [0; 2];
        for (batch, input) in inputs.into_iter().enumerate() {
            let mut output = pipeline
                .run(&StageInputData::Blocks { blocks: vec![input], progress: None }, batch as u64)
                .expect("runs");
            let sink_rows = output.sink_rows.take().map_or(0, |rows| rows.num_rows() as u64);
            let mut stats = task_stats(&output, sink_rows);
            let visible = vec![Some(1_050); output.closed_windows.len()];
            stats.window_latencies_ms = window_latencies_ms(&output.closed_windows, &visible);
            assert_eq!(stats.window_latencies_ms.len(), batch, "batch 1 closes the window, batch 0 none");
            let report = TaskReport {
                task: TaskId { job: 1, stage: StageId(1), partition: 0, batch: batch as u64 },
                worker: 1,
                group: Some(0),
                outcome: TaskOutcome::Succeeded(stats),
                monotasks: Vec::new(),
                started_at_us: 0,
                finished_at_us: 10,
            };
            sizes[batch] = encode_binary(&report).len();
        }
        sizes
    }

    #[test]
    fn a_report_does_not_grow_with_the_number_of_keys() {
        let few = report_bytes(10);
        let many = report_bytes(1_000_000);
        for batch in 0..2 {
            // Counters are varints: 10 and 1 000 000 differ by two bytes each, and the few
            // that follow the keys (rows in and out, a block's rows and bytes, the state's keys
            // and bytes) by at most four.
            assert!(
                many[batch] <= few[batch] + 16,
                "batch {batch}: {} bytes with 10⁶ keys, {} with 10",
                many[batch],
                few[batch]
            );
        }
    }
}
