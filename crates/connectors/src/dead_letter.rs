//! The dead-letter output: every record that could not be processed, with the reason, one
//! JSON line each, so nothing bad is lost silently.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::ConnectorError;

/// Enough of a bad record to see what was wrong without copying megabytes per record.
const RECORD_EXCERPT_BYTES_MAX: usize = 1024;

pub struct DeadLetterWriter {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl DeadLetterWriter {
    pub fn create(dir: &Path, stage: u32, partition: u32, attempt: u32) -> Result<Self, ConnectorError> {
        fs::create_dir_all(dir).map_err(ConnectorError::io("creating dead-letter directory", dir))?;
        let path = dir
            .join(sleet_durable::manifest::attempt_file_name(&format!("dead-letters-s{stage}-p{partition}"), attempt));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(ConnectorError::io("opening dead-letter file", &path))?;
        Ok(DeadLetterWriter { path, writer: BufWriter::new(file) })
    }

    /// `origin` says where the record lives in its source (topic, partition and offset; file
    /// and byte), when the source can say.
    pub fn write(
        &mut self,
        batch: u64,
        partition: u32,
        reason: &str,
        record: &[u8],
        origin: Option<serde_json::Value>,
    ) -> Result<(), ConnectorError> {
        let excerpt = &record[..record.len().min(RECORD_EXCERPT_BYTES_MAX)];
        let mut line = serde_json::json!({
            "batch": batch,
            "partition": partition,
            "reason": reason,
            "record": String::from_utf8_lossy(excerpt),
            "record_bytes": record.len(),
        });
        if let Some(origin) = origin {
            line["source"] = origin;
        }
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
    let lines = sleet_durable::committed::read_json_lines(dir, "dead-letters-", "reading dead-letter files")?;
    Ok(lines.into_iter().map(|line| line.value).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_letters_keep_reason_and_an_excerpt() {
        let dir = std::env::temp_dir().join(format!("sleet-dead-letter-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = DeadLetterWriter::create(&dir, 0, 3, 0).expect("create");
        let origin = serde_json::json!({"topic": "t", "partition": 3, "offset": 41});
        writer.write(7, 3, "field `x`: expected int64", b"{\"x\": \"no\"}", Some(origin)).expect("write");
        writer.write(8, 3, "record too large", &vec![b'a'; 5000], None).expect("write");
        writer.write(9, 3, "not UTF-8", b"\xff\xfe", None).expect("write");
        writer.flush().expect("flush");
        crate::commit_first_attempt(&dir);
        let letters = read_dead_letters(&dir).expect("read");
        assert_eq!(letters.len(), 3);
        assert_eq!(letters[0]["reason"], "field `x`: expected int64");
        assert_eq!(letters[0]["batch"], 7);
        assert_eq!(letters[0]["source"]["offset"], 41);
        assert!(letters[1].get("source").is_none());
        assert_eq!(letters[1]["record_bytes"], 5000);
        assert_eq!(letters[1]["record"].as_str().expect("excerpt").len(), RECORD_EXCERPT_BYTES_MAX);
        let _ = fs::remove_dir_all(&dir);
    }
}
