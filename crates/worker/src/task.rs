//! One task as a DAG of monotasks, each on the scheduler of the one resource it uses:
//!
//! ```text
//!  source task:  cpu SourceRead (generate) → cpu MapCompute (decode, operators, partition)
//!                → disk SinkWrite (dead letters, when there are any)
//!  reduce task:  net ShuffleFetch per remote worker ∥ local blocks (zero copy)
//!                → cpu ReduceCompute (merge, window state, format) → disk SinkWrite
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use arrow_array::RecordBatch;
use sleet_clarity::{MonotaskKind, MonotaskRecord};
use sleet_exec::pipeline::{StageInputData, StageRunOutput};
use sleet_exec::RawRecords;
use sleet_plan::{SinkSpec, StageInput, StageOutput};
use sleet_wire::clock::{now_ms, now_us};
use sleet_wire::{
    BlockId, BlockLocation, BlockMeta, TaskDescriptor, TaskInput, TaskOutcome, TaskReport, TaskStats, WorkerId,
};
use tokio::sync::Semaphore;

use crate::announce::Announcer;
use crate::block_store::BlockStore;
use crate::error::WorkerError;
use crate::job::JobRuntime;
use crate::pool::{Measured, ResourcePool};
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
    pub store: Arc<BlockStore>,
    pub shuffle: Arc<ShuffleClient>,
    /// Pushes map output metadata to the owners of reduce partitions (group scheduling).
    pub announcer: Announcer,
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
    TaskReport { task: descriptor.task, worker: ctx.worker, group, outcome, monotasks, started_at_us, finished_at_us }
}

/// Rows formatted for the sink and bad records with their reasons, ready for the disk.
struct Writes {
    /// Rows the sink received; the rows themselves are formatted (or discarded) and freed
    /// on the cpu thread that built them, where freeing is cheapest.
    sink_rows: u64,
    sink_bytes: Vec<u8>,
    dead_letters: Vec<(String, Vec<u8>)>,
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
    let mut stats = TaskStats::default();
    let pipeline = job.pipeline(task.stage, task.partition)?;
    let sink_spec = match &stage.output {
        StageOutput::Sink(spec) => Some(spec),
        StageOutput::Shuffle { .. } => None,
    };
    let format_sink = matches!(sink_spec, Some(SinkSpec::JsonLines { .. }) | Some(SinkSpec::Stdout));
    let compute_input = move |input: StageInputData| {
        let bytes = input_bytes(&input);
        let result = compute(&pipeline, &input, format_sink);
        Measured { value: result, bytes }
    };
    let result = match (&stage.input, &descriptor.input) {
        (StageInput::Source(spec), TaskInput::SourceRange { start_ms, end_ms }) => {
            let generator = job.generator(spec, task.partition);
            let (start_ms, end_ms) = (*start_ms, *end_ms);
            let read = move || {
                let mut raw = RawRecords::new();
                generator.generate(start_ms, end_ms, &mut raw);
                let bytes = raw.data.len() as u64;
                Measured { value: raw, bytes }
            };
            if let Some(turn) = turn {
                turn_held = Some(turn.take(task.batch).await);
            }
            let (result, records) = ctx
                .cpu
                .run_chain(MonotaskKind::SourceRead, read, MonotaskKind::MapCompute, move |raw| {
                    compute_input(StageInputData::Raw(raw))
                })
                .await;
            monotasks.extend(records);
            stats.source_range = Some((start_ms, end_ms));
            result
        }
        (StageInput::Shuffle { .. }, TaskInput::Shuffle { blocks }) => {
            // Boxed: a fetch's state is large and only reduce tasks need it, while every
            // task's future is allocated and copied whole when it is launched.
            let batches = Box::pin(fetch_blocks(ctx, blocks, monotasks)).await?;
            if let Some(turn) = turn {
                turn_held = Some(turn.take(task.batch).await);
            }
            let (result, record) =
                ctx.cpu.run(MonotaskKind::ReduceCompute, move || compute_input(StageInputData::Blocks(batches))).await;
            monotasks.push(record);
            result
        }
        (expected, found) => {
            return Err(WorkerError::Internal(format!(
                "{task}: stage reads {expected:?} but the task carries {found:?}"
            )))
        }
    };
    let (output, writes) = result?;

    stats.records_in = output.records_in;
    stats.rows_out = output.rows_out;
    stats.dead_letters = output.dead_letters.len() as u64;
    stats.unmatched_lookup_rows = output.unmatched_lookup_rows;
    stats.late_rows_dropped = output.late_rows_dropped;
    stats.window_latencies_ms =
        output.closed_windows.iter().map(|closed| closed.last_update_ms - closed.window_end_ms).collect();
    stats.sink_rows = writes.sink_rows;
    for (reduce_partition, block) in output.blocks {
        let meta =
            BlockMeta { reduce_partition, rows: block.num_rows() as u64, bytes: block.get_array_memory_size() as u64 };
        ctx.store.put(BlockId::of(task, meta.reduce_partition), block);
        stats.blocks.push(meta);
    }

    let dead_letter_writer =
        if writes.dead_letters.is_empty() { None } else { job.dead_letter_writer(task.stage, task.partition)? };
    let sink = match &sink_spec {
        Some(spec) if !writes.sink_bytes.is_empty() => job.sink(task.stage, task.partition, spec)?,
        _ => None,
    };
    let to_stdout = matches!(sink_spec, Some(SinkSpec::Stdout));
    if dead_letter_writer.is_some() || sink.is_some() || (to_stdout && !writes.sink_bytes.is_empty()) {
        let (partition, batch) = (task.partition, task.batch);
        // Boxed for the same reason as the fetch: only tasks that write need this state.
        let (result, record) = Box::pin(ctx.disk.run(MonotaskKind::SinkWrite, move || {
            let bytes = writes.sink_bytes.len() as u64
                + writes.dead_letters.iter().map(|(_, record)| record.len() as u64).sum::<u64>();
            let result = write_out(&writes, sink, dead_letter_writer, to_stdout, batch, partition);
            Measured { value: result, bytes }
        }))
        .await;
        monotasks.push(record);
        result?;
    }
    drop(turn_held);
    Ok(stats)
}

fn input_bytes(input: &StageInputData) -> u64 {
    match input {
        StageInputData::Raw(raw) => raw.data.len() as u64,
        StageInputData::Blocks(blocks) => blocks.iter().map(|block| block.get_array_memory_size() as u64).sum(),
    }
}

fn compute(
    pipeline: &std::sync::Mutex<sleet_exec::pipeline::StagePipeline>,
    input: &StageInputData,
    format_sink: bool,
) -> Result<(StageRunOutput, Writes), WorkerError> {
    let now = now_ms();
    let mut output = pipeline.lock().expect("pipeline lock").run(input, now)?;
    let mut sink_bytes = Vec::new();
    let sink_rows = output.sink_rows.take();
    if let (true, Some(rows)) = (format_sink, &sink_rows) {
        sleet_connectors::sink::format_json_lines(rows, now, &mut sink_bytes);
    }
    let sink_rows = sink_rows.map_or(0, |rows| rows.num_rows() as u64);
    let dead_letters = match input {
        StageInputData::Raw(raw) => output
            .dead_letters
            .iter()
            .map(|letter| (letter.reason.clone(), raw.get(letter.record_index).to_vec()))
            .collect(),
        StageInputData::Blocks(_) => Vec::new(),
    };
    Ok((output, Writes { sink_rows, sink_bytes, dead_letters }))
}

fn write_out(
    writes: &Writes,
    sink: Option<Arc<std::sync::Mutex<sleet_connectors::sink::JsonLinesSink>>>,
    dead_letter_writer: Option<Arc<std::sync::Mutex<sleet_connectors::dead_letter::DeadLetterWriter>>>,
    to_stdout: bool,
    batch: u64,
    partition: u32,
) -> Result<(), WorkerError> {
    if let Some(sink) = sink {
        let mut sink = sink.lock().expect("sink lock");
        sink.write(&writes.sink_bytes)?;
        // Flushed every batch: the output of a finished batch is visible, not stuck in a buffer.
        sink.flush()?;
    } else if to_stdout {
        std::io::stdout().lock().write_all(&writes.sink_bytes)?;
    }
    if let Some(writer) = dead_letter_writer {
        let mut writer = writer.lock().expect("dead letter lock");
        for (reason, record) in &writes.dead_letters {
            writer.write(batch, partition, reason, record)?;
        }
        writer.flush()?;
    }
    Ok(())
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
            let record = MonotaskRecord {
                kind: MonotaskKind::ShuffleFetch,
                resource: MonotaskKind::ShuffleFetch.resource(),
                bytes: result.as_ref().map_or(0, |(_, bytes)| *bytes),
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
