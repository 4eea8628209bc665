//! The performance model built from monotask records (`sleet-monotask` owns the records;
//! `docs/design/performance-model.md`, issue 14).
//!
//! ```text
//!  worker: cpu pool / net scheduler / disk scheduler
//!        │ one MonotaskRecord per finished monotask
//!        ▼
//!  TaskCompleted { records } ──▶ driver ──▶ summarize() ──▶ where the time goes
//!                                  │ fills TaskSample, BatchSample, ClusterShape
//!                                  │ (a benchmark adds the HostCapacity it measured)
//!                                  ▼
//!                             RunSamples ─┬─▶ model()       per-resource ideal times, bottleneck
//!                                         ├─▶ utilization() per worker × resource × second
//!                                         ├─▶ predict()     what-if: batch time, stable rate
//!                                         ├─▶ stragglers()  slow tasks and their causes
//!                                         ├─▶ blocked()     speed-up without net / disk / coordination
//!                                         ├─▶ breakdowns()  per-batch latency in parts
//!                                         └─▶ analyze()     all of the above, for a result file
//! ```
//!
//! Pure data and pure functions: no clocks, no I/O. The driver fills the samples from what it
//! already records; the CLI and the bench print and serialize what these functions return.

pub mod analysis;
pub mod blocked;
pub mod breakdown;
pub mod error;
pub mod host;
pub mod model;
pub mod percentile;
pub mod sample;
pub mod stragglers;
pub mod summary;
pub mod whatif;

pub use analysis::{analyze, glance, Analysis, BreakdownReport, Glance, ResourceUse, SecondParts, StragglerSummary};
pub use blocked::{batch_blocked, blocked, BatchBlocked, BlockedReport, Blocker, BlockerSpeedup};
pub use breakdown::{breakdown, breakdowns, part_distributions, LatencyBreakdown, PartDistribution, StageSpan};
pub use error::ClarityError;
pub use host::{HostCapacity, MapTaskFixedCost};
pub use model::{
    model, model_of, terms, throughputs, utilization, Bottleneck, JobModel, JobTerms, ResourceSecond, StageModel,
    StageTerms, Throughputs, SOURCE_BOUND_SHARE,
};
pub use percentile::{percentile, Distribution};
pub use sample::{BatchSample, ClusterShape, RunSamples, TaskSample};
// The vocabulary the samples are made of, so that a reader of the model names it from one place.
pub use sleet_monotask::{EventWait, MonotaskKind, MonotaskRecord, Resource};
pub use stragglers::{
    stragglers, Straggler, StragglerCause, StragglerReport, STRAGGLER_DURATION_MIN_US, STRAGGLER_FACTOR,
};
pub use summary::{summarize, MonotaskTotals, ResourceSummary};
pub use whatif::{parse_scenarios, predict, Prediction, Scenario, WhatIfParams};
