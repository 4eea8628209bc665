//! The job description: what a sleet job computes, independent of where it runs.
//!
//! ```text
//!   PlanBuilder ──build()──▶ Plan ──validate()──▶ node schemas
//!        (Rust API)           │  ▲
//!                             │  └── JobFile (JSON on disk, `sleet submit`)
//!                             ▼
//!                  physical::plan_stages(plan, combine)
//!                             │
//!                             ▼
//!        PhysicalPlan: [stage 0: source → ops → shuffle write]
//!                      [stage 1: shuffle read → ops → sink]
//! ```
//!
//! Everything here is pure data and pure functions: no I/O, no clocks, no threads. A
//! `decode_avro` node's schema is parsed with `sleet-avro` (`avro.rs`: the columns it decodes
//! into); a schema named by a path is read by the client before validation.
//! The driver ships `StagePlan`s to workers once per job; tasks name them by `StageId`.

pub mod avro;
pub mod builder;
pub mod duration;
pub mod error;
pub mod expr;
pub mod expr_type;
pub mod gateway;
pub mod job;
pub mod nexmark;
pub mod node;
pub mod physical;
pub mod schema;
pub mod state_spec;
pub mod validate;
pub mod window_join;

pub use avro::AvroSchemaSource;
pub use builder::PlanBuilder;
pub use error::{NodeRef, PlanError};
pub use expr::{col, lit, BinaryOp, CaseBranch, Expr, ExprTypeError, Scalar, ScalarFunction};
pub use gateway::{GatewayEncoding, GatewayFormat, GatewaySourceSpec};
pub use job::{GroupSize, JobFile, JobSettings, LatencyTarget, OverheadBounds, SchedulerKind};
pub use nexmark::{NexmarkSourceSpec, NexmarkTable};
pub use node::{
    default_max_records_per_batch, AggFunc, Aggregate, EventTimeSource, FileSourceSpec, KafkaSourceSpec, KafkaStart,
    Node, NumbersSourceSpec, Operator, Plan, ReplayedBatches, SinkSpec, SourceRange, SourceSpec, TableSpec, WindowEmit,
    WindowKind, WindowSpec, YsbSourceSpec,
};
pub use physical::{plan_stages, PhysicalOp, PhysicalPlan, StageId, StageInput, StageOutput, StagePlan};
pub use schema::{DataType, Field, Schema};
pub use state_spec::{
    IncrementsSpec, KeyedAggregateSpec, LatePolicy, Ranking, ReadingEncoding, TopKSpec, TopRowsSpec, RANK_COLUMN,
};
pub use window_join::{JoinColumn, WindowJoinSpec};
