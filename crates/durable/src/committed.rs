//! Reading back the JSON-lines output a job committed: only what its directory's manifest
//! admits.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::DurableError;
use crate::file::list_files;
use crate::manifest::{attempt_of_file, read_manifest, MANIFEST_FILE};

/// A parsed line, with where it came from so a caller's error can name the file and line.
pub struct JsonLine {
    pub path: PathBuf,
    pub line: usize,
    pub value: serde_json::Value,
}

/// Every committed line of every file in `dir` whose name starts with `prefix`, parsed as
/// JSON, files in name order. `what` names the files in errors ("sink", "dead-letter").
///
/// Only what the directory's commit manifest admits is read (`manifest`): a line of a batch
/// its file's attempt did not commit is output of a failed attempt, re-done by another.
/// Files with no manifest beside them were not written by a sleet job that committed
/// anything, which is an error rather than a guess. A writer ends every line with a newline,
/// so bytes after a file's last newline are a write a crash cut short: they are skipped.
pub fn read_json_lines(dir: &Path, prefix: &str, what: &'static str) -> Result<Vec<JsonLine>, DurableError> {
    let mut lines = Vec::new();
    visit_json_lines(dir, prefix, what, |line| {
        lines.push(JsonLine { path: line.path.to_path_buf(), line: line.line, value: line.value });
        Ok(())
    })?;
    Ok(lines)
}

/// A committed line as `visit_json_lines` hands it over: its text too, for a reader that
/// needs a value exactly as written (a float64's digits, which `serde_json::Value` may round
/// on the way in).
pub struct CommittedLine<'a> {
    pub path: &'a Path,
    pub line: usize,
    pub text: &'a [u8],
    pub value: serde_json::Value,
}

/// The committed lines `read_json_lines` returns, one at a time and kept nowhere: a reader
/// of a large output folds it as it goes. An error from `visit` ends the walk.
pub fn visit_json_lines(
    dir: &Path,
    prefix: &str,
    what: &'static str,
    mut visit: impl FnMut(CommittedLine<'_>) -> Result<(), DurableError>,
) -> Result<(), DurableError> {
    let files = list_files(dir, prefix, what)?;
    if files.is_empty() {
        return Ok(());
    }
    let Some(manifest) = read_manifest(dir)? else {
        return Err(DurableError::NoManifest { what, dir: dir.to_path_buf(), manifest_file: MANIFEST_FILE });
    };
    for path in files {
        let attempt = attempt_of_file(&path).ok_or_else(|| DurableError::Format {
            path: path.clone(),
            line: 0,
            reason: "not an output file name (`<stem>.jsonl` or `<stem>.a<attempt>.jsonl`)".to_string(),
        })?;
        let bytes = fs::read(&path).map_err(DurableError::io(what, &path))?;
        let complete = match bytes.iter().rposition(|byte| *byte == b'\n') {
            Some(last_newline) => &bytes[..last_newline],
            None => continue,
        };
        for (index, text) in complete.split(|byte| *byte == b'\n').enumerate() {
            let format_error = |reason: String| DurableError::Format { path: path.clone(), line: index + 1, reason };
            let value: serde_json::Value =
                serde_json::from_slice(text).map_err(|error| format_error(error.to_string()))?;
            let batch = value["batch"].as_u64().ok_or_else(|| format_error("a line without its `batch`".into()))?;
            if manifest.admits(attempt, batch) {
                visit(CommittedLine { path: &path, line: index + 1, text, value })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_committed_lines_are_read_a_torn_tail_is_skipped_and_a_bad_line_is_an_error() {
        use crate::manifest::{attempt_file_name, write_manifest, CommitManifest, CommittedSegment};
        let dir = std::env::temp_dir().join(format!("sleet-files-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("part-0.jsonl"), "{\"a\":1,\"batch\":0}\n{\"a\":2,\"batch\":1}\n{\"a\":").expect("write");
        fs::write(dir.join("part-1.jsonl"), "{\"a\":3,\"batch\":5}\n").expect("write");
        fs::write(dir.join("part-1.a1.jsonl"), "{\"a\":5,\"batch\":5}\n{\"a\":6,\"batch\":6}").expect("write");
        let error = read_json_lines(&dir, "part-", "reading").err().expect("no manifest").to_string();
        assert!(error.contains("no commit manifest"), "{error}");
        let manifest = CommitManifest {
            job: 1,
            segments: vec![
                CommittedSegment { attempt: 0, first_batch: 0, last_batch: Some(4) },
                CommittedSegment { attempt: 1, first_batch: 5, last_batch: Some(9) },
            ],
            finished: true,
        };
        write_manifest(&dir, &manifest).expect("manifest");
        let values: Vec<i64> = read_json_lines(&dir, "part-", "reading")
            .expect("a torn tail is no error")
            .iter()
            .map(|line| line.value["a"].as_i64().expect("a"))
            .collect();
        assert_eq!(values, vec![1, 2, 5], "batch 5 of attempt 0 is not committed, batch 6's line is torn");
        fs::write(dir.join("part-2.jsonl"), "{\"a\":\n{\"a\":4}\n").expect("write");
        let error = read_json_lines(&dir, "part-", "reading").err().expect("a bad middle line").to_string();
        assert!(error.contains("part-2.jsonl:1"), "{error}");
        assert_eq!(attempt_file_name("part-3", 0), "part-3.jsonl");
        assert_eq!(attempt_file_name("part-3", 2), "part-3.a2.jsonl");
        let _ = fs::remove_dir_all(&dir);
    }
}
