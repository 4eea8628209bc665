//! Errors of sources, tables and sinks; each names the file (and line), topic or broker at fault.

use std::path::{Path, PathBuf};

use sleet_durable::DurableError;

#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// A source or sink outside the process (Kafka, a file) cannot be used as the job says.
    #[error("{what}: {reason}")]
    External { what: String, reason: String },
    /// The file system refused, or a file is not in the format its reader expects: the same
    /// errors as the files `sleet-durable` keeps, so a file is named one way everywhere.
    #[error(transparent)]
    File(#[from] DurableError),
}

impl ConnectorError {
    pub fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ConnectorError {
        let io = DurableError::io(action, path);
        move |source| ConnectorError::File(io(source))
    }

    pub fn format(path: PathBuf, line: usize, reason: String) -> ConnectorError {
        ConnectorError::File(DurableError::Format { path, line, reason })
    }
}
