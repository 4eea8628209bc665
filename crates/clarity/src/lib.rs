//! Monotask records: the raw material of sleet's performance model.
//!
//! ```text
//!  worker: cpu pool / net scheduler / disk scheduler
//!        │ one MonotaskRecord per finished monotask
//!        ▼
//!  TaskCompleted { records } ──▶ driver ──▶ summarize() ──▶ where the time goes
//! ```
//!
//! Pure data and pure functions: no clocks, no I/O. The bottleneck and what-if model of
//! DESIGN §8 grows here.

pub mod percentile;
pub mod record;
pub mod summary;

pub use percentile::{percentile, Distribution};
pub use record::{MonotaskKind, MonotaskRecord, Resource};
pub use summary::{summarize, MonotaskTotals, ResourceSummary};
