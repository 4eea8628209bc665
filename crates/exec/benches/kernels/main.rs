//! Micro-benchmarks of the exec kernels a ysb task spends its CPU in: JSON decoding (and Avro
//! decoding of gateway records beside it), the per-row key encoding and hashing, the window
//! update, and the gateway job's keyed state. Whole-system runs judge a change
//! to these only through noise of seconds; these time each kernel alone.
//!
//! `cargo bench -p sleet-exec --bench kernels`; the figures are in `benchmarks/README.md`.

mod avro;
mod events;
mod json;
mod keys;
mod state;
mod window;

criterion::criterion_group!(
    benches,
    json::decode,
    avro::decode,
    keys::encode_and_hash,
    keys::partition,
    window::update,
    state::gateway
);
criterion::criterion_main!(benches);
