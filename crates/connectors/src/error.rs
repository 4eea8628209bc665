//! Errors of sources, tables and sinks; each names the file (and line) at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// The file system refused; whether a retry helps depends on the cause.
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file the connector reads back is not in the format it writes.
    #[error("{path}:{line}: {reason}")]
    Format { path: PathBuf, line: usize, reason: String },
    /// A source or sink outside the process (Kafka, a file) cannot be used as the job says.
    #[error("{what}: {reason}")]
    External { what: String, reason: String },
    /// Reading committed output or a file written whole; the error already names the file.
    #[error(transparent)]
    Durable(#[from] sleet_durable::DurableError),
}

impl ConnectorError {
    pub fn io(action: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ConnectorError {
        let path = path.to_path_buf();
        move |source| ConnectorError::Io { action, path, source }
    }
}
