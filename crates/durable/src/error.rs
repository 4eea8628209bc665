//! Errors of the files sleet keeps; each names the file (and line) at fault.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// The file system refused; whether a retry helps depends on the cause.
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not in the format its reader expects (one sleet wrote, or a user's table).
    #[error("{path}:{line}: {reason}")]
    Format { path: PathBuf, line: usize, reason: String },
    /// Output files with no commit manifest beside them: no sleet job committed them, and
    /// guessing which rows count would be worse than refusing.
    #[error("{what} in {}: no commit manifest ({manifest_file}): nothing in it was committed by a sleet job", dir.display())]
    NoManifest { what: &'static str, dir: PathBuf, manifest_file: &'static str },
}

impl DurableError {
    pub fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> DurableError {
        let path = path.to_path_buf();
        move |source| DurableError::Io { action, path, source }
    }
}
