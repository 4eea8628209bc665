//! Reading back the JSON-lines files a connector wrote.

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

/// A parsed line, with where it came from so a caller's error can name the file and line.
pub struct JsonLine {
    pub path: PathBuf,
    pub line: usize,
    pub value: serde_json::Value,
}

/// Every line of every file in `dir` whose name starts with `prefix`, parsed as JSON, files in
/// name order. `what` names the files in errors ("sink", "dead-letter").
///
/// A writer ends every line with a newline, so bytes after a file's last newline are a
/// write a crash cut short (a worker killed mid-write): they are skipped, not an error. A
/// new owner of the partition writes to a file of its own, so such a torn tail is only ever
/// at the end of a file.
pub fn read_json_lines(dir: &Path, prefix: &str, what: &'static str) -> Result<Vec<JsonLine>, ConnectorError> {
    let mut lines = Vec::new();
    for path in list_files(dir, prefix, what)? {
        let bytes = fs::read(&path).map_err(ConnectorError::io(what, &path))?;
        let complete = match bytes.iter().rposition(|byte| *byte == b'\n') {
            Some(last_newline) => &bytes[..last_newline],
            None => continue,
        };
        for (index, text) in complete.split(|byte| *byte == b'\n').enumerate() {
            let value = serde_json::from_slice(text).map_err(|error| ConnectorError::Format {
                path: path.clone(),
                line: index + 1,
                reason: error.to_string(),
            })?;
            lines.push(JsonLine { path: path.clone(), line: index + 1, value });
        }
    }
    Ok(lines)
}

/// The name of an output file of one partition: `<stem>.jsonl` for a job's first attempt,
/// `<stem>.a<attempt>.jsonl` after a recovery, so that a new owner never appends to a file a
/// lost worker may have left with a torn last line, or may still write to if it was only
/// frozen.
pub fn attempt_file_name(stem: &str, attempt: u32) -> String {
    match attempt {
        0 => format!("{stem}.jsonl"),
        attempt => format!("{stem}.a{attempt}.jsonl"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
        let dir = std::env::temp_dir().join(format!("sleet-files-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("part-0.jsonl"), "{\"a\":1}\n{\"a\":2}\n{\"a\":").expect("write");
        fs::write(dir.join("part-1.jsonl"), "{\"a\":3").expect("write");
        let values: Vec<i64> = read_json_lines(&dir, "part-", "reading")
            .expect("a torn tail is no error")
            .iter()
            .map(|line| line.value["a"].as_i64().expect("a"))
            .collect();
        assert_eq!(values, vec![1, 2]);
        fs::write(dir.join("part-2.jsonl"), "{\"a\":\n{\"a\":4}\n").expect("write");
        let error = read_json_lines(&dir, "part-", "reading").err().expect("a bad middle line").to_string();
        assert!(error.contains("part-2.jsonl:1"), "{error}");
        assert_eq!(attempt_file_name("part-3", 0), "part-3.jsonl");
        assert_eq!(attempt_file_name("part-3", 2), "part-3.a2.jsonl");
        let _ = fs::remove_dir_all(&dir);
    }
}
