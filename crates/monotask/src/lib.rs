//! The words the data path and the performance model share: the resource a monotask uses
//! (`Resource`), what it did (`MonotaskKind`), the record it leaves (`MonotaskRecord`), and
//! how long a batch's events waited for its close (`EventWait`).
//!
//! ```text
//!  source (connectors) ──EventWait──▶ RawRecords (exec) ──▶ task report (wire)
//!  worker schedulers ──MonotaskRecord { kind, resource, times }──▶ task report (wire)
//!                                                                       │
//!  driver ──▶ samples ──▶ the performance model (clarity) reads both ◀──┘
//! ```
//!
//! Plain data with serde and a few arithmetic helpers, so that the operators, the connectors,
//! the wire and the worker can name a resource without linking the model. It must never
//! grow analysis (that is `sleet-clarity`'s) or depend on another sleet crate.

mod event_wait;
mod record;

pub use event_wait::EventWait;
pub use record::{MonotaskKind, MonotaskRecord, Resource};
