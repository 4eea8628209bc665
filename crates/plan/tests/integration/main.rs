//! The planner's tests through its public API: validation errors, physical plans, and the
//! Avro, keyed-state and window-join nodes. One test binary rather than one per file: each is a link of
//! its own in the release profile the suite runs in.

mod avro;
mod physical;
mod state;
mod validation;
mod window_join;
