//! The dead-letter output: every record that could not be processed, with the reason, one
//! JSON line each, so nothing bad is lost silently.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::ConnectorError;

/// Enough of a bad record to see what was wrong without copying megabytes per record.
const RECORD_EXCERPT_BYTES_MAX: usize = 1024;

pub struct DeadLetterWriter {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl DeadLetterWriter {
    pub fn create(dir: &Path, stage: u32, partition: u32) -> Result<Self, ConnectorError> {
        fs::create_dir_all(dir).map_err(ConnectorError::io("creating dead-letter directory", dir))?;
        let path = dir.join(format!("dead-letters-s{stage}-p{partition}.jsonl"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(ConnectorError::io("opening dead-letter file", &path))?;
        Ok(DeadLetterWriter { path, writer: BufWriter::new(file) })
    }

    pub fn write(&mut self, batch: u64, partition: u32, reason: &str, record: &[u8]) -> Result<(), ConnectorError> {
        let excerpt = &record[..record.len().min(RECORD_EXCERPT_BYTES_MAX)];
        let line = serde_json::json!({
            "batch": batch,
            "partition": partition,
            "reason": reason,
            "record": String::from_utf8_lossy(excerpt),
            "record_bytes": record.len(),
        });
        serde_json::to_writer(&mut self.writer, &line)
            .map_err(|error| ConnectorError::io("writing dead-letter file", &self.path)(error.into()))?;
        self.writer.write_all(b"\n").map_err(ConnectorError::io("writing dead-letter file", &self.path))
    }

    pub fn flush(&mut self) -> Result<(), ConnectorError> {
        self.writer.flush().map_err(ConnectorError::io("flushing dead-letter file", &self.path))
    }
}

/// Every dead letter under `dir`, files in name order.
pub fn read_dead_letters(dir: &Path) -> Result<Vec<serde_json::Value>, ConnectorError> {
    let mut files: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(ConnectorError::io("listing dead-letter directory", dir)(error)),
    };
    files.sort();
    let mut letters = Vec::new();
    for path in files {
        let file = File::open(&path).map_err(ConnectorError::io("opening dead-letter file", &path))?;
        for (index, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(ConnectorError::io("reading dead-letter file", &path))?;
            let value = serde_json::from_str(&line).map_err(|error| ConnectorError::Format {
                path: path.clone(),
                line: index + 1,
                reason: error.to_string(),
            })?;
            letters.push(value);
        }
    }
    Ok(letters)
}
