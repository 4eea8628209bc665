//! The library under the `sleet` binary: what a user's command needs, and what the benchmark
//! harness (`sleet-bench`, crates/bench) and the integration tests reuse instead of a copy.
//!
//! ```text
//!  main.rs (the `sleet` binary: flags → one of these)
//!    ├─ demo        local cluster + the ysb job (sleet-workloads) + client, a status line a second
//!    ├─ explain     a result file ──clarity_report──▶ model, bottleneck, what-if answers
//!    └─ driver / worker / submit / attach / job / gen: the engine crates and sleet-workloads
//!  client        submit, follow (reconnecting to a restarted driver), stop; the status line
//!  cluster       a driver and workers as child processes of the `sleet` binary on 127.0.0.1
//!  job_file      a job file as `sleet submit` reads it: the Avro schema files it names inlined
//!  sql_file      a SQL script compiled (sleet-sql) into a job file, files read beside it
//!  run_dir       the directory a local run writes to, cleared only if sleet wrote it
//!  ingest        `sleet ingest`: the server of sleet-ingest, its address and final figures printed
//!  entry         the async runtime, Ctrl-C (interrupt) and exit codes of a sleet process
//!  worker_limits the worker's resource-limit flags, passed on by a local cluster
//!  status        `sleet status`: the cluster and its job, from the driver's HTTP API
//!  security      the cluster secret and TLS flags, installed for every connection; loopback without a secret
//!  connector_check  the connectors' submission check, handed to the driver (which links none)
//!  console       `driver --http`: the API, dashboard and metrics (sleet-console) beside the driver
//!  memory        small pages only: the kernel's huge pages cost a growing heap its time
//! ```
//!
//! Nothing here depends on the benchmark harness: arrows go `sleet-bench` → `sleet-cli`.

pub mod clarity_report;
pub mod client;
pub mod cluster;
pub mod connector_check;
pub mod console;
pub mod demo;
pub mod entry;
pub mod explain;
pub mod ingest;
pub mod interrupt;
pub mod job_file;
pub mod memory;
pub mod run_dir;
pub mod security;
pub mod sql_file;
pub mod state_report;
pub mod status;
pub mod worker_limits;
