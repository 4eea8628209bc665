//! Reading back the JSON-lines files a connector wrote.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
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

/// A parsed line, with where it came from so a caller's error can name the file and line.
pub struct JsonLine {
    pub path: PathBuf,
    pub line: usize,
    pub value: serde_json::Value,
}

/// Every line of every file in `dir` whose name starts with `prefix`, parsed as JSON, files in
/// name order. `what` names the files in errors ("sink", "dead-letter").
pub fn read_json_lines(dir: &Path, prefix: &str, what: &'static str) -> Result<Vec<JsonLine>, ConnectorError> {
    let mut lines = Vec::new();
    for path in list_files(dir, prefix, what)? {
        let file = File::open(&path).map_err(ConnectorError::io(what, &path))?;
        for (index, text) in BufReader::new(file).lines().enumerate() {
            let text = text.map_err(ConnectorError::io(what, &path))?;
            let value = serde_json::from_str(&text).map_err(|error| ConnectorError::Format {
                path: path.clone(),
                line: index + 1,
                reason: error.to_string(),
            })?;
            lines.push(JsonLine { path: path.clone(), line: index + 1, value });
        }
    }
    Ok(lines)
}
