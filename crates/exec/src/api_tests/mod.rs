//! Tests of whole stage pipelines through the crate's public API: the Avro decoder against
//! the JSON decoder, the gateway plan's keyed state across batches, hopping and session
//! window jobs, and a window join. They are unit tests rather than an integration-test
//! binary only because each release test binary is a whole-program link with thin LTO (one
//! of the longest steps of `scripts/test.sh`'s build); they use nothing that is not public.

mod avro;
mod expr_functions;
mod expr_reference;
mod state_gateway_plan;
mod window_join_plan;
mod window_kinds_plan;
