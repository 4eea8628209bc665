//! A job as one worker holds it: its registered stages, the pipeline (and so the keyed state)
//! of each partition it has run, its open sources, sinks and dead-letter files, and when each
//! stateful partition's output became visible.

use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use sleet_connectors::dead_letter::DeadLetterWriter;
use sleet_connectors::open::open_source;
use sleet_connectors::sink::{open_sink, Sink, SinkContext};
use sleet_connectors::source::Source;
use sleet_durable::checkpoint_store::{CheckpointStore, DirectoryStore};
use sleet_exec::pipeline::StagePipeline;
use sleet_plan::{PhysicalOp, SinkSpec, SourceSpec, StageId, StageInput, StagePlan, TableSpec};
use sleet_wire::clock::{now_us, BatchClock};
use sleet_wire::{JobRegistration, PartitionSnapshot};

use crate::error::WorkerError;
use crate::visibility::VisibleTimes;

type Slot = (StageId, u32);

/// Batches a visible-time lookup reaches back beyond a window's size and lateness: a window
/// closes in the first batch whose events pass its end, so a little slack covers it.
const VISIBILITY_SLACK_BATCHES: u64 = 64;

pub struct JobRuntime {
    pub registration: JobRegistration,
    /// When this worker took the job in (µs): before it, no partition could wait for work.
    pub registered_at_us: i64,
    pipelines: Mutex<HashMap<Slot, Arc<Mutex<StagePipeline>>>>,
    sources: Mutex<HashMap<u32, Arc<dyn Source>>>,
    tables: Mutex<HashMap<String, RecordBatch>>,
    /// `None` for a partition whose spec keeps no output, so that a task of such a stage
    /// does not open (and name) its sink again on every batch.
    sinks: Mutex<HashMap<Slot, Option<Arc<dyn Sink>>>>,
    dead_letters: Mutex<HashMap<Slot, Arc<Mutex<DeadLetterWriter>>>>,
    visible: Mutex<HashMap<Slot, VisibleTimes>>,
    /// Backpressure's bound on a source task's read, as the driver last told it; 0: none.
    read_bound: AtomicU32,
}

impl JobRuntime {
    pub fn new(registration: JobRegistration) -> Self {
        JobRuntime {
            registration,
            registered_at_us: now_us(),
            pipelines: Mutex::default(),
            sources: Mutex::default(),
            tables: Mutex::default(),
            sinks: Mutex::default(),
            dead_letters: Mutex::default(),
            visible: Mutex::default(),
            read_bound: AtomicU32::new(0),
        }
    }

    /// What each source task may read at most now (backpressure).
    pub fn read_bound(&self) -> Option<u32> {
        match self.read_bound.load(Ordering::Relaxed) {
            0 => None,
            records => Some(records),
        }
    }

    pub fn set_read_bound(&self, records: Option<u32>) {
        // 0 stands for none, so a bound of 0 is kept as 1 (the driver sends 100 or more).
        let stored = records.map_or(0, |records| records.max(1));
        self.read_bound.store(stored, Ordering::Relaxed);
    }

    pub fn clock(&self) -> BatchClock {
        self.registration.clock
    }

    pub fn stage(&self, id: StageId) -> Result<&StagePlan, WorkerError> {
        self.registration
            .stages
            .get(id.0 as usize)
            .ok_or_else(|| WorkerError::Internal(format!("job {} has no {id}", self.registration.job)))
    }

    /// The stage that reads `id`'s shuffle output, if any.
    pub fn consumer_of(&self, id: StageId) -> Option<StageId> {
        self.registration.stages.iter().find_map(|stage| match stage.input {
            StageInput::Shuffle { from_stage, .. } if from_stage == id => Some(stage.id),
            _ => None,
        })
    }

    /// A stage whose partitions must see their batches in order: a stateful one (each
    /// batch's state update builds on the one before) and one reading a source that is read
    /// front to back, as a Kafka consumer must. A generator's partitions are not held to it:
    /// the ordered path's bookkeeping and turn cost the workers about a tenth of their CPU in
    /// `bench sched` (docs/experiments/2026-11-27-group-scheduling-regression.md).
    pub fn runs_in_batch_order(&self, id: StageId) -> bool {
        self.stage(id).is_ok_and(|stage| {
            matches!(&stage.input, StageInput::Source(source) if source.reads_in_order()) || stage.is_stateful()
        })
    }

    pub fn pipeline(&self, stage: StageId, partition: u32) -> Result<Arc<Mutex<StagePipeline>>, WorkerError> {
        let mut pipelines = self.pipelines.lock().expect("pipelines lock");
        if let Some(pipeline) = pipelines.get(&(stage, partition)) {
            return Ok(Arc::clone(pipeline));
        }
        let plan = self.stage(stage)?;
        let mut pipeline = StagePipeline::new(plan, &|spec| self.table(spec))?;
        pipeline.set_last_batch(self.registration.last_batch);
        if let Some(snapshot) = self.snapshot_to_restore(stage, partition) {
            // A partition that moved here after a failure starts from the checkpoint.
            let store = self
                .checkpoint_store()
                .ok_or_else(|| WorkerError::Internal("a restore point was given without a checkpoint store".into()))?;
            let bytes = store.get(&snapshot.path)?;
            pipeline.restore_state(&bytes)?;
        }
        let pipeline = Arc::new(Mutex::new(pipeline));
        pipelines.insert((stage, partition), Arc::clone(&pipeline));
        Ok(pipeline)
    }

    /// Where this job's checkpoints go, when it takes any.
    pub fn checkpoint_store(&self) -> Option<DirectoryStore> {
        self.registration.checkpoint_dir.as_ref().map(DirectoryStore::new)
    }

    fn snapshot_to_restore(&self, stage: StageId, partition: u32) -> Option<&PartitionSnapshot> {
        let restore = self.registration.restore.as_ref()?;
        restore.snapshots.iter().find(|snapshot| snapshot.stage == stage && snapshot.partition == partition)
    }

    /// Whether `stage` keeps keyed state, which a checkpoint snapshots.
    pub fn is_stateful(&self, stage: StageId) -> bool {
        self.stage(stage).is_ok_and(StagePlan::is_stateful)
    }

    fn table(&self, spec: &TableSpec) -> Result<RecordBatch, String> {
        let key = format!("{spec:?}");
        let mut tables = self.tables.lock().expect("tables lock");
        if let Some(table) = tables.get(&key) {
            return Ok(table.clone());
        }
        let table = sleet_connectors::table::load_table(spec).map_err(|error| error.to_string())?;
        tables.insert(key, table.clone());
        Ok(table)
    }

    pub fn source(&self, spec: &SourceSpec, partition: u32) -> Arc<dyn Source> {
        let mut sources = self.sources.lock().expect("sources lock");
        Arc::clone(sources.entry(partition).or_insert_with(|| open_source(spec, partition)))
    }

    /// The sink of a stage's partition, opened on first use; `None` when the spec keeps no
    /// output.
    pub fn sink(&self, stage: StageId, partition: u32, spec: &SinkSpec) -> Result<Option<Arc<dyn Sink>>, WorkerError> {
        let mut sinks = self.sinks.lock().expect("sinks lock");
        if let Some(sink) = sinks.get(&(stage, partition)) {
            return Ok(sink.clone());
        }
        let context = SinkContext {
            partition,
            partitions: self.stage(stage)?.partitions,
            attempt: self.registration.attempt,
            run: format!("{}@{}", self.registration.name, self.registration.clock.start_ms),
        };
        let sink = open_sink(spec, context)?;
        sinks.insert((stage, partition), sink.clone());
        Ok(sink)
    }

    /// Whether a source task's output is worth keeping for a recovery to reuse: only with
    /// checkpoints (which bound how long it is kept), and only a stateless stage's shuffle
    /// output, which is a function of its input alone.
    pub fn keeps_map_outputs(&self, stage: StageId) -> bool {
        self.registration.checkpoint_dir.is_some()
            && self.stage(stage).is_ok_and(|plan| {
                matches!(plan.input, StageInput::Source(_))
                    && matches!(plan.output, sleet_plan::StageOutput::Shuffle { .. })
                    && !plan.is_stateful()
            })
    }

    /// The attempt whose kept output this task hands on instead of running, if any.
    pub fn reused_from(&self, stage: StageId, partition: u32, batch: u64) -> Option<sleet_wire::JobId> {
        let reuse = self.registration.reuse.as_ref()?;
        reuse
            .runs
            .iter()
            .any(|run| run.stage == stage && run.partition == partition && run.batches.contains(&batch))
            .then_some(reuse.from_job)
    }

    /// Whether an earlier attempt already committed `batch`'s output: a re-run of it
    /// rebuilds state and writes nothing.
    pub fn output_committed(&self, batch: u64) -> bool {
        self.registration.output_committed_through.is_some_and(|through| batch <= through)
    }

    pub fn dead_letter_writer(
        &self,
        stage: StageId,
        partition: u32,
    ) -> Result<Option<Arc<Mutex<DeadLetterWriter>>>, WorkerError> {
        let Some(dir) = &self.registration.dead_letter_dir else { return Ok(None) };
        let mut writers = self.dead_letters.lock().expect("dead letters lock");
        if let Some(writer) = writers.get(&(stage, partition)) {
            return Ok(Some(Arc::clone(writer)));
        }
        let writer = Arc::new(Mutex::new(DeadLetterWriter::create(
            &PathBuf::from(dir),
            stage.0,
            partition,
            self.registration.attempt,
        )?));
        writers.insert((stage, partition), Arc::clone(&writer));
        Ok(Some(writer))
    }

    /// Notes when a batch's output on this partition became visible (`(batch, at_ms)`, if it
    /// wrote any), and returns when each of `last_update_batches` became visible: a closed
    /// window's final result. A batch past the horizon, or one that wrote nothing, has none.
    pub fn visible_times(
        &self,
        stage: StageId,
        partition: u32,
        visible: Option<(u64, i64)>,
        last_update_batches: impl Iterator<Item = u64>,
    ) -> Vec<Option<i64>> {
        let horizon = self.visibility_horizon(stage);
        let mut all = self.visible.lock().expect("visible times lock");
        let times = all.entry((stage, partition)).or_insert_with(|| VisibleTimes::new(horizon));
        if let Some((batch, at_ms)) = visible {
            times.record(batch, at_ms);
        }
        last_update_batches.map(|last| times.at(last)).collect()
    }

    /// How many batches a window of the stage can stay open: its size and lateness in batches.
    fn visibility_horizon(&self, stage: StageId) -> u64 {
        let interval_ms = self.clock().interval_ms.max(1);
        let open_ms = self
            .stage(stage)
            .ok()
            .and_then(|plan| {
                plan.ops.iter().find_map(|op| match op {
                    PhysicalOp::WindowAggregate { window, .. } => Some(window.size_ms + window.allowed_lateness_ms),
                    _ => None,
                })
            })
            .unwrap_or(0);
        (open_ms.max(0) / interval_ms) as u64 + VISIBILITY_SLACK_BATCHES
    }

    /// Flushes every open file; called when the job ends.
    pub fn flush(&self) -> Result<(), WorkerError> {
        for sink in self.sinks.lock().expect("sinks lock").values().flatten() {
            sink.flush()?;
        }
        for writer in self.dead_letters.lock().expect("dead letters lock").values() {
            writer.lock().expect("dead letter lock").flush()?;
        }
        Ok(())
    }
}
