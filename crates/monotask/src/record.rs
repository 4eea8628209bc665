//! The record every monotask leaves behind: what it did, on which resource, and when.

use serde::{Deserialize, Serialize};

/// The one resource a monotask uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    Cpu,
    Net,
    Disk,
}

impl Resource {
    /// Every resource, in declaration order (the order of their discriminants).
    pub const ALL: [Resource; 3] = [Resource::Cpu, Resource::Net, Resource::Disk];

    /// The name the result files and the API use.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Net => "net",
            Resource::Disk => "disk",
        }
    }
}

/// What a monotask did. The resource it used is recorded beside it, by the scheduler that
/// ran it, because one kind may use different resources: a source read is cpu work for a
/// generator, network for Kafka and disk for a file; a sink write is disk for files and
/// network for Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MonotaskKind {
    /// Produce raw records from a source: generate them, or read them from where they are.
    SourceRead,
    /// Run the stage's operators and partition into blocks (decoding is `Decode`'s).
    MapCompute,
    /// Pull shuffle blocks from one remote worker.
    ShuffleFetch,
    /// Merge blocks, update keyed state and format sink output.
    ReduceCompute,
    /// Write sink output and dead letters.
    SinkWrite,
    /// Serialize a stateful partition's state for a checkpoint.
    StateSnapshot,
    /// Write a snapshot to the checkpoint store and make it durable.
    CheckpointWrite,
    /// Decode raw source records into rows: the first part of a map task's compute, recorded
    /// on its own (as MonoSpark splits deserialization off its compute monotask) so that the
    /// "input already decoded" what-if can take it away. Last, so that the other kinds keep
    /// their discriminants.
    Decode,
    /// Map-side combine: fold a map task's rows into one partial aggregate per key before the
    /// shuffle, recorded apart from the rest of map compute so that the "combine off" what-if
    /// knows the aggregation work it would move to the reduce side.
    Combine,
}

impl MonotaskKind {
    /// Every kind, in declaration order (the order of their discriminants).
    pub const ALL: [MonotaskKind; 9] = [
        MonotaskKind::SourceRead,
        MonotaskKind::MapCompute,
        MonotaskKind::ShuffleFetch,
        MonotaskKind::ReduceCompute,
        MonotaskKind::SinkWrite,
        MonotaskKind::StateSnapshot,
        MonotaskKind::CheckpointWrite,
        MonotaskKind::Decode,
        MonotaskKind::Combine,
    ];
}

/// Times are microseconds since the Unix epoch on the worker's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonotaskRecord {
    pub kind: MonotaskKind,
    pub resource: Resource,
    pub bytes: u64,
    pub queued_at_us: i64,
    pub started_at_us: i64,
    pub finished_at_us: i64,
}

impl MonotaskRecord {
    pub fn queue_us(&self) -> i64 {
        self.started_at_us - self.queued_at_us
    }

    pub fn run_us(&self) -> i64 {
        self.finished_at_us - self.started_at_us
    }
}
