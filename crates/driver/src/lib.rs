//! The driver: the single coordinator of a sleet cluster. It is never on the data path.
//!
//! ```text
//!  clients / workers ──TCP──▶ server (frames → DriverEvent) ──▶ coordinator (owns state)
//!                                                                   │ per job
//!                                                                   ▼
//!        bsp: per batch ─ LaunchTask × tasks ─▶ workers ─ TaskFinished ─▶ barrier ─▶ next stage
//!                         placement (pure) · barrier (pure) · progress (pure)
//! ```

pub mod barrier;
pub mod bsp;
pub mod coordinator;
pub mod error;
pub mod group_size;
pub mod membership;
pub mod placement;
pub mod progress;
pub mod server;

pub use coordinator::{run, DriverConfig};
pub use error::DriverError;
