//! What can stop the ingest server from starting or serving, grouped by who is at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    // The user: flags, schema file, token file.
    #[error("reading the schema file {path}")]
    SchemaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the schema file {path} is not a schema (`{{\"fields\": [...]}}`): {reason}")]
    SchemaJson { path: PathBuf, reason: String },
    #[error("the Avro schema is not one sleet decodes: {0}")]
    AvroSchema(String),
    #[error("key field `{field}` {problem}")]
    KeyField { field: String, problem: &'static str },
    #[error("reading the token file {path}")]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the token {from} is empty")]
    EmptyToken { from: String },
    #[error("--{flag} must be at least {min}")]
    Limit { flag: &'static str, min: u64 },
    #[error("--{flag} must be at least {min:?}")]
    TooShort { flag: &'static str, min: std::time::Duration },
    #[error("building the record decoder")]
    Decoder(#[source] sleet_exec::ExecError),
    // The host: the listening address, the process itself.
    #[error("listening on {address}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("serving HTTP")]
    Serve(#[source] std::io::Error),
    #[error("starting the Kafka writer thread")]
    WriterThread(#[source] std::io::Error),
}
