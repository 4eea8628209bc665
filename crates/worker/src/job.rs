//! A job as one worker holds it: its registered stages, the pipeline (and so the keyed state)
//! of each partition it has run, and its open sink and dead-letter files.

use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use sleet_connectors::dead_letter::DeadLetterWriter;
use sleet_connectors::generator::Generator;
use sleet_connectors::sink::JsonLinesSink;
use sleet_exec::pipeline::StagePipeline;
use sleet_plan::{SinkSpec, SourceSpec, StageId, StageInput, StagePlan, TableSpec};
use sleet_wire::clock::now_us;
use sleet_wire::JobRegistration;

use crate::error::WorkerError;

type Slot = (StageId, u32);

pub struct JobRuntime {
    pub registration: JobRegistration,
    /// When this worker took the job in (µs): before it, no partition could wait for work.
    pub registered_at_us: i64,
    pipelines: Mutex<HashMap<Slot, Arc<Mutex<StagePipeline>>>>,
    generators: Mutex<HashMap<u32, Arc<Generator>>>,
    tables: Mutex<HashMap<String, RecordBatch>>,
    sinks: Mutex<HashMap<Slot, Arc<Mutex<JsonLinesSink>>>>,
    dead_letters: Mutex<HashMap<Slot, Arc<Mutex<DeadLetterWriter>>>>,
}

impl JobRuntime {
    pub fn new(registration: JobRegistration) -> Self {
        JobRuntime {
            registration,
            registered_at_us: now_us(),
            pipelines: Mutex::default(),
            generators: Mutex::default(),
            tables: Mutex::default(),
            sinks: Mutex::default(),
            dead_letters: Mutex::default(),
        }
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

    /// Stateful stages keep their pipeline between batches; a stage runs in batch order.
    pub fn is_stateful(&self, id: StageId) -> bool {
        self.stage(id)
            .is_ok_and(|stage| stage.ops.iter().any(|op| matches!(op, sleet_plan::PhysicalOp::WindowAggregate { .. })))
    }

    pub fn pipeline(&self, stage: StageId, partition: u32) -> Result<Arc<Mutex<StagePipeline>>, WorkerError> {
        let mut pipelines = self.pipelines.lock().expect("pipelines lock");
        if let Some(pipeline) = pipelines.get(&(stage, partition)) {
            return Ok(Arc::clone(pipeline));
        }
        let plan = self.stage(stage)?;
        let pipeline = StagePipeline::new(plan, &|spec| self.table(spec))?;
        let pipeline = Arc::new(Mutex::new(pipeline));
        pipelines.insert((stage, partition), Arc::clone(&pipeline));
        Ok(pipeline)
    }

    fn table(&self, spec: &TableSpec) -> RecordBatch {
        let key = format!("{spec:?}");
        let mut tables = self.tables.lock().expect("tables lock");
        tables.entry(key).or_insert_with(|| sleet_connectors::table::load_table(spec)).clone()
    }

    pub fn generator(&self, spec: &SourceSpec, partition: u32) -> Arc<Generator> {
        let mut generators = self.generators.lock().expect("generators lock");
        Arc::clone(generators.entry(partition).or_insert_with(|| Arc::new(Generator::new(spec, partition))))
    }

    pub fn sink(
        &self,
        stage: StageId,
        partition: u32,
        spec: &SinkSpec,
    ) -> Result<Option<Arc<Mutex<JsonLinesSink>>>, WorkerError> {
        let SinkSpec::JsonLines { dir } = spec else { return Ok(None) };
        let mut sinks = self.sinks.lock().expect("sinks lock");
        if let Some(sink) = sinks.get(&(stage, partition)) {
            return Ok(Some(Arc::clone(sink)));
        }
        let sink = Arc::new(Mutex::new(JsonLinesSink::create(&PathBuf::from(dir), partition)?));
        sinks.insert((stage, partition), Arc::clone(&sink));
        Ok(Some(sink))
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
        let writer = Arc::new(Mutex::new(DeadLetterWriter::create(&PathBuf::from(dir), stage.0, partition)?));
        writers.insert((stage, partition), Arc::clone(&writer));
        Ok(Some(writer))
    }

    /// Flushes every open file; called when the job ends.
    pub fn flush(&self) -> Result<(), WorkerError> {
        for sink in self.sinks.lock().expect("sinks lock").values() {
            sink.lock().expect("sink lock").flush()?;
        }
        for writer in self.dead_letters.lock().expect("dead letters lock").values() {
            writer.lock().expect("dead letter lock").flush()?;
        }
        Ok(())
    }

    /// The start and end of `batch` on the job's batch clock.
    pub fn batch_range_ms(&self, batch: u64) -> (i64, i64) {
        let interval = self.registration.batch_interval_ms as i64;
        let start = self.registration.start_ms + batch as i64 * interval;
        (start, start + interval)
    }
}
