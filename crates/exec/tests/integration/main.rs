//! Stage pipelines run through the public API: the Avro decoder against the JSON decoder,
//! and the gateway plan's keyed state across batches. One test binary rather than one per
//! file: each is a link of its own in the release profile the suite runs in.

mod avro;
mod state_gateway_plan;
