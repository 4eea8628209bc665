//! Listing the output files a connector wrote, for reading them back.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::ConnectorError;

/// Files in `dir` whose names start with `prefix`, sorted by name; a missing directory has none.
pub fn list_files(dir: &Path, prefix: &str, action: &'static str) -> Result<Vec<PathBuf>, ConnectorError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(ConnectorError::io(action, dir)(error)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(prefix)))
        .collect();
    files.sort();
    Ok(files)
}
