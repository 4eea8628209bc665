//! The built-in workloads, shared by `sleet demo`, `sleet job`, `sleet gen` and the benchmarks
//! (`sleet-bench`): each as a job the engine runs, the flags that shape it, its input written
//! to an outside system, and the ground truth its results are checked against.
//!
//! ```text
//!  ysb_job        the Yahoo Streaming Benchmark query as a JobFile (YsbFlags → YsbOptions → job)
//!  ysb_input      where a ysb job reads: the built-in generator, a Kafka topic, JSON-lines files
//!  gen_ysb        the generator's events to a Kafka topic, the campaigns table to a CSV file
//!  gateway_check  the gateway workload's exact per-(gateway, day) totals and daily top 10,
//!                 and a job's top-k rows against them
//!  gateway_job    the home-gateway plan (increments → keyed aggregate → top-k), JSON or Avro
//!  gateway_job_file  `sleet job gateway`'s flags → its job file, built-in source or Kafka
//!  gen_gateway    the gateway generator's records to a transport (Kafka, or an ingest server
//!                 over HTTP or WebSocket through ingest_client), keyed by gateway, JSON or Avro
//!  nexmark_check  Nexmark q0–q3, q5, q7, q8 computed over the generator's events
//!  nexmark_exact  a q0–q2 job's sink rows against nexmark_check, as a multiset
//!  gen_nexmark    the Nexmark generator's events to a Kafka topic
//!  ysb_check      a ysb run's ground truth, its result rows against it; window latencies
//!  shuffle_check  the number stream's expected sums and (key, window) totals, and the sink's
//!  scheduler_args the scheduler flags of every command that builds a job
//!  duration_arg   `10ms`, `1s`, bare numbers in a flag's own unit
//! ```
//!
//! The generators themselves (`sleet_connectors::ysb`, `sleet_connectors::numbers`,
//! `sleet_connectors::gateway`) are engine
//! sources: a job runs them with no outside service. What is here only builds jobs on them and
//! recomputes what their results must be.

mod backlog;
pub mod duration_arg;
pub mod gateway_check;
pub mod gateway_job;
pub mod gateway_job_file;
pub mod gen_gateway;
pub mod gen_nexmark;
pub mod gen_ysb;
pub mod ingest_client;
pub mod nexmark_check;
pub mod nexmark_exact;
pub mod scheduler_args;
pub mod shuffle_check;
mod threads;
pub mod ysb_check;
pub mod ysb_input;
pub mod ysb_job;

/// A directory a printed job file names, made absolute against where `sleet job` ran: the
/// driver (which publishes commit manifests there) and the workers (which write the files)
/// run elsewhere. `flag` names the option it came from in the error.
pub fn absolute_dir(dir: &str, flag: &str) -> anyhow::Result<String> {
    use anyhow::Context;
    let path = std::path::absolute(dir).with_context(|| format!("{flag} {dir}: cannot make it an absolute path"))?;
    Ok(path.to_string_lossy().into_owned())
}
